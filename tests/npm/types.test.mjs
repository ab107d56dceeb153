// The TypeScript definitions compile against a usage file with `tsc --strict`, and a misuse
// is refused (so the check can fail).
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { project, run } from "./helpers.mjs";

const usage = `import { callTool, listTools, SatoriClient, type SatoriError, type ToolResult } from "@zokizuan/satori-mcp";

export async function main(): Promise<number> {
  const list = await listTools({ startupTimeoutMs: 5000 });
  const names: string[] = list.tools.map((tool) => tool.name);
  const result: ToolResult = await callTool("search_codebase", { path: "/repo", query: "x" }, { callTimeoutMs: 1000 });
  const attempts: number = result.recovery.attemptCount;
  const client = new SatoriClient({ guardRecovery: "auto", env: { SATORI_HOME: "/tmp/x" } });
  try {
    await client.callTool("read_file", { path: "/repo/a.ts" }, { wait: false });
  } catch (caught) {
    const error = caught as SatoriError;
    if (error.code === "E_TOOL_ERROR") return error.envelope ? 1 : 2;
  } finally {
    await client.close();
  }
  return names.length + attempts;
}
`;

function tsc(name, source) {
  fs.writeFileSync(path.join(project, name), source);
  return run("npx", ["tsc", "--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--types", "", name]);
}

test("the types compile against a usage file", () => {
  const result = tsc("usage.ts", usage);
  assert.equal(result.status, 0, result.stdout + result.stderr);
});

test("a misuse does not compile", () => {
  const result = tsc("misuse.ts", `import { SatoriClient } from "@zokizuan/satori-mcp";\nnew SatoriClient({ guardRecovery: "sometimes" });\n`);
  assert.notEqual(result.status, 0);
  assert.match(result.stdout + result.stderr, /guardRecovery|sometimes/);
});
