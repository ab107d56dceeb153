#!/usr/bin/env python3
"""Write amplification of syncs, measured on the real `satori` server over MCP (stdio).

Assembles a corpus of real code (default 12,000 files from the cargo registry, no network),
indexes it, then makes one-line edits to distinct files with an explicit `manage_index sync`
after each, and reports per sync:

  newBytes    bytes of the files the sync's generation holds that no earlier generation
              shares (a hard link to an earlier file costs nothing and is not counted)
  wcharBytes  bytes the server process wrote through write(2) during the sync
              (/proc/<pid>/io; includes its few protocol bytes on stdout)
  diskBytes   bytes the server process caused to be written to storage (write_bytes)
  ms          wall time of the sync call

and the index home's size (unique inodes, allocated blocks) after the build and after the
edits, the number of generation directories left, and the warm `search_codebase` p50 after
the build and after the edits (the same server, so the pair shows what the edits cost a
search).

`--baseline-server OTHER/satori` runs another build over a fresh copy of the same corpus in
the same run, so both figures come from one machine state. Results are one JSON document on
stdout; progress goes to stderr.

Usage: bench/write_amp.py --server target/release/satori [--baseline-server OTHER/satori]
                          [--files 12000] [--edits 10]
"""
import argparse, json, os, random, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from freshness import source_pool, write  # noqa: E402  (the shared corpus helpers)
import speed  # noqa: E402  (the MCP stdio client)

SEED = 34
QUERIES = ["parse a header line", "spawn_blocking", "open the index reader",
           "retry with backoff", "serialize to json", "tokenize identifiers"]


def log(msg):
    sys.stderr.write(f"bench: {msg}\n")
    sys.stderr.flush()


def build_corpus(dest, files):
    pool = source_pool()
    if len(pool) < files:
        log(f"only {len(pool)} usable files in the cargo registry; using them all")
    random.Random(SEED).shuffle(pool)
    picked = sorted(pool[:files])
    for rel, text in picked:
        write(dest, rel, text)
    return [rel for rel, _ in picked if rel.endswith(".rs")]


class Server(speed.Server):
    """The speed benchmark's MCP client, answering envelopes as JSON and reading the server
    process's I/O counters."""

    def call(self, tool, args):
        r = self.request("tools/call", {"name": tool, "arguments": args})
        return r.get("structuredContent") or json.loads(r["content"][0]["text"])

    def io(self):
        out = {}
        with open(f"/proc/{self.p.pid}/io") as f:
            for line in f:
                k, v = line.split(":")
                out[k] = int(v)
        return out

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


