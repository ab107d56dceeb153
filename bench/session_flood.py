#!/usr/bin/env python3
"""A flood of MCP sessions against one shared `satori --http`, and what it leaves behind.

Starts `satori --http 127.0.0.1:0` on a fresh home and opens one well-behaved session. Then
`--threads` clients, each on a keep-alive loopback connection, open sessions as fast as they
can (`initialize`, then `notifications/initialized` in the new session, as an SDK client
connects) until `--attempts` in all have been made, never ending a session. Meanwhile the
well-behaved session calls `list_codebases` every half second and a newcomer opens a fresh
session and makes one call every two seconds. The server's resident memory is sampled every
half second during the flood, then after it until it is back under `--settle-mib` or the
session expiry plus `--grace` seconds have passed.

Prints one JSON document: the flood's answers by HTTP status and its rate, the well-behaved
session's and the newcomers' successes and latencies, the peak resident memory during the
flood, and how long after the flood the memory took to fall under `--settle-mib`. With
`--baseline-bin-dir` the same run first goes against that build (`--baseline-attempts`, fewer
by default: a server without a cap grows with every session) and both appear, with the ratio
of their peaks.

Bounded in attempts and time; loopback only. Linux (reads /proc for the samples).

Usage:
  cargo build --release --bins
  python3 bench/session_flood.py --attempts 50000 > flood.json
"""
import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "satori-flood", "version": "1"}}})
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "Host": "localhost"}


def log(msg):
    print(f"session_flood: {msg}", file=sys.stderr, flush=True)


def rss_mib(pid):
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return round(kib / 1024, 1)
    except (OSError, StopIteration):
        return None


def start(bin_dir, extra):
    home = tempfile.mkdtemp(prefix="satori-flood-")
    env = dict(os.environ, SATORI_HOME=home)
    server = subprocess.Popen([os.path.join(bin_dir, "satori"), "--http", "127.0.0.1:0", *extra],
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    line = server.stderr.readline().strip()
    if not line.startswith("satori: serving MCP at http://"):
        server.kill()
        raise SystemExit(f"session_flood: the server did not start: {line or server.wait()}")
    threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
    hostport = line.removeprefix("satori: serving MCP at http://").split("/", 1)[0]
    host, port = hostport.rsplit(":", 1)
    return server, host, int(port)


class Client:
    """One session on a connection of its own."""

    def __init__(self, host, port):
        self.conn = http.client.HTTPConnection(host, port, timeout=30)
        self.session = None
        self.next_id = 1
        status, _ = self.post(INIT)
        if status != 200 or not self.session:
            raise RuntimeError(f"initialize answered {status}")
        self.post(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def post(self, body):
        headers = dict(HEADERS)
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        self.conn.request("POST", "/mcp", body, headers)
        resp = self.conn.getresponse()
        self.session = resp.getheader("Mcp-Session-Id") or self.session
        return resp.status, resp.read()

    def call(self):
        self.next_id += 1
        status, data = self.post(json.dumps({
            "jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
            "params": {"name": "list_codebases", "arguments": {}}}))
        return status == 200 and b'"result"' in data

    def close(self):
        try:
            self.conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": self.session,
                                                         "Host": "localhost"})
            self.conn.getresponse().read()
        except OSError:
            pass
        self.conn.close()


