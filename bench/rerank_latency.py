#!/usr/bin/env python3
"""What the local reranker adds to a warm search, at about 100k chunks, in one run.

One `satori` binary indexes a corpus once; two servers then share that home: one without a
reranker (`SATORI_RERANKER=off`, the baseline) and one with the local late-interaction
reranker (`SATORI_RERANKER=local`). The same questions go to both, interleaved query by query
so that both see the same machine noise. Reported per server: search_codebase p50/p95 over
MCP for the questions the reranker runs on (described behaviours; identifiers are skipped by
default), the same with `useReranker: true` on identifier queries, the reranker's own time
from the debug output, and the ratios reranked/baseline. The budget is a p95 of 40 ms.

Usage: bench/rerank_latency.py [--server target/release/satori] [--corpus DIR] [--files 9000]
                               [--reps 10]

Without `--corpus`, the first `--files` Rust files of the cargo registry's sources (sorted by
path) are copied into a temporary directory: about 100k chunks at 9,000 files.
"""
import argparse, glob, json, os, shutil, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import speed  # noqa: E402  (the MCP driver, queries and percentiles of the speed benchmark)

BUDGET_P95_MS = 40.0


def registry_corpus(dest, files):
    roots = sorted(glob.glob(os.path.expanduser("~/.cargo/registry/src/*/")))
    if not roots:
        sys.exit("rerank_latency: no cargo registry sources; run `cargo fetch` first")
    picked = sorted((os.path.relpath(p, r), p) for r in roots
                    for p in glob.glob(os.path.join(r, "**", "*.rs"), recursive=True))
    for rel, src in picked[:files]:
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(src, target)
    return dest


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default="target/release/satori")
    ap.add_argument("--corpus")
    ap.add_argument("--files", type=int, default=9000)
    ap.add_argument("--reps", type=int, default=10)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="satori-rerank-")
    try:
        corpus = os.path.realpath(a.corpus or registry_corpus(os.path.join(work, "corpus"), a.files))
        home = os.path.join(work, "home")
        base = speed.Server(a.server, home, {"SATORI_RERANKER": "off"})
        secs, st = speed.index(base, corpus)
        local = speed.Server(a.server, home, {"SATORI_RERANKER": "local"})
        servers = {"baseline": base, "local": local}
        questions = speed.NL_QUERIES
        identifiers = [q for q, _ in speed.IDENTIFIER_QUERIES]
        lat = {k: {"questions": [], "identifiers_forced": []} for k in servers}
        rerank_ms = []

        def timed(srv, args):
            t = speed.time.perf_counter()
            srv.call("search_codebase", args)
            return speed.time.perf_counter() - t

        for q in questions + identifiers:  # warm up both
            for srv in servers.values():
                srv.call("search_codebase", {"path": corpus, "query": q})
        for _ in range(a.reps):
            for q in questions:
                for name, srv in servers.items():
                    lat[name]["questions"].append(timed(srv, {"path": corpus, "query": q}))
            for q in identifiers:
                for name, srv in servers.items():
                    args = {"path": corpus, "query": q}
                    if name == "local":
                        args["useReranker"] = True
                    lat[name]["identifiers_forced"].append(timed(srv, args))
        for q in questions:
            d = local.call("search_codebase", {"path": corpus, "query": q, "debug": True})
            r = d["hints"]["debugSearch"]["rerank"]
            assert r["decision"] == "applied", r
            rerank_ms.append(r["millis"] / 1000)
        ms = lambda s: round(s * 1000, 2)
        out = {"corpus": {"files": st["stats"]["files"], "chunks": st["stats"]["chunks"]},
               "indexSeconds": round(secs, 1), "reps": a.reps}
        for name in servers:
            out[name] = {k: {"p50Ms": ms(speed.pct(v, 0.5)), "p95Ms": ms(speed.pct(v, 0.95)), "n": len(v)}
                         for k, v in lat[name].items()}
        out["local"]["rerankerMsMedian"] = ms(speed.pct(rerank_ms, 0.5))
        out["ratios (local / baseline)"] = {
            k: {"p50": round(out["local"][k]["p50Ms"] / out["baseline"][k]["p50Ms"], 2),
                "p95": round(out["local"][k]["p95Ms"] / out["baseline"][k]["p95Ms"], 2)}
            for k in ("questions", "identifiers_forced")}
        out["withinBudget"] = out["local"]["questions"]["p95Ms"] <= BUDGET_P95_MS
        for srv in servers.values():
            srv.close()
        print(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
