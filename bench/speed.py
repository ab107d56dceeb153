#!/usr/bin/env python3
"""Speed benchmark of the real `satori` server over MCP (stdio).

Measures, in one run and on one corpus:
  - cold index time (create -> indexed), files and chunks, against a baseline of reading
    every indexed file once from Python (same run, same page cache);
  - warm search_codebase latency p50/p95 over MCP, against a baseline of the trivial
    list_codebases call on the same session (protocol + process overhead);
  - whether identifier queries find their defining file in the top 3;
  - the server's peak resident memory (VmHWM) over the whole run (indexing included), and
    that of a second, fresh server that only serves searches on the index the first one built
    (what an agent's long-lived server holds), with its first search (the index open); then
    that server's memory after answering many different questions once each (`--questions`,
    by default the blind quality suite's 240), as a long-lived server meets them, beside the
    same for a fresh --baseline-server.

Usage: bench/speed.py [--server target/release/satori] [--corpus DIR] [--reps 30]
                      [--baseline-server OTHER/satori] [--questions FILE]
With --baseline-server, another build indexes the same corpus into its own home and its warm
searches are interleaved with the measured server's, query by query, so that both see the same
machine noise; the output then gives its p50/p95 and the ratio of the two p50s.
Without --corpus, a ~1,100-file corpus is assembled from crate sources in the cargo registry
(tokio, tantivy, rmcp), which every build of this workspace has fetched.
"""
import argparse, glob, json, os, shutil, statistics, subprocess, sys, tempfile, time

IDENTIFIER_QUERIES = [
    # (query, a path fragment of the file that defines it)
    ("spawn_blocking", "tokio/src/task/blocking.rs"),
    ("TopDocs", "tantivy-0.27.0/src/collector/top_score_collector.rs"),
    ("IndexWriter", "tantivy-0.27.0/src/indexer/index_writer.rs"),
    ("TokioChildProcess", "rmcp-3.9.0/src/transport/child_process.rs"),
    ("read_to_end", "tokio/src/io/util/read_to_end.rs"),
    ("TcpListener", "tokio/src/net/tcp/listener.rs"),
]
NL_QUERIES = [
    "accept incoming tcp connections in a loop",
    "merge segments in the background when the index grows",
    "parse a json-rpc message from a line of stdin",
    "sleep until a deadline and wake the task",
    "tokenize text into lowercase terms",
    "graceful shutdown of a child process",
]


def assemble_corpus(dest):
    roots = glob.glob(os.path.expanduser("~/.cargo/registry/src/*/"))
    picked = []
    for pattern in ("tokio-1.*", "tantivy-0.27.0", "rmcp-3.9.0"):
        for r in roots:
            hits = sorted(glob.glob(os.path.join(r, pattern)))
            if hits:
                picked.append(hits[-1])
                break
    if len(picked) < 3:
        sys.exit("bench: crate sources not found in the cargo registry; run `cargo fetch` first")
    for src in picked:
        name = os.path.basename(src)
        # tokio's directory carries its version; keep paths stable for the gold files.
        target = os.path.join(dest, "tokio" if name.startswith("tokio-") else name)
        shutil.copytree(src, target, ignore=shutil.ignore_patterns("target", ".git"))
    return dest


