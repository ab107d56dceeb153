/**
 * `/satori-mcp`: can pi reach Satori right now? Runs `satori-cli tools list`
 * through the same wrapper (and recovery) as tool calls, with both timeouts
 * capped and the whole check (a retry and the watchdog included) bounded by
 * `healthTimeoutMs`, and always ends in one clear report, never an exception.
 */

import { describeFailure, type SatoriBridge, type RunResult } from "./bridge.ts";
import { listedTools, type ListedTool } from "./tools.ts";

export interface HealthReport {
  ok: boolean;
  /** One line for a notification. */
  summary: string;
  /** Lines for the details: the command, guard state, sources, attempts. */
  lines: string[];
  tools: ListedTool[];
  result?: RunResult;
}

export async function checkHealth(bridge: SatoriBridge, cwd: string): Promise<HealthReport> {
  const { config } = bridge;
  const commandLine = [config.command, ...config.args].join(" ");
  let result: RunResult;
  try {
    result = await bridge.listTools({ cwd, timeoutCapMs: config.healthTimeoutMs, budgetMs: config.healthTimeoutMs });
  } catch (error) {
    // runCli never rejects; this is a bug guard so the command cannot crash pi.
    const message = error instanceof Error ? error.message : String(error);
    return { ok: false, summary: `Satori unreachable: ${message}`, lines: [`command: ${commandLine}`], tools: [] };
  }
  // After the run: the guard line shows a recovery that just happened.
  const context = [
    `command: ${commandLine}`,
    `guard recovery: ${config.guardRecovery}; the next run starts with SATORI_CLI_STDOUT_GUARD=${bridge.guardMode}` +
      (bridge.isStickyOff ? " (kept off after a successful recovery)" : ""),
    `timeouts for this check: ${Math.min(config.startupTimeoutMs, config.healthTimeoutMs)} ms startup, ` +
      `${Math.min(config.callTimeoutMs, config.healthTimeoutMs)} ms call, ${config.healthTimeoutMs} ms in all`,
    `config: ${config.sources.join(" < ")}`,
  ];
  const attemptLine = `attempts: ${JSON.stringify(result.meta)}`;
  if (result.outcome.kind === "ok") {
    const tools = listedTools(result.outcome.response);
    const recovered = result.meta.guardRecoverySucceeded ? " after guard recovery" : "";
    return {
      ok: true,
      summary: `Satori OK${recovered}: ${tools.length} tools (${tools.map((t) => t.name).join(", ")})`,
      lines: [...context, attemptLine],
      tools,
      result,
    };
  }
  const [first] = describeFailure(result).split("\n");
  return {
    ok: false,
    summary: `Satori unreachable: ${first}`,
    lines: [...context, attemptLine],
    tools: [],
    result,
  };
}
