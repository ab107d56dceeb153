// The README's ways to start the server with the npm registry unreachable, run as written:
// `npx -y --prefer-offline @zokizuan/satori-mcp@<version>` after one run with the network,
// and `npm install -g @zokizuan/satori-mcp@<version>` then `satori-mcp`. The registry is a
// fake on the loopback that serves the packed tarballs with the registry's protocol (one
// document per package, tarballs with their integrity); "unreachable" is that registry
// accepting connections and never answering, as a dropped route or a silent proxy does. A
// pinned start must make no request to it at all.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { spawn } from "node:child_process";
import { after, test } from "node:test";
import { fakeRegistry, packedTarballs, repoRoot, satoriEnv, tempDir } from "./helpers.mjs";

const RUN_BOUND_MS = 240_000;
const version = JSON.parse(fs.readFileSync(path.join(repoRoot, "npm/satori-mcp/package.json"), "utf8")).version;

const registry = fakeRegistry(packedTarballs());
after(() => registry.close());

/** The command lines the README gives for `what`, with the version filled in. */
function readmeCommand(pattern) {
  const found = [];
  for (const readme of ["README.md", "npm/satori-mcp/README.md"]) {
    const text = fs.readFileSync(path.join(repoRoot, readme), "utf8");
    const match = text.match(pattern);
    assert.ok(match, `${readme} gives a command matching ${pattern}`);
    found.push(match[0]);
  }
  assert.equal(found[0], found[1], "both READMEs give the same command");
  return found[0].replace("<version>", version).split(/\s+/);
}

/** Runs `argv` without a shell, sends an MCP initialize, and resolves with how it went. */
function start(argv, env, cwd) {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), RUN_BOUND_MS);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    const initialize = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "npm-proof", version: "0" } },
    };
    child.stdin.end(`${JSON.stringify(initialize)}\n`);
  });
}

/** Whether the server answered the initialize. */
function answered(result) {
  const first = result.stdout.split("\n").find((line) => line.trim() !== "");
  try {
    const message = JSON.parse(first);
    return message.id === 1 && message.result !== undefined;
  } catch {
    return false;
  }
}

test("the README's pinned starts run with the registry unreachable, asking it nothing", { timeout: 900_000 }, async () => {
  await registry.ready;
  const npx = readmeCommand(/npx -y --prefer-offline @zokizuan\/satori-mcp@<version>/);
  const install = readmeCommand(/npm install -g @zokizuan\/satori-mcp@<version>/);
  const outside = tempDir("satori-offline-cwd-");
  const prefix = tempDir("satori-offline-prefix-");
  const env = {
    ...satoriEnv(),
    npm_config_registry: `${registry.state.base}/`,
    npm_config_cache: tempDir("satori-offline-cache-"),
    npm_config_prefix: prefix,
    npm_config_update_notifier: "false",
    npm_config_audit: "false",
    npm_config_fund: "false",
  };
  const show = (result) => `exit ${result.code} ${result.signal ?? ""}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;

  // Once with the network: npx fills its cache.
  const first = await start(npx, env, outside);
  assert.ok(answered(first), `npx with the registry up: ${show(first)}`);
  assert.ok(registry.state.requests > 0, "the first run used the registry");
  const installed = await start(install, env, outside);
  assert.equal(installed.code, 0, `npm install -g: ${show(installed)}`);

  registry.state.answering = false;
  registry.state.requests = 0;
  const cached = await start(npx, env, outside);
  assert.ok(answered(cached), `npx --prefer-offline with the registry silent: ${show(cached)}`);
  const global = await start([path.join(prefix, "bin", "satori-mcp")], env, outside);
  assert.ok(answered(global), `the installed satori-mcp with the registry silent: ${show(global)}`);
  assert.equal(registry.state.requests, 0, "no request reached the registry");
});
