#!/usr/bin/env python3
"""Freshness benchmark of the real `satori` server over MCP (stdio).

On a git repository of real code (default 10,000 files) with two branches that differ in
exactly 1,000 files, measures how fast the index catches up with the working tree, each figure
as a ratio to a cold full index of the same tree taken in the same run:

  zero_change_sync      manage_index sync when nothing changed (target < 20 ms)
  edit_then_sync        one file edited, then an explicit manage_index sync (no watcher)
  edit_to_searchable    watcher on: one file edited, search_codebase polled until the new
                        token is found; reported minus the debounce (target < 50 ms), and
                        from the write itself (rawP50Ms, per-edit runs with the freshness
                        mode the finding search reported)
  branch_switch         git checkout of the other branch (1,000 files), then a sync

plus the server's peak resident memory. Results are one JSON document on stdout (and in
--out DIR when given) and a short table on stderr. A server without a watcher reports
edit_to_searchable as unavailable instead of failing.

Usage: bench/freshness.py --server target/release/satori [--files 10000] [--reps 20]
                          [--budget-s 90] [--debounce-ms 100] [--out DIR]

The repository is assembled once, without network, from source files in the cargo registry
and cached as a git repository under ~/.cache/satori-bench/; every run clones it into a
temporary directory, so the cache is never indexed or edited.
"""
import argparse, glob, json, os, random, secrets, shutil, subprocess, sys, tempfile, time

CACHE_FORMAT = 1
SEED = 15
# The 1,000 files that differ between the branches, by kind.
MODIFIED, ADDED, REMOVED = 400, 300, 300
CODE_EXTS = {".rs", ".c", ".h", ".cc", ".cpp", ".py", ".js", ".ts", ".go"}
MAX_FILE_BYTES = 128 * 1024
# Directory names the indexer always skips: files under them would never be indexed, so the
# corpus leaves them out and every file of the repository counts.
SKIPPED_DIRS = {".git", "node_modules", "target", "dist", "build", "out", "coverage",
                ".cache", "vendor", "__pycache__", "venv", ".venv"}
HUGE_THRESHOLD_MS = 86_400_000  # searches never sync because the last check is "old"


# ---------------------------------------------------------------------------- the corpus

def git(cwd, *args, quiet=True):
    cmd = ["git", "-c", "user.name=satori-bench", "-c", "user.email=bench@localhost",
           "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false", *args]
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"bench: git {' '.join(args)} failed: {r.stderr.strip()}")
    return r.stdout


def source_pool():
    """Every usable source file of the cargo registry, as (path inside the corpus, text)."""
    pool = []
    for root in sorted(glob.glob(os.path.expanduser("~/.cargo/registry/src/*/"))):
        for crate in sorted(os.listdir(root)):
            base = os.path.join(root, crate)
            for dirpath, dirs, files in os.walk(base):
                dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
                for f in sorted(files):
                    if os.path.splitext(f)[1] not in CODE_EXTS:
                        continue
                    full = os.path.join(dirpath, f)
                    try:
                        if os.path.getsize(full) > MAX_FILE_BYTES or os.path.islink(full):
                            continue
                        with open(full, encoding="utf-8") as fh:
                            text = fh.read()
                    except (OSError, UnicodeDecodeError):
                        continue
                    if text.strip():
                        pool.append((os.path.relpath(full, root), text))
    return pool


def write(root, rel, text):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w", encoding="utf-8") as fh:
        fh.write(text)


def edited(text, donor, i):
    """A real-looking edit: half the files gain a block of another file, half lose one."""
    lines = text.splitlines(keepends=True)
    if i % 2 == 0 or len(lines) < 8:
        block = donor.splitlines(keepends=True)[:40]
        at = len(lines) // 2
        return "".join(lines[:at] + ["\n"] + block + ["\n"] + lines[at:])
    lo, hi = len(lines) // 3, len(lines) // 3 + max(2, len(lines) // 6)
    return "".join(lines[:lo] + lines[hi:])


