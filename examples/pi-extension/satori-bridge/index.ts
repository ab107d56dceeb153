/**
 * satori-bridge: a pi extension that gives the agent Satori's code search
 * tools through `satori-cli` (CLI only: no MCP client lives in pi), plus the
 * `/satori-mcp` health command.
 *
 * At load it asks `satori-cli tools list` (with the short health timeouts)
 * and registers one pi tool per Satori tool. If that fails, pi starts anyway;
 * the failure is shown at session start and `/satori-mcp` retries and
 * registers the tools once Satori answers.
 */

import type { ExtensionAPI, ExtensionCommandContext, ExtensionContext } from "@mariozechner/pi-coding-agent";

import { answerOf, BridgeError, SatoriBridge } from "./src/bridge.ts";
import { ConfigError, loadConfig, type BridgeConfig } from "./src/config.ts";
import { checkHealth } from "./src/health.ts";
import { listedTools, toolDefinition, type ListedTool } from "./src/tools.ts";

export const HEALTH_COMMAND = "satori-mcp";
const STATUS_KEY = "satori-bridge";

export interface BridgeExtensionOptions {
  env?: NodeJS.ProcessEnv;
  /** Where the project config is looked up; pi's working directory by default. */
  cwd?: string;
  agentDir?: string;
}

export function createBridgeExtension(options: BridgeExtensionOptions = {}) {
  return async function satoriBridge(pi: ExtensionAPI): Promise<void> {
    const cwd = options.cwd ?? process.cwd();
    const env = options.env ?? process.env;
    let bridge: SatoriBridge | undefined;
    /** Why the tools are not (yet) registered, shown at session start. */
    let problem: string | undefined;
    const registered = new Set<string>();

    const configure = (): SatoriBridge => {
      const config: BridgeConfig = loadConfig({ env, cwd, ...(options.agentDir ? { agentDir: options.agentDir } : {}) });
      return new SatoriBridge(config);
    };
    const register = (tools: ListedTool[], active: SatoriBridge) => {
      for (const tool of tools) {
        if (registered.has(tool.name)) continue;
        pi.registerTool(toolDefinition(active, tool));
        registered.add(tool.name);
      }
    };

    try {
      bridge = configure();
      const result = await bridge.listTools({ cwd, timeoutCapMs: bridge.config.healthTimeoutMs });
      const tools = listedTools(answerOf(result));
      if (tools.length === 0) problem = "satori-cli tools list returned no tools";
      register(tools, bridge);
    } catch (error) {
      problem = describe(error);
    }

    pi.on("session_start", (_event, ctx: ExtensionContext) => {
      if (problem !== undefined && ctx.hasUI) {
        ctx.ui.notify(`satori-bridge: Satori tools are unavailable: ${problem}\nRun /${HEALTH_COMMAND} to retry.`, "warning");
      }
    });

    pi.registerCommand(HEALTH_COMMAND, {
      description: "Check that Satori answers through satori-cli (and register its tools if they are missing)",
      handler: async (_args: string, ctx: ExtensionCommandContext) => {
        // Not awaited: pi waits for a command handler before taking input
        // again, and a check may take up to the health timeout.
        void runHealth(ctx);
      },
    });

    async function runHealth(ctx: ExtensionContext): Promise<void> {
      try {
        ctx.ui.setStatus(STATUS_KEY, "Satori: checking…");
        // A broken config is re-read so that fixing the file is enough.
        if (bridge === undefined) bridge = configure();
        const active = bridge;
        const report = await checkHealth(active, ctx.cwd);
        if (report.ok) {
          const before = registered.size;
          register(report.tools, active);
          problem = undefined;
          const added = registered.size - before;
          const suffix = added > 0 ? `; registered ${added} tools` : "";
          ctx.ui.notify(withDetails(`${report.summary}${suffix}`, report.lines, active.config.debug), "info");
        } else {
          ctx.ui.notify(withDetails(report.summary, report.lines, true), "error");
        }
      } catch (error) {
        ctx.ui.notify(`Satori unreachable: ${describe(error)}`, "error");
      } finally {
        ctx.ui.setStatus(STATUS_KEY, undefined);
      }
    }
  };
}

function withDetails(summary: string, lines: string[], show: boolean): string {
  return show ? [summary, ...lines.map((l) => `  ${l}`)].join("\n") : summary;
}

function describe(error: unknown): string {
  if (error instanceof ConfigError) return `configuration error: ${error.message}`;
  if (error instanceof BridgeError) return error.message.split("\n")[0] ?? error.message;
  return error instanceof Error ? error.message : String(error);
}

export default createBridgeExtension();
