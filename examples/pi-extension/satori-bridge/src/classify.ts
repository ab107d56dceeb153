/**
 * What one `satori-cli` run produced, and whether guard recovery may retry it
 * (the recovery policy satori-cli documents under `guardRecovery` in `satori-cli help`).
 *
 * The rule underneath: a retry with `SATORI_CLI_STDOUT_GUARD=off` can only
 * help when the stream between the CLI and its server broke before any answer
 * arrived. An answer of any kind (a result, `isError`, a non-ok envelope such
 * as `not_ready`/`indexing`, a JSON-RPC error) is the server speaking, and a
 * retry could only repeat it, or repeat a side effect. So the order of the
 * checks matters: a parseable answer wins over every exit code.
 */

import type { AttemptResult } from "./cli.ts";
import type { GuardMode, GuardRecovery } from "./config.ts";

/** The MCP result shapes the CLI prints on stdout. */
export interface ToolResponse {
  content?: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
  tools?: unknown[];
  [key: string]: unknown;
}

export type Outcome =
  /** Exit 0 with a parseable answer whose envelope (if any) is ok. */
  | { kind: "ok"; exitCode: number | null; response: ToolResponse; envelope?: Envelope }
  /**
   * A parseable answer that reports a failure: `isError`, a non-ok envelope
   * status, or a non-zero exit next to an answer (an index build that ended
   * unsearchable).
   */
  | {
      kind: "tool_error";
      exitCode: number | null;
      response: ToolResponse;
      envelope?: Envelope;
      isError: boolean;
    }
  /** The CLI's own error object for an answer that is a JSON-RPC error. */
  | { kind: "rpc_error"; exitCode: number | null; code: string; message: string }
  /** Exit 2, or a usage token: the command line or setup is wrong. */
  | { kind: "usage"; exitCode: number | null; code: string; message: string }
  /**
   * The stream broke with no answer: exit 3, a crash, empty or unparseable
   * stdout, or the protocol-failure signatures on stderr.
   */
  | {
      kind: "transport";
      exitCode: number | null;
      code: string;
      message: string;
      /** "connect" only when the request was certainly never sent. */
      stage: "connect" | "unknown";
      /** The failure is one a different guard mode cannot change. */
      guardIndependent: boolean;
    }
  /** The CLI itself could not be started. */
  | { kind: "unavailable"; exitCode: null; code: string; message: string }
  /** The caller cancelled. */
  | { kind: "aborted"; exitCode: number | null; code: string; message: string }
  /** Output that fits none of the above, with no protocol-failure signature. */
  | { kind: "unexpected"; exitCode: number | null; code: string; message: string };

/** The Satori JSON envelope carried in a tool result. */
export interface Envelope {
  status?: string;
  reason?: string;
  state?: string;
  freshnessDecision?: { mode?: string };
  [key: string]: unknown;
}

