// The Node API from an installed package: `callTool`, `listTools` and `SatoriClient` through
// the addon, the errors with their CLI codes, both module systems, and a quiet stderr; on a
// shared server (`endpoint`), a refused token as E_AUTH and the session ended with DELETE.
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
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
  const { server, url } = await sharedServer(t, ["--http", "127.0.0.1:0"]);
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

/** A `satori` of the package serving `args` with `extraEnv`, stopped however the test ends;
 * resolves to the process and its address. */
async function sharedServer(t, args, extraEnv = {}) {
  const server = spawn(path.join(project, "node_modules", ".bin", "satori"), args, {
    env: { ...process.env, ...env, ...extraEnv },
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
  // SIGTERM, which the bin shim passes on to the server it started: a SIGKILL would end the
  // shim alone and leave the server holding this process's pipe open.
  t.after(async () => {
    if (server.exitCode !== null || server.signalCode !== null) return;
    const exited = new Promise((resolve) => server.once("exit", resolve));
    server.kill("SIGTERM");
    await exited;
  });
  return { server, url };
}

test("an endpoint that refuses the token rejects with E_AUTH, never retried with the guard off", async (t) => {
  const token = "token-of-the-addon-test";
  const { url } = await sharedServer(t, ["--http", "127.0.0.1:0", "--token-env", "SATORI_ADDON_TEST_TOKEN"], {
    SATORI_ADDON_TEST_TOKEN: token,
  });
  const before = process.env.SATORI_ENDPOINT_TOKEN;
  // The addon reads the token from this process's environment when it connects.
  t.after(() => {
    if (before === undefined) delete process.env.SATORI_ENDPOINT_TOKEN;
    else process.env.SATORI_ENDPOINT_TOKEN = before;
  });
  const cases = [
    { token: undefined, says: /no bearer token was sent/ },
    { token: "not-the-token", says: /was sent and is not the one it accepts/ },
  ];
  for (const { token: sent, says } of cases) {
    if (sent === undefined) delete process.env.SATORI_ENDPOINT_TOKEN;
    else process.env.SATORI_ENDPOINT_TOKEN = sent;
    for (const call of [
      () => satori.listTools({ endpoint: url }),
      () => satori.callTool("list_codebases", {}, { endpoint: url }),
      () => {
        // Closed by the file's `after`, so the process can exit.
        const client = new satori.SatoriClient({ endpoint: url });
        clients.push(client);
        return client.listTools();
      },
    ]) {
      const error = await rejection(call());
      assert.equal(error.code, "E_AUTH", error.message);
      assert.match(error.message, /SATORI_ENDPOINT_TOKEN/);
      assert.match(error.message, says);
      assert.equal(error.recovery.attemptCount, 1, "one attempt");
      assert.equal(error.recovery.guardRecoveryAttempted, false, "no retry with the guard off");
    }
  }
  process.env.SATORI_ENDPOINT_TOKEN = token;
  const { tools } = await satori.listTools({ endpoint: url });
  assert.ok(tools.some((tool) => tool.name === "search_codebase"));
});

test("a call on an endpoint ends the session it opened with DELETE", async (t) => {
  // A loopback Streamable HTTP server that opens one session at initialize, wants it on every
  // later request, and records what it is sent; the DELETE is answered as `onDelete` says.
  let onDelete = 200;
  const seen = [];
  const fake = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      const message = body ? JSON.parse(body) : {};
      const session = req.headers["mcp-session-id"];
      seen.push({ method: req.method, session, rpc: message.method });
      const reply = (status, value) => {
        res.writeHead(status, { "content-type": "application/json", "mcp-session-id": "fake-session-9" });
        res.end(value === undefined ? "" : JSON.stringify(value));
      };
      if (req.method === "POST" && message.method === "initialize") {
        return reply(200, { jsonrpc: "2.0", id: message.id, result: {
          protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name: "fake", version: "0" } } });
      }
      if (session !== "fake-session-9") {
        return reply(400, { jsonrpc: "2.0", id: null, error: { code: -32000, message: "Bad Request: No valid session ID provided" } });
      }
      if (req.method === "DELETE") return reply(onDelete);
      if (req.method !== "POST") return reply(405);
      if (message.id === undefined) return reply(202);
      if (message.method === "tools/list") {
        return reply(200, { jsonrpc: "2.0", id: message.id, result: { tools: [{ name: "echo", inputSchema: { type: "object" } }] } });
      }
      return reply(200, { jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "no such method" } });
    });
  });
  await new Promise((resolve) => fake.listen(0, "127.0.0.1", resolve));
  t.after(() => fake.close());
  const url = `http://127.0.0.1:${fake.address().port}/mcp`;
  // Whatever the DELETE gets (done, a session already gone, a server that ends none), the
  // call's result is the same.
  for (const status of [200, 404, 405]) {
    onDelete = status;
    for (const [what, call] of [
      ["listTools", () => satori.listTools({ endpoint: url })],
      ["SatoriClient", async () => {
        const client = new satori.SatoriClient({ endpoint: url });
        const list = await client.listTools();
        const deletesBeforeClose = seen.filter((s) => s.method === "DELETE").length;
        assert.equal(deletesBeforeClose, 0, "the session stays open until close()");
        await client.close();
        return list;
      }],
    ]) {
      seen.length = 0;
      const list = await call();
      assert.equal(list.tools[0].name, "echo", `${what} ${status}`);
      const deletes = seen.filter((s) => s.method === "DELETE");
      assert.deepEqual(deletes, [{ method: "DELETE", session: "fake-session-9", rpc: undefined }], `${what} ${status}`);
      assert.equal(seen.at(-1).method, "DELETE", `${what} ${status}: the session is ended last`);
    }
  }
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
