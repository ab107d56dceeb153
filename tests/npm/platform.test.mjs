// A platform with no build, simulated by giving Node another `process.arch` before anything
// loads: every entry point (the `satori`, `satori-cli` and `mcat` bins, `require` and `import`
// of the Node API) says the platform has no build and how to run that entry point from a
// source build, writes nothing to stdout and fails; and that advice, followed with the
// binaries and addon of this machine, works.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { json, project, run, satoriEnv, tempDir, writeApiProbes } from "./helpers.mjs";

const env = satoriEnv();
const scope = path.join(project, "node_modules", "@zokizuan");
const platformPackage = fs.readdirSync(scope).find((name) => name.startsWith("satori-mcp-"));
const platformDir = path.join(scope, platformPackage);
const bin = (name) => path.join(platformDir, "bin", name);
const addon = fs.readdirSync(platformDir).find((name) => name.endsWith(".node"));

// Loaded before the program: an architecture no release is built for.
const preload = path.join(tempDir("satori-arch-"), "arch.cjs");
fs.writeFileSync(preload, 'Object.defineProperty(process, "arch", { value: "mips", enumerable: true, configurable: true });\n');
const unsupported = { ...env, NODE_OPTIONS: `--require ${preload}` };

// The Node API from each module system (writeApiProbes).
const programs = writeApiProbes(project, "platform-proof");

/** The shim of `name` as npm installed it, run through its shebang. */
const shim = (name) => path.join(project, "node_modules", ".bin", name);

test("every bin names the platform and its own way to run from a source build", () => {
  const cases = [
    { name: "satori", says: [/SATORI_BINARY/, /-p satori-mcp\)/] },
    { name: "satori-cli", says: [/SATORI_CLI_BINARY/, /SATORI_BINARY/, /-p satori-cli/] },
    { name: "mcat", says: [/MCAT_BINARY/, /-p mcat\)/] },
  ];
  for (const { name, says } of cases) {
    const result = run(shim(name), ["tools", "list"], { env: unsupported });
    assert.equal(result.status, 1, `${name}: ${result.stderr}`);
    assert.equal(result.stdout, "", `${name}: nothing on stdout`);
    assert.match(result.stderr, /has no build for this platform \(linux-mips-(gnu|musl)\)/, `${name}: ${result.stderr}`);
    assert.match(result.stderr, new RegExp(`so ${name} cannot run from it`), `${name}: ${result.stderr}`);
    for (const pattern of says) assert.match(result.stderr, pattern, `${name}: ${result.stderr}`);
  }
});

test("the Node API, required or imported, rejects its first call with the Node API's advice", () => {
  for (const file of programs) {
    const result = run("node", [file], { env: unsupported });
    assert.equal(result.status, 0, `${file}: ${result.stderr}`);
    const out = json(result);
    assert.equal(out.code, "E_USAGE", file);
    for (const pattern of [/has no build for this platform \(linux-mips-(gnu|musl)\)/, /the Node API cannot run from it/, /SATORI_NODE_ADDON/, /SATORI_BINARY/]) {
      assert.match(out.message, pattern, `${file}: ${out.message}`);
    }
  }
});

test("the advice works: the override variables run every entry point without a platform package", () => {
  const overrides = {
    ...unsupported,
    SATORI_BINARY: bin("satori"),
    SATORI_CLI_BINARY: bin("satori-cli"),
    MCAT_BINARY: bin("mcat"),
    SATORI_NODE_ADDON: path.join(platformDir, addon),
  };
  const cli = run(shim("satori-cli"), ["tools", "list"], { env: overrides });
  assert.equal(cli.status, 0, cli.stderr);
  assert.ok(json(cli).tools.length > 0);
  const mcat = run(shim("mcat"), ["--version"], { env: overrides });
  assert.equal(mcat.status, 0, mcat.stderr);
  for (const file of programs) {
    const result = run("node", [file], { env: overrides });
    assert.equal(result.status, 0, `${file}: ${result.stderr}`);
    assert.ok(json(result).tools > 0, `${file}: ${result.stdout}`);
  }
});
