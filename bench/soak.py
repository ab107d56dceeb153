#!/usr/bin/env python3
"""A soak of shared `satori` servers: many clients at once over loopback and a unix socket,
files changing.

Starts `satori --http 127.0.0.1:0` on a fresh home (with `--transport both`, also
`satori --socket PATH` on the same home: two processes, one index), indexes a copy of a source
tree (by default this repository's `crates/`), then for `--seconds` runs `--clients` clients
(split between the servers), each with its own MCP session, calling `search_codebase`,
`read_file` and `file_outline` in a loop, while a writer edits, adds and removes files in the
tree (so the watchers keep syncing), a client now and then drops its connection in the middle
of a request, another opens a request and never reads the answer, and another opens a session,
makes one call and leaves without ending it. It samples each server's resident memory and open
file descriptors every few seconds.

Prints one JSON document: per tool the calls, p50/p95/p99 latency in ms, the documented tool
errors (`tool_errors`: a file that looks like a secret refused, say) and the errors (an answer
that is neither a result nor a documented tool error), per server the memory and descriptor
samples (resident memory split into anonymous and mapped-file pages, and the count of
mappings), a line per minute, the slope of resident memory after warm-up (least squares, MiB
per minute) of every sample, of each minute's lowest sample (the floor, which a leak raises
and the allocator's swings do not) and of each part, and the counts of the misbehaving clients. Exit status 1 when a call failed
outside the documented statuses or a server exited.

Bounded in time (`--seconds`) and requests (`--max-requests`); loopback only. Linux (reads
/proc for the samples).

Usage:
  cargo build --release --bins
  python3 bench/soak.py --seconds 1800 --clients 64 --transport both > soak.json
"""
import argparse
import http.client
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUERIES = [
    "where are search results ranked", "parse the query operators", "index a repository",
    "watcher debounce file changes", "read a file with a line range", "call graph of a symbol",
    "tool error envelope", "embedding model tokenizer", "BM25 scoring", "chunk a source file",
    "manifest of an index generation", "lock file of the index", "Weights", "SearchRequest",
    "http origin check", "session log level", "file outline of symbols", "snapshot of the tree",
]


