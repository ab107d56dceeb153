#!/usr/bin/env python3
"""What a `read_file` window of a large file costs, plain against annotated.

A plain window reads the asked lines and nothing more; an annotated one also parses the file
for its outline. The script writes a Rust file of about 550 KB (8,000 small functions, or
`--functions N`; a file over `read_file`'s byte cap is streamed and has no outline), starts `satori` over MCP stdio, and asks for its first two lines `--reps`
times in each mode, interleaved, so both are measured under the same load. It prints the
medians and their ratio as one JSON object; the ratio is what to compare between builds.

Usage:
  cargo build --release --bins
  python3 bench/read_window.py [--server target/release/satori] [--reps 15]

Python 3.11 standard library only.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "quality"))
import run  # noqa: E402  (the benchmarks' MCP stdio client)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default=os.path.join(run.REPO_ROOT, "target", "release", "satori"))
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--functions", type=int, default=8_000)
    args = ap.parse_args(argv)
    if not os.access(args.server, os.X_OK):
        print(f"read_window: {args.server} not found; build it first", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "large.rs")
        with open(path, "w", encoding="utf-8") as f:
            for i in range(args.functions):
                f.write(f"pub fn step_{i}(x: u64) -> u64 {{\n    x.wrapping_mul({i}) ^ 0x5a5a\n}}\n")
        env = dict(os.environ, SATORI_HOME=os.path.join(tmp, "home"), SATORI_READ_ANY_FILE="true")
        server = run.McpServer(args.server, env)
        times = {"plain": [], "annotated": []}
        try:
            for _ in range(args.reps):
                for mode in times:
                    t0 = time.perf_counter()
                    result = server.request("tools/call", {"name": "read_file", "arguments": {
                        "path": path, "start_line": 1, "end_line": 2, "mode": mode}})
                    times[mode].append((time.perf_counter() - t0) * 1000)
                    if run.tool_payload(result).get("status", "ok") not in ("ok", None):
                        print(f"read_window: {mode} read failed: {result}", file=sys.stderr)
                        return 1
        finally:
            server.close()
        size = os.path.getsize(path)
    p50 = {m: statistics.median(v) for m, v in times.items()}
    json.dump({"file_bytes": size, "reps": args.reps,
               "plain_p50_ms": round(p50["plain"], 3), "annotated_p50_ms": round(p50["annotated"], 3),
               "annotated_over_plain": round(p50["annotated"] / p50["plain"], 2)}, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
