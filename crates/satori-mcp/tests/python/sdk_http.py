"""Two clients of the official MCP Python SDK share one `satori --http` at once: the first
indexes a repository while the second waits for it, both search it, each has its own session
(`Mcp-Session-Id`) and ends it with DELETE. A request without the bearer token is refused.
Prints one JSON line with what it saw; the end-to-end test
`the_cli_and_two_sdk_clients_share_one_server` (tests/e2e/tests/shared_server.rs) starts the
server, drives satori-cli against it too, and checks that line.

Usage: python3 sdk_http.py URL TOKEN /path/to/repository
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


def field(obj, snake: str, camel: str):
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


async def client(url: str, token: str, work):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)


async def call(session, tool: str, args: dict):
    result = await session.call_tool(tool, args)
    if field(result, "is_error", "isError"):
        raise SystemExit(f"{tool} failed: {result.content[0].text}")
    return field(result, "structured_content", "structuredContent")


async def main(url: str, token: str, repo: str) -> None:
    seen = {}
    indexed = asyncio.Event()

    async def indexer(session):
        await call(session, "manage_index", {"action": "create", "path": repo})
        for _ in range(1200):
            status = await call(session, "manage_index", {"action": "status", "path": repo})
            if status["state"] != "indexing":
                break
            await asyncio.sleep(0.05)
        seen["state"] = status["state"]
        indexed.set()
        found = await call(session, "search_codebase", {"path": repo, "query": "route_request"})
        seen["first"] = [r["file"] for r in found["results"]]

    async def searcher(session):
        tools = await session.list_tools()
        seen["tools"] = len(tools.tools)
        await indexed.wait()
        listed = await session.call_tool("list_codebases", {})
        seen["listed"] = listed.content[0].text
        found = await call(session, "search_codebase", {"path": repo, "query": "route_request"})
        seen["second"] = [r["file"] for r in found["results"]]

    await asyncio.gather(client(url, token, indexer), client(url, token, searcher))

    # Without the token: refused before any session exists.
    http = create_mcp_http_client()
    async with http:
        r = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
            headers={"accept": "application/json, text/event-stream"},
        )
        seen["withoutToken"] = r.status_code
    print(json.dumps(seen))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