def build_corpus(dest, files):
    pool = source_pool()
    need = files + ADDED + MODIFIED
    if len(pool) < need:
        sys.exit(f"bench: only {len(pool)} source files in the cargo registry, {need} needed for "
                 f"--files {files}; run `cargo fetch` in a larger workspace or lower --files")
    rng = random.Random(SEED)
    rng.shuffle(pool)
    base, extra, donors = pool[:files], pool[files:files + ADDED], pool[files + ADDED:need]
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    repo = os.path.join(tmp, "repo")
    os.makedirs(repo)
    git(repo, "init", "-q", "-b", "a")
    for rel, text in base:
        write(repo, rel, text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "branch a")
    git(repo, "checkout", "-q", "-b", "b")
    picks = rng.sample(range(files), MODIFIED + REMOVED)
    modified = [base[i][0] for i in picks[:MODIFIED]]
    removed = [base[i][0] for i in picks[MODIFIED:]]
    by_path = dict(base)
    for i, (rel, (_, donor)) in enumerate(zip(modified, donors)):
        write(repo, rel, edited(by_path[rel], donor, i))
    for rel in removed:
        os.remove(os.path.join(repo, rel))
    for rel, text in extra:
        write(repo, rel, text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "branch b: 1,000 files differ")
    git(repo, "checkout", "-q", "a")
    diff = git(repo, "diff", "--no-renames", "--name-status", "a", "b").splitlines()
    kinds = {k: sum(1 for l in diff if l.startswith(k)) for k in "MAD"}
    assert kinds == {"M": MODIFIED, "A": ADDED, "D": REMOVED}, kinds
    # Edits during the run go to files both branches share untouched, so they never collide
    # with the switch.
    touched = set(modified) | set(removed)
    stable = [rel for rel, _ in base if rel.endswith(".rs") and rel not in touched]
    meta = {"format": CACHE_FORMAT, "files": files, "modified": MODIFIED, "added": ADDED,
            "removed": REMOVED, "editable": stable[:2000]}
    with open(os.path.join(tmp, "corpus.json"), "w") as fh:
        json.dump(meta, fh)
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)


def corpus(files):
    dest = os.path.expanduser(f"~/.cache/satori-bench/freshness-{files}-v{CACHE_FORMAT}")
    if not os.path.isfile(os.path.join(dest, "corpus.json")):
        log(f"assembling a {files}-file repository in {dest} (once)")
        build_corpus(dest, files)
    with open(os.path.join(dest, "corpus.json")) as fh:
        return os.path.join(dest, "repo"), json.load(fh)


# ---------------------------------------------------------------------------- MCP

class Server:
    def __init__(self, exe, home, env_extra):
        env = dict(os.environ, SATORI_HOME=home, **env_extra)
        self.stderr = tempfile.TemporaryFile()
        self.p = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.stderr, env=env)
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
            line = self.p.stdout.readline()
            if not line:
                self.stderr.seek(0)
                tail = self.stderr.read().decode(errors="replace")[-2000:]
                sys.exit(f"bench: the server exited during {method}: {tail}")
            msg = json.loads(line)
            if msg.get("id") == self.next_id and "method" not in msg:
                if "error" in msg:
                    sys.exit(f"bench: {method} failed: {msg['error']}")
                return msg["result"]

    def call(self, tool, args):
        r = self.request("tools/call", {"name": tool, "arguments": args})
        return r.get("structuredContent") or r["content"][0]["text"]

    def timed(self, tool, args):
        t = time.perf_counter()
        out = self.call(tool, args)
        return out, (time.perf_counter() - t) * 1000

    def peak_rss_mb(self):
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024.0, 1)
        return None

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


# ---------------------------------------------------------------------------- measurements

def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def summary(samples, cold_ms, target_ms=None):
    s = {"samples": len(samples), "p50Ms": round(pct(samples, 0.5), 2),
         "p95Ms": round(pct(samples, 0.95), 2),
         "p50RatioToColdIndex": round(pct(samples, 0.5) / cold_ms, 5)}
    if target_ms is not None:
        s["targetMs"] = target_ms
        s["meetsTarget"] = s["p50Ms"] < target_ms
    return s


