// The Node API from an installed package: `callTool`, `listTools` and `SatoriClient` through
// the addon, the errors with their CLI codes, both module systems, and a quiet stderr.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { after, test } from "node:test";
import { json, makeRepo, project, run, satoriEnv, envelopeOf } from "./helpers.mjs";

const env = satoriEnv();
// The addon starts the server with this process's environment: give it the private home.
process.env.SATORI_HOME = env.SATORI_HOME;
const satori = createRequire(path.join(project, "package.json"))("@zokizuan/satori-mcp");
const repo = makeRepo();
const clients = [];

after(async () => {
  await Promise.all(clients.map((client) => client.close()));
});

/** Await a call that must reject, and return its error. */
async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail("the call resolved");
}

test("callTool indexes (waiting for the build) and searches", async () => {
  const indexed = await satori.callTool("manage_index", { action: "create", path: repo });
  assert.equal(envelopeOf(indexed).state, "indexed");
  assert.equal(indexed.recovery.attemptCount, 1);
  assert.equal(Object.keys(indexed).includes("recovery"), false, "recovery is not part of the MCP result");

  const found = await satori.callTool("search_codebase", { path: repo, query: "stdout guard modes" });
  const envelope = envelopeOf(found);
  assert.equal(envelope.status, "ok");
  assert.ok(envelope.results.length > 0);
});

test("library use writes nothing to stderr; telemetry lines only when asked for", () => {
  // A program of its own, so its stderr is all the library wrote. The codebase was indexed above.
  const program = `const { SatoriClient } = require("@zokizuan/satori-mcp");
const client = new SatoriClient(JSON.parse(process.argv[2]));
client.callTool("search_codebase", { path: process.argv[3], query: "stdout guard modes" })
  .then((result) => process.stdout.write(JSON.stringify(result.structuredContent ?? JSON.parse(result.content[0].text))))
  .finally(() => client.close());`;
  fs.writeFileSync(path.join(project, "telemetry-proof.cjs"), program);
  const cases = [
    { what: "by default", options: {}, environment: {}, lines: 0 },
    { what: "with telemetry: true", options: { telemetry: true }, environment: {}, lines: 1 },
    { what: "with SATORI_TELEMETRY=stderr", options: {}, environment: { SATORI_TELEMETRY: "stderr" }, lines: 1 },
  ];
  for (const { what, options, environment, lines } of cases) {
    const result = run("node", ["telemetry-proof.cjs", JSON.stringify(options), repo], { env: { ...env, ...environment } });
    assert.equal(result.status, 0, `${what}: ${result.stderr}`);
    assert.equal(json(result).status, "ok", what);
    const telemetry = result.stderr.split("\n").filter((line) => line.startsWith("[TELEMETRY] "));
    assert.equal(telemetry.length, lines, `${what}: ${result.stderr}`);
    if (lines === 0) assert.equal(result.stderr, "", `${what}: nothing on stderr`);
  }
});

test("listTools answers the tool list", async () => {
  const { tools } = await satori.listTools();
  assert.ok(tools.some((tool) => tool.name === "search_codebase"));
});

test("errors carry the CLI token as code", async () => {
  const cases = [
    // A tool answer that is not ok: E_TOOL_ERROR with the envelope attached.
    {
      call: () => satori.callTool("search_codebase", { path: path.join(repo, "..", "elsewhere"), query: "x" }),
      code: "E_TOOL_ERROR",
      check: (error) => {
        assert.equal(error.status, "not_indexed");
        assert.equal(error.envelope.status, "not_indexed");
        assert.equal(error.result.content[0].type, "text");
      },
    },
    // An unknown tool is a JSON-RPC error answer: the server spoke, so E_TOOL_ERROR.
    { call: () => satori.callTool("no_such_tool", {}), code: "E_TOOL_ERROR" },
    // Arguments that are no object never reach the server.
    { call: () => satori.callTool("search_codebase", ["x"]), code: "E_USAGE" },
    // A server that does not exist is a configuration problem.
    { call: () => satori.listTools({ serverBin: path.join(repo, "no-such-satori") }), code: "E_USAGE" },
    // A server that speaks no MCP: the stream breaks before any answer.
    { call: () => satori.listTools({ serverBin: "/bin/true", guardRecovery: "never" }), code: "E_PROTOCOL_FAILURE" },
  ];
  for (const { call, code, check } of cases) {
    const error = await rejection(call());
    assert.ok(error instanceof Error, `${error}`);
    assert.equal(error.code, code, error.message);
    check?.(error);
  }
});

