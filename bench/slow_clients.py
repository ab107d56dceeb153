#!/usr/bin/env python3
"""Slow and silent connections against one shared `satori --http`, and a normal client's
search meanwhile.

Starts `satori --http 127.0.0.1:0` on a fresh home and indexes a copy of a small source tree
(by default this repository's `crates/satori-mcp/src`). Then, for `--seconds`, it holds
`--connections` connections open against the server, reopening any the server closes: a
third connect and send nothing, a third trickle a request head a byte a second, and a third
send a whole head announcing a body and trickle the body a byte a second. Meanwhile a normal
client opens a fresh connection and session every half second and searches. The server's
CPU time, resident memory and descriptors are sampled each second. `--fd-limit N` starts the
server with N descriptors at most (soft and hard), so the hostile connections can exhaust
them.

Prints one JSON document: the normal client's search latencies (p50, p95, max), how many took
longer than `--bar-ms` or failed, how many hostile connections were held on average and
reopened, and the server's CPU share, peak memory and peak descriptors. With
`--baseline-bin-dir` the same run goes first against that build, and both appear.

Bounded in time and connections; loopback only. Linux (reads /proc for the samples).

Usage:
  cargo build --release --bins
  python3 bench/slow_clients.py --connections 1000 --seconds 60 > slow.json
"""
import argparse
import http.client
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "Host": "localhost"}


def log(msg):
    print(f"slow_clients: {msg}", file=sys.stderr, flush=True)


def proc_sample(pid):
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return cpu, rss / 1024, len(os.listdir(f"/proc/{pid}/fd"))


class Session:
    def __init__(self, host, port, timeout):
        self.conn = http.client.HTTPConnection(host, port, timeout=timeout)
        self.session = None
        self.next_id = 0
        r = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "slow-bench", "version": "1"}})
        if "result" not in r:
            raise RuntimeError(f"initialize: {r}")
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, body):
        headers = dict(HEADERS)
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        self.conn.request("POST", "/mcp", json.dumps(body), headers)
        resp = self.conn.getresponse()
        self.session = resp.getheader("Mcp-Session-Id") or self.session
        return resp.status, resp.getheader("Content-Type", ""), resp.read()

    def request(self, method, params):
        self.next_id += 1
        status, ctype, data = self.post({"jsonrpc": "2.0", "id": self.next_id,
                                         "method": method, "params": params})
        if status != 200:
            return {"httpStatus": status}
        if "text/event-stream" in ctype:
            for line in data.decode("utf-8", "replace").splitlines():
                if line.startswith("data:") and line[5:].strip():
                    msg = json.loads(line[5:])
                    if msg.get("id") == self.next_id:
                        return msg
            return {"noAnswer": True}
        return json.loads(data)

    def close(self):
        try:
            self.conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": self.session or "",
                                                         "Host": "localhost"})
            self.conn.getresponse().read()
        except (OSError, http.client.HTTPException):
            pass
        self.conn.close()


