// A Linux whose glibc is older than the linux-gnu build needs, simulated by giving Node's report
// an older `glibcVersionRuntime` before anything loads: that is what the launcher asks, while
// the binaries still run on this machine's glibc. Every entry point (the `satori`, `satori-cli`
// and `mcat` bins, `require` and `import` of the Node API) refuses with a message naming the
// glibc needed, the glibc found and, for the bins, how to install the musl build; both installs
// the message gives, run as written against a registry on the loopback, work, and the bins then
// run from the musl package. That package is a stand-in here, its generated manifest around
// this machine's binaries: no musl toolchain builds here, and what is under test is npm's
// install filter and the launcher's choice, not the musl binaries.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, test } from "node:test";
import { fakeRegistry, json, packedTarballs, project, repoRoot, run, runAsync, satoriEnv, tempDir, writeApiProbes } from "./helpers.mjs";

const OLD = "2.17";
const table = JSON.parse(fs.readFileSync(path.join(repoRoot, "npm/satori-mcp/lib/targets.json"), "utf8"));
const version = table.version;
const env = satoriEnv();
const scope = path.join(project, "node_modules", "@zokizuan");
const gnuDir = path.join(scope, fs.readdirSync(scope).find((name) => name.startsWith("satori-mcp-")));
const gnuId = path.basename(gnuDir).slice("satori-mcp-".length);
const need = table.targets.find((target) => target.id === gnuId)?.glibc;
const muslId = gnuId.replace(/-gnu$/, "-musl");
const muslName = `@zokizuan/satori-mcp-${muslId}`;
const skip = gnuId.endsWith("-gnu") ? false : `the platform package here is ${gnuId}, not a glibc one`;
const npmMajorMinor = run("npm", ["--version"]).stdout.trim().split(".").map(Number);
const npmHasLibc = npmMajorMinor[0] > 10 || (npmMajorMinor[0] === 10 && npmMajorMinor[1] >= 3);

// Loaded before the program: Node reports an older glibc.
const preload = path.join(tempDir("satori-glibc-"), "glibc.cjs");
fs.writeFileSync(
  preload,
  `const real = process.report.getReport.bind(process.report);
process.report.getReport = (...args) => {
  const report = real(...args);
  report.header.glibcVersionRuntime = ${JSON.stringify(OLD)};
  return report;
};
`,
);
const oldGlibc = { ...env, NODE_OPTIONS: `--require ${preload}` };

// The Node API from each module system (writeApiProbes).
const programs = writeApiProbes(project, "glibc-proof");

const escape = (text) => String(text).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const refusal = (name) => new RegExp(`${escape(name)} cannot run here: the ${gnuId} build needs glibc ${escape(need)} or newer, and this system has glibc ${escape(OLD)}`);

