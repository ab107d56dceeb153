/**
 * Bridge settings: defaults, then the global config file, then the project
 * config file, then environment variables (each later source overrides the
 * earlier ones key by key). Every value is validated here, so a typo or a
 * wrong type is reported once, with the file and key, instead of surfacing as
 * a confusing failure of a tool call later.
 */

import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";

export type GuardRecovery = "auto" | "never";
export type GuardMode = "drop" | "redirect" | "off";

export const GUARD_MODES: readonly GuardMode[] = ["drop", "redirect", "off"];
/** The server's own default when `SATORI_CLI_STDOUT_GUARD` is unset. */
export const DEFAULT_GUARD_MODE: GuardMode = "drop";

export interface BridgeConfig {
  /** Executable that behaves like `satori-cli` (a name on PATH or a path). */
  command: string;
  /** Arguments placed before the CLI's own (e.g. `npx` needs the package). */
  args: string[];
  startupTimeoutMs: number;
  callTimeoutMs: number;
  /** Cap on both timeouts for tool discovery and `/satori-mcp`. */
  healthTimeoutMs: number;
  guardRecovery: GuardRecovery;
  /** Guard mode of the first attempt; undefined leaves the server default. */
  stdoutGuard: GuardMode | undefined;
  /** Extra environment for the CLI and the server it starts. */
  env: Record<string, string>;
  /** Text returned to the model is cut at this many bytes. */
  maxOutputBytes: number;
  debug: boolean;
  /** The files and variables that contributed, in order (for `/satori-mcp`). */
  sources: string[];
}

/** Environment variables the bridge reads. */
export const ENV = {
  config: "SATORI_BRIDGE_CONFIG",
  command: "SATORI_BRIDGE_COMMAND",
  argsJson: "SATORI_BRIDGE_ARGS_JSON",
  startupTimeoutMs: "SATORI_BRIDGE_STARTUP_TIMEOUT_MS",
  callTimeoutMs: "SATORI_BRIDGE_CALL_TIMEOUT_MS",
  healthTimeoutMs: "SATORI_BRIDGE_HEALTH_TIMEOUT_MS",
  maxOutputBytes: "SATORI_BRIDGE_MAX_OUTPUT_BYTES",
  debug: "SATORI_BRIDGE_DEBUG",
  // Shared with satori-cli and the server: the same names and values.
  guardRecovery: "SATORI_CLI_GUARD_RECOVERY",
  stdoutGuard: "SATORI_CLI_STDOUT_GUARD",
  // pi's own variable for its agent directory.
  piAgentDir: "PI_CODING_AGENT_DIR",
} as const;

/** Variables the bridge itself decides for the child; `env` may not set them. */
const RESERVED_CHILD_ENV = [ENV.guardRecovery, ENV.stdoutGuard];

export const DEFAULTS: Omit<BridgeConfig, "sources"> = {
  command: "satori-cli",
  args: [],
  startupTimeoutMs: 180_000,
  callTimeoutMs: 600_000,
  healthTimeoutMs: 15_000,
  guardRecovery: "auto",
  stdoutGuard: undefined,
  env: {},
  maxOutputBytes: 50 * 1024,
  debug: false,
};

export class ConfigError extends Error {
  override name = "ConfigError";
}

const FILE_KEYS = [
  "command",
  "args",
  "startupTimeoutMs",
  "callTimeoutMs",
  "healthTimeoutMs",
  "guardRecovery",
  "stdoutGuard",
  "env",
  "maxOutputBytes",
  "debug",
] as const;
type FileKey = (typeof FILE_KEYS)[number];
type Partial_ = Partial<Omit<BridgeConfig, "sources">>;

export interface ConfigInputs {
  env: NodeJS.ProcessEnv;
  /** pi's working directory: the project config is `<cwd>/.pi/satori-bridge.json`. */
  cwd: string;
  /** Defaults to pi's rule: `$PI_CODING_AGENT_DIR` or `~/.pi/agent`. */
  agentDir?: string;
  readFile?: (path: string) => string | undefined;
}

/** The config files consulted, in increasing precedence. */
export function configPaths(inputs: ConfigInputs): { path: string; required: boolean }[] {
  const explicit = nonEmpty(inputs.env[ENV.config]);
  if (explicit !== undefined) {
    return [{ path: resolve(inputs.cwd, explicit), required: true }];
  }
  const agentDir =
    inputs.agentDir ?? nonEmpty(inputs.env[ENV.piAgentDir]) ?? join(homedir(), ".pi", "agent");
  return [
    { path: join(agentDir, "extensions", "satori-bridge", "config.json"), required: false },
    { path: join(inputs.cwd, ".pi", "satori-bridge.json"), required: false },
  ];
}