def run(bin_dir, tree, connections, seconds, bar_ms, fd_limit):
    work = tempfile.mkdtemp(prefix="satori-slow-")
    repo = os.path.join(work, "repo")
    shutil.copytree(tree, repo)
    env = dict(os.environ, SATORI_HOME=os.path.join(work, "home"))
    def limit():
        if fd_limit:
            resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit))

    server = subprocess.Popen([os.path.join(bin_dir, "satori"), "--http", "127.0.0.1:0"],
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, preexec_fn=limit)
    line = server.stderr.readline().strip()
    if not line.startswith("satori: serving MCP at http://"):
        server.kill()
        raise SystemExit(f"slow_clients: the server did not start: {line or server.wait()}")
    threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
    host, port = line.removeprefix("satori: serving MCP at http://").split("/", 1)[0].rsplit(":", 1)
    port = int(port)
    result = {"binDir": bin_dir, "connections": connections, "seconds": seconds,
              "fdLimit": fd_limit}
    try:
        admin = Session(host, port, 120)
        admin.request("tools/call", {"name": "manage_index",
                                     "arguments": {"action": "create", "path": repo}})
        while True:
            r = admin.request("tools/call", {"name": "manage_index",
                                             "arguments": {"action": "status", "path": repo}})
            if (r.get("result") or {}).get("structuredContent", {}).get("state") != "indexing":
                break
            time.sleep(0.2)
        admin.close()

        stop = threading.Event()
        held = [0]
        reopened = [0]
        lock = threading.Lock()

        def hostile(kind):
            # One hostile connection, reopened whenever the server closes it.
            while not stop.is_set():
                try:
                    s = socket.create_connection((host, port), timeout=5)
                except OSError:
                    time.sleep(0.5)
                    continue
                with lock:
                    held[0] += 1
                try:
                    s.settimeout(1)
                    if kind == 0:
                        payload = b""
                    elif kind == 1:
                        payload = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 10000
                    else:
                        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
                                  b"Content-Type: application/json\r\n"
                                  b"Accept: application/json, text/event-stream\r\n"
                                  b"Content-Length: 100000\r\n\r\n")
                        payload = b"{" + b" " * 100000
                    i = 0
                    while not stop.is_set():
                        if i < len(payload):
                            s.send(payload[i:i + 1])
                            i += 1
                        try:
                            if s.recv(4096) == b"":
                                break
                        except socket.timeout:
                            pass
                except OSError:
                    pass
                finally:
                    s.close()
                    with lock:
                        held[0] -= 1
                        reopened[0] += 1

        latencies = []
        failures = [0]

        def normal():
            while not stop.is_set():
                t = time.perf_counter()
                try:
                    c = Session(host, port, 30)
                    r = c.request("tools/call", {"name": "search_codebase", "arguments": {
                        "path": repo, "query": "where are sessions expired"}})
                    ok = "result" in r and not r["result"].get("isError")
                    c.close()
                except (OSError, RuntimeError, http.client.HTTPException):
                    ok = False
                elapsed = (time.perf_counter() - t) * 1000
                if ok:
                    latencies.append(elapsed)
                else:
                    failures[0] += 1
                time.sleep(0.5)

        cpu0, _, _ = proc_sample(server.pid)
        t0 = time.time()
        hostiles = [threading.Thread(target=hostile, args=(i % 3,), daemon=True)
                    for i in range(connections)]
        for t in hostiles:
            t.start()
        time.sleep(3)  # let them connect
        client = threading.Thread(target=normal, daemon=True)
        client.start()
        peak_rss = peak_fds = 0
        held_samples = []
        while time.time() - t0 < seconds:
            time.sleep(1)
            _, rss, fds = proc_sample(server.pid)
            peak_rss, peak_fds = max(peak_rss, rss), max(peak_fds, fds)
            held_samples.append(held[0])
        cpu1, _, _ = proc_sample(server.pid)
        wall = time.time() - t0
        stop.set()
        client.join()
        lat = sorted(latencies)
        pick = lambda p: round(lat[min(len(lat) - 1, int(p * (len(lat) - 1)))], 1) if lat else None
        result.update({
            "searches": len(lat), "failed": failures[0],
            "p50ms": pick(0.5), "p95ms": pick(0.95), "maxMs": round(lat[-1], 1) if lat else None,
            "overBar": sum(1 for v in lat if v > bar_ms), "barMs": bar_ms,
            "heldMean": round(sum(held_samples) / max(1, len(held_samples))),
            "reopened": reopened[0],
            "serverCpuShare": round((cpu1 - cpu0) / wall, 3),
            "peakRssMiB": round(peak_rss, 1), "peakFds": peak_fds,
            "serverAlive": server.poll() is None,
        })
        log(json.dumps(result))
        return result
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin-dir", default=os.path.join(ROOT, "target", "release"))
    ap.add_argument("--baseline-bin-dir")
    ap.add_argument("--tree", default=os.path.join(ROOT, "crates", "satori-mcp", "src"))
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--bar-ms", type=float, default=2000)
    ap.add_argument("--fd-limit", type=int,
                    help="the server's descriptor limit, soft and hard (default: this shell's)")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, args.connections * 2 + 256))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    threading.stack_size(256 * 1024)
    out = {}
    if args.baseline_bin_dir:
        out["baseline"] = run(args.baseline_bin_dir, args.tree, args.connections, args.seconds,
                              args.bar_ms, args.fd_limit)
    out["candidate"] = run(args.bin_dir, args.tree, args.connections, args.seconds, args.bar_ms,
                           args.fd_limit)
    json.dump(out, sys.stdout, indent=1)
    print()
    c = out["candidate"]
    sys.exit(0 if c["serverAlive"] and c["searches"] > 0 else 1)


if __name__ == "__main__":
    main()
