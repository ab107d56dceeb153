/**
 * Every case of the guard-recovery classifier, played by the fake CLI: which
 * failures are retried with the stdout guard off, which are never retried,
 * what metadata the result carries, and what pi receives (a result or a
 * thrown error with one deterministic message).
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import type { AttemptMeta } from "../src/bridge.ts";
import type { Outcome } from "../src/classify.ts";
import type { BridgeConfig } from "../src/config.ts";
import { toolDefinition, type BridgeToolDetails, type ListedTool } from "../src/tools.ts";
import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import type { Step } from "./fake-cli.ts";
import { cliError, result, scratch, toolsList } from "./harness.ts";

interface Case {
  name: string;
  /** The tool called, or "list" for `tools list`. */
  tool: string;
  steps: Record<string, Step>;
  config?: Partial<BridgeConfig>;
  /** SATORI_CLI_STDOUT_GUARD of each CLI run, in order ("unset" when absent). */
  guards: string[];
  kind: Outcome["kind"];
  meta: AttemptMeta;
  /** What pi gets from the tool: a result with this envelope status, or an error. */
  pi: { status: string | undefined } | { error: string | RegExp };
}

const ok = result({ status: "ok", results: [] });
const indexed = result({ tool: "manage_index", status: "ok", state: "indexed" });
const once = (mode: AttemptMeta["effectiveGuardMode"] = "drop"): AttemptMeta => ({
  attemptCount: 1,
  guardRecoveryAttempted: false,
  guardRecoverySucceeded: false,
  effectiveGuardMode: mode,
});
const recovered: AttemptMeta = {
  attemptCount: 2,
  guardRecoveryAttempted: true,
  guardRecoverySucceeded: true,
  effectiveGuardMode: "off",
};
const bothFailed: AttemptMeta = { ...recovered, guardRecoverySucceeded: false };
const protocol = (message: string): Step => ({
  stdout: cliError("E_PROTOCOL_FAILURE", message),
  stderr: `E_PROTOCOL_FAILURE: ${message}\n`,
  exit: 3,
});
const garbageAfterDispatch = protocol('tools/call search_codebase: server wrote non-protocol output on stdout: "hi"');

