#!/usr/bin/env python3
"""A scriptable stand-in for the `satori` MCP server, used by satori-cli's tests.

Speaks newline-delimited JSON-RPC on stdin/stdout. The behaviour is chosen
with FAKE_SCENARIO:

  ok             answer everything; every tool returns an ok envelope
  noisy          like ok, but writes a lot to stderr (text, raw bytes, >64 KiB)
  tool_error     tools/call returns isError: true with a plain-text message
  envelope       tools/call returns isError: false with status FAKE_STATUS
  garbage_init   prints a log line on stdout before the initialize answer
  garbage_call   prints a log line on stdout before the tools/call answer
  silent_init    never answers initialize
  hang_call      never answers tools/call
  die_call       exits with status 7 when a tool is called
  die_call_mid_line
                 like die_call, but its last stderr words have no newline
  index          manage_index create starts a fake build; status reports
                 `indexing` FAKE_POLLS times, then FAKE_INDEX_END (`indexed`,
                 `sync_completed`, `indexfailed`, any other state word, or
                 `not_indexed`/`requires_reindex`, which, like the real
                 server, also become the envelope status)

The server refuses to start unless SATORI_RUN_MODE is `cli`, as a client
that forgot to set it would get a server in the wrong mode, and unless
FAKE_TOOLS_FILE names the contract's tool list (a JSON array of tools/list
entries that the tests write from satori_protocol), so its schemas cannot
drift from the real server's; it adds two tools of its own (`fancy`,
`strict`) for schema shapes the real tools do not use.
FAKE_HUMAN_TEXT, when set, is added as `humanText` to ok tool envelopes.

FAKE_GUARD_BREAKS imitates a broken stdout guard on top of any scenario: the
stream is corrupted only while SATORI_CLI_STDOUT_GUARD is not `off`, like a
server whose guard eats or mangles protocol bytes, so turning the guard off
cures it. Values:

  init       garbage before the initialize answer
  hang_init  initialize is never answered
  list       garbage before the tools/list answer
  call       garbage before the tools/call answer
  die_init   exits on initialize without writing anything on stdout
  mangle_call
             the tools/call answer is cut short: unparseable JSON
  hang_call  tools/call is never answered

FAKE_PID_FILE, when set, receives the process id at startup.
FAKE_SPAWN_LOG, when set, gets one line per process start: the guard mode
it was started with (`unset` when the variable is absent).
FAKE_REQUEST_LOG, when set, gets one JSON line per request received:
{"pid", "ms" (monotonic clock), "method", "tool", "action"}.
"""

import json
import os
import sys
import time

SCENARIO = os.environ.get("FAKE_SCENARIO", "ok")
GUARD = os.environ.get("SATORI_CLI_STDOUT_GUARD", "unset")
BREAKS = os.environ.get("FAKE_GUARD_BREAKS", "") if GUARD != "off" else ""
PROTOCOL = "2025-11-25"

# Tools only this fake has: schema shapes the wrapper must handle (or refuse)
# that the real tools do not use. The real tools come from FAKE_TOOLS_FILE.
FAKE_ONLY_TOOLS = [
    {
        "name": "fancy",
        "description": "A tool whose schema uses every shape the wrapper knows, and some it does not.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "weights": {"type": "array", "items": {"type": "number"}},
                "level": {"type": "integer", "enum": [1, 2, 3]},
                "dryRun": {"type": "boolean"},
                "choice": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                "nested": {"type": "object", "properties": {"inner": {"type": "object"}}},
                "pairs": {"type": "array", "items": {"type": "object"}},
            },
        },
    },
    {
        "name": "strict",
        "description": "A tool with a required property that flags cannot express.",
        "inputSchema": {
            "type": "object",
            "properties": {"spec": {"anyOf": [{"type": "string"}, {"type": "object"}]}},
            "required": ["spec"],
        },
    },
]


def load_tools():
    """The contract's tools (written by the tests from satori_protocol), then ours."""
    path = os.environ.get("FAKE_TOOLS_FILE")
    if not path:
        log("fake: FAKE_TOOLS_FILE is not set; refusing to start without the contract's tools\n")
        sys.exit(8)
    with open(path) as f:
        return json.load(f) + FAKE_ONLY_TOOLS


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def log(text):
    sys.stderr.write(text)
    sys.stderr.flush()


def text_result(payload, is_error=False):
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


class IndexBuild:
    """The fake background build behind manage_index create/status."""

    def __init__(self):
        self.polls = 0
        self.total = int(os.environ.get("FAKE_POLLS", "3"))
        self.end = os.environ.get("FAKE_INDEX_END", "indexed")

    def status(self, path):
        self.polls += 1
        if self.polls <= self.total:
            done = self.polls * 100 // (self.total + 1)
            return {
                "status": "ok",
                "state": "indexing",
                "path": path,
                "progress": {"percentage": done, "phase": "chunking",
                             "filesDone": done * 10, "filesTotal": 1000},
            }
        # The real server reports these states with a matching non-ok status.
        status = self.end if self.end in ("not_indexed", "requires_reindex") else "ok"
        envelope = {"status": status, "state": self.end, "path": path, "polls": self.polls}
        if status != "ok":
            envelope["reason"] = self.end
        if self.end == "indexfailed":
            envelope["message"] = "embedding provider unreachable"
        return envelope