/** The `npm install ...` commands a refusal gives, as argument lists. */
function advice(stderr) {
  return [...stderr.matchAll(/`(npm install [^`]+)`/g)].map((m) => m[1].split(/\s+/));
}

test("on an older glibc every bin refuses, names both glibc versions and how to install the musl build", { skip }, () => {
  for (const name of ["satori", "satori-cli", "mcat"]) {
    const result = run(path.join(project, "node_modules", ".bin", name), ["tools", "list"], { env: oldGlibc });
    assert.equal(result.status, 1, `${name}: ${result.stderr}`);
    assert.equal(result.stdout, "", `${name}: nothing on stdout`);
    assert.match(result.stderr, refusal(name), `${name}: ${result.stderr}`);
    const commands = advice(result.stderr).map((argv) => argv.join(" "));
    assert.deepEqual(
      commands,
      [`npm install --force ${muslName}@${version}`, `npm install -g --libc=musl @zokizuan/satori-mcp@${version}`],
      `${name}: ${result.stderr}`,
    );
  }
});

test("on an older glibc the Node API, required or imported, rejects its first call and says to build the addon", { skip }, () => {
  for (const file of programs) {
    const result = run("node", [file], { env: oldGlibc });
    assert.equal(result.status, 0, `${file}: ${result.stderr}`);
    const out = json(result);
    assert.equal(out.code, "E_USAGE", `${file}: ${out.message}`);
    assert.match(out.message, refusal("the Node API"), file);
    for (const pattern of [/cannot load into this Node/, /SATORI_NODE_ADDON/, /-p satori-node/]) {
      assert.match(out.message, pattern, `${file}: ${out.message}`);
    }
  }
});

// The musl stand-in: the generated manifest of the musl package, this machine's binaries.
function packMuslStandIn() {
  const dir = path.join(tempDir("satori-musl-"), "package");
  fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
  fs.copyFileSync(path.join(repoRoot, "npm", muslId, "package.json"), path.join(dir, "package.json"));
  for (const name of table.binaries) fs.copyFileSync(path.join(gnuDir, "bin", name), path.join(dir, "bin", name));
  for (const file of ["LICENSE", "THIRD_PARTY_NOTICES"]) fs.copyFileSync(path.join(gnuDir, file), path.join(dir, file));
  const out = tempDir("satori-musl-packed-");
  const packed = run("npm", ["pack", "--silent", "--pack-destination", out, dir]);
  assert.equal(packed.status, 0, packed.stderr);
  return path.join(out, packed.stdout.trim().split("\n").pop());
}

const registry = skip ? null : fakeRegistry(new Map([...packedTarballs(), [muslName, packMuslStandIn()]]));
after(() => registry && registry.close());

/** npm against the loopback registry, with its own cache and global prefix. */
function npmEnv() {
  return {
    ...env,
    npm_config_registry: `${registry.state.base}/`,
    npm_config_cache: tempDir("satori-glibc-cache-"),
    npm_config_prefix: tempDir("satori-glibc-prefix-"),
    npm_config_update_notifier: "false",
    npm_config_audit: "false",
    npm_config_fund: "false",
    npm_config_loglevel: "error",
  };
}

/** The bins in `binDir` run, under each environment of `envs`. */
function runs(binDir, label, envs) {
  for (const glibc of envs) {
    const cli = run(path.join(binDir, "satori-cli"), ["tools", "list"], { env: glibc });
    assert.equal(cli.status, 0, `${label} satori-cli: ${cli.stderr}`);
    assert.ok(json(cli).tools.length > 0, label);
    const mcat = run(path.join(binDir, "mcat"), ["--version"], { env: glibc });
    assert.equal(mcat.status, 0, `${label} mcat: ${mcat.stderr}`);
    const initialize = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "npm-proof", version: "0" } },
    };
    const server = run(path.join(binDir, "satori"), [], { env: glibc, input: `${JSON.stringify(initialize)}\n` });
    assert.equal(JSON.parse(server.stdout.split("\n")[0]).id, 1, `${label} satori: ${server.stdout} ${server.stderr}`);
  }
}

test("the first advice, npm install --force of the musl package, works as written", { skip, timeout: 600_000 }, async () => {
  await registry.ready;
  const npm = npmEnv();
  const dir = tempDir("satori-glibc-project-");
  fs.writeFileSync(path.join(dir, "package.json"), '{ "name": "glibc-proof", "private": true }\n');
  const installed = await runAsync("npm", ["install", `@zokizuan/satori-mcp@${version}`], { env: npm, cwd: dir });
  assert.equal(installed.status, 0, installed.stderr);
  const refused = run(path.join(dir, "node_modules", ".bin", "satori-cli"), ["tools", "list"], { env: oldGlibc, cwd: dir });
  const [force] = advice(refused.stderr);
  assert.ok(force, refused.stderr);
  // Without --force npm refuses the package on glibc: the flag is needed.
  const plain = await runAsync(force[0], force.slice(1).filter((arg) => arg !== "--force"), { env: npm, cwd: dir });
  assert.notEqual(plain.status, 0, "npm installs a musl package on glibc without --force");
  const added = await runAsync(force[0], force.slice(1), { env: npm, cwd: dir });
  assert.equal(added.status, 0, added.stderr);
  // Only the musl package can run them on the older glibc.
  runs(path.join(dir, "node_modules", ".bin"), "--force", [oldGlibc]);

  // The Node API with an addon built for this glibc: its server comes from the musl package.
  writeApiProbes(dir, "glibc-proof");
  const addonFile = fs.readdirSync(gnuDir).find((name) => name.endsWith(".node"));
  for (const file of programs) {
    const result = run("node", [file], { env: { ...oldGlibc, SATORI_NODE_ADDON: path.join(gnuDir, addonFile) }, cwd: dir });
    assert.equal(result.status, 0, `${file}: ${result.stderr}`);
    assert.ok(json(result).tools > 0, `${file}: ${result.stdout}`);
  }
});

test("the second advice, npm install -g --libc=musl, works as written", { skip: skip || (!npmHasLibc && "npm before 10.3 has no --libc"), timeout: 600_000 }, async () => {
  await registry.ready;
  const npm = npmEnv();
  const refused = run(path.join(project, "node_modules", ".bin", "mcat"), ["--version"], { env: oldGlibc });
  const [, libc] = advice(refused.stderr);
  assert.ok(libc, refused.stderr);
  const installed = await runAsync(libc[0], libc.slice(1), { env: npm, cwd: tempDir("satori-glibc-cwd-") });
  assert.equal(installed.status, 0, installed.stderr);
  // A global install keeps a package's dependencies inside it.
  const modules = path.join(npm.npm_config_prefix, "lib", "node_modules", "@zokizuan", "satori-mcp", "node_modules", "@zokizuan");
  assert.deepEqual(fs.readdirSync(modules), [`satori-mcp-${muslId}`], "the musl package, and not the gnu one");
  // The musl package is all there is: it runs them on either glibc.
  runs(path.join(npm.npm_config_prefix, "bin"), "--libc=musl", [oldGlibc, env]);
});
