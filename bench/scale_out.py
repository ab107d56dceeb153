#!/usr/bin/env python3
"""Embedded vectors against Milvus, on one corpus, in one run.

The same `satori` binary indexes the corpus twice, into two homes: once with its vectors in
the generation directory (the embedded default) and once in a Milvus (`MILVUS_ADDRESS`),
the real server binary of PyPI's milvus-lite 2.5.1, started here on a loopback port. Both
use the bundled model, so the difference is the vector store alone. Reported for each: cold
index time, warm search_codebase p50/p95 over MCP (the two servers' searches interleaved,
query by query, so both see the same machine noise), the peak resident memory of the satori
process, and the Milvus server's own peak memory; then the ratios Milvus/embedded.

Usage: bench/scale_out.py --milvus-bin PATH/milvus_lite/lib/milvus
                          [--server target/release/satori] [--corpus DIR] [--reps 20]
"""
import argparse, json, os, shutil, socket, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import speed  # noqa: E402  (the MCP driver, corpus and percentiles of the speed benchmark)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_milvus(binary, work):
    address = f"127.0.0.1:{free_port()}"
    lib = os.path.dirname(binary)
    proc = subprocess.Popen([binary, os.path.join(work, "milvus.db"), address, "ERROR"],
                            cwd=work, env=dict(os.environ, LD_LIBRARY_PATH=lib),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", int(address.split(":")[1])), 1).close()
            break
        except OSError:
            if time.time() > deadline:
                sys.exit("bench: Milvus did not start")
            time.sleep(0.1)
    # It answers before its storage is ready; the first index build retries below.
    time.sleep(2)
    return proc, address


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--milvus-bin", required=True)
    ap.add_argument("--server", default="target/release/satori")
    ap.add_argument("--corpus")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--max-chunks", type=int,
                    help="SATORI_MAX_CHUNKS for both servers (a corpus past the default 450,000)")
    ap.add_argument("--default-too", action="store_true",
                    help="also index with the embedded default's own limit, to show where it stops")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="satori-scale-")
    corpus = os.path.realpath(a.corpus or speed.assemble_corpus(os.path.join(work, "corpus")))
    milvus, address = start_milvus(os.path.realpath(a.milvus_bin), work)
    try:
        runs = {}
        limit = {"SATORI_MAX_CHUNKS": str(a.max_chunks)} if a.max_chunks else {}
        extra = {}
        if a.default_too:
            srv = speed.Server(a.server, os.path.join(work, "home-default"))
            secs, st = speed.index(srv, corpus)
            extra["embeddedDefaultLimit"] = {"indexMs": round(secs * 1000), "chunks": st["stats"]["chunks"],
                                             "indexStatus": st["stats"].get("indexStatus"),
                                             "satoriPeakRssMb": srv.peak_rss_mb()}
            srv.close()
        for name, env in (("embedded", dict(limit)), ("milvus", dict(limit, MILVUS_ADDRESS=address))):
            srv = speed.Server(a.server, os.path.join(work, f"home-{name}"), env)
            secs, st = speed.index(srv, corpus)
            runs[name] = {"srv": srv, "indexS": secs, "chunks": st["stats"]["chunks"],
                          "files": st["stats"]["files"], "status": st["stats"].get("indexStatus"), "lat": []}
        queries = [q for q, _ in speed.IDENTIFIER_QUERIES] + speed.NL_QUERIES
        for q in queries:  # warm up both
            for r in runs.values():
                r["srv"].call("search_codebase", {"path": corpus, "query": q})
        for _ in range(a.reps):
            for q in queries:
                for r in runs.values():
                    r["lat"].append(speed.timed_search(r["srv"], corpus, q))
        same_top = 0
        for q in queries:
            tops = [[x["file"] for x in r["srv"].call("search_codebase", {"path": corpus, "query": q, "limit": 5})["results"]]
                    for r in runs.values()]
            same_top += tops[0][:1] == tops[1][:1]
        ms = lambda s: round(s * 1000, 2)
        out = {"corpus": {"files": runs["embedded"]["files"], "chunks": runs["embedded"]["chunks"]}}
        for name, r in runs.items():
            out[name] = {"indexMs": ms(r["indexS"]), "chunks": r["chunks"], "indexStatus": r["status"],
                         "chunksPerSecond": round(r["chunks"] / r["indexS"]),
                         "searchP50Ms": ms(speed.pct(r["lat"], 0.5)),
                         "searchP95Ms": ms(speed.pct(r["lat"], 0.95)),
                         "satoriPeakRssMb": r["srv"].peak_rss_mb()}
            r["srv"].close()
        out["milvus"]["milvusServerPeakRssMb"] = speed.peak_rss_mb(milvus.pid)
        e, m = out["embedded"], out["milvus"]
        out["ratios (milvus / embedded)"] = {
            "index": round(m["indexMs"] / e["indexMs"], 2),
            "searchP50": round(m["searchP50Ms"] / e["searchP50Ms"], 2),
            "searchP95": round(m["searchP95Ms"] / e["searchP95Ms"], 2),
            "satoriPeakRss": round(m["satoriPeakRssMb"] / e["satoriPeakRssMb"], 2),
        }
        out["sameTopFile"] = f"{same_top}/{len(queries)}"
        out.update(extra)
        print(json.dumps(out, indent=2))
    finally:
        milvus.kill()
        milvus.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