class Server:
    def __init__(self, exe, home, extra_env=None):
        env = dict(os.environ, SATORI_HOME=home, SATORI_RUN_MODE="cli", **(extra_env or {}))
        self.p = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            msg = json.loads(self.p.stdout.readline())
            if msg.get("id") == self.next_id:
                return msg["result"]

    def call(self, tool, args):
        r = self.request("tools/call", {"name": tool, "arguments": args})
        return r.get("structuredContent") or r["content"][0]["text"]

    def peak_rss_mb(self):
        return peak_rss_mb(self.p.pid)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def peak_rss_mb(pid):
    """The peak resident memory of process `pid` (VmHWM), in MB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return None


def load_questions(path):
    """Questions one per line from `path`, or the `query` fields of the blind suite's
    annotations (written from the code alone, 240 of them)."""
    if path:
        with open(path) as f:
            return [line.strip() for line in f if line.strip()]
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    for f in sorted(glob.glob(os.path.join(here, "quality", "blind", "annotations", "*.json"))):
        with open(f) as fh:
            out.extend(q["query"] for q in json.load(fh).get("queries", []))
    return out


def index(srv, corpus):
    """Creates the index of `corpus` and waits for it; returns (seconds, final status)."""
    t = time.perf_counter()
    srv.call("manage_index", {"action": "create", "path": corpus})
    while True:
        st = srv.call("manage_index", {"action": "status", "path": corpus})
        if st["state"] != "indexing":
            break
        time.sleep(0.01)
    elapsed = time.perf_counter() - t
    assert st["state"] == "indexed", st
    return elapsed, st


def timed_search(srv, corpus, query):
    t = time.perf_counter()
    srv.call("search_codebase", {"path": corpus, "query": query})
    return time.perf_counter() - t


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default="target/release/satori")
    ap.add_argument("--corpus")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--baseline-server",
                    help="another build whose warm searches are interleaved with --server's")
    ap.add_argument("--questions", metavar="FILE",
                    help="questions, one per line, that a fresh serving server answers once each "
                         "before its memory is read (default: the blind suite's queries)")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="satori-bench-")
    corpus = os.path.realpath(a.corpus or assemble_corpus(os.path.join(work, "corpus")))
    home = os.path.join(work, "home")

    # Baseline 1: read every file once (what any indexer must at least do).
    t = time.perf_counter()
    nbytes = 0
    for dirpath, _, files in os.walk(corpus):
        for f in files:
            with open(os.path.join(dirpath, f), "rb") as fh:
                nbytes += len(fh.read())
    read_s = time.perf_counter() - t

    srv = Server(a.server, home)
    index_s, st = index(srv, corpus)
    stats = st["stats"]
    other = None
    if a.baseline_server:
        other = Server(a.baseline_server, os.path.join(work, "baseline-home"))
        index(other, corpus)

    # Baseline 2: a trivial tool call on the same session.
    for _ in range(20):
        srv.call("list_codebases", {})
    base = []
    for _ in range(a.reps * 4):
        t = time.perf_counter(); srv.call("list_codebases", {}); base.append(time.perf_counter() - t)

    queries = [q for q, _ in IDENTIFIER_QUERIES] + NL_QUERIES
    for q in queries:  # warm up
        srv.call("search_codebase", {"path": corpus, "query": q})
        if other:
            other.call("search_codebase", {"path": corpus, "query": q})
    lat, other_lat = [], []
    for _ in range(a.reps):
        for q in queries:
            lat.append(timed_search(srv, corpus, q))
            if other:
                other_lat.append(timed_search(other, corpus, q))
    if other:
        other.close()

    top3 = []
    for q, gold in IDENTIFIER_QUERIES:
        env = srv.call("search_codebase", {"path": corpus, "query": q, "limit": 3})
        files = [r["file"] for r in env["results"]]
        top3.append({"query": q, "gold": gold, "top3": files, "hit": any(f.endswith(gold) or gold in f for f in files)})
    nl = []
    for q in NL_QUERIES:
        env = srv.call("search_codebase", {"path": corpus, "query": q, "limit": 3})
        nl.append({"query": q, "top3": [f'{r["file"]}:{r["span"]["startLine"]} {r.get("symbolLabel") or ""}' for r in env["results"]]})
    rss = srv.peak_rss_mb()
    srv.close()

    # A fresh server over the same home only searches: its first search opens the index.
    fresh = Server(a.server, home)
    t = time.perf_counter()
    fresh.call("search_codebase", {"path": corpus, "query": queries[0]})
    first_s = time.perf_counter() - t
    for _ in range(a.reps):
        for q in queries:
            fresh.call("search_codebase", {"path": corpus, "query": q})
    serving_rss = fresh.peak_rss_mb()
    # Then many different questions, as a long-lived server meets them: what it holds after.
    questions = load_questions(a.questions)
    for q in questions:
        fresh.call("search_codebase", {"path": corpus, "query": q})
    varied_rss = fresh.peak_rss_mb()
    fresh.close()
    varied_baseline_rss = None
    if a.baseline_server:
        fresh_other = Server(a.baseline_server, os.path.join(work, "baseline-home"))
        for _ in range(a.reps):
            for q in queries:
                fresh_other.call("search_codebase", {"path": corpus, "query": q})
        for q in questions:
            fresh_other.call("search_codebase", {"path": corpus, "query": q})
        varied_baseline_rss = fresh_other.peak_rss_mb()
        fresh_other.close()

    ms = lambda s: round(s * 1000, 2)
    out = {
        "corpus": {"files": stats["files"], "chunks": stats["chunks"], "bytesRead": nbytes},
        "index": {"wallMs": ms(index_s), "serverMs": stats.get("durationMs"),
                  "readAllFilesMs": ms(read_s), "ratioToReadAll": round(index_s / read_s, 1),
                  "chunksPerSecond": round(stats["chunks"] / index_s)},
        "search": {"p50Ms": ms(pct(lat, 0.5)), "p95Ms": ms(pct(lat, 0.95)),
                   "trivialCallP50Ms": ms(pct(base, 0.5)),
                   "p50RatioToTrivialCall": round(pct(lat, 0.5) / pct(base, 0.5), 2),
                   "samples": len(lat)},
        "identifierTop3": {"hits": sum(x["hit"] for x in top3), "of": len(top3), "detail": top3},
        "naturalLanguageTop3": nl,
        "peakRssMb": rss,
        "serving": {"firstSearchMs": ms(first_s), "peakRssMb": serving_rss,
                    "afterVariedQuestions": {"questions": len(questions), "peakRssMb": varied_rss,
                                             "baselinePeakRssMb": varied_baseline_rss}},
    }
    if other_lat:
        out["baselineSearch"] = {"server": a.baseline_server,
                                 "p50Ms": ms(pct(other_lat, 0.5)), "p95Ms": ms(pct(other_lat, 0.95)),
                                 "p50RatioToBaseline": round(pct(lat, 0.5) / pct(other_lat, 0.5), 2)}
    print(json.dumps(out, indent=2))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
