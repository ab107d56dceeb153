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

Usage: bench/cli.py [--bin-dir target/release] [--baseline-bin-dir DIR] [--repo DIR] [--reps 40]
Without --repo, this repository is indexed into a temporary SATORI_HOME. With
--baseline-bin-dir, that build's tools_list and search are measured too, interleaved in the
same run on the same index (its index format must be the same), as `baseline_*` rows.
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
    ap.add_argument("--baseline-bin-dir", help="another build to measure in the same run")
    ap.add_argument("--home", help="an existing SATORI_HOME where --repo is indexed already "
                                   "(skips indexing; a large repository takes minutes)")
    args = ap.parse_args()

    cli = os.path.abspath(os.path.join(args.bin_dir, "satori-cli"))
    server = os.path.abspath(os.path.join(args.bin_dir, "satori"))
    for exe in (cli, server):
        if not os.access(exe, os.X_OK):
            sys.exit(f"bench: {exe} not found; build with `cargo build --release -p satori-mcp -p satori-cli`")
    repo = os.path.realpath(args.repo)

    with tempfile.TemporaryDirectory(prefix="satori-cli-bench-") as scratch:
        home = os.path.abspath(args.home) if args.home else scratch
        env = dict(os.environ, SATORI_HOME=home, SATORI_SERVER_BIN=server)
        env.pop("SATORI_CLI_GUARD_RECOVERY", None)
        index_ms = None
        if not args.home:
            started = time.perf_counter()
            run([cli, "manage_index", "--action", "create", "--path", repo], env)
            index_ms = round((time.perf_counter() - started) * 1000, 1)

        def search(c):
            return lambda i: [c, "search_codebase", "--path", repo,
                              "--query", QUERIES[i % len(QUERIES)], "--limit", "10"]
        commands = {
            "true": lambda i: ["/bin/true"],
            "version": lambda i: [cli, "version"],
            "tools_list": lambda i: [cli, "tools", "list"],
            "search": search(cli),
        }
        if args.baseline_bin_dir:
            base_cli = os.path.abspath(os.path.join(args.baseline_bin_dir, "satori-cli"))
            base_env = dict(env, SATORI_SERVER_BIN=os.path.abspath(
                os.path.join(args.baseline_bin_dir, "satori")))
            commands["baseline_tools_list"] = lambda i: [base_cli, "tools", "list"]
            commands["baseline_search"] = search(base_cli)
        samples = {name: [] for name in commands}
        def env_of(name):
            return base_env if name.startswith("baseline_") else env
        for name, make in commands.items():  # warm-up: page cache, dynamic loader
            subprocess.run(make(0) if name != "true" else ["/bin/true"], env=env_of(name),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for i in range(args.reps):
            for name, make in commands.items():
                if name == "true":
                    start = time.perf_counter()
                    subprocess.run(["/bin/true"], check=True)
                    samples[name].append((time.perf_counter() - start) * 1000)
                else:
                    samples[name].append(run(make(i), env_of(name)))

    base = statistics.median(samples["true"])
    report = {
        "reps": args.reps,
        "repo": os.path.basename(repo),
        "index_create_ms": index_ms,
        "commands": {},
    }
    for name, xs in samples.items():
        p50 = statistics.median(xs)
        report["commands"][name] = {
            "p50_ms": round(p50, 2),
            "p95_ms": round(percentile(xs, 0.95), 2),
            "ratio_to_true_p50": round(p50 / base, 1),
        }
    tools_p50 = report["commands"]["tools_list"]["p50_ms"]
    report["search_to_tools_list_p50"] = round(report["commands"]["search"]["p50_ms"] / tools_p50, 2)
    if args.baseline_bin_dir:
        report["baseline_search_to_tools_list_p50"] = round(
            report["commands"]["baseline_search"]["p50_ms"] / tools_p50, 2)
    report["budget"] = {"tools_list_p50_under_ms": 20, "met": tools_p50 < 20}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
