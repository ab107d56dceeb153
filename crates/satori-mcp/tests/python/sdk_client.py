"""The official MCP Python SDK against the `satori` binary: initialize, list the tools, set
a log level and call list_codebases. Prints one JSON line with what it saw; the Rust test
`python_sdk_client` in edges.rs runs it and checks that line.

Usage: python3 sdk_client.py /path/to/satori
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


async def main(binary: str) -> None:
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
            print(
                json.dumps(
                    {
                        "protocolVersion": str(field(init, "protocol_version", "protocolVersion")),
                        "logging": init.capabilities.logging is not None,
                        "tools": [t.name for t in tools.tools],
                        "isError": bool(field(listed, "is_error", "isError")),
                        "text": listed.content[0].text,
                    }
                )
            )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
