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
// The SDK's own validator (what `callTool` checks structured answers with), here around a
// strict draft-07 Ajv, the one the SDK's documentation shows for stricter clients: it refuses
// a schema with a keyword it does not know (`prefixItems`, say) instead of skipping it.
const ajvProvider = requireFromProject.resolve("@modelcontextprotocol/sdk/validation/ajv");
const { AjvJsonSchemaValidator } = requireFromProject("@modelcontextprotocol/sdk/validation/ajv");
const AjvModule = createRequire(ajvProvider)("ajv");
const Ajv = AjvModule.default ?? AjvModule;
const strict = new AjvJsonSchemaValidator(new Ajv({ strict: true, allErrors: true }));

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

/** Strict validators of every tool's outputSchema, by tool name. */
const validators = new Map();

/** `result`'s structured answer is valid against its tool's outputSchema, strictly read. */
function assertStrictlyValid(name, result) {
  const validate = validators.get(name);
  assert.ok(validate, `no outputSchema for ${name}`);
  assert.ok(result.structuredContent, `${name} answered without structuredContent`);
  const { valid, errorMessage } = validate(result.structuredContent);
  assert.ok(valid, `${name}: ${errorMessage}\n${JSON.stringify(result.structuredContent)}`);
}

test("tools/list answers with the six tools", async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(
    tools.map((tool) => tool.name).sort(),
    ["call_graph", "file_outline", "list_codebases", "manage_index", "read_file", "search_codebase"],
  );
  for (const tool of tools.filter((t) => t.outputSchema)) {
    validators.set(tool.name, strict.getValidator(tool.outputSchema));
  }
  assert.equal(validators.size, 5);
});

test("index, search and read a repository", async () => {
  const started = await client.callTool({ name: "manage_index", arguments: { action: "create", path: repo } });
  assert.notEqual(started.isError, true, JSON.stringify(started));
  assertStrictlyValid("manage_index", started);

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
  assertStrictlyValid("search_codebase", search);
  const files = found.results.map((hit) => hit.file);
  assert.ok(files.includes("client/src/resolve.rs"), `resolve.rs in ${files}`);
  // Files are relative to the codebase root, which the answer names.
  assert.equal(found.codebaseRoot, repo);

  const read = await client.callTool({ name: "read_file", arguments: { path: path.join(repo, "client/src/resolve.rs") } });
  assert.notEqual(read.isError, true, JSON.stringify(read));
  assertStrictlyValid("read_file", read);
  const text = read.content.map((block) => block.text ?? "").join("\n");
  assert.match(text, /fn resolve_server_bin/);

  // The other answers, debug blocks included, against the strict validators too.
  const debug = await client.callTool({
    name: "search_codebase",
    arguments: { path: path.join(repo, "client"), query: "lang:rust resolve server", resultMode: "raw", debug: true },
  });
  assertStrictlyValid("search_codebase", debug);
  const outline = await client.callTool({
    name: "file_outline",
    arguments: { path: repo, file: "client/src/resolve.rs" },
  });
  assertStrictlyValid("file_outline", outline);
  const handle = envelopeOf(outline).outline.symbols.find((s) => s.callGraphHint.supported)?.callGraphHint.symbolRef;
  assert.ok(handle, JSON.stringify(envelopeOf(outline)));
  const graph = await client.callTool({ name: "call_graph", arguments: { path: repo, symbolRef: handle } });
  assertStrictlyValid("call_graph", graph);
  const annotated = await client.callTool({
    name: "read_file",
    arguments: { path: path.join(repo, "client/src/resolve.rs"), mode: "annotated", end_line: 40 },
  });
  assertStrictlyValid("read_file", annotated);
});
