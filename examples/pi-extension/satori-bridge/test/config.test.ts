/**
 * Config precedence (defaults < global file < project file < environment)
 * and the errors for bad values, on real files in a scratch directory.
 */

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { ConfigError, DEFAULTS, loadConfig, type BridgeConfig } from "../src/config.ts";

interface Case {
  name: string;
  global?: unknown;
  project?: unknown;
  /** Written to `<dir>/explicit.json` and named by SATORI_BRIDGE_CONFIG. */
  explicit?: unknown;
  env?: Record<string, string>;
  want: Partial<BridgeConfig> | { error: string | RegExp };
}

const cases: Case[] = [
  { name: "defaults when nothing is set", want: { ...DEFAULTS, sources: ["defaults"] } },
  {
    name: "the global file sets values",
    global: { command: "/opt/satori/bin/satori-cli", callTimeoutMs: 1000 },
    want: { command: "/opt/satori/bin/satori-cli", callTimeoutMs: 1000, startupTimeoutMs: 180_000 },
  },
  {
    name: "the project file overrides the global file key by key",
    global: { callTimeoutMs: 1000, startupTimeoutMs: 2000 },
    project: { callTimeoutMs: 3000 },
    want: { callTimeoutMs: 3000, startupTimeoutMs: 2000 },
  },
  {
    name: "the environment overrides both files",
    global: { guardRecovery: "never", debug: false },
    project: { callTimeoutMs: 3000, stdoutGuard: "redirect" },
    env: {
      SATORI_CLI_GUARD_RECOVERY: "auto",
      SATORI_BRIDGE_CALL_TIMEOUT_MS: "4000",
      SATORI_CLI_STDOUT_GUARD: "drop",
      SATORI_BRIDGE_DEBUG: "1",
    },
    want: { guardRecovery: "auto", callTimeoutMs: 4000, stdoutGuard: "drop", debug: true },
  },
  {
    name: "empty environment values count as unset",
    project: { callTimeoutMs: 3000 },
    env: { SATORI_BRIDGE_CALL_TIMEOUT_MS: "", SATORI_BRIDGE_COMMAND: " " },
    want: { callTimeoutMs: 3000, command: "satori-cli" },
  },
  {
    name: "command and args for npx, from the environment",
    env: {
      SATORI_BRIDGE_COMMAND: "npx",
      SATORI_BRIDGE_ARGS_JSON: '["-y","--package","@zokizuan/satori-mcp","satori-cli"]',
    },
    want: { command: "npx", args: ["-y", "--package", "@zokizuan/satori-mcp", "satori-cli"] },
  },
  {
    name: "a relative command path in the project file is relative to that file",
    project: { command: "./bin/satori-cli" },
    want: { command: "<dir>/project/.pi/bin/satori-cli" },
  },
  {
    name: "SATORI_BRIDGE_CONFIG replaces both file lookups",
    global: { callTimeoutMs: 1000 },
    project: { startupTimeoutMs: 2000 },
    explicit: { healthTimeoutMs: 500 },
    want: { callTimeoutMs: 600_000, startupTimeoutMs: 180_000, healthTimeoutMs: 500 },
  },
  {
    name: "env for the child is taken from the file",
    project: { env: { SATORI_HOME: "/tmp/satori-home" } },
    want: { env: { SATORI_HOME: "/tmp/satori-home" } },
  },
  // --- errors ----------------------------------------------------------------
  {
    name: "a missing SATORI_BRIDGE_CONFIG file is an error",
    env: { SATORI_BRIDGE_CONFIG: "/nonexistent/satori-bridge.json" },
    want: { error: "SATORI_BRIDGE_CONFIG=/nonexistent/satori-bridge.json: the file does not exist or cannot be read" },
  },
  {
    name: "invalid JSON names the file",
    project: "{ not json",
    want: { error: /^<dir>\/project\/\.pi\/satori-bridge\.json: not valid JSON: / },
  },
  {
    name: "an unknown key (a typo) is an error listing the known keys",
    project: { callTimeout: 5 },
    want: {
      error:
        '<dir>/project/.pi/satori-bridge.json: unknown key "callTimeout" (known keys: command, args, startupTimeoutMs, callTimeoutMs, healthTimeoutMs, guardRecovery, stdoutGuard, env, maxOutputBytes, debug)',
    },
  },
  {
    name: "a bad guardRecovery value",
    project: { guardRecovery: "sometimes" },
    want: { error: '<dir>/project/.pi/satori-bridge.json: "guardRecovery" must be "auto" or "never", got "sometimes"' },
  },
  {
    name: "a bad SATORI_CLI_GUARD_RECOVERY value",
    env: { SATORI_CLI_GUARD_RECOVERY: "Auto" },
    want: { error: 'SATORI_CLI_GUARD_RECOVERY must be "auto" or "never", got "Auto"' },
  },
  {
    name: "a bad guard mode",
    env: { SATORI_CLI_STDOUT_GUARD: "false" },
    want: { error: 'SATORI_CLI_STDOUT_GUARD must be one of drop, redirect, off, got "false"' },
  },
  {
    name: "a non-positive timeout",
    global: { startupTimeoutMs: 0 },
    want: { error: /"startupTimeoutMs" must be a positive integer, got 0$/ },
  },
  {
    name: "a timeout that is not a number in the environment",
    env: { SATORI_BRIDGE_STARTUP_TIMEOUT_MS: "10s" },
    want: { error: "SATORI_BRIDGE_STARTUP_TIMEOUT_MS must be a positive integer (milliseconds or bytes), got 10s" },
  },
  {
    name: "args that are not an array of strings",
    env: { SATORI_BRIDGE_ARGS_JSON: '["ok", 1]' },
    want: { error: 'SATORI_BRIDGE_ARGS_JSON must be an array of strings, got ["ok",1]' },
  },
  {
    name: "env may not set the guard variables the bridge decides",
    project: { env: { SATORI_CLI_STDOUT_GUARD: "off" } },
    want: { error: '<dir>/project/.pi/satori-bridge.json: "env" may not set SATORI_CLI_STDOUT_GUARD: use "stdoutGuard"' },
  },
  {
    name: "a file that is not an object",
    global: [1, 2],
    want: { error: /config\.json: must hold a JSON object$/ },
  },
];

