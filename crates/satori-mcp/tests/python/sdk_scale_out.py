"""The official MCP Python SDK starts `satori` the way an MCP configuration does (a command
and an environment) with a remote embedding provider and a Milvus: OpenAI-compatible
embeddings from a loopback server that implements the API's request and response shapes
(this script's), vectors in the Milvus at the given address. It indexes the given
repository, searches it, then searches again from a second server process, and prints one
JSON line with what it saw; the Rust test `sdk_scale_out` in scale_out.rs checks it.

Usage: python3 sdk_scale_out.py /path/to/satori MILVUS_ADDRESS /path/to/repository
"""

import asyncio
import hashlib
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

KEY = "sk-loopback-test-key"
DIM = 64
texts_embedded = 0
lock = threading.Lock()


def words_vector(text: str) -> list:
    """A bag of hashed words: texts that share words are close."""
    v = [0.0] * DIM
    for w in "".join(c if c.isalnum() else " " for c in text.lower()).split():
        if len(w) > 2:
            v[int(hashlib.sha256(w.encode()).hexdigest(), 16) % DIM] += 1.0
    v[0] += 0.1
    return v


class OpenAi(BaseHTTPRequestHandler):
    """POST /v1/embeddings as OpenAI answers it: a bearer key, `input` a list of texts,
    `data[].embedding` with each text's `index`."""

    def do_POST(self):
        global texts_embedded
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if self.path != "/v1/embeddings":
            return self.answer(404, {"error": {"message": "not found"}})
        if self.headers.get("authorization") != f"Bearer {KEY}":
            return self.answer(401, {"error": {"message": "Incorrect API key provided"}})
        if body.get("dimensions") not in (None, DIM):
            return self.answer(400, {"error": {"message": "dimensions not supported"}})
        inputs = body["input"]
        with lock:
            texts_embedded += len(inputs)
        data = [{"object": "embedding", "index": i, "embedding": words_vector(t)} for i, t in enumerate(inputs)]
        self.answer(200, {"object": "list", "data": data, "model": body["model"]})

    def answer(self, status: int, obj: dict):
        out = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def field(obj, snake: str, camel: str):
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


async def session_for(binary: str, env: dict, work) -> object:
    params = StdioServerParameters(command=binary, args=[], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)


async def main(binary: str, milvus: str, repo: str) -> None:
    api = ThreadingHTTPServer(("127.0.0.1", 0), OpenAi)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    env = {
        "SATORI_HOME": os.environ["SATORI_HOME"],
        "EMBEDDING_PROVIDER": "OpenAI",
        "EMBEDDING_MODEL": "text-embedding-3-small",
        "EMBEDDING_OUTPUT_DIMENSION": str(DIM),
        "OPENAI_API_KEY": KEY,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{api.server_address[1]}/v1",
        "MILVUS_ADDRESS": milvus,
    }
    seen = {}
    query = "gRPC client of Milvus over HTTP/2"

    async def call(session, tool: str, args: dict):
        result = await session.call_tool(tool, args)
        text = result.content[0].text
        if KEY in text:
            raise SystemExit(f"{tool} echoed the key")
        if field(result, "is_error", "isError"):
            raise SystemExit(f"{tool} failed: {text}")
        return field(result, "structured_content", "structuredContent")

    async def index_and_search(session):
        await call(session, "manage_index", {"action": "create", "path": repo})
        for _ in range(6000):
            status = await call(session, "manage_index", {"action": "status", "path": repo})
            if status["state"] != "indexing":
                break
            await asyncio.sleep(0.05)
        seen["state"] = status["state"]
        seen["textsAfterIndex"] = texts_embedded
        found = await call(session, "search_codebase", {"path": repo, "query": query, "limit": 5})
        seen["first"] = [r["file"] for r in found["results"]]

    async def search_again(session):
        before = texts_embedded
        found = await call(session, "search_codebase", {"path": repo, "query": query, "limit": 5})
        seen["second"] = [r["file"] for r in found["results"]]
        seen["textsForSecondSearch"] = texts_embedded - before

    await session_for(binary, env, index_and_search)
    await session_for(binary, env, search_again)
    print(json.dumps(seen))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
