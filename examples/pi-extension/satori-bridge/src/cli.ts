/**
 * One run of `satori-cli`: spawn it, feed the arguments on stdin, collect
 * stdout (one JSON document by contract) and stderr, and make sure the process
 * is gone when we return, whatever happened (exit, crash, hang, abort).
 *
 * Nothing here interprets the output; that is `classify.ts`.
 */

import { spawn } from "node:child_process";

export interface Invocation {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Written to the CLI's stdin (the tool arguments for `--args-json @-`). */
  stdin?: string;
  /**
   * Backstop for a CLI that does not stop by itself; the CLI enforces its own
   * timeouts, this only guarantees the bridge never waits forever.
   */
  watchdogMs: number;
  signal?: AbortSignal;
  /** Called with each complete stderr line as it arrives (progress). */
  onStderrLine?: (line: string) => void;
}

export interface AttemptResult {
  /** null when the process ended by a signal or never started. */
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  stdout: string;
  /** The last part of stderr (bounded: the server's logs pass through it). */
  stderr: string;
  /** The process could not be started (ENOENT, EACCES, ...). */
  spawnError?: { code: string | undefined; message: string };
  /** We killed it because the watchdog expired. */
  watchdogFired: boolean;
  /** We killed it because the caller aborted. */
  aborted: boolean;
}

const STDERR_KEEP_BYTES = 64 * 1024;
/** Time between SIGTERM (the CLI then kills its server) and SIGKILL. */
const KILL_GRACE_MS = 3_000;

export function runCli(inv: Invocation): Promise<AttemptResult> {
  return new Promise((resolvePromise) => {
    const stdoutChunks: Buffer[] = [];
    let stderrTail = "";
    let pendingLine = "";
    let watchdogFired = false;
    let aborted = false;
    let settled = false;
    let spawnError: AttemptResult["spawnError"];

    if (inv.signal?.aborted) {
      resolvePromise({
        exitCode: null,
        exitSignal: null,
        stdout: "",
        stderr: "",
        watchdogFired: false,
        aborted: true,
      });
      return;
    }

    const child = spawn(inv.command, inv.args, {
      cwd: inv.cwd,
      env: inv.env,
      stdio: ["pipe", "pipe", "pipe"],
      windowsHide: true,
    });

    let killTimer: NodeJS.Timeout | undefined;
    const terminate = () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      killTimer ??= setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS);
      killTimer.unref();
    };
    const watchdog = setTimeout(() => {
      watchdogFired = true;
      terminate();
    }, inv.watchdogMs);
    watchdog.unref();
    const onAbort = () => {
      aborted = true;
      terminate();
    };
    inv.signal?.addEventListener("abort", onAbort, { once: true });

    child.stdout.on("data", (chunk: Buffer) => stdoutChunks.push(chunk));
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      stderrTail = (stderrTail + chunk).slice(-STDERR_KEEP_BYTES);
      if (inv.onStderrLine) {
        const lines = (pendingLine + chunk).split(/\r?\n|\r/);
        pendingLine = lines.pop() ?? "";
        for (const line of lines) if (line !== "") inv.onStderrLine(line);
      }
    });
    // The CLI may exit before reading its stdin (a usage error, a crash):
    // the resulting EPIPE is not our failure to report, its exit status is.
    child.stdin.on("error", () => {});
    child.stdin.end(inv.stdin ?? "");

    child.on("error", (error: NodeJS.ErrnoException) => {
      // Only a failure to start: other errors come with an exit as well.
      if (child.pid === undefined) {
        spawnError = { code: error.code, message: error.message };
        finish(null, null);
      }
    });
    child.on("close", (code, signal) => finish(code, signal));

    function finish(code: number | null, signal: NodeJS.Signals | null) {
      if (settled) return;
      settled = true;
      clearTimeout(watchdog);
      if (killTimer) clearTimeout(killTimer);
      inv.signal?.removeEventListener("abort", onAbort);
      if (pendingLine !== "" && inv.onStderrLine) inv.onStderrLine(pendingLine);
      resolvePromise({
        exitCode: code,
        exitSignal: signal,
        stdout: Buffer.concat(stdoutChunks).toString("utf8"),
        stderr: stderrTail,
        ...(spawnError ? { spawnError } : {}),
        watchdogFired,
        aborted,
      });
    }
  });
}
