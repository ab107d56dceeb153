// The bin shims: the executable bit is repaired when a package manager dropped it, a missing
// platform package gives one clear message and a non-zero exit, the override variables name
// the binary to run, and nothing the shim says goes to stdout.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { json, project, run, satoriEnv, tempDir } from "./helpers.mjs";

const env = satoriEnv();
const scope = path.join(project, "node_modules", "@zokizuan");
const platformPackage = fs.readdirSync(scope).find((name) => name.startsWith("satori-mcp-"));
const binDir = path.join(scope, platformPackage, "bin");

test("binaries installed with mode 0644 still run, and get their mode back", () => {
  for (const name of ["satori", "satori-cli", "mcat"]) fs.chmodSync(path.join(binDir, name), 0o644);
  const result = run("npx", ["satori-cli", "tools", "list"], { env });
  assert.equal(result.status, 0, result.stderr);
  assert.ok(json(result).tools.length > 0);
  for (const name of ["satori", "satori-cli", "mcat"]) {
    const mode = fs.statSync(path.join(binDir, name)).mode & 0o777;
    assert.equal(mode, 0o755, `${name} mode ${mode.toString(8)}`);
  }
});

test("a missing platform package gives one clear message and a non-zero exit", () => {
  // A copy of the root package alone, where no platform package can be found.
  const lonely = path.join(tempDir("satori-lonely-"), "node_modules", "@zokizuan", "satori-mcp");
  fs.cpSync(path.join(scope, "satori-mcp"), lonely, { recursive: true });
  for (const bin of ["satori.js", "satori-cli.js", "mcat.js"]) {
    const result = run("node", [path.join(lonely, "bin", bin), "tools", "list"], { env, cwd: lonely });
    assert.notEqual(result.status, 0);
    assert.equal(result.stdout, "", "nothing on stdout");
    assert.match(result.stderr, new RegExp(`the platform package @zokizuan/${platformPackage} is not installed`));
    assert.match(result.stderr, new RegExp(`npm install @zokizuan/${platformPackage}@\\d`));
  }
});

test("SATORI_CLI_BINARY and SATORI_BINARY name the binaries to run", () => {
  const real = fs.realpathSync(path.join(binDir, "satori"));
  const staged = tempDir("satori-override-");
  fs.copyFileSync(real, path.join(staged, "my-satori"));
  fs.chmodSync(path.join(staged, "my-satori"), 0o755);
  fs.copyFileSync(path.join(binDir, "satori-cli"), path.join(staged, "my-cli"));
  fs.chmodSync(path.join(staged, "my-cli"), 0o755);
  // The CLI override alone finds no server beside it (there is none named `satori`)...
  const alone = run("npx", ["satori-cli", "tools", "list"], { env: { ...env, SATORI_CLI_BINARY: path.join(staged, "my-cli") } });
  assert.equal(alone.status, 2, alone.stderr);
  assert.match(alone.stderr, /SATORI_SERVER_BIN is unset/);
  // ...and SATORI_BINARY hands it the server.
  const both = run("npx", ["satori-cli", "tools", "list"], {
    env: { ...env, SATORI_CLI_BINARY: path.join(staged, "my-cli"), SATORI_BINARY: path.join(staged, "my-satori") },
  });
  assert.equal(both.status, 0, both.stderr);
});

test("exit codes and signals pass through, and signals to the shim reach the binary", async () => {
  const dir = tempDir("satori-fake-");
  const script = (name, body) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    return file;
  };
  const shim = path.join(scope, "satori-mcp", "bin", "satori.js");
  const ended = (child) => new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const start = (binary) => spawn("node", [shim], { cwd: project, env: { ...env, SATORI_BINARY: binary }, stdio: ["ignore", "pipe", "pipe"] });

  assert.deepEqual(await ended(start(script("exits-7", "exit 7"))), { code: 7, signal: null });
  assert.deepEqual(await ended(start(script("killed", "kill -KILL $$"))), { code: null, signal: "SIGKILL" });

  // The binary says it is ready on stderr; a SIGTERM sent to the shim must reach it.
  const child = start(script("traps", "trap 'exit 42' TERM\necho ready >&2\nwhile :; do sleep 0.1; done"));
  await new Promise((resolve) => child.stderr.once("data", resolve));
  child.kill("SIGTERM");
  assert.deepEqual(await ended(child), { code: 42, signal: null });
});
