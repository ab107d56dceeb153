// Shared set-up of the npm proof: the temporary project that scripts/npm-proof.sh installed
// the packed tarballs into, a private SATORI_HOME per test file, a small real repository to
// index, and a way to run commands there.
import { spawn, spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** The project the tarballs were installed into (set by scripts/npm-proof.sh). */
export const project = process.env.SATORI_NPM_PROJECT;
if (!project || !fs.existsSync(path.join(project, "node_modules", "@zokizuan", "satori-mcp"))) {
  throw new Error("SATORI_NPM_PROJECT must name a project with @zokizuan/satori-mcp installed: run scripts/npm-proof.sh");
}

/** A fresh directory that is removed when the process exits. */
export function tempDir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  process.on("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The environment for Satori processes: the caller's, with its own index home. */
export function satoriEnv() {
  const env = { ...process.env, SATORI_HOME: tempDir("satori-home-") };
  for (const name of ["SATORI_BINARY", "SATORI_CLI_BINARY", "MCAT_BINARY", "SATORI_SERVER_BIN", "SATORI_NODE_ADDON", "SATORI_TELEMETRY"]) delete env[name];
  return env;
}

/**
 * A small real repository: sources of this one (the client library and the npm launcher),
 * copied so the test owns it.
 */
export function makeRepo() {
  const dir = tempDir("satori-repo-");
  const copy = (from, to) => fs.cpSync(path.join(repoRoot, from), path.join(dir, to), { recursive: true });
  copy("crates/satori-client/src", "client/src");
  copy("npm/satori-mcp/lib", "launcher/lib");
  copy("npm/satori-mcp/index.js", "launcher/index.js");
  return fs.realpathSync(dir);
}

/** Run a command in the project; never through a shell. */
export function run(command, args, { env, input, cwd = project } = {}) {
  const result = spawnSync(command, args, {
    cwd,
    env: env ?? process.env,
    input,
    encoding: "utf8",
    timeout: 300_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error) throw result.error;
  return result;
}

/**
 * `run` without blocking this process: for commands that talk to a server it serves (the fake
 * registry), which a synchronous spawn would keep from answering.
 */
export function runAsync(command, args, { env, cwd = project } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 300_000);
    child.on("error", reject);
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    });
  });
}

/** Parse stdout as the one JSON document a CLI prints, with the whole run in the message. */
export function json(result) {
  try {
    return JSON.parse(result.stdout);
  } catch (error) {
    throw new Error(`stdout is not one JSON document (${error.message})\nstatus ${result.status}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`);
  }
}

/** The envelope of a tool result: `structuredContent`, else the JSON text of its first block. */
export function envelopeOf(result) {
  return result.structuredContent ?? JSON.parse(result.content[0].text);
}

/** The tarballs scripts/npm-proof.sh packed, beside the project it installed them into: name -> file. */
export function packedTarballs() {
  const packed = path.dirname(project);
  const version = JSON.parse(fs.readFileSync(path.join(repoRoot, "npm/satori-mcp/package.json"), "utf8")).version;
  const tarballs = new Map();
  for (const file of fs.readdirSync(packed).filter((name) => name.endsWith(".tgz"))) {
    // zokizuan-satori-mcp-<rest>-<version>.tgz
    tarballs.set(`@zokizuan/${file.slice("zokizuan-".length, -`-${version}.tgz`.length)}`, path.join(packed, file));
  }
  return tarballs;
}

/** The manifests a registry serves: the root package and every platform package. */
function manifests() {
  return fs
    .readdirSync(path.join(repoRoot, "npm"))
    .map((dir) => path.join(repoRoot, "npm", dir, "package.json"))
    .filter((file) => fs.existsSync(file))
    .map((file) => JSON.parse(fs.readFileSync(file, "utf8")));
}

/**
 * A registry on the loopback, with the registry's protocol: one document per package of npm/,
 * and the tarballs of `tarballs` (name -> file) with their integrity; a package without one
 * has a tarball URL that answers 404. `state.answering` false makes it take requests and
 * never reply, as a dropped route or a silent proxy does.
 */
export function fakeRegistry(tarballs) {
  const state = { answering: true, requests: 0, base: "" };
  const documents = new Map();
  const server = http.createServer((request, response) => {
    state.requests += 1;
    if (!state.answering) return; // Left open: the client waits for its own timeouts.
    const name = decodeURIComponent(request.url.split("?")[0].slice(1));
    if (documents.has(name)) {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(documents.get(name)));
      return;
    }
    const tarball = [...tarballs.values()].find((file) => request.url === `/-/${path.basename(file)}`);
    if (tarball) {
      response.writeHead(200, { "content-type": "application/octet-stream" });
      response.end(fs.readFileSync(tarball));
      return;
    }
    response.writeHead(404, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: "not found" }));
  });
  const ready = new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      state.base = `http://127.0.0.1:${server.address().port}`;
      for (const manifest of manifests()) {
        const file = tarballs.get(manifest.name);
        const dist = { tarball: `${state.base}/-/${file ? path.basename(file) : `${manifest.name.replace("/", "-")}.tgz`}` };
        if (file) {
          const bytes = fs.readFileSync(file);
          dist.integrity = `sha512-${crypto.createHash("sha512").update(bytes).digest("base64")}`;
          dist.shasum = crypto.createHash("sha1").update(bytes).digest("hex");
        }
        documents.set(manifest.name, {
          name: manifest.name,
          "dist-tags": { latest: manifest.version },
          versions: { [manifest.version]: { ...manifest, _id: `${manifest.name}@${manifest.version}`, dist } },
        });
      }
      resolve();
    });
  });
  return { state, ready, close: () => server.closeAllConnections() || server.close() };
}

/**
 * Writes `<name>.cjs` and `<name>.mjs` into `dir`: the Node API called from each module
 * system, each printing the outcome of listTools() as one JSON line (`{tools}` or
 * `{code, message}`). Returns the two file names.
 */
export function writeApiProbes(dir, name) {
  const probes = {
    [`${name}.cjs`]: `const { listTools } = require("@zokizuan/satori-mcp");
listTools().then((list) => process.stdout.write(JSON.stringify({ tools: list.tools.length })),
  (error) => process.stdout.write(JSON.stringify({ code: error.code, message: error.message })));`,
    [`${name}.mjs`]: `import { listTools } from "@zokizuan/satori-mcp";
try {
  const list = await listTools();
  process.stdout.write(JSON.stringify({ tools: list.tools.length }));
} catch (error) {
  process.stdout.write(JSON.stringify({ code: error.code, message: error.message }));
}`,
  };
  for (const [file, source] of Object.entries(probes)) fs.writeFileSync(path.join(dir, file), source);
  return Object.keys(probes);
}
