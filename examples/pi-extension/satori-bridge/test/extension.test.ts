/**
 * The extension as pi sees it: what it registers at load, what it says at
 * session start, and the `/satori-mcp` command (non-blocking, one clear
 * report, tools registered once Satori answers). pi itself is replaced by a
 * recorder of the ExtensionAPI calls; the real loader is used in e2e.test.ts.
 */

import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import type { ExtensionAPI, ExtensionCommandContext, ToolDefinition } from "@mariozechner/pi-coding-agent";

import { createBridgeExtension, HEALTH_COMMAND } from "../index.ts";
import type { Step } from "./fake-cli.ts";
import { cliError, FAKE_CLI, scratch, toolsList, type Scratch } from "./harness.ts";

interface Recorder {
  tools: Map<string, ToolDefinition>;
  commands: Map<string, { handler: (args: string, ctx: ExtensionCommandContext) => Promise<void> }>;
  handlers: Map<string, ((event: unknown, ctx: unknown) => unknown)[]>;
  notes: { message: string; type: string | undefined }[];
  statuses: (string | undefined)[];
  ctx: ExtensionCommandContext;
}

function recorder(cwd: string): { pi: ExtensionAPI; rec: Recorder } {
  const rec: Recorder = {
    tools: new Map(),
    commands: new Map(),
    handlers: new Map(),
    notes: [],
    statuses: [],
    ctx: undefined as unknown as ExtensionCommandContext,
  };
  rec.ctx = {
    cwd,
    hasUI: true,
    ui: {
      notify: (message: string, type?: string) => rec.notes.push({ message, type }),
      setStatus: (_key: string, text: string | undefined) => rec.statuses.push(text),
    },
  } as unknown as ExtensionCommandContext;
  const pi = {
    registerTool: (tool: ToolDefinition) => rec.tools.set(tool.name, tool),
    registerCommand: (name: string, options: { handler: (args: string, ctx: ExtensionCommandContext) => Promise<void> }) =>
      rec.commands.set(name, options),
    on: (event: string, handler: (event: unknown, ctx: unknown) => unknown) =>
      rec.handlers.set(event, [...(rec.handlers.get(event) ?? []), handler]),
  } as unknown as ExtensionAPI;
  return { pi, rec };
}

/** A project whose `.pi/satori-bridge.json` runs the fake CLI. */
function project(s: Scratch, extra: Record<string, unknown> = {}): string {
  const cwd = join(s.dir, "project");
  mkdirSync(join(cwd, ".pi"), { recursive: true });
  writeFileSync(
    join(cwd, ".pi", "satori-bridge.json"),
    JSON.stringify({
      command: process.execPath,
      args: [FAKE_CLI],
      env: { FAKE_SATORI_SCENARIO: s.scenarioPath },
      ...extra,
    }),
  );
  return cwd;
}

async function load(s: Scratch, extra: Record<string, unknown> = {}) {
  const cwd = project(s, extra);
  const { pi, rec } = recorder(cwd);
  await createBridgeExtension({ env: {}, cwd, agentDir: join(s.dir, "agent") })(pi);
  for (const handler of rec.handlers.get("session_start") ?? []) await handler({ type: "session_start", reason: "startup" }, rec.ctx);
  return rec;
}

async function waitFor<T>(what: string, probe: () => T | undefined): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const broken: Step = {
  stdout: cliError("E_PROTOCOL_FAILURE", 'MCP handshake failed: server wrote non-protocol output on stdout: "x"'),
  exit: 3,
};

test("at load the tools come from the live tools/list", async () => {
  const s = scratch({ "list:*": { stdout: toolsList(["search_codebase", "read_file"]) } });
  try {
    const rec = await load(s);
    assert.deepEqual([...rec.tools.keys()], ["search_codebase", "read_file"]);
    const search = rec.tools.get("search_codebase");
    assert.equal(search?.description, "search_codebase does things. More text.");
    assert.equal(search?.promptSnippet, "search_codebase does things.");
    assert.deepEqual(search?.parameters, {
      type: "object",
      properties: { path: { type: "string" }, query: { type: "string" } },
      additionalProperties: false,
    });
    assert.ok(rec.commands.has(HEALTH_COMMAND));
    assert.deepEqual(rec.notes, [], "no warning when Satori answered");
    // Discovery used the short health timeouts.
    const [call] = s.calls();
    assert.deepEqual(call?.argv.slice(2, 6), ["--startup-timeout-ms", "15000", "--call-timeout-ms", "15000"]);
  } finally {
    s.cleanup();
  }
});