def inodes(root):
    """(dev, inode) -> (size, allocated bytes) of every regular file under root."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            try:
                st = os.lstat(os.path.join(dirpath, f))
            except FileNotFoundError:
                continue
            if os.path.isfile(os.path.join(dirpath, f)):
                out[(st.st_dev, st.st_ino)] = (st.st_size, st.st_blocks * 512)
    return out


def current_generation(home):
    idx = os.path.join(home, "indexes")
    (key,) = [d for d in os.listdir(idx) if not d.startswith(".")]
    cb = os.path.join(idx, key)
    with open(os.path.join(cb, "CURRENT")) as f:
        return cb, os.path.join(cb, f.read().strip())


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def warm_search_p50(srv, repo):
    """p50 of warm searches (every query once untimed first, then three timed rounds)."""
    lat = []
    for rnd in range(4):
        for q in QUERIES:
            t = time.perf_counter()
            srv.call("search_codebase", {"path": repo, "query": q})
            if rnd:
                lat.append((time.perf_counter() - t) * 1000)
    return round(pct(lat, 0.5), 2)


def call_ok(srv, tool, args):
    for _ in range(200):
        env = srv.call(tool, args)
        # A build that just finished may still hold its lock for a moment.
        if env.get("status") != "not_ready":
            break
        time.sleep(0.05)
    if env.get("status") != "ok":
        sys.exit(f"bench: {tool} answered {env.get('status')}: {env.get('message')}")
    return env


def measure(exe, corpus_src, editable, edits, work):
    repo = os.path.join(work, "repo")
    home = os.path.join(work, "home")
    shutil.copytree(corpus_src, repo)
    os.makedirs(home)
    srv = Server(exe, home)
    t = time.perf_counter()
    call_ok(srv, "manage_index", {"action": "create", "path": repo})
    while True:
        st = srv.call("manage_index", {"action": "status", "path": repo})
        if st.get("state") != "indexing":
            break
        time.sleep(0.05)
    if st.get("state") != "indexed":
        sys.exit(f"bench: the build ended {st.get('state')}: {st.get('message')}")
    res = {"build": {"s": round(time.perf_counter() - t, 1), "files": st["stats"]["files"],
                     "chunks": st["stats"]["chunks"]}}
    call_ok(srv, "manage_index", {"action": "sync", "path": repo})
    home_after_build = sum(a for _, a in inodes(home).values())
    res["homeBytesAfterBuild"] = home_after_build
    res["warmSearchP50MsAfterBuild"] = warm_search_p50(srv, repo)
    log(f"{exe}: {res['build']['files']} files, {res['build']['chunks']} chunks, "
        f"home {home_after_build / 1e6:.1f} MB")
    syncs = []
    for i in range(edits):
        rel = editable[i * 7 % len(editable)]
        with open(os.path.join(repo, rel), "a", encoding="utf-8") as fh:
            fh.write(f"\n// zqedit{i} one more line\n")
        seen = set(inodes(home))
        before = srv.io()
        t = time.perf_counter()
        env = call_ok(srv, "manage_index", {"action": "sync", "path": repo})
        ms = (time.perf_counter() - t) * 1000
        after = srv.io()
        _, gen = current_generation(home)
        new = sum(size for ino, (size, _) in inodes(gen).items() if ino not in seen)
        stats = env.get("stats") or {}
        syncs.append({"file": rel, "modified": stats.get("modified"), "ms": round(ms, 1),
                      "newBytes": new, "wcharBytes": after["wchar"] - before["wchar"],
                      "diskBytes": after["write_bytes"] - before["write_bytes"]})
        log(f"  sync {i}: new {new / 1e6:.2f} MB, wchar {syncs[-1]['wcharBytes'] / 1e6:.2f} MB, "
            f"{ms:.0f} ms")
    cb, _ = current_generation(home)
    res["syncs"] = syncs
    res["newBytesP50"] = pct([s["newBytes"] for s in syncs], 0.5)
    res["wcharBytesP50"] = pct([s["wcharBytes"] for s in syncs], 0.5)
    res["diskBytesP50"] = pct([s["diskBytes"] for s in syncs], 0.5)
    res["syncMsP50"] = round(pct([s["ms"] for s in syncs], 0.5), 1)
    res["homeBytesAfterEdits"] = sum(a for _, a in inodes(home).values())
    res["generationsLeft"] = len([d for d in os.listdir(cb) if d.startswith("gen-")])
    res["warmSearchP50MsAfterEdits"] = warm_search_p50(srv, repo)
    srv.close()
    log(f"  home after {edits} edits: {res['homeBytesAfterEdits'] / 1e6:.1f} MB, "
        f"{res['generationsLeft']} generations")
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--baseline-server")
    ap.add_argument("--files", type=int, default=12000)
    ap.add_argument("--edits", type=int, default=10)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="satori-writeamp-") as tmp:
        corpus = os.path.join(tmp, "corpus")
        editable = build_corpus(corpus, a.files)
        out = {"files": a.files, "edits": a.edits}
        runs = [("measured", a.server)]
        if a.baseline_server:
            runs.insert(0, ("baseline", a.baseline_server))
        for name, exe in runs:
            out[name] = measure(os.path.abspath(exe), corpus, editable, a.edits,
                                os.path.join(tmp, name))
        json.dump(out, sys.stdout, indent=1)
        sys.stdout.write("\n")


if __name__ == "__main__":
    main()