/** Usage tokens of the CLI's error object (`satori-cli help`, exit codes). */
const USAGE_TOKENS = ["E_USAGE", "E_SCHEMA_UNSUPPORTED"];
const RETRYABLE_SIGNATURES = [/^E_PROTOCOL_FAILURE\b/m, /\[STDOUT_BLOCKED/];

/**
 * Messages of failures that happen before `tools/call` is sent: starting the
 * server, the MCP handshake, and the `tools/list` the CLI makes first. Only
 * these make a retry of a side-effecting tool safe.
 */
const PRE_DISPATCH_PREFIXES = [
  "MCP handshake failed",
  "server did not complete the MCP handshake",
  "tools/list",
  "server pipes were not created",
  "failed to start server",
];
/** Failures no guard mode can cause: the server executable cannot run. */
const GUARD_INDEPENDENT_PREFIXES = ["failed to start server"];

export function classify(attempt: AttemptResult): Outcome {
  const exitCode = attempt.exitCode;
  if (attempt.aborted) {
    return { kind: "aborted", exitCode, code: "E_ABORTED", message: "cancelled" };
  }
  if (attempt.spawnError) {
    const { code, message } = attempt.spawnError;
    return {
      kind: "unavailable",
      exitCode: null,
      code: "E_CLI_UNAVAILABLE",
      message: code === "ENOENT" ? `command not found (${message})` : message,
    };
  }

  const text = attempt.stdout.trim();
  let doc: unknown;
  let parseError: string | undefined;
  if (text !== "") {
    try {
      doc = JSON.parse(text);
    } catch (error) {
      parseError = (error as Error).message;
    }
  }

  // 1. A parseable answer: never retried, whatever the exit code says.
  if (isToolResponse(doc)) {
    const envelope = envelopeOf(doc);
    const failed =
      doc.isError === true ||
      (envelope?.status !== undefined && envelope.status !== "ok") ||
      (exitCode !== 0 && exitCode !== null);
    if (!failed) return { kind: "ok", exitCode, response: doc, ...(envelope ? { envelope } : {}) };
    return {
      kind: "tool_error",
      exitCode,
      response: doc,
      ...(envelope ? { envelope } : {}),
      isError: doc.isError === true,
    };
  }

  // 2. The CLI's own error object: its token says what failed.
  const cliError = cliErrorOf(doc);
  if (cliError && cliError.code === "E_TOOL_ERROR") {
    return { kind: "rpc_error", exitCode, ...cliError };
  }
  if (exitCode === 2 || (cliError && USAGE_TOKENS.includes(cliError.code))) {
    return {
      kind: "usage",
      exitCode,
      code: cliError?.code ?? "E_USAGE",
      message: cliError?.message ?? (lastLine(attempt.stderr) || "usage error"),
    };
  }

  // 3. No answer: is it the broken-stream class that recovery is for?
  if (attempt.watchdogFired) {
    return transport(exitCode, "E_CALL_TIMEOUT", "satori-cli did not exit in time and was killed");
  }
  if (exitCode === 3 || (exitCode === null && attempt.exitSignal !== null)) {
    const code = cliError?.code ?? tokenOf(attempt.stderr) ?? "E_PROTOCOL_FAILURE";
    const message =
      cliError?.message ??
      (exitCode === null
        ? `satori-cli was killed by ${attempt.exitSignal}`
        : lastLine(attempt.stderr) || "transport failure");
    return transport(exitCode, code, message);
  }
  const signature = RETRYABLE_SIGNATURES.some((re) => re.test(attempt.stderr));
  if (text === "" || parseError !== undefined || (signature && !cliError)) {
    const why =
      text === ""
        ? "satori-cli printed nothing on stdout"
        : parseError !== undefined
          ? `satori-cli stdout is not JSON (${parseError})`
          : "protocol failure reported on stderr";
    return transport(exitCode, tokenOf(attempt.stderr) ?? "E_PROTOCOL_FAILURE", why);
  }
  if (cliError && /^E_(PROTOCOL_FAILURE|STARTUP_TIMEOUT|CALL_TIMEOUT)$/.test(cliError.code)) {
    return transport(exitCode, cliError.code, cliError.message);
  }
  return {
    kind: "unexpected",
    exitCode,
    code: cliError?.code ?? "E_UNEXPECTED_OUTPUT",
    message: cliError?.message ?? `satori-cli exited ${exitCode} with output that is not a tool result`,
  };
}

function transport(exitCode: number | null, code: string, message: string): Outcome {
  const preDispatch =
    code === "E_STARTUP_TIMEOUT" || PRE_DISPATCH_PREFIXES.some((p) => message.startsWith(p));
  return {
    kind: "transport",
    exitCode,
    code,
    message,
    stage: preDispatch ? "connect" : "unknown",
    guardIndependent: GUARD_INDEPENDENT_PREFIXES.some((p) => message.startsWith(p)),
  };
}

/** Tools whose calls change state: a retry after dispatch could repeat it. */
export const SIDE_EFFECT_TOOLS: readonly string[] = ["manage_index"];

export interface RetryContext {
  policy: GuardRecovery;
  /** Guard mode the failed attempt ran with. */
  guardMode: GuardMode;
  /** The tool called, or undefined for `tools list`. */
  tool: string | undefined;
}

/** The retry decision, with the reason (shown in debug details). */
export function retryDecision(outcome: Outcome, ctx: RetryContext): { retry: boolean; why: string } {
  if (ctx.policy === "never") return { retry: false, why: "guard recovery is never" };
  if (ctx.guardMode === "off") return { retry: false, why: "the guard is already off" };
  if (outcome.kind !== "transport") return { retry: false, why: `${outcome.kind} is not a transport failure` };
  if (outcome.guardIndependent) return { retry: false, why: "the server cannot be started at all" };
  if (ctx.tool !== undefined && SIDE_EFFECT_TOOLS.includes(ctx.tool) && outcome.stage !== "connect") {
    return { retry: false, why: `${ctx.tool} may have been dispatched; not repeating a side effect` };
  }
  return { retry: true, why: `${outcome.code} before any answer` };
}

function isToolResponse(doc: unknown): doc is ToolResponse {
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return false;
  const d = doc as Record<string, unknown>;
  return Array.isArray(d.content) || typeof d.isError === "boolean" || Array.isArray(d.tools);
}

/**
 * The Satori envelope: `structuredContent` when the server sends it, else the
 * JSON in the first text content item.
 */
export function envelopeOf(response: ToolResponse): Envelope | undefined {
  const structured = response.structuredContent;
  if (typeof structured === "object" && structured !== null && !Array.isArray(structured)) {
    return structured as Envelope;
  }
  const first = response.content?.[0] as { type?: unknown; text?: unknown } | undefined;
  if (first?.type === "text" && typeof first.text === "string") {
    try {
      const parsed: unknown = JSON.parse(first.text);
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
        return parsed as Envelope;
      }
    } catch {
      // Plain text content: not an envelope.
    }
  }
  return undefined;
}

function cliErrorOf(doc: unknown): { code: string; message: string } | undefined {
  if (typeof doc !== "object" || doc === null) return undefined;
  const error = (doc as { error?: unknown }).error;
  if (typeof error !== "object" || error === null) return undefined;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code !== "string") return undefined;
  return { code, message: typeof message === "string" ? message : code };
}

/** The first stable token at the start of a stderr line, if any. */
function tokenOf(stderr: string): string | undefined {
  return /^(E_[A-Z_]+)\b/m.exec(stderr)?.[1];
}

function lastLine(text: string): string {
  const lines = text.trim().split(/\r?\n/);
  return lines[lines.length - 1] ?? "";
}