const cases: Case[] = [
  // --- answers are final -------------------------------------------------
  {
    name: "success on the first attempt",
    tool: "search_codebase",
    steps: { "*:*": { stdout: ok, exit: 0 } },
    guards: ["unset"],
    kind: "ok",
    meta: once(),
    pi: { status: "ok" },
  },
  {
    name: "non-ok envelope not_ready/indexing (isError false, exit 1) is not retried",
    tool: "search_codebase",
    steps: {
      "*:*": {
        stdout: result({ status: "not_ready", reason: "indexing", hints: { status: { tool: "manage_index" } } }),
        stderr: "E_TOOL_ERROR status=not_ready reason=indexing\n",
        exit: 1,
      },
    },
    guards: ["unset"],
    kind: "tool_error",
    meta: once(),
    pi: { status: "not_ready" },
  },
  {
    name: "non-ok envelope requires_reindex is not retried",
    tool: "search_codebase",
    steps: { "*:*": { stdout: result({ status: "requires_reindex", reason: "requires_reindex" }), exit: 1 } },
    guards: ["unset"],
    kind: "tool_error",
    meta: once(),
    pi: { status: "requires_reindex" },
  },
  {
    name: "non-ok envelope not_indexed is not retried",
    tool: "search_codebase",
    steps: { "*:*": { stdout: result({ status: "not_indexed", reason: "not_indexed" }), exit: 1 } },
    guards: ["unset"],
    kind: "tool_error",
    meta: once(),
    pi: { status: "not_indexed" },
  },
  {
    name: "freshness skipped_indexing (search during indexing) is an answer, not retried",
    tool: "search_codebase",
    steps: { "*:*": { stdout: result({ status: "ok", freshnessDecision: { mode: "skipped_indexing" } }), exit: 0 } },
    guards: ["unset"],
    kind: "ok",
    meta: once(),
    pi: { status: "ok" },
  },
  {
    name: "isError true is not retried and reaches pi as a tool error",
    tool: "read_file",
    steps: { "*:*": { stdout: result({ status: "error", message: "no such file" }, true), exit: 1 } },
    guards: ["unset"],
    kind: "tool_error",
    meta: once(),
    pi: {
      error:
        '{"status":"error","message":"no such file"}\n[satori-bridge] {"attemptCount":1,"guardRecoveryAttempted":false,"guardRecoverySucceeded":false,"effectiveGuardMode":"drop"}',
    },
  },
  {
    name: "a parseable CallTool result wins over exit 3 (not retried)",
    tool: "search_codebase",
    steps: { "*:*": { stdout: result({ status: "not_ready", reason: "indexing" }), exit: 3 } },
    guards: ["unset"],
    kind: "tool_error",
    meta: once(),
    pi: { status: "not_ready" },
  },
  {
    name: "a JSON-RPC error (E_TOOL_ERROR object, exit 1) is an answer: not retried",
    tool: "search_codebase",
    steps: {
      "*:*": {
        stdout: cliError("E_TOOL_ERROR", "server returned JSON-RPC error -32602: bad params"),
        stderr: "E_TOOL_ERROR status=error reason=rpc_error\n",
        exit: 1,
      },
    },
    guards: ["unset"],
    kind: "rpc_error",
    meta: once(),
    pi: {
      error:
        'E_TOOL_ERROR: server returned JSON-RPC error -32602: bad params (exit 1)\n[satori-bridge] {"attemptCount":1,"guardRecoveryAttempted":false,"guardRecoverySucceeded":false,"effectiveGuardMode":"drop"}',
    },
  },
  {
    name: "exit 2 usage error is not retried",
    tool: "search_codebase",
    steps: {
      "*:*": {
        stdout: cliError("E_USAGE", "unknown tool 'nope'"),
        stderr: "E_USAGE: unknown tool 'nope'\n",
        exit: 2,
      },
    },
    guards: ["unset"],
    kind: "usage",
    meta: once(),
    pi: { error: /^E_USAGE: unknown tool 'nope' \(exit 2\)\n/ },
  },
  {
    name: "exit 2 with nothing on stdout is still a usage error, not retried",
    tool: "search_codebase",
    steps: { "*:*": { stderr: "error: unexpected argument '--bogus'\n", exit: 2 } },
    guards: ["unset"],
    kind: "usage",
    meta: once(),
    pi: { error: /^E_USAGE: error: unexpected argument '--bogus' \(exit 2\)/ },
  },
  {
    name: "JSON that is neither an answer nor an error, with no protocol signature, is not retried",
    tool: "search_codebase",
    steps: { "*:*": { stdout: { hello: "world" }, exit: 1 } },
    guards: ["unset"],
    kind: "unexpected",
    meta: once(),
    pi: { error: /^E_UNEXPECTED_OUTPUT: satori-cli exited 1 with output that is not a tool result/ },
  },
  // --- transport failures before any answer: retried once with guard off --
  {
    name: "exit 3 E_PROTOCOL_FAILURE, then success with the guard off",
    tool: "search_codebase",
    steps: { "*:unset": garbageAfterDispatch, "*:off": { stdout: ok, exit: 0 } },
    guards: ["unset", "off"],
    kind: "ok",
    meta: recovered,
    pi: { status: "ok" },
  },
  {
    name: "both attempts fail: one combined deterministic error",
    tool: "search_codebase",
    steps: { "*:*": garbageAfterDispatch },
    guards: ["unset", "off"],
    kind: "transport",
    meta: bothFailed,
    pi: {
      error:
        "E_PROTOCOL_FAILURE: satori-cli failed twice; guard recovery did not help: " +
        'attempt 1 (SATORI_CLI_STDOUT_GUARD=drop): E_PROTOCOL_FAILURE: tools/call search_codebase: server wrote non-protocol output on stdout: "hi" (exit 3); ' +
        'attempt 2 (SATORI_CLI_STDOUT_GUARD=off): E_PROTOCOL_FAILURE: tools/call search_codebase: server wrote non-protocol output on stdout: "hi" (exit 3)\n' +
        '[satori-bridge] {"attemptCount":2,"guardRecoveryAttempted":true,"guardRecoverySucceeded":false,"effectiveGuardMode":"off"}',
    },
  },
  {
    name: "exit 3 E_CALL_TIMEOUT of a read-only tool is retried",
    tool: "search_codebase",
    steps: {
      "*:unset": { stdout: cliError("E_CALL_TIMEOUT", "tools/call search_codebase did not finish within 5 ms"), exit: 3 },
      "*:off": { stdout: ok, exit: 0 },
    },
    guards: ["unset", "off"],
    kind: "ok",
    meta: recovered,
    pi: { status: "ok" },
  },
  {
    name: "empty stdout with exit 0 is retried",
    tool: "search_codebase",
    steps: { "*:unset": { exit: 0 }, "*:off": { stdout: ok, exit: 0 } },
    guards: ["unset", "off"],
    kind: "ok",
    meta: recovered,
    pi: { status: "ok" },
  },
  {
    name: "stdout that is not JSON plus [STDOUT_BLOCKED] on stderr (exit 1) is retried",
    tool: "search_codebase",
    steps: {
      "*:unset": { stdout: "Starting Satori...\n", stderr: "[STDOUT_BLOCKED_BINARY len=12]\n", exit: 1 },
      "*:off": { stdout: ok, exit: 0 },
    },
    guards: ["unset", "off"],
    kind: "ok",
    meta: recovered,
    pi: { status: "ok" },
  },
  {
    name: "truncated JSON on stdout (parse failure) is retried",
    tool: "search_codebase",
    steps: { "*:unset": { stdout: '{"content":[{"type":"te', exit: 0 }, "*:off": { stdout: ok, exit: 0 } },
    guards: ["unset", "off"],
    kind: "ok",
    meta: recovered,
    pi: { status: "ok" },
  },
  {
    name: "E_PROTOCOL_FAILURE on stderr with no stdout and exit 1 is retried",
    tool: "search_codebase",
    steps: {
      "*:unset": { stderr: "E_PROTOCOL_FAILURE: stream closed\n", exit: 1 },
      "*:off": { stdout: ok, exit: 0 },
    },
    guards: ["unset", "off"],
    kind: "ok",
    meta: recovered,
    pi: { status: "ok" },
  },
  {
    name: "the CLI killed by a signal is retried",
    tool: "search_codebase",
    steps: { "*:unset": { signal: "SIGKILL" }, "*:off": { stdout: ok, exit: 0 } },
    guards: ["unset", "off"],
    kind: "ok",
    meta: recovered,
    pi: { status: "ok" },
  },
  {
    name: "a CLI that hangs is killed by the watchdog and retried",
    tool: "search_codebase",
    config: { startupTimeoutMs: 50, callTimeoutMs: 50 },
    steps: { "*:unset": { hang: true }, "*:off": { stdout: ok, exit: 0 } },
    guards: ["unset", "off"],
    kind: "ok",
    meta: recovered,
    pi: { status: "ok" },
  },
  {
    name: "a retry that answers with a non-ok envelope counts as a recovery",
    tool: "search_codebase",
    steps: {
      "*:unset": garbageAfterDispatch,
      "*:off": { stdout: result({ status: "not_indexed", reason: "not_indexed" }), exit: 1 },
    },
    guards: ["unset", "off"],
    kind: "tool_error",
    meta: recovered,
    pi: { status: "not_indexed" },
  },
  {
    name: "tools list: protocol failure then success with the guard off",
    tool: "list",
    steps: {
      "list:unset": protocol('MCP handshake failed: server wrote non-protocol output on stdout: "x"'),
      "list:off": { stdout: toolsList(["search_codebase"]), exit: 0 },
    },
    guards: ["unset", "off"],
    kind: "ok",
    meta: recovered,
    pi: { status: undefined },
  },
  // --- manage_index: retried only when the request was never sent ----------
  {
    name: "manage_index: exit 3 after dispatch is not retried",
    tool: "manage_index",
    steps: { "*:*": protocol("tools/call manage_index: server closed its stdout") },
    guards: ["unset"],
    kind: "transport",
    meta: once(),
    pi: {
      error:
        'E_PROTOCOL_FAILURE: tools/call manage_index: server closed its stdout (exit 3)\n[satori-bridge] {"attemptCount":1,"guardRecoveryAttempted":false,"guardRecoverySucceeded":false,"effectiveGuardMode":"drop"}',
    },
  },
  {
    name: "manage_index: a call timeout (maybe dispatched) is not retried",
    tool: "manage_index",
    steps: {
      "*:*": { stdout: cliError("E_CALL_TIMEOUT", "tools/call manage_index did not finish within 5 ms"), exit: 3 },
    },
    guards: ["unset"],
    kind: "transport",
    meta: once(),
    pi: { error: /^E_CALL_TIMEOUT: tools\/call manage_index did not finish within 5 ms \(exit 3\)\n/ },
  },
  {
    name: "manage_index: empty stdout (stage unknown) is not retried",
    tool: "manage_index",
    steps: { "*:*": { exit: 0 } },
    guards: ["unset"],
    kind: "transport",
    meta: once(),
    pi: { error: /^E_PROTOCOL_FAILURE: satori-cli printed nothing on stdout \(exit 0\)/ },
  },
  {
    name: "manage_index: startup timeout (before dispatch) is retried",
    tool: "manage_index",
    steps: {
      "*:unset": { stdout: cliError("E_STARTUP_TIMEOUT", "server did not complete the MCP handshake within 5 ms"), exit: 3 },
      "*:off": { stdout: indexed, exit: 0 },
    },
    guards: ["unset", "off"],
    kind: "ok",
    meta: recovered,
    pi: { status: "ok" },
  },
  {
    name: "manage_index: a failed MCP handshake (before dispatch) is retried",
    tool: "manage_index",
    steps: {
      "*:unset": protocol('MCP handshake failed: server wrote non-protocol output on stdout: "Starting"'),
      "*:off": { stdout: indexed, exit: 0 },
    },
    guards: ["unset", "off"],
    kind: "ok",
    meta: recovered,
    pi: { status: "ok" },
  },
  {
    name: "manage_index: a failure of the CLI's tools/list (before the call) is retried",
    tool: "manage_index",
    steps: {
      "*:unset": protocol("tools/list: server wrote non-protocol output on stdout"),
      "*:off": { stdout: indexed, exit: 0 },
    },
    guards: ["unset", "off"],
    kind: "ok",
    meta: recovered,
    pi: { status: "ok" },
  },
  // --- nothing to retry with, or not allowed to ------------------------------
  {
    name: "guardRecovery never: exit 3 is not retried",
    tool: "search_codebase",
    config: { guardRecovery: "never" },
    steps: { "*:*": garbageAfterDispatch },
    guards: ["unset"],
    kind: "transport",
    meta: once(),
    pi: { error: /^E_PROTOCOL_FAILURE: tools\/call search_codebase: server wrote/ },
  },
  {
    name: "configured guard off: nothing left to try",
    tool: "search_codebase",
    config: { stdoutGuard: "off" },
    steps: { "*:*": garbageAfterDispatch },
    guards: ["off"],
    kind: "transport",
    meta: once("off"),
    pi: { error: /^E_PROTOCOL_FAILURE: / },
  },
  {
    name: "configured guard redirect is passed and recovery still switches to off",
    tool: "search_codebase",
    config: { stdoutGuard: "redirect" },
    steps: { "*:redirect": garbageAfterDispatch, "*:off": { stdout: ok, exit: 0 } },
    guards: ["redirect", "off"],
    kind: "ok",
    meta: recovered,
    pi: { status: "ok" },
  },
  {
    name: "a server that cannot be started at all is not retried",
    tool: "search_codebase",
    steps: { "*:*": protocol("failed to start server /x/satori: Permission denied (os error 13)") },
    guards: ["unset"],
    kind: "transport",
    meta: once(),
    pi: { error: /^E_PROTOCOL_FAILURE: failed to start server/ },
  },
];

