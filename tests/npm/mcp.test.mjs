// A real MCP client, the SDK's stdio client from npm, starts the server exactly as an MCP
// configuration does (`command: "npx", args: ["-y", "@zokizuan/satori-mcp"]`), resolved to
// the project's local install, and indexes, searches and reads a small repository.
import assert from "node:assert/strict";
import path from "node:path";
import { createRequire } from "node:module";
import { after, before, test } from "node:test";
import { envelopeOf, makeRepo, project, satoriEnv } from "./helpers.mjs";

// The SDK is installed in the proof project, not in this repository.
const requireFromProject = createRequire(path.join(project, "package.json"));
const { Client } = requireFromProject("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = requireFromProject("@modelcontextprotocol/sdk/client/stdio.js");

const repo = makeRepo();
let client;

before(async () => {
  const transport = new StdioClientTransport({
    command: "npx",
    args: ["-y", "@zokizuan/satori-mcp"],
    cwd: project,
    env: satoriEnv(),
    stderr: "ignore",
  });
  client = new Client({ name: "npm-proof", version: "1.0.0" });
  await client.connect(transport);
});

after(async () => {
  await client?.close();
});

test("tools/list answers with the six tools", async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(
    tools.map((tool) => tool.name).sort(),
    ["call_graph", "file_outline", "list_codebases", "manage_index", "read_file", "search_codebase"],
  );
});

test("index, search and read a repository", async () => {
  const started = await client.callTool({ name: "manage_index", arguments: { action: "create", path: repo } });
  assert.notEqual(started.isError, true, JSON.stringify(started));

  // Poll the build with generous patience; the server indexes in the background.
  const deadline = Date.now() + 240_000;
  let state;
  while (Date.now() < deadline) {
    const status = await client.callTool({ name: "manage_index", arguments: { action: "status", path: repo } });
    state = envelopeOf(status).state;
    if (state !== "indexing") break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  assert.equal(state, "indexed");

  const search = await client.callTool({
    name: "search_codebase",
    arguments: { path: repo, query: "where is the server executable resolved" },
  });
  const found = envelopeOf(search);
  assert.equal(found.status, "ok");
  const files = found.results.map((hit) => hit.file);
  assert.ok(files.includes("client/src/resolve.rs"), `resolve.rs in ${files}`);

  const read = await client.callTool({ name: "read_file", arguments: { path: path.join(repo, "client/src/resolve.rs") } });
  assert.notEqual(read.isError, true, JSON.stringify(read));
  const text = read.content.map((block) => block.text ?? "").join("\n");
  assert.match(text, /fn resolve_server_bin/);
});