export function loadConfig(inputs: ConfigInputs): BridgeConfig {
  const read = inputs.readFile ?? readIfExists;
  const config: BridgeConfig = { ...DEFAULTS, args: [], env: {}, sources: ["defaults"] };
  for (const { path, required } of configPaths(inputs)) {
    const text = read(path);
    if (text === undefined) {
      if (required) {
        throw new ConfigError(`${ENV.config}=${path}: the file does not exist or cannot be read`);
      }
      continue;
    }
    Object.assign(config, parseFile(path, text));
    config.sources.push(path);
  }
  const fromEnv = parseEnv(inputs.env, inputs.cwd);
  if (Object.keys(fromEnv).length > 0) {
    Object.assign(config, fromEnv);
    config.sources.push("environment");
  }
  return config;
}

function readIfExists(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new ConfigError(`${path}: cannot be read: ${(error as Error).message}`);
  }
}

function parseFile(path: string, text: string): Partial_ {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${path}: not valid JSON: ${(error as Error).message}`);
  }
  if (!isPlainObject(raw)) {
    throw new ConfigError(`${path}: must hold a JSON object`);
  }
  const out: Partial_ = {};
  const where = (key: string) => `${path}: "${key}"`;
  for (const [key, value] of Object.entries(raw)) {
    if (!(FILE_KEYS as readonly string[]).includes(key)) {
      throw new ConfigError(`${path}: unknown key "${key}" (known keys: ${FILE_KEYS.join(", ")})`);
    }
    assign(out, key as FileKey, value, where(key), dirname(path));
  }
  return out;
}

function parseEnv(env: NodeJS.ProcessEnv, cwd: string): Partial_ {
  const out: Partial_ = {};
  const take = (name: string) => nonEmpty(env[name]);
  const command = take(ENV.command);
  if (command !== undefined) assign(out, "command", command, ENV.command, cwd);
  const argsJson = take(ENV.argsJson);
  if (argsJson !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(argsJson);
    } catch {
      throw new ConfigError(`${ENV.argsJson} must be a JSON array of strings, got ${argsJson}`);
    }
    assign(out, "args", parsed, ENV.argsJson, cwd);
  }
  const numbers: [string, FileKey][] = [
    [ENV.startupTimeoutMs, "startupTimeoutMs"],
    [ENV.callTimeoutMs, "callTimeoutMs"],
    [ENV.healthTimeoutMs, "healthTimeoutMs"],
    [ENV.maxOutputBytes, "maxOutputBytes"],
  ];
  for (const [name, key] of numbers) {
    const text = take(name);
    if (text === undefined) continue;
    if (!/^\d+$/.test(text)) {
      throw new ConfigError(`${name} must be a positive integer (milliseconds or bytes), got ${text}`);
    }
    assign(out, key, Number(text), name, cwd);
  }
  const debug = take(ENV.debug);
  if (debug !== undefined) {
    const word = debug.toLowerCase();
    if (!["1", "true", "0", "false"].includes(word)) {
      throw new ConfigError(`${ENV.debug} must be 1, true, 0 or false, got ${debug}`);
    }
    out.debug = word === "1" || word === "true";
  }
  const recovery = take(ENV.guardRecovery);
  if (recovery !== undefined) assign(out, "guardRecovery", recovery, ENV.guardRecovery, cwd);
  const guard = take(ENV.stdoutGuard);
  if (guard !== undefined) assign(out, "stdoutGuard", guard, ENV.stdoutGuard, cwd);
  return out;
}

/** Validate one value and store it; `where` names it in errors. */
function assign(out: Partial_, key: FileKey, value: unknown, where: string, baseDir: string): void {
  const fail = (expected: string): never => {
    throw new ConfigError(`${where} must be ${expected}, got ${JSON.stringify(value)}`);
  };
  switch (key) {
    case "command": {
      if (typeof value !== "string" || value.trim() === "") return fail("a non-empty string");
      // A relative path (not a bare name looked up on PATH) is relative to
      // the file that names it, so a project config can point into the project.
      out.command = value.includes("/") && !isAbsolute(value) ? resolve(baseDir, value) : value;
      return;
    }
    case "args":
      if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) {
        return fail("an array of strings");
      }
      out.args = [...value];
      return;
    case "startupTimeoutMs":
    case "callTimeoutMs":
    case "healthTimeoutMs":
    case "maxOutputBytes":
      if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
        return fail("a positive integer");
      }
      out[key] = value;
      return;
    case "guardRecovery":
      if (value !== "auto" && value !== "never") return fail(`"auto" or "never"`);
      out.guardRecovery = value;
      return;
    case "stdoutGuard":
      if (!GUARD_MODES.includes(value as GuardMode)) return fail(`one of ${GUARD_MODES.join(", ")}`);
      out.stdoutGuard = value as GuardMode;
      return;
    case "env": {
      if (!isPlainObject(value) || !Object.values(value).every((v) => typeof v === "string")) {
        return fail("an object of string values");
      }
      for (const name of RESERVED_CHILD_ENV) {
        if (name in value) {
          throw new ConfigError(
            `${where} may not set ${name}: use "${name === ENV.stdoutGuard ? "stdoutGuard" : "guardRecovery"}"`,
          );
        }
      }
      out.env = { ...(value as Record<string, string>) };
      return;
    }
    case "debug":
      if (typeof value !== "boolean") return fail("true or false");
      out.debug = value;
      return;
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
