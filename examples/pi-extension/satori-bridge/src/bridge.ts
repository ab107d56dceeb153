/**
 * The execution wrapper shared by tool calls, tool discovery and the health
 * command: build the `satori-cli` command line, run it, classify the outcome,
 * retry once with the stdout guard off when the recovery policy allows it, and keep the
 * guard off for the rest of this bridge's life once that retry has worked.
 *
 * The bridge applies the recovery policy itself rather than passing
 * `--guard-recovery auto` to the CLI, because the CLI's sticky state lasts one
 * invocation and the bridge's must last across all of them; the CLI is told
 * `--guard-recovery never` so that the two layers never retry the same call.
 */

import { runCli, type AttemptResult } from "./cli.ts";
import { classify, retryDecision, type Outcome, type ToolResponse } from "./classify.ts";
import { DEFAULT_GUARD_MODE, ENV, type BridgeConfig, type GuardMode } from "./config.ts";

/** The attempt record every bridge result carries (the same fields as satori-cli's). */
export interface AttemptMeta {
  attemptCount: number;
  guardRecoveryAttempted: boolean;
  guardRecoverySucceeded: boolean;
  effectiveGuardMode: GuardMode;
}

export interface AttemptRecord {
  guardMode: GuardMode;
  outcome: Outcome;
}

export interface RunResult {
  /** The outcome that decides the result: the last attempt's. */
  outcome: Outcome;
  meta: AttemptMeta;
  attempts: AttemptRecord[];
  /** Why a retry was or was not made after the first attempt. */
  retryWhy: string;
}

export interface RunOptions {
  signal?: AbortSignal;
  cwd: string;
  onStderrLine?: (line: string) => void;
  /** Clamp both CLI timeouts (discovery and the health command). */
  timeoutCapMs?: number;
  /**
   * Bound on the whole run: every attempt, a retry and the watchdog's slack
   * included (the health command promises an answer within its timeout, even
   * from a command that never starts the CLI, such as `npx` waiting for a
   * registry it cannot reach).
   */
  budgetMs?: number;
}

/** A failure of a bridge call that is not a tool answer. */
export class BridgeError extends Error {
  override name = "BridgeError";
  constructor(
    message: string,
    readonly code: string,
    readonly result: RunResult,
  ) {
    super(message);
  }
}

export class SatoriBridge {
  /** Set after a successful recovery: every later run starts with the guard off. */
  private stickyOff = false;

  /**
   * `watchdogSlackMs`: how long past its own budget the CLI may take to
   * report a timeout before the bridge kills it.
   */
  constructor(
    readonly config: BridgeConfig,
    private readonly watchdogSlackMs = 10_000,
  ) {}

  /** The guard mode the next run starts with. */
  get guardMode(): GuardMode {
    return this.stickyOff ? "off" : (this.config.stdoutGuard ?? DEFAULT_GUARD_MODE);
  }

  get isStickyOff(): boolean {
    return this.stickyOff;
  }

  /** `satori-cli tools list`. */
  listTools(options: RunOptions): Promise<RunResult> {
    return this.run(["tools", "list"], undefined, undefined, options);
  }

  /** `satori-cli tool call <tool> --args-json @-` with `args` on stdin. */
  callTool(tool: string, args: Record<string, unknown>, options: RunOptions): Promise<RunResult> {
    return this.run(["tool", "call", tool, "--args-json", "@-"], tool, JSON.stringify(args), options);
  }

  private async run(
    command: string[],
    tool: string | undefined,
    stdin: string | undefined,
    options: RunOptions,
  ): Promise<RunResult> {
    const firstMode = this.guardMode;
    const attempts: AttemptRecord[] = [];
    const end = options.budgetMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.budgetMs;
    const first = await this.attempt(command, firstMode, stdin, options, end);
    attempts.push({ guardMode: firstMode, outcome: first });

    let decision = retryDecision(first, { policy: this.config.guardRecovery, guardMode: firstMode, tool });
    if (decision.retry && Date.now() >= end) {
      decision = { retry: false, why: `${decision.why}; not retried: the run's ${options.budgetMs} ms are spent` };
    }
    if (!decision.retry) {
      return {
        outcome: first,
        attempts,
        retryWhy: decision.why,
        meta: {
          attemptCount: 1,
          guardRecoveryAttempted: false,
          guardRecoverySucceeded: false,
          effectiveGuardMode: firstMode,
        },
      };
    }

    const second = await this.attempt(command, "off", stdin, options, end);
    attempts.push({ guardMode: "off", outcome: second });
    // "Succeeded" means the retry got an answer (as the CLI reports it): the
    // stream works with the guard off, even if the answer is a tool error.
    const answered = second.kind === "ok" || second.kind === "tool_error" || second.kind === "rpc_error";
    if (answered) this.stickyOff = true;
    return {
      outcome: second,
      attempts,
      retryWhy: decision.why,
      meta: {
        attemptCount: 2,
        guardRecoveryAttempted: true,
        guardRecoverySucceeded: answered,
        effectiveGuardMode: "off",
      },
    };
  }