function check(c: Case): void {
  const dir = mkdtempSync(join(tmpdir(), "satori-bridge-config-"));
  try {
    const agentDir = join(dir, "agent");
    const cwd = join(dir, "project");
    mkdirSync(join(cwd, ".pi"), { recursive: true });
    const write = (path: string, value: unknown) => {
      mkdirSync(join(path, ".."), { recursive: true });
      writeFileSync(path, typeof value === "string" ? value : JSON.stringify(value));
    };
    if (c.global !== undefined) write(join(agentDir, "extensions", "satori-bridge", "config.json"), c.global);
    if (c.project !== undefined) write(join(cwd, ".pi", "satori-bridge.json"), c.project);
    const env: Record<string, string> = { ...c.env };
    if (c.explicit !== undefined) {
      write(join(dir, "explicit.json"), c.explicit);
      env.SATORI_BRIDGE_CONFIG = join(dir, "explicit.json");
    }
    const subst = (s: string) => s.replaceAll("<dir>", dir);
    const run = () => loadConfig({ env, cwd, agentDir });
    if ("error" in c.want) {
      const expected = c.want.error;
      assert.throws(run, (error: Error) => {
        assert.ok(error instanceof ConfigError, `${c.name}: ${error}`);
        if (typeof expected === "string") assert.equal(error.message, subst(expected), c.name);
        else assert.match(error.message, new RegExp(subst(expected.source)), c.name);
        return true;
      });
      return;
    }
    const config = run();
    for (const [key, value] of Object.entries(c.want)) {
      const want = typeof value === "string" ? subst(value) : value;
      assert.deepEqual(config[key as keyof BridgeConfig], want, `${c.name}: ${key}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const c of cases) {
  test(`config: ${c.name}`, () => check(c));
}

test("config: sources name each contributing file and the environment, in order", () => {
  const dir = mkdtempSync(join(tmpdir(), "satori-bridge-config-"));
  try {
    const agentDir = join(dir, "agent");
    const cwd = join(dir, "project");
    const globalPath = join(agentDir, "extensions", "satori-bridge", "config.json");
    const projectPath = join(cwd, ".pi", "satori-bridge.json");
    mkdirSync(join(globalPath, ".."), { recursive: true });
    mkdirSync(join(projectPath, ".."), { recursive: true });
    writeFileSync(globalPath, "{}");
    writeFileSync(projectPath, "{}");
    const config = loadConfig({ env: { SATORI_BRIDGE_DEBUG: "true" }, cwd, agentDir });
    assert.deepEqual(config.sources, ["defaults", globalPath, projectPath, "environment"]);
    // Without agentDir, PI_CODING_AGENT_DIR locates the global file, as in pi.
    const viaEnv = loadConfig({ env: { PI_CODING_AGENT_DIR: agentDir }, cwd });
    assert.deepEqual(viaEnv.sources, ["defaults", globalPath, projectPath]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("config: config.example.json is valid and is the example shown in the README", () => {
  const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
  const examplePath = join(packageDir, "config.example.json");
  const config = loadConfig({ env: { SATORI_BRIDGE_CONFIG: examplePath }, cwd: packageDir });
  assert.equal(config.command, "npx");
  assert.deepEqual(config.sources, ["defaults", examplePath]);
  const readme = readFileSync(join(packageDir, "README.md"), "utf8");
  const block = /Example \(`config\.example\.json`\)[^]*?```json\n([^]*?)```/.exec(readme)?.[1];
  assert.equal(block, readFileSync(examplePath, "utf8"));
});