test("when Satori is unreachable at load pi still starts, warns, and /satori-mcp registers the tools later", async () => {
  const s = scratch({ "*:*": broken });
  try {
    const rec = await load(s);
    assert.equal(rec.tools.size, 0);
    assert.deepEqual(rec.notes, [
      {
        type: "warning",
        message:
          "satori-bridge: Satori tools are unavailable: E_PROTOCOL_FAILURE: satori-cli failed twice; guard recovery did not help: " +
          'attempt 1 (SATORI_CLI_STDOUT_GUARD=drop): E_PROTOCOL_FAILURE: MCP handshake failed: server wrote non-protocol output on stdout: "x" (exit 3); ' +
          'attempt 2 (SATORI_CLI_STDOUT_GUARD=off): E_PROTOCOL_FAILURE: MCP handshake failed: server wrote non-protocol output on stdout: "x" (exit 3)\n' +
          "Run /satori-mcp to retry.",
      },
    ]);

    s.setSteps({ "list:*": { stdout: toolsList(["search_codebase"]) } });
    await rec.commands.get(HEALTH_COMMAND)?.handler("", rec.ctx);
    const note = await waitFor("the health report", () => rec.notes[1]);
    assert.equal(note.type, "info");
    assert.equal(note.message, "Satori OK: 1 tools (search_codebase); registered 1 tools");
    assert.deepEqual([...rec.tools.keys()], ["search_codebase"]);
    assert.deepEqual(rec.statuses, ["Satori: checking…", undefined]);
  } finally {
    s.cleanup();
  }
});

test("/satori-mcp does not block pi and reports a failure deterministically", async () => {
  const s = scratch({ "list:*": { stdout: toolsList(["search_codebase"]) } });
  try {
    const rec = await load(s, { healthTimeoutMs: 5000 });
    s.setSteps({ "*:*": { ...broken, delayMs: 300 } });
    await rec.commands.get(HEALTH_COMMAND)?.handler("", rec.ctx);
    // The handler has returned while the CLI is still sleeping.
    assert.equal(rec.notes.length, 0);
    const note = await waitFor("the health report", () => rec.notes[0]);
    assert.equal(note.type, "error");
    const [summary, ...details] = note.message.split("\n");
    assert.equal(
      summary,
      "Satori unreachable: E_PROTOCOL_FAILURE: satori-cli failed twice; guard recovery did not help: " +
        'attempt 1 (SATORI_CLI_STDOUT_GUARD=drop): E_PROTOCOL_FAILURE: MCP handshake failed: server wrote non-protocol output on stdout: "x" (exit 3); ' +
        'attempt 2 (SATORI_CLI_STDOUT_GUARD=off): E_PROTOCOL_FAILURE: MCP handshake failed: server wrote non-protocol output on stdout: "x" (exit 3)',
    );
    assert.deepEqual(details.slice(0, 3), [
      `  command: ${process.execPath} ${FAKE_CLI}`,
      "  guard recovery: auto; the next run starts with SATORI_CLI_STDOUT_GUARD=drop",
      "  timeouts for this check: 5000 ms startup, 5000 ms call, 5000 ms in all",
    ]);
    assert.equal(
      details.at(-1),
      '  attempts: {"attemptCount":2,"guardRecoveryAttempted":true,"guardRecoverySucceeded":false,"effectiveGuardMode":"off"}',
    );
  } finally {
    s.cleanup();
  }
});

test("/satori-mcp reports a recovery and the sticky guard mode", async () => {
  const s = scratch({ "list:*": { stdout: toolsList(["search_codebase"]) } });
  try {
    const rec = await load(s, { debug: true });
    s.setSteps({ "list:drop": broken, "list:unset": broken, "list:off": { stdout: toolsList(["search_codebase"]) } });
    await rec.commands.get(HEALTH_COMMAND)?.handler("", rec.ctx);
    const note = await waitFor("the health report", () => rec.notes[0]);
    assert.equal(note.type, "info");
    const lines = note.message.split("\n");
    assert.equal(lines[0], "Satori OK after guard recovery: 1 tools (search_codebase)");
    assert.ok(lines.includes("  guard recovery: auto; the next run starts with SATORI_CLI_STDOUT_GUARD=off (kept off after a successful recovery)"), note.message);
  } finally {
    s.cleanup();
  }
});

test("a broken config file is reported at session start and by /satori-mcp, and fixing it is enough", async () => {
  const s = scratch({ "list:*": { stdout: toolsList(["search_codebase"]) } });
  try {
    const rec = await load(s, { guardRecovery: "sometimes" });
    const configPath = join(s.dir, "project", ".pi", "satori-bridge.json");
    assert.deepEqual(rec.notes, [
      {
        type: "warning",
        message: `satori-bridge: Satori tools are unavailable: configuration error: ${configPath}: "guardRecovery" must be "auto" or "never", got "sometimes"\nRun /satori-mcp to retry.`,
      },
    ]);
    await rec.commands.get(HEALTH_COMMAND)?.handler("", rec.ctx);
    const failed = await waitFor("the health report", () => rec.notes[1]);
    assert.equal(failed.type, "error");
    assert.match(failed.message, /^Satori unreachable: configuration error: .*"guardRecovery" must be/);

    project(s, {});
    await rec.commands.get(HEALTH_COMMAND)?.handler("", rec.ctx);
    const fixed = await waitFor("the second report", () => rec.notes[2]);
    assert.equal(fixed.message, "Satori OK: 1 tools (search_codebase); registered 1 tools");
  } finally {
    s.cleanup();
  }
});
