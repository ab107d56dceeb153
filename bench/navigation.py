#!/usr/bin/env python3
"""Navigation benchmark of the real `satori` server over MCP (stdio): file_outline and
call_graph on real repositories, and what building the call graph costs at index time.

For each repository (`--repo LANG=DIR`, repeatable), in one run:
  - cold index wall time with this build and with `--baseline-server` (a build without the
    call graph), interleaved `--index-reps` times on fresh homes: the ratio is the graph's
    index-time overhead; also the size of the stored graph;
  - file_outline latency p50/p95 over up to `--files` files, and call_graph latency at depth
    1 and 3 (direction both) over up to `--symbols` functions and methods, each against the
    trivial list_codebases call on the same session (protocol overhead);
  - the first call_graph of a fresh session, which resolves the whole graph (later calls
    reuse it; every `satori-cli` call is a fresh session), and that session's later calls
    on every picked symbol, `--resolve-reps` times, against `--resolve-baseline` (another
    build with the call graph) on the same index, interleaved;
  - a seeded sample of `--sample` call edges (callees at depth 1 of random functions), each
    written with the caller, the line of the call site and the callee's definition, for
    checking by reading the code (`<out>/<lang>-edges.json`; a checked copy records a
    `"verdict"` per edge and `--judged` reports precision from it).

Usage: bench/navigation.py --server target/release/satori --baseline-server OLD/satori \
         --repo rust=DIR --repo python=DIR ... --out /tmp/nav
"""
import argparse, json, os, random, shutil, statistics, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from speed import Server, index as index_on, pct  # noqa: E402

EXTENSIONS = {
    "rust": (".rs",), "python": (".py",), "javascript": (".js", ".mjs", ".cjs"),
    "typescript": (".ts", ".tsx"), "go": (".go",), "java": (".java",), "c": (".c", ".h"),
    "cpp": (".cc", ".cpp", ".hpp", ".h"), "ruby": (".rb",), "php": (".php",),
    "csharp": (".cs",), "kotlin": (".kt",),
}
CALLABLE = {"function", "method", "constructor"}


def index(exe, corpus):
    """Indexes `corpus` on a fresh home; returns (seconds, home, status)."""
    home = tempfile.mkdtemp(prefix="satori-nav-home-")
    srv = Server(exe, home)
    secs, st = index_on(srv, corpus)
    srv.close()
    return secs, home, st


def graph_bytes(home):
    total = 0
    for dirpath, _, files in os.walk(home):
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files if f == "graph.json")
    return total


def timed(srv, tool, args):
    t = time.perf_counter()
    r = srv.call(tool, args)
    return time.perf_counter() - t, r


def line_of(corpus, rel, line):
    try:
        with open(os.path.join(corpus, rel), encoding="utf-8", errors="replace") as f:
            for i, text in enumerate(f, 1):
                if i == line:
                    return text.strip()[:200]
    except OSError:
        pass
    return None


def ms(xs):
    return {"p50_ms": round(pct(xs, 0.5) * 1000, 2), "p95_ms": round(pct(xs, 0.95) * 1000, 2)}