def wait_indexed(srv, repo):
    while True:
        st = srv.call("manage_index", {"action": "status", "path": repo})
        if st.get("state") != "indexing":
            return st
        time.sleep(0.05)


def sync(srv, repo):
    for _ in range(100):
        env, ms = srv.timed("manage_index", {"action": "sync", "path": repo})
        # The build that just finished may still hold its lock for a moment.
        if env.get("status") != "not_ready":
            break
        time.sleep(0.05)
    if env.get("status") != "ok":
        sys.exit(f"bench: sync answered {env.get('status')}: {env.get('message')}")
    return env.get("stats") or {}, ms


def append_token(repo, rel):
    token = "zqfresh" + "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(12))
    with open(os.path.join(repo, rel), "a", encoding="utf-8") as fh:
        fh.write(f"\npub fn {token}() {{}}\n")
    return token


def finds(srv, repo, rel, token):
    # scope mixed: a small function appended after a Rust `mod tests` may share its chunk,
    # which the default runtime scope leaves out.
    env = srv.call("search_codebase", {"path": repo, "query": f"must:{token} {token}",
                                       "scope": "mixed", "limit": 5})
    hit = env.get("status") == "ok" and any(r.get("file") == rel for r in env.get("results", []))
    return hit, (env.get("freshnessDecision") or {}).get("mode")


def budgeted(reps, budget_s, minimum, step):
    """Runs step() up to reps times, stopping early once the budget is spent (after minimum)."""
    out, started = [], time.perf_counter()
    for i in range(reps):
        if i >= minimum and time.perf_counter() - started > budget_s:
            break
        out.append(step(i))
    return out


def without_watcher(a, repo, home, meta):
    srv = Server(a.server, home, {"SATORI_RUN_MODE": "cli"})
    res = {}

    t = time.perf_counter()
    env = srv.call("manage_index", {"action": "create", "path": repo})
    if env.get("status") != "ok":
        sys.exit(f"bench: create answered {env.get('status')}: {env.get('message')}")
    st = wait_indexed(srv, repo)
    cold_ms = (time.perf_counter() - t) * 1000
    if st.get("state") != "indexed":
        sys.exit(f"bench: the cold index ended {st.get('state')}: {st.get('message')}")
    stats = st["stats"]
    res["coldIndex"] = {"wallMs": round(cold_ms, 1), "serverMs": stats.get("durationMs"),
                        "files": stats["files"], "chunks": stats["chunks"]}
    log(f"cold index: {stats['files']} files, {stats['chunks']} chunks, {cold_ms:.0f} ms")

    for _ in range(10):
        srv.call("list_codebases", {})
    trivial = [srv.timed("list_codebases", {})[1] for _ in range(max(a.reps, 20))]
    res["trivialCall"] = {"p50Ms": round(pct(trivial, 0.5), 2), "p95Ms": round(pct(trivial, 0.95), 2)}

    sync(srv, repo)  # the first sync after a build may settle state; not timed
    zero = budgeted(a.reps, a.budget_s, 3, lambda i: sync(srv, repo)[1])
    res["zeroChangeSync"] = summary(zero, cold_ms, target_ms=20)

    editable = iter(meta["editable"])
    edits = []

    def edit_then_sync(i):
        rel = next(editable)
        token = append_token(repo, rel)
        stats, ms = sync(srv, repo)
        hit, _ = finds(srv, repo, rel, token)
        edits.append({"ms": round(ms, 2), "modified": stats.get("modified"),
                      "rebuilt": stats.get("rebuilt"), "searchable": hit})
        return ms

    samples = budgeted(a.reps, a.budget_s, 3, edit_then_sync)
    res["editThenSync"] = summary(samples, cold_ms)
    res["editThenSync"]["allSearchableAfterSync"] = all(e["searchable"] for e in edits)
    res["editThenSync"]["syncCounts"] = sorted({(e["modified"], e["rebuilt"]) for e in edits})

    # Back to a clean branch a before the switches.
    git(repo, "checkout", "-q", "-f", "a")
    sync(srv, repo)
    switches = []

    def switch(i):
        target = "b" if i % 2 == 0 else "a"
        t = time.perf_counter()
        git(repo, "checkout", "-q", target)
        checkout_ms = (time.perf_counter() - t) * 1000
        stats, ms = sync(srv, repo)
        switches.append({"to": target, "checkoutMs": round(checkout_ms, 1), "syncMs": round(ms, 1),
                         "added": stats.get("added"), "removed": stats.get("removed"),
                         "modified": stats.get("modified")})
        return ms

    samples = budgeted(max(2, a.reps), a.budget_s, 2, switch)
    if len(samples) % 2:
        git(repo, "checkout", "-q", "a")  # leave the tree on branch a
        sync(srv, repo)
    res["branchSwitch"] = summary(samples, cold_ms)
    res["branchSwitch"]["filesChanged"] = meta["modified"] + meta["added"] + meta["removed"]
    res["branchSwitch"]["runs"] = switches
    res["peakRssMb"] = {"withoutWatcher": srv.peak_rss_mb()}
    srv.close()
    return res, cold_ms


