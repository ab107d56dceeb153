#!/usr/bin/env node
// What an MCP client pays to start Satori from npm: the time from spawning
// `npx -y @zokizuan/satori-mcp` (resolved to a local install, as in a project or after the
// first download) to the answer of the first `tools/list`, against `node -e 0` measured in the
// same run, with the shim alone (`node bin/satori.js`) and the binary alone beside it to show
// where the time goes. Also the size of the installed platform package. Prints one JSON document.
//
// Usage: node bench/npx_startup.mjs <project with @zokizuan/satori-mcp installed> [--reps N]
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const project = path.resolve(process.argv[2] ?? ".");
const reps = Number(process.argv[process.argv.indexOf("--reps") + 1]) || 10;
const home = fs.mkdtempSync(path.join(os.tmpdir(), "satori-bench-home-"));

const messages = [
  { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } } },
  { jsonrpc: "2.0", method: "notifications/initialized" },
  { jsonrpc: "2.0", id: 2, method: "tools/list" },
];

/** Milliseconds from spawn until the line answering id 2 (or until exit with `untilExit`). */
function timeOne(command, args, { untilExit = false } = {}) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(command, args, { cwd: project, env: { ...process.env, SATORI_HOME: home }, stdio: ["pipe", "pipe", "ignore"] });
    const elapsed = () => Number(process.hrtime.bigint() - started) / 1e6;
    child.on("error", reject);
    if (untilExit) {
      child.stdin.end();
      child.on("exit", () => resolve(elapsed()));
      return;
    }
    let buffer = "";
    child.stdout.on("data", (chunk) => {
      buffer += chunk;
      for (const line of buffer.split("\n").slice(0, -1)) {
        if (JSON.parse(line).id === 2) {
          const ms = elapsed();
          child.stdin.end();
          child.on("exit", () => resolve(ms));
          return;
        }
      }
    });
    child.stdin.write(messages.map((m) => JSON.stringify(m)).join("\n") + "\n");
  });
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

function du(dir) {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    total += entry.isDirectory() ? du(file) : fs.statSync(file).size;
  }
  return total;
}

const scope = path.join(project, "node_modules", "@zokizuan");
const platform = fs.readdirSync(scope).find((name) => name.startsWith("satori-mcp-"));
const shim = path.join(scope, "satori-mcp", "bin", "satori.js");
const binary = path.join(scope, platform, "bin", process.platform === "win32" ? "satori.exe" : "satori");
const npx = [];
const viaShim = [];
const direct = [];
const node = [];
// Interleaved, so every series sees the same machine load.
for (let i = 0; i < reps; i++) {
  npx.push(await timeOne("npx", ["-y", "@zokizuan/satori-mcp"]));
  viaShim.push(await timeOne("node", [shim]));
  direct.push(await timeOne(binary, []));
  node.push(await timeOne("node", ["-e", "0"], { untilExit: true }));
}
fs.rmSync(home, { recursive: true, force: true });
const round = (ms) => Math.round(ms * 10) / 10;
const stats = (values) => ({ median: round(median(values)), min: round(Math.min(...values)), max: round(Math.max(...values)) });
process.stdout.write(
  `${JSON.stringify(
    {
      reps,
      npx_to_first_tools_list_ms: stats(npx),
      shim_to_first_tools_list_ms: stats(viaShim),
      binary_to_first_tools_list_ms: stats(direct),
      node_e_0_ms: stats(node),
      ratio_npx_to_node_e_0: round(median(npx) / median(node)),
      platform_package: { name: `@zokizuan/${platform}`, unpacked_bytes: du(path.join(scope, platform)) },
    },
    null,
    2,
  )}\n`,
);
