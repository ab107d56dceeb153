/**
 * Behaviour across and around single runs: the sticky guard mode after a
 * recovery, cancellation, a missing CLI, the health check's time bound,
 * progress lines, path arguments, output truncation and the child environment.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import type { ExtensionContext } from "@mariozechner/pi-coding-agent";

import { DEFAULTS } from "../src/config.ts";
import { SatoriBridge } from "../src/bridge.ts";
import { checkHealth } from "../src/health.ts";
import { normalizePaths, responseText, toolDefinition, type BridgeToolDetails } from "../src/tools.ts";
import { cliError, result, scratch, toolsList } from "./harness.ts";

const ok = result({ status: "ok", results: [] });
const brokenStream = {
  stdout: cliError("E_PROTOCOL_FAILURE", "tools/call search_codebase: server wrote non-protocol output on stdout"),
  exit: 3,
};
const ctx = (cwd: string) => ({ cwd }) as unknown as ExtensionContext;
const searchTool = { name: "search_codebase", inputSchema: { type: "object", properties: { path: { type: "string" } } } };

test("after a successful recovery every later run starts with the guard off (sticky)", async () => {
  const s = scratch({ "*:unset": brokenStream, "*:off": { stdout: ok, exit: 0 }, "list:off": { stdout: toolsList(["x"]) } });
  try {
    const bridge = s.bridge();
    assert.equal(bridge.guardMode, "drop");
    const first = await bridge.callTool("search_codebase", {}, { cwd: s.dir });
    assert.equal(first.meta.guardRecoverySucceeded, true);
    assert.equal(bridge.guardMode, "off");

    const second = await bridge.callTool("search_codebase", {}, { cwd: s.dir });
    assert.deepEqual(second.meta, {
      attemptCount: 1,
      guardRecoveryAttempted: false,
      guardRecoverySucceeded: false,
      effectiveGuardMode: "off",
    });
    const list = await bridge.listTools({ cwd: s.dir });
    assert.equal(list.outcome.kind, "ok");
    assert.deepEqual(
      s.calls().map((c) => `${c.command}:${c.guard}`),
      ["search_codebase:unset", "search_codebase:off", "search_codebase:off", "list:off"],
    );
  } finally {
    s.cleanup();
  }
});

test("a recovery that fails does not make the guard sticky", async () => {
  const s = scratch({ "*:*": brokenStream });
  try {
    const bridge = s.bridge();
    await bridge.callTool("search_codebase", {}, { cwd: s.dir });
    assert.equal(bridge.guardMode, "drop");
  } finally {
    s.cleanup();
  }
});

test("cancelling a call kills the CLI and is not retried", async () => {
  const s = scratch({ "*:*": { hang: true } });
  try {
    const bridge = s.bridge();
    const controller = new AbortController();
    const pending = bridge.callTool("search_codebase", {}, { cwd: s.dir, signal: controller.signal });
    // Abort once the fake has started (it logs first), whatever the speed.
    const deadline = Date.now() + 30_000;
    while (s.calls().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    controller.abort();
    const run = await pending;
    assert.equal(run.outcome.kind, "aborted");
    assert.equal(run.meta.attemptCount, 1);
    assert.equal(s.calls().length, 1);
  } finally {
    s.cleanup();
  }
});

test("a CLI that cannot be found gives one clear error and no retry", async () => {
  const s = scratch({});
  try {
    const bridge = s.bridge({ command: `${s.dir}/no-such-satori-cli`, args: [] });
    const tool = toolDefinition(bridge, searchTool);
    await assert.rejects(
      () => tool.execute("id", { path: "/repo" }, undefined, undefined, ctx(s.dir)),
      (error: Error) => {
        assert.match(error.message, /^E_CLI_UNAVAILABLE: satori-cli could not be started: command not found \(spawn .*no-such-satori-cli ENOENT\)\n/);
        assert.match(error.message, /Install satori-cli or point the bridge at it \(SATORI_BRIDGE_COMMAND/);
        assert.match(error.message, /"attemptCount":1,/);
        return true;
      },
    );
  } finally {
    s.cleanup();
  }
});

test("index progress lines on stderr are streamed to pi as updates", async () => {
  const final = result({ tool: "manage_index", status: "ok", state: "indexed" });
  const s = scratch({
    "*:*": { stderr: "indexing 10% (1/10 files) phase=chunking\nnoise from the server\nindexing 100% (10/10 files) phase=done\n", stdout: final },
  });
  try {
    const tool = toolDefinition(s.bridge(), { name: "manage_index", inputSchema: { type: "object" } });
    const updates: string[] = [];
    const out = await tool.execute(
      "id",
      { action: "create", path: "/repo" },
      undefined,
      (partial) => {
        const first = partial.content[0];
        if (first?.type === "text") updates.push(first.text);
      },
      ctx(s.dir),
    );
    assert.deepEqual(updates, ["indexing 10% (1/10 files) phase=chunking", "indexing 100% (10/10 files) phase=done"]);
    assert.equal((out.details as BridgeToolDetails).status, "ok");
  } finally {
    s.cleanup();
  }
});

test("path arguments are made absolute against pi's working directory", () => {
  const cases: [unknown, unknown][] = [
    ["/abs/repo", "/abs/repo"],
    ["@/abs/repo", "/abs/repo"],
    ["src/app", "/home/dev/project/src/app"],
    ["@src", "/home/dev/project/src"],
    [".", "/home/dev/project"],
    ["", ""],
    [42, 42],
  ];
  for (const [input, want] of cases) {
    const out = normalizePaths(searchTool, { path: input, query: "src/app" }, "/home/dev/project");
    assert.deepEqual(out, { path: want, query: "src/app" }, String(input));
  }
  // A tool whose schema has no string `path` is left alone.
  assert.deepEqual(normalizePaths({ name: "x", inputSchema: { type: "object" } }, { path: "rel" }, "/w"), { path: "rel" });
});

test("long output is cut at the byte limit on a character boundary, with a note", () => {
  const cases: [string, number, string, boolean][] = [
    ["short", 10, "short", false],
    ["abcdef", 3, "abc", true],
    ["ééé", 3, "é", true],
  ];
  for (const [text, max, prefix, truncated] of cases) {
    const out = responseText({ content: [{ type: "text", text }] }, max);
    assert.equal(out.truncated, truncated, text);
    assert.ok(out.text.startsWith(prefix), `${text}: ${out.text}`);
    if (truncated) {
      assert.equal(out.text.split("\n")[0], prefix);
      assert.match(out.text, new RegExp(`output truncated at ${max} of ${Buffer.byteLength(text)} bytes`));
    }
  }
});

test("the child gets the configured env and never the recovery policy variable", async () => {
  const s = scratch({ "*:*": { stdout: ok } });
  const saved = { ...process.env };
  try {
    process.env.SATORI_CLI_GUARD_RECOVERY = "auto";
    process.env.SATORI_CLI_STDOUT_GUARD = "redirect";
    const config = s.config();
    // Configured stdoutGuard unset: the inherited SATORI_CLI_STDOUT_GUARD is
    // removed so the server default applies (loadConfig would have read it).
    const bridge = new SatoriBridge({ ...config, env: { ...config.env, FAKE_EXTRA: "from-config" } }, 300);
    await bridge.callTool("search_codebase", {}, { cwd: s.dir });
    const [call] = s.calls();
    assert.equal(call?.guardRecoveryEnv, null);
    assert.equal(call?.guard, "unset");
    assert.equal(call?.extraEnv, "from-config");
    assert.deepEqual(call?.argv.slice(0, 6), ["--guard-recovery", "never", "--startup-timeout-ms", String(DEFAULTS.startupTimeoutMs), "--call-timeout-ms", String(DEFAULTS.callTimeoutMs)]);
  } finally {
    process.env = saved;
    s.cleanup();
  }
});

test("the health check ends within its timeout even when the CLI never answers", async () => {
  // A launcher that never starts the CLI (npx waiting for an unreachable registry) looks
  // like this: no output, no exit. With the bridge's real watchdog slack, one attempt used
  // to last the startup and two call timeouts plus 10 s, and guard recovery ran a second.
  const s = scratch({ "*:*": { hang: true } });
  try {
    const bridge = new SatoriBridge(s.config({ healthTimeoutMs: 1_500 }));
    const started = Date.now();
    const report = await checkHealth(bridge, s.dir);
    const took = Date.now() - started;
    assert.equal(report.ok, false);
    // The budget, plus the grace between SIGTERM and SIGKILL and some scheduling slack.
    assert.ok(took < 1_500 + 3_000 + 1_000, `the check took ${took} ms`);
    assert.ok(s.calls().length <= 2);
    assert.match(report.lines.join("\n"), /1500 ms in all/);
  } finally {
    s.cleanup();
  }
});