def with_watcher(a, repo, home, meta, cold_ms, skip):
    srv = Server(a.server, home, {
        "SATORI_RUN_MODE": "mcp", "MCP_ENABLE_WATCHER": "true",
        "MCP_WATCH_DEBOUNCE_MS": str(a.debounce_ms),
        # Searches must not sync because the last check is old, nor the periodic background
        # re-check find the edit: only the watcher may make it searchable.
        "SATORI_SYNC_THRESHOLD_MS": str(HUGE_THRESHOLD_MS),
        "SATORI_RECONCILE_INTERVAL_MS": "0",
    })
    editable = iter(meta["editable"][skip:])
    out = {"debounceMs": a.debounce_ms}

    def until_searchable(deadline_s, retouch_s=None):
        rel = next(editable)
        token = append_token(repo, rel)
        t0 = last_touch = time.perf_counter()
        polls, modes = 0, set()
        while True:
            hit, mode = finds(srv, repo, rel, token)
            polls += 1
            modes.add(mode or "none")
            now = time.perf_counter()
            elapsed = (now - t0) * 1000
            if hit:
                return elapsed, polls, mode
            if elapsed > deadline_s * 1000:
                return None, polls, sorted(modes)
            if retouch_s and now - last_touch > retouch_s:
                # The watcher may still have been registering its watches when the file was
                # written: a new write gives it another event (the sync it starts picks up
                # the first edit too).
                with open(os.path.join(repo, rel), "a", encoding="utf-8") as fh:
                    fh.write("// touched again\n")
                last_touch = now
            time.sleep(0.002)

    # The first edit also waits for the watcher to be set up on every directory; a server
    # without a watcher never makes the edit searchable, and the row is unavailable.
    warm_deadline = 30 + 2 * cold_ms / 1000
    first, polls, modes = until_searchable(warm_deadline, retouch_s=5)
    if first is None:
        out.update(available=False, reason=f"an edit was not searchable within "
                   f"{warm_deadline:.0f} s: this server has no watcher (MCP_ENABLE_WATCHER)",
                   polls=polls, freshnessModesSeen=modes)
        out["peakRssMb"] = srv.peak_rss_mb()
        srv.close()
        return out
    runs = []

    def edit(i):
        time.sleep(a.debounce_ms / 1000 + 0.2)  # let the previous edit's events settle
        ms, polls, mode = until_searchable(60 + 2 * cold_ms / 1000)
        if ms is None:
            sys.exit("bench: an edit was not searchable within the deadline with the watcher on")
        runs.append({"ms": round(ms, 1), "polls": polls, "freshness": mode})
        return ms

    raw = budgeted(a.reps, a.budget_s, 3, edit)
    after = [max(0.0, ms - a.debounce_ms) for ms in raw]
    out.update(available=True, **summary(after, cold_ms, target_ms=50))
    out["rawP50Ms"] = round(pct(raw, 0.5), 2)
    out["freshnessModes"] = sorted({r["freshness"] or "none" for r in runs})
    out["meanPolls"] = round(sum(r["polls"] for r in runs) / len(runs), 1)
    out["runs"] = runs
    out["peakRssMb"] = srv.peak_rss_mb()
    srv.close()
    return out