  private async attempt(
    command: string[],
    guardMode: GuardMode,
    stdin: string | undefined,
    options: RunOptions,
    end: number,
  ): Promise<Outcome> {
    // What is left of the run's budget bounds this attempt, its watchdog included.
    const left = Math.max(1, end - Date.now());
    const cap = Math.min(options.timeoutCapMs ?? Number.POSITIVE_INFINITY, left);
    const startup = Math.min(this.config.startupTimeoutMs, cap);
    const call = Math.min(this.config.callTimeoutMs, cap);
    const args = [
      ...this.config.args,
      "--guard-recovery",
      "never",
      "--startup-timeout-ms",
      String(startup),
      "--call-timeout-ms",
      String(call),
      ...(this.config.debug ? ["--debug"] : []),
      ...command,
    ];
    const env: NodeJS.ProcessEnv = { ...process.env, ...this.config.env };
    delete env[ENV.guardRecovery];
    // The configured mode is passed explicitly; an unset one stays unset so
    // the server keeps its own default.
    if (guardMode === "off" || this.config.stdoutGuard !== undefined) {
      env[ENV.stdoutGuard] = guardMode;
    } else {
      delete env[ENV.stdoutGuard];
    }
    const result: AttemptResult = await runCli({
      command: this.config.command,
      args,
      env,
      cwd: options.cwd,
      ...(stdin !== undefined ? { stdin } : {}),
      // The CLI's worst case: startup, then the call, then (manage_index
      // create|reindex) a wait as long as the call budget; plus slack to
      // let it report its own timeout first.
      watchdogMs: Math.min(startup + 2 * call + this.watchdogSlackMs, left),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onStderrLine ? { onStderrLine: options.onStderrLine } : {}),
    });
    return classify(result);
  }
}

/** The answer of a run, or a BridgeError describing every attempt. */
export function answerOf(result: RunResult): ToolResponse {
  const { outcome } = result;
  if (outcome.kind === "ok" || outcome.kind === "tool_error") return outcome.response;
  throw new BridgeError(describeFailure(result), outcome.code, result);
}

/**
 * One deterministic text for a failed run: the token, each attempt with its
 * guard mode, and the attempt metadata as JSON on the last line.
 */
export function describeFailure(result: RunResult): string {
  const { outcome, attempts, meta } = result;
  const each = () =>
    attempts.map((a, i) => `attempt ${i + 1} (${ENV.stdoutGuard}=${a.guardMode}): ${line(a.outcome)}`).join("; ");
  let head: string;
  if (attempts.length < 2) {
    head = line(outcome);
  } else if (meta.guardRecoverySucceeded) {
    head = `${line(outcome)}; answered after guard recovery: ${each()}`;
  } else {
    head = `${codeOf(outcome)}: satori-cli failed twice; guard recovery did not help: ${each()}`;
  }
  return `${head}\n[satori-bridge] ${JSON.stringify(meta)}`;
}

/** The token of an outcome; an answer that still failed is a tool error. */
export function codeOf(outcome: Outcome): string {
  return outcome.kind === "ok" || outcome.kind === "tool_error" ? "E_TOOL_ERROR" : outcome.code;
}

function line(outcome: Outcome): string {
  const exit = outcome.exitCode === null ? "" : ` (exit ${outcome.exitCode})`;
  switch (outcome.kind) {
    case "ok":
    case "tool_error":
      return `${codeOf(outcome)}: answered${exit}`;
    case "unavailable":
      return `${outcome.code}: satori-cli could not be started: ${outcome.message}`;
    default:
      return `${outcome.code}: ${outcome.message}${exit}`;
  }
}