BUILD = IndexBuild()


def call_tool(params):
    name = params.get("name")
    args = params.get("arguments") or {}
    if SCENARIO == "tool_error":
        return text_result("boom: invalid arguments", is_error=True)
    if SCENARIO == "envelope":
        status = os.environ.get("FAKE_STATUS", "not_ready")
        path = args.get("path", "/repo")
        return text_result({
            "status": status,
            "reason": {"not_ready": "indexing"}.get(status, status),
            "path": path,
            "hints": {"status": {"tool": "manage_index", "args": {"action": "status", "path": path}}},
        })
    if SCENARIO == "index" and name == "manage_index":
        action = args.get("action")
        path = args.get("path", "/repo")
        if action in ("create", "reindex"):
            return text_result({"status": "ok", "state": "indexing", "action": action, "path": path})
        if action == "status":
            return text_result(BUILD.status(path))
    envelope = {"status": "ok", "tool": name, "args": args}
    if os.environ.get("FAKE_HUMAN_TEXT"):
        envelope["humanText"] = os.environ["FAKE_HUMAN_TEXT"]
    return text_result(envelope)


def log_request(message):
    path = os.environ.get("FAKE_REQUEST_LOG")
    if not path:
        return
    params = message.get("params") or {}
    entry = {
        "pid": os.getpid(),
        "ms": time.monotonic() * 1000,
        "method": message.get("method"),
        "tool": params.get("name"),
        "action": (params.get("arguments") or {}).get("action"),
    }
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def main():
    if os.environ.get("SATORI_RUN_MODE") != "cli":
        log("fake: SATORI_RUN_MODE is not cli; refusing to start\n")
        sys.exit(9)
    spawn_log = os.environ.get("FAKE_SPAWN_LOG")
    if spawn_log:
        with open(spawn_log, "a") as f:
            f.write(GUARD + "\n")
    pid_file = os.environ.get("FAKE_PID_FILE")
    if pid_file:
        with open(pid_file, "w") as f:
            f.write(str(os.getpid()))
    # After the pid file, so that a test can find (and check the end of) a
    # fake that was killed while still starting.
    tools = load_tools()
    if SCENARIO == "noisy":
        log("noise: starting up\n")
        sys.stderr.buffer.write(b"raw bytes \xff\xfe kept as-is\n")
        sys.stderr.buffer.write(b"x" * 200000 + b"\n")
        sys.stderr.flush()

    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return
        if not line.strip():
            continue
        message = json.loads(line)
        log_request(message)
        method = message.get("method")
        msg_id = message.get("id")
        if method == "initialize":
            if SCENARIO == "silent_init" or BREAKS == "hang_init":
                continue
            if BREAKS == "die_init":
                sys.exit(0)
            if SCENARIO == "garbage_init" or BREAKS == "init":
                sys.stdout.write("Starting Satori...\n")
            send({"jsonrpc": "2.0", "id": msg_id, "result": {
                "protocolVersion": PROTOCOL,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake-satori", "version": "0.0.1"},
            }})
        elif method == "tools/list":
            if SCENARIO == "noisy":
                log("noise: listing tools\n")
            if BREAKS == "list":
                sys.stdout.write("[STDOUT_BLOCKED_BINARY len=42]\n")
            send({"jsonrpc": "2.0", "id": msg_id, "result": {"tools": tools}})
        elif method == "tools/call":
            if SCENARIO == "hang_call" or BREAKS == "hang_call":
                time.sleep(3600)
            if SCENARIO == "die_call":
                log("fatal: giving up\n")
                sys.exit(7)
            if SCENARIO == "die_call_mid_line":
                log("fatal: giving up without a newline")
                sys.exit(7)
            if SCENARIO == "garbage_call" or BREAKS == "call":
                sys.stdout.write("debug: handling call\n")
            if SCENARIO == "noisy":
                log("noise: calling " + str(message["params"].get("name")) + "\n")
            answer = {"jsonrpc": "2.0", "id": msg_id, "result": call_tool(message["params"])}
            if BREAKS == "mangle_call":
                sys.stdout.write(json.dumps(answer)[:24] + "\n")
                sys.stdout.flush()
                continue
            send(answer)
        elif msg_id is not None:
            send({"jsonrpc": "2.0", "id": msg_id,
                  "error": {"code": -32601, "message": "method not found: " + str(method)}})


if __name__ == "__main__":
    main()
