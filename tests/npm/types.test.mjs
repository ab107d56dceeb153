// The TypeScript definitions compile against a usage file with `tsc --strict`, and a misuse
// is refused (so the check can fail). An ES module consumer (.mts) gets the ES module types
// (index.d.mts, with the default export) and a CommonJS one (.cts) the CommonJS types, under
// both node16 and nodenext resolution.
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

function tsc(name, source, { resolution = "nodenext", extra = [] } = {}) {
  fs.writeFileSync(path.join(project, name), source);
  const flags = ["--noEmit", "--strict", "--module", resolution, "--moduleResolution", resolution, "--target", "es2022", "--types", ""];
  return run("npx", ["tsc", ...flags, ...extra, name]);
}

const esmConsumer = `import satori, { callTool, listTools, SatoriClient, type ClientOptions, type ToolResult } from "@zokizuan/satori-mcp";

const options: ClientOptions = { telemetry: true, startupTimeoutMs: 5000 };
const call: typeof callTool = satori.callTool;

export async function main(): Promise<number> {
  const list = await satori.listTools(options);
  const result: ToolResult = await call("search_codebase", { path: "/repo", query: "x" });
  const client = new satori.SatoriClient();
  const same: SatoriClient = client;
  await same.close();
  return list.tools.length + result.recovery.attemptCount + (await listTools()).tools.length;
}
`;

const cjsConsumer = `import satori = require("@zokizuan/satori-mcp");
import type { ClientOptions, SatoriError } from "@zokizuan/satori-mcp";

const options: ClientOptions = { telemetry: false, guardRecovery: "never" };

export async function main(): Promise<number> {
  const list = await satori.listTools(options);
  const client = new satori.SatoriClient(options);
  try {
    await client.callTool("read_file", { path: "/repo/a.ts" }, { wait: false });
  } catch (caught) {
    return (caught as SatoriError).code === "E_TOOL_ERROR" ? 1 : 2;
  } finally {
    await client.close();
  }
  return list.tools.length;
}
`;

test("ES module and CommonJS consumers each get the types of their module format", () => {
  const cases = [
    { file: "consumer.mts", source: esmConsumer, types: "index.d.mts" },
    { file: "consumer.cts", source: cjsConsumer, types: "index.d.ts", not: "index.d.mts" },
  ];
  for (const resolution of ["node16", "nodenext"]) {
    for (const { file, source, types, not } of cases) {
      const result = tsc(file, source, { resolution, extra: ["--listFiles"] });
      const what = `${file} under ${resolution}`;
      const lines = result.stdout.split(/\r?\n/);
      const errors = lines.filter((line) => line.includes("error TS")).join("\n");
      assert.equal(result.status, 0, `${what}: ${errors}${result.stderr}`);
      const read = lines.filter((line) => line.includes("@zokizuan/satori-mcp/"));
      assert.ok(read.some((line) => line.endsWith(`/${types}`)), `${what} reads ${types}: ${read.join(", ")}`);
      if (not) assert.ok(!read.some((line) => line.endsWith(`/${not}`)), `${what} does not read ${not}: ${read.join(", ")}`);
    }
  }
});

test("the types compile against a usage file", () => {
  const result = tsc("usage.ts", usage);
  assert.equal(result.status, 0, result.stdout + result.stderr);
});

test("a misuse does not compile", () => {
  const result = tsc("misuse.ts", `import { SatoriClient } from "@zokizuan/satori-mcp";\nnew SatoriClient({ guardRecovery: "sometimes" });\n`);
  assert.notEqual(result.status, 0);
  assert.match(result.stdout + result.stderr, /guardRecovery|sometimes/);
});
