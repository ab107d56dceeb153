// Types of the Node API of @zokizuan/satori-mcp, as CommonJS (`require`); index.d.mts gives
// the same to ES modules (`import`).

/** What happened to the server's stdout guard over a client's life. */
export interface Recovery {
  /** Server processes started (1, or 2 after a recovery retry). */
  attemptCount: number;
  /** A retry with the guard off was made. */
  guardRecoveryAttempted: boolean;
  /** That retry produced an answer. */
  guardRecoverySucceeded: boolean;
  /** The guard mode of the current (or last) server process. */
  effectiveGuardMode: string;
}

/** How to start the server. */
export interface ClientOptions {
  /** The `satori` executable; default `SATORI_BINARY`, else the platform package's. */
  serverBin?: string;
  /** Budget for starting the server and the MCP handshake (ms, default 180000). */
  startupTimeoutMs?: number;
  /** Budget for each request (ms, default 600000). */
  callTimeoutMs?: number;
  /** `auto` (default): retry a transport failure once with the stdout guard off. */
  guardRecovery?: "auto" | "never";
  /** Extra environment for the server. */
  env?: Record<string, string>;
  /**
   * A running shared server to talk to instead of starting one: `satori --http ADDR` is
   * `http://ADDR/mcp`, `satori --socket PATH` is `unix:///PATH`. Its token, when it was
   * started with one, is read from SATORI_ENDPOINT_TOKEN. When nothing answers there, calls
   * reject with `E_PROTOCOL_FAILURE` and a message saying how to start it; when the server
   * refuses the token (missing or wrong: HTTP 401 or 403), with `E_AUTH` and a message naming
   * SATORI_ENDPOINT_TOKEN and saying whether one was sent. Neither is retried with the stdout
   * guard off (the guard of a server this client did not start is not its to change). The
   * MCP session a client opens there is ended (HTTP DELETE) by `close()`, and by the one-shot
   * functions when their call is done.
   */
  endpoint?: string;
  /**
   * Whether the server writes its `[TELEMETRY]` line per search to this process's stderr.
   * Default: as SATORI_TELEMETRY says (`stderr` or `off`), and off when it is unset.
   */
  telemetry?: boolean;
}

/** Options of one call. */
export interface CallOptions {
  /** Budget for this call (ms); for an index build, for the whole wait. */
  callTimeoutMs?: number;
  /** `manage_index` create/reindex: wait for the build to end (default true). */
  wait?: boolean;
}

/** One content block of a tool result. */
export interface Content {
  type: string;
  text?: string;
  [key: string]: unknown;
}

/** An MCP `tools/call` result; `recovery` is not enumerable (not part of the MCP result). */
export interface ToolResult {
  content: Content[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  readonly recovery: Recovery;
  [key: string]: unknown;
}

/** An MCP tool description from `tools/list`. */
export interface Tool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  [key: string]: unknown;
}

/** The `tools/list` result. */
export interface ToolList {
  tools: Tool[];
  readonly recovery: Recovery;
}

/** The tokens `satori-cli` prints; a rejected call's `error.code` is one of them. */
// Generated from satori-client's error-code table (crates/satori-client/src/codes.rs);
// `cargo test -p satori-client --test error_codes` fails when this type differs from it.
export type ErrorCode =
  | "E_USAGE"
  | "E_SCHEMA_UNSUPPORTED"
  | "E_AUTH"
  | "E_PROTOCOL_FAILURE"
  | "E_STARTUP_TIMEOUT"
  | "E_CALL_TIMEOUT"
  | "E_TOOL_ERROR";

/** How a call fails. For `E_TOOL_ERROR` from a tool result, `envelope` and `result` are set. */
export interface SatoriError extends Error {
  code: ErrorCode;
  /** The envelope's `status` (`not_indexed`, `requires_reindex`, ..., or `error`). */
  status?: string;
  reason?: string;
  /** The call that shows progress or state, when the envelope names one. */
  hintStatus?: unknown;
  envelope?: Record<string, unknown>;
  result?: ToolResult;
  /** For a JSON-RPC error answer: its code and data. */
  rpcCode?: number;
  rpcData?: unknown;
  recovery?: Recovery;
}

/** `tools/list` on a server started for this call. */
export function listTools(options?: ClientOptions): Promise<ToolList>;

/** `tools/call` on a server started for this call; rejects with a `SatoriError`. */
export function callTool(
  name: string,
  args?: Record<string, unknown>,
  options?: CallOptions & ClientOptions,
): Promise<ToolResult>;

/** Keeps one warm server across calls, with its guard-recovery state; calls run in order. */
export class SatoriClient {
  constructor(options?: ClientOptions);
  listTools(): Promise<ToolList>;
  callTool(name: string, args?: Record<string, unknown>, options?: CallOptions): Promise<ToolResult>;
  /** Stops the server (on a shared server: ends this client's session); later calls reject with `E_USAGE`. */
  close(): Promise<void>;
}