def bench_repo(a, lang, corpus, out_dir):
    rng = random.Random(f"{a.seed}:{lang}")
    # Index time, interleaved so that noise hits both builds alike.
    times = {"this": [], "baseline": []}
    home = None
    for _ in range(a.index_reps):
        for name, exe in (("baseline", a.baseline_server), ("this", a.server)):
            if not exe:
                continue
            secs, h, st = index(exe, corpus)
            times[name].append(secs)
            if name == "this" and home is None:
                home, status = h, st
            else:
                shutil.rmtree(h, ignore_errors=True)
    result = {
        "language": lang,
        "files": status["stats"]["files"],
        "chunks": status["stats"]["chunks"],
        "index_s": {k: round(statistics.median(v), 3) for k, v in times.items() if v},
        "graph_json_kb": round(graph_bytes(home) / 1024),
    }
    if times["baseline"]:
        result["index_overhead_ratio"] = round(
            statistics.median(times["this"]) / statistics.median(times["baseline"]), 3)

    srv = Server(a.server, home)
    for _ in range(20):
        srv.call("list_codebases", {})
    base = [timed(srv, "list_codebases", {})[0] for _ in range(100)]
    result["list_codebases"] = ms(base)

    files = []
    for dirpath, _, names in os.walk(corpus):
        for n in names:
            if n.endswith(EXTENSIONS.get(lang, ())):
                files.append(os.path.relpath(os.path.join(dirpath, n), corpus).replace(os.sep, "/"))
    files.sort()
    rng.shuffle(files)
    outline_t, symbols = [], []
    for rel in files[: a.files]:
        secs, r = timed(srv, "file_outline", {"path": corpus, "file": rel})
        if r.get("status") != "ok":
            continue
        outline_t.append(secs)
        for s in r["outline"]["symbols"]:
            hint = s["callGraphHint"]
            if s["kind"] in CALLABLE and hint["supported"]:
                symbols.append(hint["symbolRef"])
    result["file_outline"] = dict(ms(outline_t), files=len(outline_t),
                                  ratio_to_list=round(pct(outline_t, 0.5) / pct(base, 0.5), 2))
    rng.shuffle(symbols)
    picked = symbols[: a.symbols]
    edges_seen = []
    for depth in (1, 3):
        lat, n_edges, truncated = [], [], 0
        for ref in picked:
            secs, r = timed(srv, "call_graph", {"path": corpus, "symbolRef": ref,
                                                "direction": "both", "depth": depth, "limit": 200})
            assert r["status"] == "ok", r
            lat.append(secs)
            n_edges.append(len(r["edges"]))
            truncated += r["truncated"]
            if depth == 1:
                nodes = {n["symbolId"]: n for n in r["nodes"]}
                for e in r["edges"]:
                    if e["src"] == ref["symbolId"]:
                        edges_seen.append((e, nodes[e["src"]], nodes[e["dst"]]))
        result[f"call_graph_depth{depth}"] = dict(
            ms(lat), symbols=len(lat), mean_edges=round(statistics.mean(n_edges or [0]), 1),
            truncated=truncated, ratio_to_list=round(pct(lat, 0.5) / pct(base, 0.5), 2))
    srv.close()

    first = {"this": [], "baseline": []}
    warm = {"this": [], "baseline": []}
    for _ in range(a.resolve_reps if picked else 0):
        for name, exe in (("baseline", a.resolve_baseline), ("this", a.server)):
            if not exe:
                continue
            fresh = Server(exe, home)
            fresh.call("list_codebases", {})
            secs, r = timed(fresh, "call_graph", {"path": corpus, "symbolRef": picked[0],
                                                  "direction": "both", "depth": 1})
            if r.get("status") == "ok":
                first[name].append(secs)
                # The same session's later calls reuse the resolved graph.
                for ref in picked:
                    warm[name].append(timed(fresh, "call_graph", {
                        "path": corpus, "symbolRef": ref, "direction": "both", "depth": 1})[0])
            fresh.close()
    result["call_graph_first_s"] = {k: round(statistics.median(v), 3)
                                    for k, v in first.items() if v}
    result["call_graph_warm"] = {k: ms(v) for k, v in warm.items() if v}
    if first["this"] and first["baseline"]:
        result["call_graph_first_ratio"] = round(
            statistics.median(first["this"]) / statistics.median(first["baseline"]), 3)
        result["call_graph_warm_ratio"] = round(pct(warm["this"], 0.5) / pct(warm["baseline"], 0.5), 3)

    sample = rng.sample(edges_seen, min(a.sample, len(edges_seen)))
    checked = []
    for e, src, dst in sample:
        checked.append({
            "caller": f"{src['file']}:{src['span']['startLine']} {src['symbolLabel']}",
            "site": f"{e['site']['file']}:{e['site']['startLine']}",
            "site_text": line_of(corpus, e["site"]["file"], e["site"]["startLine"]),
            "callee": f"{dst['file']}:{dst['span']['startLine']} {dst['symbolLabel']}",
            "confidence": e["confidence"],
            "verdict": None,
        })
    with open(os.path.join(out_dir, f"{lang}-edges.json"), "w") as f:
        json.dump(checked, f, indent=1)
    result["edges_sampled"] = len(checked)
    result["edges_resolved_total_depth1"] = len(edges_seen)
    shutil.rmtree(home, ignore_errors=True)
    return result


def judged(out_dir):
    """Precision per language from checked edge files (`verdict`: true/false)."""
    report = {}
    for name in sorted(os.listdir(out_dir)):
        if not name.endswith("-edges.json"):
            continue
        edges = json.load(open(os.path.join(out_dir, name)))
        verdicts = [e["verdict"] for e in edges if e["verdict"] is not None]
        if verdicts:
            report[name[: -len("-edges.json")]] = {
                "checked": len(verdicts),
                "precision": round(sum(1 for v in verdicts if v) / len(verdicts), 3),
            }
    return report


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default="target/release/satori")
    ap.add_argument("--baseline-server", help="a build without the call graph, for the index-time ratio")
    ap.add_argument("--resolve-baseline",
                    help="another build with the call graph, for the first call_graph's ratio")
    ap.add_argument("--resolve-reps", type=int, default=3)
    ap.add_argument("--repo", action="append", default=[], help="LANG=DIR")
    ap.add_argument("--index-reps", type=int, default=3)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--symbols", type=int, default=100)
    ap.add_argument("--sample", type=int, default=50)
    ap.add_argument("--seed", default="nav")
    ap.add_argument("--out", required=True)
    ap.add_argument("--judged", action="store_true", help="only report precision of checked samples")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.judged:
        print(json.dumps(judged(a.out), indent=1))
        return
    results = []
    for spec in a.repo:
        lang, _, d = spec.partition("=")
        r = bench_repo(a, lang, os.path.realpath(d), a.out)
        print(json.dumps(r), file=sys.stderr)
        results.append(r)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
