/**
 * Shared test plumbing: a scratch directory per test with a scenario for the
 * fake CLI, a bridge configured to run it, and readers for its call log.
 */

import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { SatoriBridge } from "../src/bridge.ts";
import { DEFAULTS, type BridgeConfig } from "../src/config.ts";
import type { LoggedCall, Scenario, Step } from "./fake-cli.ts";

export const FAKE_CLI = join(dirname(fileURLToPath(import.meta.url)), "fake-cli.js");

export interface Scratch {
  dir: string;
  scenarioPath: string;
  logPath: string;
  /** Replace the steps the fake CLI plays from now on. */
  setSteps(steps: Record<string, Step>): void;
  calls(): LoggedCall[];
  /** A config that runs the fake CLI with `node`. */
  config(overrides?: Partial<BridgeConfig>): BridgeConfig;
  bridge(overrides?: Partial<BridgeConfig>): SatoriBridge;
  cleanup(): void;
}

export function scratch(steps: Record<string, Step>): Scratch {
  const dir = mkdtempSync(join(tmpdir(), "satori-bridge-test-"));
  const scenarioPath = join(dir, "scenario.json");
  const logPath = join(dir, "calls.jsonl");
  const setSteps = (next: Record<string, Step>) => {
    const scenario: Scenario = { log: logPath, steps: next };
    writeFileSync(scenarioPath, JSON.stringify(scenario));
  };
  setSteps(steps);
  const config = (overrides: Partial<BridgeConfig> = {}): BridgeConfig => ({
    ...DEFAULTS,
    command: process.execPath,
    args: [FAKE_CLI],
    env: { FAKE_SATORI_SCENARIO: scenarioPath },
    sources: ["test"],
    ...overrides,
  });
  return {
    dir,
    scenarioPath,
    logPath,
    setSteps,
    calls: () =>
      existsSync(logPath)
        ? readFileSync(logPath, "utf8")
            .split("\n")
            .filter((l) => l !== "")
            .map((l) => JSON.parse(l) as LoggedCall)
        : [],
    config,
    bridge: (overrides = {}) => new SatoriBridge(config(overrides), 300),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A tools/call result carrying a Satori envelope, as the server sends it. */
export function result(envelope: Record<string, unknown>, isError = false): Record<string, unknown> {
  return {
    content: [{ type: "text", text: JSON.stringify(envelope) }],
    structuredContent: envelope,
    isError,
  };
}

/** The CLI's own error object (usage, transport, JSON-RPC errors). */
export function cliError(code: string, message: string): Record<string, unknown> {
  return { error: { code, message } };
}

/** A tools/list result with tools that take a `path`. */
export function toolsList(names: string[]): Record<string, unknown> {
  return {
    tools: names.map((name) => ({
      name,
      description: `${name} does things. More text.`,
      inputSchema: {
        type: "object",
        properties: { path: { type: "string" }, query: { type: "string" } },
        additionalProperties: false,
      },
    })),
  };
}