def log(msg):
    print(f"soak: {msg}", file=sys.stderr, flush=True)


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 over a unix socket."""

    def __init__(self, sock_path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.sock_path = sock_path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.sock_path)


class Endpoint:
    """Where one server listens: a loopback port or a unix socket."""

    def __init__(self, url):
        self.url = url
        if url.startswith("unix://"):
            self.unix, self.host, self.port, self.path = url.removeprefix("unix://"), "localhost", None, "/mcp"
        else:
            self.unix = None
            hostport, path = url.removeprefix("http://").split("/", 1)
            host, port = hostport.rsplit(":", 1)
            self.host, self.port, self.path = host, int(port), "/" + path

    def connection(self, timeout=120):
        if self.unix:
            return UnixHTTPConnection(self.unix, timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def raw_socket(self):
        if self.unix:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(10)
            sock.connect(self.unix)
            return sock
        return socket.create_connection((self.host, self.port), timeout=10)


class Session:
    """One MCP session over Streamable HTTP on a keep-alive connection."""

    def __init__(self, endpoint):
        self.path = endpoint.path
        self.conn = endpoint.connection()
        self.session = None
        self.next_id = 0
        result = self.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "satori-soak", "version": "1"}})
        assert "result" in result, result
        self.notify("notifications/initialized")

    def _post(self, body):
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream", "Host": "localhost"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        self.conn.request("POST", self.path, json.dumps(body), headers)
        resp = self.conn.getresponse()
        sid = resp.getheader("Mcp-Session-Id")
        if sid:
            self.session = sid
        data = resp.read()
        return resp.status, resp.getheader("Content-Type", ""), data

    def notify(self, method, params=None):
        body = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        status, _, _ = self._post(body)
        assert status in (200, 202), status

    def request(self, method, params):
        self.next_id += 1
        rid = self.next_id
        status, ctype, data = self._post(
            {"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        if status != 200:
            return {"httpStatus": status, "body": data[:300].decode("utf-8", "replace")}
        if "text/event-stream" in ctype:
            for line in data.decode("utf-8", "replace").splitlines():
                if line.startswith("data:") and line[5:].strip():
                    msg = json.loads(line[5:])
                    if msg.get("id") == rid:
                        return msg
            return {"noAnswer": data[:300].decode("utf-8", "replace")}
        return json.loads(data)

    def call(self, tool, args):
        return self.request("tools/call", {"name": tool, "arguments": args})

    def close(self):
        try:
            if self.session:
                self.conn.request("DELETE", self.path, headers={"Mcp-Session-Id": self.session,
                                                                "Host": "localhost"})
                self.conn.getresponse().read()
        except OSError:
            pass
        self.conn.close()


def documented(answer):
    """A result, or a tool error the contract documents: the structured envelope with its
    `status`, or a plain-text tool's `Error: ...` (read_file refusing a file that looks like
    a secret, say). A JSON-RPC error, an HTTP failure or no answer is not."""
    if "result" not in answer:
        return False
    result = answer["result"]
    if not result.get("isError"):
        return True
    structured = result.get("structuredContent") or {}
    if isinstance(structured, dict) and "status" in structured:
        return True
    content = result.get("content") or [{}]
    return str(content[0].get("text", "")).startswith("Error: ")


def percentile(values, p):
    if not values:
        return None
    values = sorted(values)
    k = min(len(values) - 1, max(0, int(round(p / 100 * (len(values) - 1)))))
    return round(values[k], 2)


def slope_mib_per_min(points):
    """Least-squares slope of (seconds, KiB) points, in MiB per minute."""
    if len(points) < 2:
        return None
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    var = sum((t - mx) ** 2 for t, _ in points)
    if var == 0:
        return None
    cov = sum((t - mx) * (v - my) for t, v in points)
    return round(cov / var * 60 / 1024, 3)


def floor_slope_mib_per_min(points):
    """Slope of the lowest sample of each minute: a leak raises the floor, while the swings
    of an allocator that keeps freed pages for reuse move the peaks."""
    floors = {}
    for t, v in points:
        m = int(t // 60)
        floors[m] = min(v, floors.get(m, v))
    return slope_mib_per_min([(m * 60, v) for m, v in sorted(floors.items())])


def per_minute(samples):
    """The last sample of each minute."""
    minutes = {}
    for s in samples:
        minutes[int(s["t"] // 60)] = s
    return [dict(minute=m, rssMiB=round(s["rssKiB"] / 1024, 1),
                 anonMiB=round(s.get("anonKiB", 0) / 1024, 1),
                 fileMiB=round(s.get("fileKiB", 0) / 1024, 1), fds=s["fds"], maps=s.get("maps"))
            for m, s in sorted(minutes.items())]


def start_server(bin_dir, env, listen):
    server = subprocess.Popen([os.path.join(bin_dir, "satori"), *listen],
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    line = server.stderr.readline().strip()
    if not line.startswith("satori: serving MCP at "):
        server.kill()
        raise SystemExit(f"soak: the server did not start serving: {line or server.wait()}")
    threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
    endpoint = Endpoint(line.removeprefix("satori: serving MCP at "))
    log(f"server {server.pid} at {endpoint.url}")
    return server, endpoint


def sample(pid):
    """Resident memory split into heap-like (anonymous) and mapped-file pages, and descriptors.

    The split tells a growing heap from a growing set of mapped index files: a server that
    maps each new generation shows the second, a leak the first."""
    fields = {"VmRSS:": "rssKiB", "RssAnon:": "anonKiB", "RssFile:": "fileKiB"}
    out = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            key = fields.get(line.split(":")[0] + ":")
            if key:
                out[key] = int(line.split()[1])
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    try:
        out["maps"] = sum(1 for _ in open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace"))
    except OSError:
        pass
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin-dir", default=os.path.join(ROOT, "target", "release"))
    ap.add_argument("--tree", default=os.path.join(ROOT, "crates"),
                    help="source tree to copy and index (default: this repository's crates/)")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--max-requests", type=int, default=2_000_000)
    ap.add_argument("--warm-up", type=float, default=60, help="seconds before the baseline sample")
    ap.add_argument("--sample-every", type=float, default=5)
    ap.add_argument("--transport", choices=["http", "socket", "both"], default="http")
    ap.add_argument("--socket-first", action="store_true",
                    help="with --transport both, build the index through the socket server")
    ap.add_argument("--pause", type=float, default=0,
                    help="seconds each client waits between calls")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="satori-soak-")
    repo = os.path.join(work, "repo")
    shutil.copytree(args.tree, repo, ignore=shutil.ignore_patterns("target", "node_modules",
                                                                   ".git", "*.snap"))
    files = sorted(os.path.relpath(os.path.join(d, f), repo)
                   for d, _, fs in os.walk(repo) for f in fs if f.endswith(".rs"))
    log(f"{len(files)} Rust files copied to {repo}")
    env = dict(os.environ, SATORI_HOME=os.path.join(work, "home"))
    servers = []
    if args.transport in ("http", "both"):
        servers.append(start_server(args.bin_dir, env, ["--http", "127.0.0.1:0"]))
    if args.transport in ("socket", "both"):
        servers.append(start_server(args.bin_dir, env,
                                    ["--socket", os.path.join(work, "satori.sock")]))
    if args.socket_first:
        servers.reverse()
    endpoints = [e for _, e in servers]

    try:
        admin = Session(endpoints[0])
        started = time.time()
        admin.call("manage_index", {"action": "create", "path": repo})
        while True:
            status = admin.call("manage_index", {"action": "status", "path": repo})
            state = (status.get("result") or {}).get("structuredContent", {}).get("state")
            if state != "indexing":
                break
            time.sleep(0.2)
        index_seconds = time.time() - started
        log(f"indexed in {index_seconds:.1f}s: {state}")

        stop = threading.Event()
        deadline = time.time() + args.seconds
        lock = threading.Lock()
        latencies = {"search_codebase": [], "read_file": [], "file_outline": []}
        errors = {k: 0 for k in latencies}
        refusals = {k: 0 for k in latencies}
        examples = []
        requests = [0]
        misbehaving = {"dropped mid-request": 0, "never read": 0, "abandoned sessions": 0,
                       "sessions refused": 0, "writer edits": 0}

        def client(seed):
            rng = random.Random(seed)
            s = Session(endpoints[seed % len(endpoints)])
            try:
                while not stop.is_set():
                    with lock:
                        if requests[0] >= args.max_requests:
                            return
                        requests[0] += 1
                    tool = rng.choice(["search_codebase", "search_codebase", "read_file",
                                       "file_outline"])
                    rel = rng.choice(files)
                    if tool == "search_codebase":
                        call_args = {"path": repo, "query": rng.choice(QUERIES)}
                    elif tool == "read_file":
                        start = rng.randint(1, 40)
                        call_args = {"path": os.path.join(repo, rel), "start_line": start,
                                     "end_line": start + 40}
                    else:
                        call_args = {"path": repo, "file": rel}
                    t = time.perf_counter()
                    answer = s.call(tool, call_args)
                    ms = (time.perf_counter() - t) * 1000
                    with lock:
                        latencies[tool].append(ms)
                        if (answer.get("result") or {}).get("isError"):
                            refusals[tool] += 1
                        if not documented(answer):
                            errors[tool] += 1
                            if len(examples) < 5:
                                examples.append({"tool": tool, "args": call_args,
                                                 "answer": str(answer)[:400]})
                    if args.pause:
                        stop.wait(args.pause)
            finally:
                s.close()

        def raw_post(endpoint, body, read):
            sock = endpoint.raw_socket()
            data = json.dumps(body).encode()
            sock.sendall((f"POST {endpoint.path} HTTP/1.1\r\nHost: localhost\r\n"
                          "Content-Type: application/json\r\n"
                          "Accept: application/json, text/event-stream\r\n"
                          f"Content-Length: {len(data)}\r\n\r\n").encode() + data)
            if read:
                sock.recv(1)
            return sock

        def misbehave():
            rng = random.Random(99)
            held = []
            turn = 0
            while not stop.is_set():
                turn += 1
                endpoint = endpoints[turn % len(endpoints)]
                try:
                    # A client that sends a request and disconnects before the answer.
                    s = Session(endpoint)
                    s.next_id += 1
                    body = {"jsonrpc": "2.0", "id": s.next_id, "method": "tools/call",
                            "params": {"name": "search_codebase",
                                       "arguments": {"path": repo, "query": rng.choice(QUERIES)}}}
                    s.conn.request("POST", endpoint.path, json.dumps(body),
                                   {"Content-Type": "application/json",
                                    "Accept": "application/json, text/event-stream",
                                    "Host": "localhost", "Mcp-Session-Id": s.session})
                    s.conn.sock.close()
                    misbehaving["dropped mid-request"] += 1
                    # A client that opens a request and never reads what comes back (kept open
                    # a while, at most four at once, then dropped).
                    held.append(raw_post(endpoint, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                          "params": {"protocolVersion": "2025-06-18",
                                                     "capabilities": {},
                                                     "clientInfo": {"name": "mute", "version": "1"}}},
                                         read=False))
                    misbehaving["never read"] += 1
                    if len(held) > 4:
                        held.pop(0).close()
                    # A client that makes one call and leaves without ending its session.
                    gone = Session(endpoint)
                    gone.call("list_codebases", {})
                    gone.conn.close()
                    misbehaving["abandoned sessions"] += 1
                except (AssertionError, OSError, http.client.HTTPException):
                    # A new session refused at the cap (503) is the contract, not a failure.
                    misbehaving["sessions refused"] += 1
                stop.wait(2.0)
            for sock in held:
                sock.close()

        def writer():
            rng = random.Random(7)
            added = []
            n = 0
            while not stop.is_set():
                n += 1
                if added and rng.random() < 0.3:
                    os.remove(added.pop(0))
                elif rng.random() < 0.5:
                    p = os.path.join(repo, f"soak_added_{n}.rs")
                    with open(p, "w", encoding="utf-8") as f:
                        f.write(f"/// Soak file {n}.\npub fn soak_added_{n}() -> u32 {{ {n} }}\n")
                    added.append(p)
                else:
                    p = os.path.join(repo, rng.choice(files))
                    with open(p, "a", encoding="utf-8") as f:
                        f.write(f"\n// soak edit {n}\n")
                misbehaving["writer edits"] += 1
                stop.wait(2.0)

        samples = {e.url: [] for e in endpoints}
        t0 = time.time()

        def sampler():
            while not stop.is_set():
                for server, e in servers:
                    samples[e.url].append(dict(sample(server.pid), t=round(time.time() - t0, 1)))
                stop.wait(args.sample_every)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
        threads += [threading.Thread(target=f) for f in (misbehave, writer, sampler)]
        for t in threads:
            t.start()
        exited = None
        while time.time() < deadline and requests[0] < args.max_requests:
            exited = next((srv.returncode for srv, _ in servers if srv.poll() is not None), None)
            if exited is not None:
                log(f"a server exited with {exited}")
                break
            time.sleep(1)
        stop.set()
        for t in threads:
            t.join()
        for server, e in servers:
            if server.poll() is None:
                samples[e.url].append(dict(sample(server.pid), t=round(time.time() - t0, 1)))
        admin.close()
    finally:
        for server, _ in servers:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(work, ignore_errors=True)

    def memory(series):
        warm = [s for s in series if s["t"] >= args.warm_up] or series[-1:]
        return {
            "memory": {"after_warm_up_kib": warm[0]["rssKiB"], "end_kib": series[-1]["rssKiB"],
                       "max_kib": max(s["rssKiB"] for s in series),
                       "slope_after_warm_up_mib_per_min":
                           slope_mib_per_min([(s["t"], s["rssKiB"]) for s in warm]),
                       "floor_slope_after_warm_up_mib_per_min":
                           floor_slope_mib_per_min([(s["t"], s["rssKiB"]) for s in warm]),
                       "anon_slope_mib_per_min":
                           slope_mib_per_min([(s["t"], s.get("anonKiB", 0)) for s in warm]),
                       "file_slope_mib_per_min":
                           slope_mib_per_min([(s["t"], s.get("fileKiB", 0)) for s in warm])},
            "fds": {"after_warm_up": warm[0]["fds"], "end": series[-1]["fds"],
                    "max": max(s["fds"] for s in series)},
            "per_minute": per_minute(series),
            "samples": series,
        }

    report = {
        "seconds": args.seconds, "clients": args.clients, "files": len(files),
        "index_seconds": round(index_seconds, 1), "requests": requests[0],
        "tools": {k: {"calls": len(v), "errors": errors[k], "tool_errors": refusals[k],
                      "p50_ms": percentile(v, 50),
                      "p95_ms": percentile(v, 95), "p99_ms": percentile(v, 99),
                      "mean_ms": round(statistics.fmean(v), 2) if v else None}
                  for k, v in latencies.items()},
        "misbehaving": misbehaving,
        "servers": {url: memory(series) for url, series in samples.items() if series},
        "error_examples": examples,
        "server_exited_early": exited,
        "exit_status": [server.returncode for server, _ in servers],
    }
    json.dump(report, sys.stdout, indent=1)
    print()
    sys.exit(1 if any(errors.values()) or exited is not None else 0)


if __name__ == "__main__":
    main()
