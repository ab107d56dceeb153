"""The official MCP Python SDK as a client that declares roots, against the `satori` binary:
the server must ask for the roots, refuse to index outside them and index inside them.
Prints one JSON line with the two answers; the Rust test `python_sdk_roots` in roots.rs runs
it and checks that line.

Usage: python3 sdk_roots.py /path/to/satori <allowed dir> <other dir>
"""

import asyncio
import json
import os
import pathlib
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


async def main(binary: str, allowed: str, other: str) -> None:
    asked = []

    async def list_roots(_context) -> types.ListRootsResult:
        asked.append(True)
        return types.ListRootsResult(
            roots=[types.Root(uri=pathlib.Path(allowed).as_uri(), name="allowed")]
        )

    # The SDK starts the server with a minimal environment: pass the test's state directory
    # on, or the server would use the user's own.
    params = StdioServerParameters(
        command=binary, args=[], env={"SATORI_HOME": os.environ["SATORI_HOME"]}
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, list_roots_callback=list_roots) as session:
            await session.initialize()
            outside = await session.call_tool(
                "manage_index", {"action": "create", "path": other}
            )
            inside = await session.call_tool(
                "manage_index", {"action": "create", "path": allowed}
            )
            print(
                json.dumps(
                    {
                        "asked": len(asked) > 0,
                        "outside": json.loads(outside.content[0].text),
                        "inside": json.loads(inside.content[0].text),
                    }
                )
            )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