test("a SatoriClient keeps one server across calls and refuses calls after close", async () => {
  const client = new satori.SatoriClient();
  clients.push(client);
  const first = await client.callTool("list_codebases", {});
  const second = await client.callTool("search_codebase", { path: repo, query: "wait for index" });
  assert.equal(envelopeOf(second).status, "ok");
  assert.deepEqual(first.recovery, second.recovery);
  assert.equal(second.recovery.attemptCount, 1, "one server for both calls");

  const error = await rejection(client.callTool("search_codebase", { path: "/", query: "x" }));
  assert.equal(error.code, "E_TOOL_ERROR");

  await client.close();
  const closed = await rejection(client.listTools());
  assert.equal(closed.code, "E_USAGE");
});

test("a SatoriClient with an endpoint uses a running shared server", async (t) => {
  const server = spawn(path.join(project, "node_modules", ".bin", "satori"), ["--http", "127.0.0.1:0"], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const url = await new Promise((resolve, reject) => {
    let seen = "";
    server.stderr.on("data", (chunk) => {
      seen += chunk;
      const match = /serving MCP at (\S+)/.exec(seen);
      if (match) resolve(match[1]);
    });
    server.on("exit", () => reject(new Error(`the server exited: ${seen}`)));
  });
  // However the test ends, the server does not outlive it.
  t.after(() => server.kill("SIGKILL"));
  const client = new satori.SatoriClient({ endpoint: url });
  clients.push(client);
  const fresh = makeRepo();
  const indexed = await client.callTool("manage_index", { action: "create", path: fresh });
  assert.equal(envelopeOf(indexed).state, "indexed");
  const found = await client.callTool("search_codebase", { path: fresh, query: "stdout guard modes" });
  assert.equal(envelopeOf(found).status, "ok");
  await client.close();
  const exited = new Promise((resolve) => server.on("exit", resolve));
  server.kill("SIGTERM");
  await exited;

  // Nothing answers there any more: the error says how to start the server.
  const gone = await rejection(satori.callTool("list_codebases", {}, { endpoint: url }));
  assert.equal(gone.code, "E_PROTOCOL_FAILURE", gone.message);
  assert.match(gone.message, /satori --http/);
  assert.throws(() => new satori.SatoriClient({ endpoint: "ftp://x" }), { code: "E_USAGE" });
});

test("bad client options throw E_USAGE", () => {
  assert.throws(() => new satori.SatoriClient({ guardRecovery: "sometimes" }), { code: "E_USAGE" });
});

test("require from CommonJS and import from an ES module both work", () => {
  const programs = {
    "proof.cjs": `const { listTools, SatoriClient } = require("@zokizuan/satori-mcp");
listTools().then((list) => { process.stdout.write(JSON.stringify({ n: list.tools.length, client: typeof SatoriClient })); });`,
    "proof.mjs": `import satori, { listTools, callTool, SatoriClient } from "@zokizuan/satori-mcp";
const list = await listTools();
process.stdout.write(JSON.stringify({ n: list.tools.length, client: typeof SatoriClient, same: satori.callTool === callTool }));`,
  };
  for (const [file, source] of Object.entries(programs)) {
    fs.writeFileSync(path.join(project, file), source);
    const result = run("node", [file], { env });
    assert.equal(result.status, 0, `${file}: ${result.stderr}`);
    const out = json(result);
    assert.equal(out.n, 6, file);
    assert.equal(out.client, "function", file);
    if (file.endsWith(".mjs")) assert.equal(out.same, true);
  }
});
