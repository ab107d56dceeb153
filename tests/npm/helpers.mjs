// Shared set-up of the npm proof: the temporary project that scripts/npm-proof.sh installed
// the packed tarballs into, a private SATORI_HOME per test file, a small real repository to
// index, and a way to run commands there.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
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
