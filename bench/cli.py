#!/usr/bin/env python3
"""End-to-end wall time of `satori-cli` invocations, against spawning a trivial process.

Every figure is one whole process run as a shell script would see it (fork, exec, the CLI
spawning `satori`, the MCP handshake, the request, shutdown and reaping), reported as p50/p95
over --reps runs and as a ratio to `/bin/true` measured in the same run, interleaved so that
machine noise hits every command alike.

Commands measured:
  true          /bin/true (the baseline: the cost of spawning any process)
  version       satori-cli version (the CLI alone, no server)
  tools_list    satori-cli tools list (CLI + server start + handshake + tools/list)
  search        satori-cli search_codebase --path REPO --query ... (wrapper mode: tools/list,
                then the search, on an index built before timing starts)

Usage: bench/cli.py [--bin-dir target/release] [--repo DIR] [--reps 40]
Without --repo, this repository is indexed into a temporary SATORI_HOME.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

QUERIES = ["where is the stdout guard installed", "retry once with the guard off",
           "parse wrapper flags from the input schema", "ToolFlags"]


def percentile(samples, q):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run(cmd, env):
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    elapsed = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} exited {proc.returncode}: {proc.stdout[:300]!r}")
    json.loads(proc.stdout)  # every run must still produce one JSON document
    return elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin-dir", default="target/release")
    ap.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--reps", type=int, default=40)
    args = ap.parse_args()

    cli = os.path.abspath(os.path.join(args.bin_dir, "satori-cli"))
    server = os.path.abspath(os.path.join(args.bin_dir, "satori"))
    for exe in (cli, server):
        if not os.access(exe, os.X_OK):
            sys.exit(f"bench: {exe} not found; build with `cargo build --release -p satori-mcp -p satori-cli`")
    repo = os.path.realpath(args.repo)

    with tempfile.TemporaryDirectory(prefix="satori-cli-bench-") as home:
        env = dict(os.environ, SATORI_HOME=home, SATORI_SERVER_BIN=server)
        env.pop("SATORI_CLI_GUARD_RECOVERY", None)
        started = time.perf_counter()
        run([cli, "manage_index", "--action", "create", "--path", repo], env)
        index_ms = (time.perf_counter() - started) * 1000

        commands = {
            "true": lambda i: ["/bin/true"],
            "version": lambda i: [cli, "version"],
            "tools_list": lambda i: [cli, "tools", "list"],
            "search": lambda i: [cli, "search_codebase", "--path", repo,
                                 "--query", QUERIES[i % len(QUERIES)], "--limit", "10"],
        }
        samples = {name: [] for name in commands}
        for name, make in commands.items():  # warm-up: page cache, dynamic loader
            subprocess.run(make(0) if name != "true" else ["/bin/true"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for i in range(args.reps):
            for name, make in commands.items():
                if name == "true":
                    start = time.perf_counter()
                    subprocess.run(["/bin/true"], check=True)
                    samples[name].append((time.perf_counter() - start) * 1000)
                else:
                    samples[name].append(run(make(i), env))

    base = statistics.median(samples["true"])
    report = {
        "reps": args.reps,
        "repo": os.path.basename(repo),
        "index_create_ms": round(index_ms, 1),
        "commands": {},
    }
    for name, xs in samples.items():
        p50 = statistics.median(xs)
        report["commands"][name] = {
            "p50_ms": round(p50, 2),
            "p95_ms": round(percentile(xs, 0.95), 2),
            "ratio_to_true_p50": round(p50 / base, 1),
        }
    report["budget"] = {"tools_list_p50_under_ms": 20,
                        "met": report["commands"]["tools_list"]["p50_ms"] < 20}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