def table(res):
    cold = res["coldIndex"]["wallMs"]
    rows = [("cold full index", f"{cold:.0f}", "", "1", "")]

    def row(name, r):
        if not r.get("available", True):
            rows.append((name, "n/a", "", "", r["reason"]))
            return
        target = r.get("targetMs")
        verdict = "" if target is None else (f"< {target} ms " + ("met" if r["meetsTarget"] else "MISSED"))
        rows.append((name, f"{r['p50Ms']:.1f}", f"{r['p95Ms']:.1f}",
                     f"{r['p50RatioToColdIndex']:.4f}", verdict))

    row("zero-change sync", res["zeroChangeSync"])
    row("one-file edit + sync", res["editThenSync"])
    row("one-file edit -> searchable (watcher, minus debounce)", res["editToSearchable"])
    row("1,000-file branch switch + sync", res["branchSwitch"])
    width = max(len(r[0]) for r in rows)
    lines = [f"{'measurement':<{width}}  {'p50 ms':>9}  {'p95 ms':>9}  {'p50/cold':>9}  target"]
    for name, p50, p95, ratio, verdict in rows:
        lines.append(f"{name:<{width}}  {p50:>9}  {p95:>9}  {ratio:>9}  {verdict}")
    c = res["corpus"]
    lines.append(f"({c['indexedFiles']} files, {c['chunks']} chunks; peak RSS "
                 f"{max(v for v in res['peakRssMb'].values() if v)} MB; trivial call p50 {res['trivialCall']['p50Ms']} ms)")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default="target/release/satori")
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--budget-s", type=float, default=90,
                    help="stop repeating a measurement after this long (it keeps its minimum)")
    ap.add_argument("--debounce-ms", type=int, default=100)
    ap.add_argument("--out", help="directory for the JSON result")
    a = ap.parse_args()
    a.server = os.path.abspath(a.server)
    if not os.access(a.server, os.X_OK):
        sys.exit(f"bench: {a.server} not found; build with `cargo build --release -p satori-mcp`")

    cached, meta = corpus(a.files)
    work = tempfile.mkdtemp(prefix="satori-freshness-")
    try:
        repo = os.path.realpath(os.path.join(work, "repo"))
        subprocess.run(["git", "clone", "-q", "-b", "a", cached, repo], check=True)
        git(repo, "branch", "-q", "b", "origin/b")
        home = os.path.join(work, "home")
        res, cold_ms = without_watcher(a, repo, home, meta)
        skip = res["editThenSync"]["samples"]
        res["editToSearchable"] = with_watcher(a, repo, home, meta, cold_ms, skip)
        res["peakRssMb"]["withWatcher"] = res["editToSearchable"].pop("peakRssMb")
        res["corpus"] = {"repositoryFiles": a.files, "indexedFiles": res["coldIndex"]["files"],
                         "chunks": res["coldIndex"]["chunks"],
                         "branchDiff": {"modified": meta["modified"], "added": meta["added"],
                                        "removed": meta["removed"]}}
        res["server"] = a.server
        res["measuredAt"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    doc = json.dumps(res, indent=2)
    print(doc)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        path = os.path.join(a.out, f"freshness-{time.strftime('%Y%m%d-%H%M%S')}.json")
        with open(path, "w") as fh:
            fh.write(doc + "\n")
        log(f"wrote {path}")
    print(table(res), file=sys.stderr)


if __name__ == "__main__":
    main()
