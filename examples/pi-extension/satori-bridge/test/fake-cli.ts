/**
 * A stand-in for `satori-cli` that fails (or succeeds) in exactly the way a
 * test scenario says, so every case of the bridge's classifier can be
 * produced on demand. It reads the scenario file named by
 * `FAKE_SATORI_SCENARIO`, picks the step for this invocation (by command and
 * by the `SATORI_CLI_STDOUT_GUARD` it was given), logs the invocation, and
 * plays the step: stdout, stderr, then an exit code, a signal, or a hang.
 */

import { appendFileSync, readFileSync } from "node:fs";

export interface Step {
  /** A string is written as it is; anything else as one line of JSON. */
  stdout?: unknown;
  stderr?: string;
  exit?: number;
  /** End by this signal instead of exiting. */
  signal?: NodeJS.Signals;
  /** Never finish (until killed). */
  hang?: boolean;
  /** Wait this long before playing the step. */
  delayMs?: number;
}

export interface Scenario {
  /** JSON lines, one per invocation. */
  log: string;
  /**
   * Keys: `<command>:<guard>` where command is `list` or the tool name and
   * guard is the SATORI_CLI_STDOUT_GUARD value (`unset` when absent); `*`
   * matches anything. The most specific key wins.
   */
  steps: Record<string, Step>;
}

export interface LoggedCall {
  argv: string[];
  command: string;
  guard: string;
  guardRecoveryEnv: string | null;
  stdin: string;
  extraEnv: string | null;
}

function main(): void {
  const scenario = JSON.parse(readFileSync(process.env.FAKE_SATORI_SCENARIO ?? "", "utf8")) as Scenario;
  const argv = process.argv.slice(2);
  const callAt = argv.indexOf("call");
  const command = argv.includes("list") ? "list" : callAt >= 0 ? (argv[callAt + 1] ?? "?") : "?";
  const guard = process.env.SATORI_CLI_STDOUT_GUARD ?? "unset";
  const stdin = argv.includes("@-") ? readFileSync(0, "utf8") : "";
  const call: LoggedCall = {
    argv,
    command,
    guard,
    guardRecoveryEnv: process.env.SATORI_CLI_GUARD_RECOVERY ?? null,
    stdin,
    extraEnv: process.env.FAKE_EXTRA ?? null,
  };
  appendFileSync(scenario.log, `${JSON.stringify(call)}\n`);

  const step =
    scenario.steps[`${command}:${guard}`] ??
    scenario.steps[`${command}:*`] ??
    scenario.steps[`*:${guard}`] ??
    scenario.steps["*:*"];
  if (!step) {
    process.stderr.write(`fake satori-cli: no step for ${command}:${guard}\n`);
    process.exit(99);
  }
  if (step.delayMs) {
    setTimeout(() => play(step), step.delayMs);
  } else {
    play(step);
  }
}

function play(step: Step): void {
  if (step.stdout !== undefined) {
    process.stdout.write(typeof step.stdout === "string" ? step.stdout : `${JSON.stringify(step.stdout)}\n`);
  }
  if (step.stderr !== undefined) process.stderr.write(step.stderr);
  if (step.hang) {
    setInterval(() => {}, 1_000);
    return;
  }
  if (step.signal) {
    process.kill(process.pid, step.signal);
    return;
  }
  process.exitCode = step.exit ?? 0;
}

main();