def run(bin_dir, attempts, threads, settle_mib, expiry, grace, extra, calls):
    server, host, port = start(bin_dir, extra)
    log(f"{bin_dir}: server {server.pid} on port {port}, {rss_mib(server.pid)} MiB")
    result = {"binDir": bin_dir, "attempts": attempts, "threads": threads,
              "callsPerSession": calls}
    try:
        steady = Client(host, port)
        stop = threading.Event()
        lock = threading.Lock()
        counts = {}
        made = [0]
        samples = []
        steady_stats = {"ok": 0, "failed": 0, "latencies": []}
        newcomer_stats = {"ok": 0, "failed": 0, "latencies": []}

        def flood():
            conn = http.client.HTTPConnection(host, port, timeout=30)
            while not stop.is_set():
                with lock:
                    if made[0] >= attempts:
                        return
                    made[0] += 1
                try:
                    conn.request("POST", "/mcp", INIT, HEADERS)
                    resp = conn.getresponse()
                    resp.read()
                    key = str(resp.status)
                    session = resp.getheader("Mcp-Session-Id")
                    if session:
                        in_session = dict(HEADERS, **{"Mcp-Session-Id": session})
                        conn.request("POST", "/mcp", INITIALIZED, in_session)
                        conn.getresponse().read()
                        for i in range(calls):
                            conn.request("POST", "/mcp", json.dumps(
                                {"jsonrpc": "2.0", "id": 2 + i, "method": "tools/list"}),
                                in_session)
                            conn.getresponse().read()
                except (OSError, http.client.HTTPException) as e:
                    key = type(e).__name__
                    conn.close()
                    conn = http.client.HTTPConnection(host, port, timeout=30)
                with lock:
                    counts[key] = counts.get(key, 0) + 1

        def steady_loop():
            while not stop.is_set():
                t = time.perf_counter()
                try:
                    ok = steady.call()
                except (OSError, http.client.HTTPException):
                    ok = False
                steady_stats["latencies"].append((time.perf_counter() - t) * 1000)
                steady_stats["ok" if ok else "failed"] += 1
                time.sleep(0.5)

        def newcomers():
            while not stop.is_set():
                t = time.perf_counter()
                try:
                    c = Client(host, port)
                    ok = c.call()
                    c.close()
                except (OSError, RuntimeError, http.client.HTTPException):
                    ok = False
                newcomer_stats["latencies"].append((time.perf_counter() - t) * 1000)
                newcomer_stats["ok" if ok else "failed"] += 1
                time.sleep(2)

        def sampler():
            while not stop.is_set():
                samples.append(rss_mib(server.pid))
                time.sleep(0.5)

        helpers = [threading.Thread(target=f, daemon=True)
                   for f in (steady_loop, newcomers, sampler)]
        flooders = [threading.Thread(target=flood, daemon=True) for _ in range(threads)]
        started = time.time()
        for t in helpers + flooders:
            t.start()
        for t in flooders:
            t.join()
        flood_seconds = time.time() - started
        samples.append(rss_mib(server.pid))
        stop.set()
        for t in helpers:
            t.join()
        alive = server.poll() is None
        result.update({
            "floodSeconds": round(flood_seconds, 1),
            "initializePerSecond": round(made[0] / flood_seconds),
            "answers": counts,
            "serverAlive": alive,
            "peakRssMiB": max((s for s in samples if s is not None), default=None),
            "steadySession": summary(steady_stats),
            "newcomers": summary(newcomer_stats),
        })
        # After the flood: how long until the memory is back under the bar.
        after = time.time()
        settled = None
        trace = []
        while alive and time.time() - after < expiry + grace:
            rss = rss_mib(server.pid)
            trace.append(rss)
            if rss is not None and rss < settle_mib:
                settled = round(time.time() - after, 1)
                break
            time.sleep(1)
        result.update({
            "settleMiB": settle_mib,
            "secondsToSettle": settled,
            "rssAfterMiB": trace[-1] if trace else None,
            "steadyAfterFlood": alive and steady.call(),
        })
        log(json.dumps(result))
        return result
    finally:
        server.kill()
        server.wait()


def summary(stats):
    lat = sorted(stats["latencies"])
    pick = (lambda p: round(lat[min(len(lat) - 1, int(p * (len(lat) - 1)))], 1)) if lat else (
        lambda p: None)
    return {"ok": stats["ok"], "failed": stats["failed"], "p50ms": pick(0.5),
            "maxMs": round(lat[-1], 1) if lat else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin-dir", default=os.path.join(ROOT, "target", "release"))
    ap.add_argument("--baseline-bin-dir", help="another build to run the same flood against first")
    ap.add_argument("--attempts", type=int, default=50_000)
    ap.add_argument("--baseline-attempts", type=int, default=10_000)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--settle-mib", type=float, default=100)
    ap.add_argument("--session-idle", type=int, default=120,
                    help="the server's --session-idle (seconds); unused sessions expire after a quarter")
    ap.add_argument("--grace", type=float, default=15)
    ap.add_argument("--calls-per-session", type=int, default=0,
                    help="tools/list calls each flooding session makes before it is abandoned")
    args = ap.parse_args()
    out = {}
    if args.baseline_bin_dir:
        out["baseline"] = run(args.baseline_bin_dir, args.baseline_attempts, args.threads,
                              args.settle_mib, 0, 0, [], args.calls_per_session)
    out["candidate"] = run(args.bin_dir, args.attempts, args.threads, args.settle_mib,
                           args.session_idle, args.grace,
                           ["--session-idle", str(args.session_idle)], args.calls_per_session)
    if "baseline" in out and out["baseline"]["peakRssMiB"]:
        out["peakRatio"] = round(out["candidate"]["peakRssMiB"] / out["baseline"]["peakRssMiB"], 3)
    json.dump(out, sys.stdout, indent=1)
    print()
    ok = out["candidate"]["serverAlive"] and out["candidate"]["steadyAfterFlood"]
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
