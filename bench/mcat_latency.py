#!/usr/bin/env python3
"""How much a warm `mcat proxy` saves: the wall time of `mcat tool call` through a proxy
that keeps the stdio server running, against a cold stdio spawn per call (proxy up, init,
the call, proxy down: what a one-shot command costs without a warm server). Medians of
`--reps` runs of each, interleaved in one run, with `mcat --version` (a process start and
nothing else) as the floor.

Usage: bench/mcat_latency.py --mcat target/release/mcat \\
         --server "$(npm prefix)/node_modules/.bin/mcp-server-everything stdio" [--reps 20]
"""
import argparse, json, shlex, statistics, subprocess, tempfile, time, os


def run(argv):
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True)
    elapsed = (time.perf_counter() - t) * 1000
    if p.returncode != 0 and "--version" not in argv:
        raise SystemExit(f"{' '.join(argv)} failed: {p.stdout} {p.stderr}")
    return elapsed, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mcat", default="target/release/mcat")
    ap.add_argument("--server", required=True, help="the stdio server's command line")
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    server = shlex.split(a.server)
    work = tempfile.mkdtemp(prefix="mcat-bench-")
    warm_ep = f"unix://{work}/warm.sock"
    cold_ep = f"unix://{work}/cold.sock"
    sess = os.path.join(work, "warm-session.json")
    cold_sess = os.path.join(work, "cold-session.json")
    call = ["tool", "call", "echo", "-i", "{message: 'bench'}"]
    run([a.mcat, "proxy", "up", warm_ep, "--", *server])
    run([a.mcat, "init", warm_ep, "-o", sess])
    run([a.mcat, *call, "-s", sess])  # the first call warms the server's own caches
    floor, warm, cold = [], [], []
    try:
        for _ in range(a.reps):
            floor.append(run([a.mcat, "--version"])[0])
            warm.append(run([a.mcat, *call, "-s", sess])[0])
            t = time.perf_counter()
            run([a.mcat, "proxy", "up", cold_ep, "--", *server])
            run([a.mcat, "init", cold_ep, "-o", cold_sess])
            run([a.mcat, *call, "-s", cold_sess])
            run([a.mcat, "proxy", "down", cold_ep])
            cold.append((time.perf_counter() - t) * 1000)
    finally:
        run([a.mcat, "proxy", "down", warm_ep])
    m = lambda xs: round(statistics.median(xs), 1)
    print(json.dumps({
        "reps": a.reps,
        "server": a.server,
        "mcat_version_ms": m(floor),
        "warm_proxy_tool_call_ms": m(warm),
        "cold_spawn_tool_call_ms": m(cold),
        "cold_over_warm": round(statistics.median(cold) / statistics.median(warm), 1),
        "warm_over_process_start": round(statistics.median(warm) / statistics.median(floor), 1),
    }, indent=1))


if __name__ == "__main__":
    main()
