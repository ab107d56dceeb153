// The Node API of Satori: `listTools`, `callTool` and `SatoriClient`.
//
// The native addon (in this platform's package) starts the packaged `satori` server and
// speaks MCP to it; this file finds the two, and turns the addon's outcome objects into
// resolved values or `Error`s whose `code` is the token `satori-cli` prints (`E_TOOL_ERROR`,
// `E_PROTOCOL_FAILURE`, ...). The addon is loaded on first use, so `require` never fails:
// a missing platform package rejects the first call with a message naming it.
//
// The server's stderr is this process's: its `[TELEMETRY]` line per search is turned off here
// (SATORI_TELEMETRY=off for the server) unless the caller asks for it with `telemetry: true`
// or sets SATORI_TELEMETRY itself. A library does not write to its caller's stderr unasked.
"use strict";

const { packagedAddon, packagedBinary, ensureExecutable, usageError } = require("./lib/platform");

let native;

function addon() {
  if (!native) {
    // SATORI_NODE_ADDON: an addon built from source, for a platform with no package.
    const file = process.env.SATORI_NODE_ADDON || packagedAddon();
    try {
      native = require(file);
    } catch (error) {
      throw Object.assign(usageError(`cannot load the Satori addon ${file}: ${error.message}`), { cause: error });
    }
  }
  return native;
}

/** The server to start: the caller's, else SATORI_BINARY, else the packaged one. */
function serverBin(options) {
  if (options && options.serverBin) return options.serverBin;
  if (process.env.SATORI_BINARY) return process.env.SATORI_BINARY;
  const file = packagedBinary("satori", "node");
  ensureExecutable(file);
  return file;
}

const CLIENT_KEYS = ["serverBin", "startupTimeoutMs", "callTimeoutMs", "guardRecovery", "env", "endpoint"];
const CALL_KEYS = ["callTimeoutMs", "wait"];

function pick(options, keys) {
  const out = {};
  for (const key of keys) {
    if (options && options[key] !== undefined) out[key] = options[key];
  }
  return out;
}

/**
 * The server's extra environment: the caller's, with telemetry as `telemetry` says, else as
 * this process's SATORI_TELEMETRY says (the server inherits it), else off.
 */
function serverEnv(options) {
  const env = { ...(options && options.env) };
  if (env.SATORI_TELEMETRY === undefined) {
    const asked = options && options.telemetry;
    if (asked !== undefined) env.SATORI_TELEMETRY = asked ? "stderr" : "off";
    else if (process.env.SATORI_TELEMETRY === undefined) env.SATORI_TELEMETRY = "off";
  }
  return env;
}

function clientOptions(options) {
  if (options !== undefined && (options === null || typeof options !== "object")) {
    throw usageError("E_USAGE options must be an object");
  }
  if (options && options.telemetry !== undefined && typeof options.telemetry !== "boolean") {
    throw usageError("E_USAGE telemetry must be true or false");
  }
  // A shared server (`endpoint`) is already running: no executable is looked for.
  const bin = options && options.endpoint ? undefined : serverBin(options);
  return { ...pick(options, CLIENT_KEYS), env: serverEnv(options), serverBin: bin };
}

/** Resolve a success to its value (with the recovery report on it); throw a failure. */
function unwrap(outcome) {
  if (outcome.ok) {
    const value = outcome.value;
    if (value && typeof value === "object") {
      Object.defineProperty(value, "recovery", { value: outcome.recovery, enumerable: false });
    }
    return value;
  }
  const error = new Error(outcome.message);
  for (const [key, value] of Object.entries(outcome)) {
    if (key !== "ok" && key !== "message" && value !== undefined && value !== null) error[key] = value;
  }
  throw error;
}

/** Turn a synchronous throw (a missing platform package) into a rejection. */
async function guarded(run) {
  return run();
}

/** `tools/list` on a server started for this call. */
function listTools(options) {
  return guarded(async () => unwrap(await addon().listTools(clientOptions(options))));
}

/** `tools/call` on a server started for this call. */
function callTool(name, args, options) {
  return guarded(async () => {
    if (typeof name !== "string" || name === "") throw usageError("E_USAGE the tool name must be a non-empty string");
    const client = clientOptions(options);
    return unwrap(await addon().callTool(name, args ?? null, pick(options, CALL_KEYS), client));
  });
}

/** A client that keeps one warm server across calls (and its guard-recovery state). */
class SatoriClient {
  #native;

  constructor(options) {
    const settings = clientOptions(options);
    try {
      this.#native = new (addon().SatoriClient)(settings);
    } catch (error) {
      throw Object.assign(usageError(error.message), { cause: error });
    }
  }

  listTools() {
    return guarded(async () => unwrap(await this.#native.listTools()));
  }

  callTool(name, args, options) {
    return guarded(async () => {
      if (typeof name !== "string" || name === "") throw usageError("E_USAGE the tool name must be a non-empty string");
      return unwrap(await this.#native.callTool(name, args ?? null, pick(options, CALL_KEYS)));
    });
  }

  close() {
    return this.#native.close();
  }
}

module.exports = { listTools, callTool, SatoriClient };
