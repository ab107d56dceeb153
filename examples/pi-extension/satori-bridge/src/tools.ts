/**
 * Satori's tools as pi tools. The list, descriptions and input schemas come
 * from the live `tools/list` of `satori-cli`, never from a copy here, so a tool
 * the server adds or changes reaches pi without a bridge change (MCP stays the
 * single source of truth).
 */

import { isAbsolute, resolve } from "node:path";

import type { AgentToolResult, ToolDefinition } from "@mariozechner/pi-coding-agent";

import { answerOf, BridgeError, type AttemptMeta, type SatoriBridge } from "./bridge.ts";
import type { Envelope, ToolResponse } from "./classify.ts";

/** One entry of the `tools/list` result, as far as the bridge reads it. */
export interface ListedTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

/** The `details` of every bridge tool result. */
export interface BridgeToolDetails extends AttemptMeta {
  tool: string;
  exitCode: number | null;
  /** The envelope's status (`ok`, `not_ready`, `not_indexed`, ...), when there is one. */
  status?: string;
  reason?: string;
  truncated: boolean;
}

export function listedTools(response: ToolResponse): ListedTool[] {
  const tools = Array.isArray(response.tools) ? response.tools : [];
  return tools.filter(
    (t): t is ListedTool =>
      typeof t === "object" &&
      t !== null &&
      typeof (t as ListedTool).name === "string" &&
      typeof (t as ListedTool).inputSchema === "object" &&
      (t as ListedTool).inputSchema !== null,
  );
}

type Parameters_ = ToolDefinition["parameters"];

export function toolDefinition(bridge: SatoriBridge, listed: ListedTool): ToolDefinition {
  return {
    name: listed.name,
    label: listed.title ?? `Satori ${listed.name}`,
    description: listed.description ?? listed.name,
    promptSnippet: firstSentence(listed.description ?? listed.name),
    // pi validates arguments against plain JSON Schema as well as TypeBox
    // values; the server's schema is used as it is.
    parameters: listed.inputSchema as unknown as Parameters_,
    async execute(_toolCallId, params, signal, onUpdate, ctx): Promise<AgentToolResult<BridgeToolDetails>> {
      const args = normalizePaths(listed, params as Record<string, unknown>, ctx.cwd);
      const result = await bridge.callTool(listed.name, args, {
        cwd: ctx.cwd,
        ...(signal ? { signal } : {}),
        // manage_index create|reindex: the CLI's progress lines on stderr.
        ...(onUpdate
          ? {
              onStderrLine: (line: string) => {
                if (/^indexing\b/.test(line)) onUpdate({ content: [{ type: "text", text: line }], details: { progress: line } });
              },
            }
          : {}),
      });
      let response: ToolResponse;
      try {
        response = answerOf(result);
      } catch (error) {
        if (error instanceof BridgeError && error.code === "E_CLI_UNAVAILABLE") {
          throw new Error(
            `${error.message}\nInstall satori-cli or point the bridge at it (SATORI_BRIDGE_COMMAND or "command" in .pi/satori-bridge.json).`,
          );
        }
        throw error;
      }
      const outcome = result.outcome as { envelope?: Envelope };
      const { text, truncated } = responseText(response, bridge.config.maxOutputBytes);
      if (response.isError === true) {
        // pi marks a tool failure only when execute throws; the metadata
        // then has to travel in the message.
        throw new Error(`${text}\n[satori-bridge] ${JSON.stringify(result.meta)}`);
      }
      const details: BridgeToolDetails = {
        tool: listed.name,
        exitCode: result.outcome.exitCode,
        ...(outcome.envelope?.status !== undefined ? { status: outcome.envelope.status } : {}),
        ...(outcome.envelope?.reason !== undefined ? { reason: outcome.envelope.reason } : {}),
        truncated,
        ...result.meta,
      };
      return { content: [{ type: "text", text }], details };
    },
  };
}

/**
 * Path arguments: models sometimes write `@src/x.ts` or a path relative to
 * the session; Satori needs absolute paths.
 */
export function normalizePaths(
  listed: ListedTool,
  params: Record<string, unknown>,
  cwd: string,
): Record<string, unknown> {
  const props = (listed.inputSchema.properties ?? {}) as Record<string, { type?: unknown }>;
  const out = { ...params };
  for (const key of ["path"]) {
    const value = out[key];
    if (props[key]?.type !== "string" || typeof value !== "string" || value === "") continue;
    const bare = value.startsWith("@") ? value.slice(1) : value;
    out[key] = isAbsolute(bare) ? bare : resolve(cwd, bare);
  }
  return out;
}

/** The text content of a result, cut at `maxBytes` with a note saying so. */
export function responseText(response: ToolResponse, maxBytes: number): { text: string; truncated: boolean } {
  const parts = (response.content ?? []).map((item) => {
    const c = item as { type?: unknown; text?: unknown };
    return c.type === "text" && typeof c.text === "string" ? c.text : JSON.stringify(item);
  });
  const full = parts.length > 0 ? parts.join("\n") : JSON.stringify(response.structuredContent ?? response);
  const bytes = Buffer.byteLength(full, "utf8");
  if (bytes <= maxBytes) return { text: full, truncated: false };
  // Cut on a character boundary: decode the prefix and drop a split last char.
  const cut = Buffer.from(full, "utf8").subarray(0, maxBytes).toString("utf8").replace(/\uFFFD$/, "");
  return {
    text: `${cut}\n[satori-bridge: output truncated at ${maxBytes} of ${bytes} bytes; narrow the request (limit, path, line range)]`,
    truncated: true,
  };
}

function firstSentence(text: string): string {
  const end = text.search(/\.(\s|$)/);
  return (end === -1 ? text : text.slice(0, end + 1)).slice(0, 200);
}
