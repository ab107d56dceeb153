// A client of the official MCP TypeScript SDK (npm @modelcontextprotocol/sdk) on a shared
// `satori --http`: it searches a repository that another client indexed through the same
// server, lists the codebases that server knows, and ends its session with DELETE. Prints one
// JSON line with what it saw; the end-to-end test `the_cli_and_two_sdk_clients_share_one_server`
// (tests/e2e/tests/shared_server.rs) starts the server and checks that line.
//
// Usage: node sdk_http.mjs SDK_DIR URL TOKEN /path/to/repository
// SDK_DIR is a folder whose node_modules holds the SDK.
import path from "node:path";
import { createRequire } from "node:module";

const [sdkDir, url, token, repo] = process.argv.slice(2);
const requireSdk = createRequire(path.join(sdkDir, "package.json"));
const { Client } = requireSdk("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = requireSdk(
  "@modelcontextprotocol/sdk/client/streamableHttp.js",
);

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "satori-shared-server-test", version: "1.0.0" });
await client.connect(transport);
const seen = { session: Boolean(transport.sessionId) };
seen.tools = (await client.listTools()).tools.map((t) => t.name).sort();
const found = await client.callTool({
  name: "search_codebase",
  arguments: { path: repo, query: "retry_with_backoff" },
});
if (found.isError) throw new Error(`search_codebase failed: ${found.content[0].text}`);
seen.found = found.structuredContent.results.map((r) => r.file);
const listed = await client.callTool({ name: "list_codebases", arguments: {} });
seen.listed = listed.content[0].text;
await transport.terminateSession();
await client.close();
console.log(JSON.stringify(seen));