const listed = (name: string): ListedTool => ({
  name,
  description: `${name}.`,
  inputSchema: { type: "object", properties: { path: { type: "string" }, query: { type: "string" } } },
});

const piContext = (cwd: string) => ({ cwd }) as unknown as ExtensionContext;

async function check(c: Case): Promise<void> {
  const s = scratch(c.steps);
  try {
    // 1. The wrapper itself: outcome, attempts, metadata, what was spawned.
    const bridge = s.bridge(c.config);
    const run =
      c.tool === "list"
        ? await bridge.listTools({ cwd: s.dir })
        : await bridge.callTool(c.tool, { path: "/repo", query: "q" }, { cwd: s.dir });
    assert.equal(run.outcome.kind, c.kind, `${c.name}: outcome ${JSON.stringify(run.outcome)}`);
    assert.deepEqual(run.meta, c.meta, c.name);
    const calls = s.calls();
    assert.deepEqual(
      calls.map((call) => call.guard),
      c.guards,
      `${c.name}: guard mode of each CLI run`,
    );
    for (const call of calls) {
      // The bridge is the only layer that retries.
      assert.deepEqual(call.argv.slice(0, 2), ["--guard-recovery", "never"], c.name);
      assert.equal(call.guardRecoveryEnv, null, c.name);
      if (c.tool !== "list") {
        assert.deepEqual(call.argv.slice(-5), ["tool", "call", c.tool, "--args-json", "@-"], c.name);
        assert.deepEqual(JSON.parse(call.stdin), { path: "/repo", query: "q" }, c.name);
      }
    }
    if (c.tool === "list") return;

    // 2. The same scenario through the pi tool, with a fresh bridge.
    const tool = toolDefinition(s.bridge(c.config), listed(c.tool));
    const execute = () => tool.execute("call-1", { path: "/repo", query: "q" }, undefined, undefined, piContext(s.dir));
    if ("error" in c.pi) {
      await assert.rejects(execute, (error: Error) => {
        if (typeof c.pi === "object" && "error" in c.pi) {
          if (typeof c.pi.error === "string") assert.equal(error.message, c.pi.error, c.name);
          else assert.match(error.message, c.pi.error, c.name);
        }
        return true;
      });
    } else {
      const out = await execute();
      const details = out.details as BridgeToolDetails;
      assert.equal(details.status, c.pi.status, c.name);
      assert.deepEqual(
        {
          attemptCount: details.attemptCount,
          guardRecoveryAttempted: details.guardRecoveryAttempted,
          guardRecoverySucceeded: details.guardRecoverySucceeded,
          effectiveGuardMode: details.effectiveGuardMode,
        },
        c.meta,
        c.name,
      );
      const first = out.content[0];
      assert.ok(first?.type === "text" && first.text.startsWith("{"), `${c.name}: the envelope text reaches the model`);
    }
  } finally {
    s.cleanup();
  }
}

for (const c of cases) {
  test(`classifier: ${c.name}`, () => check(c));
}
