"""The official MCP Python SDK against the `satori` binary: initialize, list the tools, set
a log level and call list_codebases; given a repository, also index it and walk it the way
an agent navigates (search, file_outline, call_graph, read_file open_symbol), with the SDK
checking every structured answer against the tool's outputSchema. Prints one JSON line
with what it saw; the Rust test `python_sdk_client` in edges.rs runs it and checks that line.

Usage: python3 sdk_client.py /path/to/satori [/path/to/repository]
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def field(obj, snake: str, camel: str):
    """SDK 2.x names fields in snake_case, 1.x as on the wire."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


async def navigate(session: ClientSession, repo: str) -> dict:
    """Indexes `repo`, then search -> file_outline -> call_graph -> read_file."""

    async def call(tool: str, args: dict):
        result = await session.call_tool(tool, args)
        if field(result, "is_error", "isError"):
            raise SystemExit(f"{tool} failed: {result.content[0].text}")
        return field(result, "structured_content", "structuredContent")

    await call("manage_index", {"action": "create", "path": repo})
    for _ in range(600):
        status = await call("manage_index", {"action": "status", "path": repo})
        if status["state"] != "indexing":
            break
        await asyncio.sleep(0.05)
    found = await call("search_codebase", {"path": repo, "query": "route_request"})
    ref = found["results"][0]["callGraphHint"]["symbolRef"]
    outline = await call("file_outline", {"path": repo, "file": ref["file"]})
    graph = await call(
        "call_graph", {"path": repo, "symbolRef": ref, "direction": "callers", "depth": 2}
    )
    opened = await call(
        "read_file",
        {"path": os.path.join(repo, ref["file"]), "open_symbol": {"symbolId": ref["symbolId"]}},
    )
    return {
        "state": status["state"],
        "symbol": ref["symbolLabel"],
        "outline": [s["symbolLabel"] for s in outline["outline"]["symbols"]],
        "graphStatus": graph["status"],
        "callers": sorted(n["symbolLabel"] for n in graph["nodes"][1:]),
        "opened": opened["span"],
    }


async def main(binary: str, repo: str | None) -> None:
    # The SDK starts the server with a minimal environment: pass the test's home on, so the
    # state of the user's own home never shows up here.
    params = StdioServerParameters(
        command=binary, args=[], env={"SATORI_HOME": os.environ["SATORI_HOME"]}
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            await session.set_logging_level("debug")
            listed = await session.call_tool("list_codebases", {})
            walked = await navigate(session, repo) if repo else None
            print(
                json.dumps(
                    {
                        "navigation": walked,
                        "protocolVersion": str(field(init, "protocol_version", "protocolVersion")),
                        "logging": init.capabilities.logging is not None,
                        "tools": [t.name for t in tools.tools],
                        "isError": bool(field(listed, "is_error", "isError")),
                        "text": listed.content[0].text,
                    }
                )
            )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
