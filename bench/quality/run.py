#!/usr/bin/env python3
"""Run the retrieval-quality benchmark through Satori's real MCP surface.

One command: make sure the corpus is fetched, build a working copy of every package with the
doc comments of the generated docstring queries blanked out, index each copy with
`satori-cli manage_index --action create`, run every query (hand-written and generated)
against a `satori` server spoken to over MCP stdio, and score the results.

Usage:
  cargo build --release --bins                       # first: the binaries under test
  bench/quality/run.py                                # every configuration, every package
  bench/quality/run.py --configs bm25,default --repos py-rich,c-lua --limit-queries 5
  bench/quality/run.py --model none                   # lexical only (SATORI_EMBEDDING_MODEL)

Writes <out>/results.json (every query under every configuration, with ranks) and
<out>/results.md (tables); progress goes to stderr and a JSON summary to stdout.
Python 3.11 standard library only.
"""
import argparse
import contextlib
import collections
import datetime
import hashlib
import io
import json
import math
import os
import queue
import random
import re
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import fetch_corpus  # noqa: E402

QUERIES_DIR = os.path.join(HERE, "queries")
GENERATED_DIR = os.path.join(HERE, "generated")
DEFAULT_OUT = os.path.join(HERE, "results")
DEFAULT_BIN_DIR = os.path.join(REPO_ROOT, "target", "release")

# name -> SATORI_SEARCH_ABLATION, or (SATORI_SEARCH_ABLATION, weights to override). All of
# them search the same index. A component that is a weight rather than a switch is ablated by
# setting its weight to what turns it off.
CONFIGS = collections.OrderedDict([
    ("bm25", "lexical_only,no_signals,no_fields"),
    ("bm25+fields", "lexical_only,no_signals"),
    ("bm25+signals", "lexical_only"),
    ("dense", "dense_only,no_signals"),
    ("hybrid", "no_signals,no_fields"),
    ("default", ""),
    ("rrf", "rrf"),
    ("-fields", "no_fields"),
    ("-definition", "no_definition"),
    ("-path", "no_path"),
    ("-category", "no_category"),
    ("-saturation", "no_saturation"),
    ("-expansion", "no_expansion"),
    ("-names", "no_names"),
    ("-coherence", "no_coherence"),
    ("+file-vector", ("", {"file_vector": 0.2})),
    ("-file-names", ("", {"file_names": 0})),
    ("-file-doc", ("", {"file_doc": 0})),
    ("+centrality", ("", {"file_centrality": 0.3})),
    ("-path-rarity", ("", {"path_words_idf": False})),
    ("-kind", "no_kind"),
    ("-lookup", ("", {"definition_lookup": 0})),
    ("-case", ("", {"definition_case_folded": 1.0})),
    # The local late-interaction reranker on every described behaviour (SATORI_RERANKER).
    ("+local-rerank", ("", None, {"SATORI_RERANKER": "local"})),
])


def config_env(config, env_base):
    """The server environment of a configuration: SATORI_SEARCH_ABLATION, weights laid over
    those of the base environment, and any other variables it sets. Returns (env, ablation,
    overrides)."""
    parts = config if isinstance(config, tuple) else (config,)
    ablation, overrides, extra = (tuple(parts) + (None, None))[:3]
    env = dict(env_base)
    if overrides:
        base = json.loads(env.get("SATORI_SEARCH_WEIGHTS") or "{}")
        env["SATORI_SEARCH_WEIGHTS"] = json.dumps({**base, **overrides})
    if ablation:
        env["SATORI_SEARCH_ABLATION"] = ablation
    env.update(extra or {})
    return env, ablation, overrides
# The peer, run by `semble_peer.py` under `--semble-python`: name -> semble's `alpha`
# (0.0: BM25 and its ranking, no semantic weight; None: its own hybrid blend), both with
# Satori's bundled model.
PEERS = collections.OrderedDict([
    ("semble-bm25", 0.0),
    ("semble-hybrid", None),
])
BUNDLED_MODEL_DIR = os.path.join(REPO_ROOT, "crates", "satori-core", "assets", "model")
KINDS = ("handwritten", "docstring", "identifier")
# Every repository belongs to one half (corpus.json's `split`): ranking constants are chosen on
# the tuning half, and the held-out half shows how well they carry over.
SPLITS = ("tune", "heldout")
CATEGORIES = ("behavior", "architecture", "symbol")
METRICS = ("ndcg@10", "file_ndcg@10", "r@1", "r@5", "r@10", "mrr@10")
METRIC_LABELS = {"ndcg@10": "nDCG@10", "file_ndcg@10": "file nDCG@10", "r@1": "R@1", "r@5": "R@5", "r@10": "R@10",
                 "mrr@10": "MRR@10"}
LIMIT = 10
# The configurations the shipped default is measured against, per query set: plain BM25 over
# the chunk's text, and BM25 that also searches the weighted defined-name and path fields.
BASELINES = ("bm25", "bm25+fields", "semble-bm25", "semble-hybrid")
BOOTSTRAP_SAMPLES = 1000
# Bumped when the way working copies are made changes, so that old copies are rebuilt.
WORKCOPY_VERSION = 1
MCP_PROTOCOL_VERSION = "2025-11-25"


class BenchError(Exception):
    """A failure with a message meant for the user."""


def log(msg):
    print(f"run: {msg}", file=sys.stderr, flush=True)


sha256_file = fetch_corpus.sha256_of


def sha256_json(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


# ---------------------------------------------------------------- inputs

def load_jsonl(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise BenchError(f"{path}:{n}: invalid JSON: {e}") from None
    return out


def load_queries(pkg):
    """(all queries of the package, blank ranges of its generated queries)."""
    repo, language = pkg["name"], pkg["language"]
    hand_path = os.path.join(QUERIES_DIR, f"{repo}.jsonl")
    gen_path = os.path.join(GENERATED_DIR, f"{repo}.jsonl")
    queries = []
    if os.path.exists(hand_path):
        for q in load_jsonl(hand_path):
            q = dict(q)
            q.setdefault("kind", "handwritten")
            q.setdefault("language", language)
            q.setdefault("blank", [])
            queries.append(q)
    if not os.path.exists(gen_path):
        raise BenchError(f"{gen_path} is missing; run bench/quality/gen_queries.py first")
    generated = load_jsonl(gen_path)
    queries.extend(generated)
    blanks = sorted({(b["path"], b["start_line"], b["end_line"])
                     for q in generated for b in q.get("blank", [])})
    for q in queries:
        if q.get("repo") != repo:
            raise BenchError(f"query {q.get('id')} names repo {q.get('repo')!r}, not {repo}")
        q["split"] = pkg.get("split")
    return queries, blanks


def ensure_corpus(packages, cache, corpus=None):
    """Fetch the packages not yet extracted in the cache, from corpus.json or another corpus
    file holding their pins."""
    missing = [p["name"] for p in packages
               if not fetch_corpus.is_ready(p, os.path.join(cache, "src", p["name"]))]
    if not missing:
        return
    log(f"fetching the corpus: {', '.join(missing)}")
    with contextlib.redirect_stdout(io.StringIO()):
        rc = fetch_corpus.main(["--cache", cache, "--only", ",".join(missing)]
                               + (["--corpus", corpus] if corpus else []))
    if rc != 0:
        raise BenchError("the corpus could not be fetched (see the fetch_corpus messages above)")


# ---------------------------------------------------------------- working copies

def blank_lines(path, ranges):
    """Replace every character of the given 1-based line ranges with a space, keeping the
    line breaks, so that every other line keeps its number."""
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8", errors="surrogateescape")
    lines = text.split("\n")
    for start, end in ranges:
        if start < 1 or end > len(lines) or start > end:
            raise BenchError(f"blank range {start}-{end} is outside {path} ({len(lines)} lines)")
        for i in range(start - 1, end):
            line = lines[i]
            cr = line.endswith("\r")
            body = line[:-1] if cr else line
            lines[i] = " " * len(body) + ("\r" if cr else "")
    with open(path, "wb") as f:
        f.write("\n".join(lines).encode("utf-8", errors="surrogateescape"))


def ensure_workcopy(pkg, src_root, blanks, cache):
    """<cache>/work/<repo>: the package's source root with the blank ranges applied. Rebuilt
    when the pin, the ranges or this procedure change; returns (path, key)."""
    work_dir = os.path.join(cache, "work")
    dest = os.path.join(work_dir, pkg["name"])
    marker = dest + ".json"
    key = sha256_json({"sha256": pkg["sha256"], "root": pkg["root"], "blanks": blanks,
                       "version": WORKCOPY_VERSION})
    try:
        with open(marker, encoding="utf-8") as f:
            if json.load(f).get("key") == key and os.path.isdir(dest):
                return dest, key
    except (OSError, ValueError):
        pass
    log(f"{pkg['name']}: making the working copy ({len(blanks)} doc comments blanked)")
    os.makedirs(work_dir, exist_ok=True)
    if os.path.lexists(marker):
        os.remove(marker)
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src_root, tmp, symlinks=True)
    by_file = collections.defaultdict(list)
    for path, start, end in blanks:
        by_file[path].append((start, end))
    for path, ranges in sorted(by_file.items()):
        blank_lines(os.path.join(tmp, path), ranges)
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)
    with open(marker, "w", encoding="utf-8") as f:
        json.dump({"key": key, "repo": pkg["name"], "blanked": len(blanks)}, f)
    return dest, key


# ---------------------------------------------------------------- the binaries

def find_binaries(bin_dir):
    server = os.path.join(bin_dir, "satori")
    cli = os.path.join(bin_dir, "satori-cli")
    missing = [p for p in (server, cli) if not (os.path.isfile(p) and os.access(p, os.X_OK))]
    if missing:
        raise BenchError(f"{', '.join(missing)} not found; build the binaries first with "
                         f"`cargo build --release --bins` (or point --bin-dir at them)")
    return server, cli


def base_env(home, model, server_bin, weights=None):
    env = dict(os.environ)
    for name in ("SATORI_SEARCH_ABLATION", "SATORI_SEARCH_WEIGHTS", "SATORI_EMBEDDING_MODEL",
                 "SATORI_RUN_MODE", "SATORI_CLI_STDOUT_GUARD", "SATORI_RERANKER"):
        env.pop(name, None)
    env["SATORI_HOME"] = home
    env["SATORI_SERVER_BIN"] = server_bin
    if model is not None:
        env["SATORI_EMBEDDING_MODEL"] = model
    if weights is not None:
        env["SATORI_SEARCH_WEIGHTS"] = weights
    return env


def model_key(model):
    if model is None or model.strip() in ("", "bundled", "default"):
        return "bundled"
    if model.strip() in ("none", "off"):
        return "none"
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model.strip().rstrip("/"))[-40:]
    return f"{slug}-{hashlib.sha256(model.encode()).hexdigest()[:8]}"


# ---------------------------------------------------------------- indexing

def index_is_current(copy, env, cli):
    """True when manage_index status says the copy is searchable with the running model
    (indexed, or sync_completed once a search has synced it)."""
    proc = subprocess.run([cli, "manage_index", "--action", "status", "--path", copy], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return False
    try:
        doc = json.loads(proc.stdout)
        status = doc.get("structuredContent") or json.loads(doc["content"][0]["text"])
    except (ValueError, KeyError, IndexError, TypeError):
        return False
    compat = status.get("compatibility") or {}
    return (status.get("status") == "ok" and status.get("state") in ("indexed", "sync_completed")
            and compat.get("runtimeFingerprint") == compat.get("indexedFingerprint"))


def ensure_index(pkg, copy, copy_key, home, env, cli, server_sha, force):
    """Index the working copy with satori-cli unless the same copy was indexed by the same
    server binary into this SATORI_HOME before. Returns the index record."""
    marker_path = os.path.join(home, "bench-index.json")
    try:
        with open(marker_path, encoding="utf-8") as f:
            markers = json.load(f)
    except (OSError, ValueError):
        markers = {}
    want = {"copy_key": copy_key, "server_sha256": server_sha}
    rec = markers.get(pkg["name"])
    if not force and rec and all(rec.get(k) == v for k, v in want.items()):
        if index_is_current(copy, env, cli):
            return dict(rec, reused=True)
        log(f"{pkg['name']}: the index in {home} is not current (model or schema changed)")
    log(f"{pkg['name']}: indexing {copy}")
    argv = [cli, "--call-timeout-ms", "7200000", "manage_index", "--action", "create",
            "--path", copy, "--force"]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = " | ".join(proc.stderr.strip().splitlines()[-5:])
        raise BenchError(f"{pkg['name']}: indexing failed (exit {proc.returncode}): {tail}")
    try:
        doc = json.loads(proc.stdout)
        status = doc.get("structuredContent") or json.loads(doc["content"][0]["text"])
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise BenchError(f"{pkg['name']}: unreadable manage_index answer: {e}") from None
    stats = status.get("stats") or {}
    rec = dict(want, repo=pkg["name"], wall_s=round(wall, 3), server_ms=stats.get("durationMs"),
               files=stats.get("files"), chunks=stats.get("chunks"), state=status.get("state"),
               fingerprint=(status.get("compatibility") or {}).get("indexedFingerprint"),
               indexed_at=stats.get("indexedAt"))
    markers[pkg["name"]] = rec
    with open(marker_path, "w", encoding="utf-8") as f:
        json.dump(markers, f, indent=2)
    log(f"{pkg['name']}: indexed {rec['files']} files, {rec['chunks']} chunks in {wall:.2f}s")
    return dict(rec, reused=False)


# ---------------------------------------------------------------- MCP client

class McpServer:
    """One `satori` process spoken to over MCP stdio (newline-delimited JSON-RPC)."""

    def __init__(self, binary, env, startup_timeout=180):
        self.proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        self.responses = queue.Queue()
        self.telemetry = queue.Queue()
        self.stderr_tail = collections.deque(maxlen=40)
        self.next_id = 0
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        init = self.request("initialize", {
            "protocolVersion": MCP_PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "satori-bench-quality", "version": "1"}},
            timeout=startup_timeout)
        self.server_info = init.get("serverInfo")
        self.notify("notifications/initialized", {})

    def _read_stdout(self):
        for line in self.proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                self.responses.put(json.loads(line))
            except ValueError:
                self.responses.put({"_garbage": line[:200].decode("utf-8", "replace")})
        self.responses.put(None)

    def _read_stderr(self):
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith("[TELEMETRY] "):
                try:
                    self.telemetry.put(json.loads(line[len("[TELEMETRY] "):]))
                    continue
                except ValueError:
                    pass
            self.stderr_tail.append(line)

    def _send(self, message):
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise BenchError(self._died("the server closed its input")) from None

    def _died(self, what):
        tail = " | ".join(list(self.stderr_tail)[-5:])
        return f"{what} (exit {self.proc.poll()}); stderr: {tail or '(empty)'}"

    def notify(self, method, params):
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params, timeout=600):
        self.next_id += 1
        rid = self.next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BenchError(f"no answer to {method} within {timeout}s")
            try:
                msg = self.responses.get(timeout=left)
            except queue.Empty:
                continue
            if msg is None:
                raise BenchError(self._died(f"the server exited during {method}"))
            if "_garbage" in msg:
                raise BenchError(f"the server wrote non-JSON to stdout: {msg['_garbage']!r}")
            if msg.get("id") != rid:
                continue  # a notification or a server request: not ours
            if "error" in msg:
                raise BenchError(f"{method}: JSON-RPC error {msg['error']}")
            return msg.get("result") or {}

    def drain_telemetry(self):
        while True:
            try:
                self.telemetry.get_nowait()
            except queue.Empty:
                return

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def tool_payload(result):
    """The envelope of a tools/call result: structuredContent, else the JSON text."""
    if isinstance(result.get("structuredContent"), dict):
        return result["structuredContent"]
    for item in result.get("content") or []:
        if item.get("type") == "text":
            try:
                return json.loads(item["text"])
            except (ValueError, KeyError):
                return {"status": "error", "message": item.get("text", "")[:300]}
    return {"status": "error", "message": "empty tool result"}


def result_spans(envelope):
    """[(path, start, end)] per result, best first; a result may carry several spans."""
    out = []
    for r in envelope.get("results") or []:
        path = r.get("file") or r.get("path")
        spans = []
        for key in ("spans", "matches"):
            for s in r.get(key) or []:
                if isinstance(s, dict):
                    s = s.get("span", s)
                    spans.append((s.get("startLine"), s.get("endLine")))
        span = r.get("span") or {}
        if span:
            spans.insert(0, (span.get("startLine"), span.get("endLine")))
        if not spans:
            spans = [(None, None)]
        out.append({"path": path, "spans": spans, "label": r.get("symbolLabel"),
                    "score": r.get("score")})
    return out


# ---------------------------------------------------------------- scoring

def overlaps(gold, path, start, end):
    if gold["path"] != path:
        return False
    gs, ge = gold.get("start_line"), gold.get("end_line")
    if gs is None or start is None:
        return True
    ge = gs if ge is None else ge
    end = start if end is None else end
    return start <= ge and gs <= end


def score(gold, results):
    """nDCG@10 at span level (binary gain, each gold item counted once) and, at file level,
    the rank of the first result in a gold file."""
    used = [False] * len(gold)
    dcg = 0.0
    for rank, r in enumerate(results[:LIMIT], 1):
        for gi, g in enumerate(gold):
            if not used[gi] and any(overlaps(g, r["path"], s, e) for s, e in r["spans"]):
                used[gi] = True
                dcg += 1.0 / math.log2(rank + 1)
                break
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(gold), LIMIT) + 1))
    gold_files = {g["path"] for g in gold}
    # File level: each gold file counts once, at the first result in it.
    seen, file_dcg = set(), 0.0
    for rank, r in enumerate(results[:LIMIT], 1):
        if r["path"] in gold_files and r["path"] not in seen:
            seen.add(r["path"])
            file_dcg += 1.0 / math.log2(rank + 1)
    file_ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(gold_files), LIMIT) + 1))
    file_rank = next((i for i, r in enumerate(results[:LIMIT], 1) if r["path"] in gold_files),
                     None)
    return {"ndcg@10": dcg / ideal if ideal else 0.0,
            "file_ndcg@10": file_dcg / file_ideal if file_ideal else 0.0,
            "r@1": 1.0 if file_rank is not None and file_rank <= 1 else 0.0,
            "r@5": 1.0 if file_rank is not None and file_rank <= 5 else 0.0,
            "r@10": 1.0 if file_rank is not None else 0.0,
            "mrr@10": 1.0 / file_rank if file_rank else 0.0,
            "file_rank": file_rank,
            "span_hits": sum(used)}


def percentile(values, p):
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * p / 100
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def group_keys(q):
    """The groups a query counts in (besides 'overall')."""
    keys = [f"kind:{q['kind']}", f"language:{q['language']}"]
    if q["kind"] == "handwritten":
        keys.append(f"category:{q['category']}")
    if q.get("split"):
        keys.append(f"split:{q['split']}")
        if q["kind"] == "handwritten":
            keys.append(f"split:{q['split']}/category:{q['category']}")
    return keys


def aggregate(rows):
    """rows: [(repo, metrics)] -> macro (mean of per-repo means) and micro means."""
    by_repo = collections.defaultdict(list)
    for repo, m in rows:
        by_repo[repo].append(m)
    out = {"n": len(rows), "repos": len(by_repo)}
    for metric in METRICS:
        repo_means = [sum(m[metric] for m in ms) / len(ms) for ms in by_repo.values()]
        out[f"macro_{metric}"] = sum(repo_means) / len(repo_means) if repo_means else None
        out[f"micro_{metric}"] = (sum(m[metric] for _, m in rows) / len(rows)) if rows else None
    return out


def bootstrap(per_config_rows, seed, samples=BOOTSTRAP_SAMPLES, reference=None,
              baselines=()):
    """95% intervals by resampling queries within each repository (so every resample keeps
    the repository mix), the same resamples for every configuration; also the interval of
    each configuration's macro nDCG@10 minus the reference configuration's (overall), and of
    the reference minus each baseline configuration (per query set)."""
    configs = list(per_config_rows)
    if not configs:
        return {}
    first = per_config_rows[configs[0]]
    groups = list(first)
    # Positions of each group's queries per repository, identical across configurations.
    layout = {}
    for g in groups:
        by_repo = collections.defaultdict(list)
        for i, (repo, _) in enumerate(first[g]):
            by_repo[repo].append(i)
        layout[g] = by_repo
    values = {c: {g: {m: [row[1][m] for row in per_config_rows[c][g]] for m in METRICS}
                  for g in groups} for c in configs}
    rng = random.Random(seed)
    draws = {g: collections.defaultdict(list) for g in groups}
    deltas = collections.defaultdict(list)
    margins = collections.defaultdict(list)
    for _ in range(samples):
        picks = {g: {repo: [idx[rng.randrange(len(idx))] for _ in idx]
                     for repo, idx in layout[g].items()} for g in groups}
        for c in configs:
            for g in groups:
                for m in METRICS:
                    vals = values[c][g][m]
                    repo_means, total, n = [], 0.0, 0
                    for repo, pick in picks[g].items():
                        s = sum(vals[i] for i in pick)
                        repo_means.append(s / len(pick))
                        total += s
                        n += len(pick)
                    draws[g][(c, "macro", m)].append(sum(repo_means) / len(repo_means))
                    draws[g][(c, "micro", m)].append(total / n)
        if reference in configs:
            ref = draws["overall"][(reference, "macro", "ndcg@10")][-1]
            for c in configs:
                deltas[c].append(draws["overall"][(c, "macro", "ndcg@10")][-1] - ref)
        for baseline in baselines:
            if reference not in configs or baseline not in configs:
                continue
            for g in groups:
                margins[baseline, g].append(draws[g][(reference, "macro", "ndcg@10")][-1]
                                            - draws[g][(baseline, "macro", "ndcg@10")][-1])
    out = {c: {} for c in configs}
    for g in groups:
        for (c, avg, m), xs in draws[g].items():
            out[c].setdefault(g, {})[f"{avg}_{m}"] = [percentile(xs, 2.5), percentile(xs, 97.5)]
    for c, xs in deltas.items():
        out[c]["delta_macro_ndcg@10_vs_" + reference] = [percentile(xs, 2.5), percentile(xs, 97.5)]
    for (baseline, g), xs in margins.items():
        out[reference].setdefault("margin_vs_" + baseline, {})[g] = [percentile(xs, 2.5),
                                                                    percentile(xs, 97.5)]
    return out


# ---------------------------------------------------------------- the run

def run_config(name, config, server_bin, cli, env_base, work, queries_by_repo, cli_sample,
               call_timeout):
    env, ablation, overrides = config_env(config, env_base)
    log(f"[{name}] starting satori (SATORI_SEARCH_ABLATION={ablation!r}"
        + (f", weights {overrides}" if overrides else "") + ")")
    server = McpServer(server_bin, env)
    log(f"[{name}] server: {server.server_info}")
    records = []
    try:
        total = sum(len(v) for v in queries_by_repo.values())
        done = 0
        for repo, queries in queries_by_repo.items():
            path = work[repo]
            for q in queries:
                server.drain_telemetry()
                args = {"path": path, "query": q["query"], "limit": LIMIT}
                t0 = time.perf_counter()
                result = server.request("tools/call", {"name": "search_codebase",
                                                       "arguments": args}, timeout=call_timeout)
                rtt_ms = (time.perf_counter() - t0) * 1000
                envelope = tool_payload(result)
                tel = None
                try:
                    tel = server.telemetry.get(timeout=1.0)
                except queue.Empty:
                    pass
                status = envelope.get("status")
                results = result_spans(envelope) if status == "ok" else []
                m = score(q["gold"], results)
                records.append({
                    "id": q["id"], "repo": repo, "kind": q["kind"], "category": q["category"],
                    "language": q["language"], "split": q.get("split"), "status": status,
                    "error": None if status == "ok" else (envelope.get("message") or envelope.get("reason")),
                    "latency_ms": (tel or {}).get("latency_ms"), "rtt_ms": round(rtt_ms, 3),
                    "query_kind": (tel or {}).get("query_kind"),
                    "retrieval_mode": (tel or {}).get("retrieval_mode"),
                    "freshness": (envelope.get("freshnessDecision") or {}).get("mode"),
                    "results": [{"path": r["path"], "start_line": r["spans"][0][0],
                                 "end_line": r["spans"][0][1], "label": r["label"],
                                 **({"spans": r["spans"]} if len(r["spans"]) > 1 else {})}
                                for r in results],
                    **{k: (round(v, 6) if isinstance(v, float) else v) for k, v in m.items()},
                })
                if status != "ok":
                    log(f"[{name}] {q['id']}: status {status}: {records[-1]['error']}")
                done += 1
                if done % 100 == 0 or done == total:
                    log(f"[{name}] {done}/{total} queries")
    finally:
        server.close()

    # satori-cli: the process-per-call path, on a few queries per repository.
    cli_runs = []
    for repo, queries in queries_by_repo.items():
        for q in queries[:cli_sample]:
            argv = [cli, "search_codebase", "--path", work[repo], f"--query={q['query']}",
                    "--limit", str(LIMIT)]
            t0 = time.perf_counter()
            proc = subprocess.run(argv, env=env, capture_output=True, text=True)
            wall = (time.perf_counter() - t0) * 1000
            agree = None
            if proc.returncode == 0:
                try:
                    envelope = tool_payload(json.loads(proc.stdout))
                    mine = [(r["path"], r["spans"][0]) for r in result_spans(envelope)]
                    rec = next(r for r in records if r["id"] == q["id"])
                    theirs = [(r["path"], (r["start_line"], r["end_line"])) for r in rec["results"]]
                    agree = mine == theirs
                except (ValueError, StopIteration):
                    agree = None
            cli_runs.append({"id": q["id"], "wall_ms": round(wall, 3), "exit": proc.returncode,
                             "same_results_as_mcp": agree})
    return records, cli_runs, server.server_info


def run_peer(name, python, work, queries_by_repo):
    """The peer's records for every query, scored like Satori's."""
    job = {"model": BUNDLED_MODEL_DIR, "alpha": PEERS[name], "limit": LIMIT,
           "repos": {repo: work[repo] for repo in queries_by_repo},
           "queries": [{"id": q["id"], "repo": repo, "query": q["query"]}
                       for repo, qs in queries_by_repo.items() for q in qs]}
    log(f"[{name}] running {python} semble_peer.py")
    proc = subprocess.run([python, os.path.join(HERE, "semble_peer.py")], input=json.dumps(job),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise BenchError(f"{name}: semble_peer.py failed: {proc.stderr.strip()[-500:]}")
    answer = json.loads(proc.stdout)
    records = []
    for repo, queries in queries_by_repo.items():
        for q in queries:
            hits = answer["results"].get(q["id"], [])
            results = [{"path": h["path"], "spans": [(h["start_line"], h["end_line"])],
                        "label": None} for h in hits]
            m = score(q["gold"], results)
            records.append({
                "id": q["id"], "repo": repo, "kind": q["kind"], "category": q["category"],
                "language": q["language"], "split": q.get("split"), "status": "ok", "error": None,
                "latency_ms": None, "rtt_ms": 0.0, "query_kind": None,
                "retrieval_mode": name, "freshness": None,
                "results": [{"path": h["path"], "start_line": h["start_line"],
                             "end_line": h["end_line"], "label": None} for h in hits],
                **{k: (round(v, 6) if isinstance(v, float) else v) for k, v in m.items()},
            })
    return records, [], f"semble {answer['version']}"


def summarize(records, cli_runs):
    groups = collections.defaultdict(list)
    for r in records:
        groups["overall"].append((r["repo"], r))
        for k in group_keys(r):
            groups[k].append((r["repo"], r))
    summary = {g: aggregate(rows) for g, rows in groups.items()}
    server_lat = [r["latency_ms"] for r in records if r["latency_ms"] is not None]
    rtt = [r["rtt_ms"] for r in records]
    cli_wall = [c["wall_ms"] for c in cli_runs if c["exit"] == 0]
    latency = {
        "server_p50_ms": percentile(server_lat, 50), "server_p95_ms": percentile(server_lat, 95),
        "rtt_p50_ms": percentile(rtt, 50), "rtt_p95_ms": percentile(rtt, 95),
        "cli_p50_ms": percentile(cli_wall, 50), "cli_p95_ms": percentile(cli_wall, 95),
        "cli_runs": len(cli_runs), "cli_failures": sum(1 for c in cli_runs if c["exit"] != 0),
        "cli_same_results": sum(1 for c in cli_runs if c["same_results_as_mcp"]),
    }
    errors = sum(1 for r in records if r["status"] != "ok")
    modes = collections.Counter(r["retrieval_mode"] for r in records)
    return summary, groups, latency, errors, dict(modes)


# ---------------------------------------------------------------- report

def fmt(x, digits=3):
    return "–" if x is None else f"{x:.{digits}f}"


def fmt_ms(x):
    return "–" if x is None else (f"{x:.1f}" if x < 100 else f"{x:.0f}")


def write_markdown(path, report):
    cfgs = report["configs"]
    names = list(cfgs)
    lines = []
    meta = report["meta"]
    lines.append("# Retrieval-quality results\n")
    lines.append(f"- date: {meta['date']}; commit: `{meta['git_commit']}`"
                 f"{' (dirty tree)' if meta['git_dirty'] else ''}")
    lines.append(f"- embedding model: `{meta['model_env']}`; repositories: {len(meta['repos'])}; "
                 f"queries per configuration: {meta['query_counts']['total']} "
                 f"({', '.join(f'{k} {v}' for k, v in meta['query_counts'].items() if k != 'total')})")
    lines.append("- metrics: nDCG@10 on spans (binary gain, each gold span counted once); R@k "
                 "(a gold file among the top k) and MRR@10 on files; macro = mean over "
                 "repositories of the per-repository means; [95% bootstrap interval]")
    modes = {n: cfgs[n]["retrieval_modes"] for n in names}
    lines.append(f"- retrieval modes reported by the server: "
                 + "; ".join(f"{n}: {', '.join(f'{k} {v}' for k, v in m.items())}" for n, m in modes.items()))
    lines.append("")

    def table(title, group, with_ci=False):
        rows = [n for n in names if group in cfgs[n]["summary"]]
        if not rows:
            return
        n_q = cfgs[rows[0]]["summary"][group]["n"]
        n_r = cfgs[rows[0]]["summary"][group]["repos"]
        lines.append(f"## {title} ({n_q} queries, {n_r} repositories, macro)\n")
        lines.append("| config | " + " | ".join(METRIC_LABELS[m] for m in METRICS) + " |")
        lines.append("|---|" + "---:|" * len(METRICS))
        for n in rows:
            s = cfgs[n]["summary"][group]
            ci = cfgs[n].get("ci", {}).get(group, {})
            cells = []
            for m in METRICS:
                v = s[f"macro_{m}"]
                c = ci.get(f"macro_{m}")
                cells.append(fmt(v) + (f" [{fmt(c[0], 2)}, {fmt(c[1], 2)}]" if with_ci and c else ""))
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        lines.append("")

    # Overview: nDCG@10 per query set.
    sets = [("overall", "overall"), ("kind:handwritten", "handwritten"),
            ("kind:docstring", "docstring"), ("kind:identifier", "identifier")] + \
           [(f"category:{c}", c) for c in CATEGORIES] + \
           [(f"split:{h}", f"{h} half") for h in SPLITS] + \
           [(f"split:{h}/category:{c}", f"{h}: {c}") for h in SPLITS for c in CATEGORIES]
    present = [(g, label) for g, label in sets if any(g in cfgs[n]["summary"] for n in names)]
    lines.append("## nDCG@10 by query set (macro over repositories)\n")
    lines.append("| config | " + " | ".join(label for _, label in present) + " | Δ overall vs "
                 f"{report['reference']} [95% CI] |")
    lines.append("|---|" + "---:|" * (len(present) + 1))
    for n in names:
        cells = [fmt(cfgs[n]["summary"].get(g, {}).get("macro_ndcg@10")) for g, _ in present]
        d = cfgs[n].get("ci", {}).get(f"delta_macro_ndcg@10_vs_{report['reference']}")
        delta = cfgs[n]["summary"]["overall"]["macro_ndcg@10"] - \
            cfgs[report["reference"]]["summary"]["overall"]["macro_ndcg@10"] \
            if report["reference"] in cfgs else None
        dcell = "–" if delta is None else f"{delta:+.3f}" + (f" [{d[0]:+.3f}, {d[1]:+.3f}]" if d else "")
        lines.append(f"| {n} | " + " | ".join(cells) + f" | {dcell} |")
    lines.append("")

    ref = report["reference"]
    for base in BASELINES:
        margin = cfgs.get(ref, {}).get("ci", {}).get(f"margin_vs_{base}")
        if not margin or base not in cfgs:
            continue
        lines.append(f"## {ref} minus {base}: nDCG@10 by query set [paired 95% CI]\n")
        lines.append("| query set | " + base + " | " + ref + " | Δ [95% CI] |")
        lines.append("|---|---:|---:|---:|")
        for g, label in present:
            if g not in margin:
                continue
            b = cfgs[base]["summary"][g]["macro_ndcg@10"]
            r = cfgs[ref]["summary"][g]["macro_ndcg@10"]
            lo, hi = margin[g]
            lines.append(f"| {label} | {fmt(b)} | {fmt(r)} | {r - b:+.3f} [{lo:+.3f}, {hi:+.3f}] |")
        lines.append("")

    table("All queries", "overall", with_ci=True)
    table("Hand-written queries", "kind:handwritten", with_ci=True)
    table("Docstring queries", "kind:docstring", with_ci=True)
    table("Identifier queries", "kind:identifier", with_ci=True)
    for c in CATEGORIES:
        table(f"Hand-written, category {c}", f"category:{c}")

    micro = [n for n in names]
    lines.append("## All queries, micro average (every query weighs the same)\n")
    lines.append("| config | " + " | ".join(METRIC_LABELS[m] for m in METRICS) + " |")
    lines.append("|---|" + "---:|" * len(METRICS))
    for n in micro:
        s = cfgs[n]["summary"]["overall"]
        lines.append(f"| {n} | " + " | ".join(fmt(s[f'micro_{m}']) for m in METRICS) + " |")
    lines.append("")

    langs = sorted({g.split(":", 1)[1] for n in names for g in cfgs[n]["summary"]
                    if g.startswith("language:")})
    lines.append("## nDCG@10 per language (all queries, macro over the language's repositories)\n")
    lines.append("| config | " + " | ".join(langs) + " |")
    lines.append("|---|" + "---:|" * len(langs))
    for n in names:
        lines.append(f"| {n} | " + " | ".join(
            fmt(cfgs[n]["summary"].get(f"language:{lang}", {}).get("macro_ndcg@10")) for lang in langs) + " |")
    lines.append("")

    lines.append("## nDCG@10 per repository (all queries)\n")
    lines.append("| repository | queries | " + " | ".join(names) + " |")
    lines.append("|---|---:|" + "---:|" * len(names))
    for repo in meta["repos"]:
        cells = []
        count = None
        for n in names:
            rs = [r for r in report["queries"][n] if r["repo"] == repo]
            count = len(rs)
            cells.append(fmt(sum(r["ndcg@10"] for r in rs) / len(rs)) if rs else "–")
        lines.append(f"| {repo} | {count} | " + " | ".join(cells) + " |")
    lines.append("")

    lines.append("## Speed\n")
    lines.append("Indexing (`satori-cli manage_index --action create`, wall time including the "
                 "CLI's 500 ms status polling; server = the index build time the server reports):\n")
    lines.append("| repository | files | chunks | wall s | server ms | reused |")
    lines.append("|---|---:|---:|---:|---:|---|")
    for repo in meta["repos"]:
        ix = report["index"][repo]
        lines.append(f"| {repo} | {ix.get('files')} | {ix.get('chunks')} | {fmt(ix.get('wall_s'), 2)} | "
                     f"{ix.get('server_ms')} | {'yes' if ix.get('reused') else 'no'} |")
    total_wall = sum(report["index"][r].get("wall_s") or 0 for r in meta["repos"])
    lines.append(f"| **total** | | | {total_wall:.2f} | | |")
    lines.append("")
    lines.append("Query latency in ms (server = `latency_ms` of the server's telemetry; round trip "
                 "= one MCP tools/call on a running server; satori-cli = a whole process per query, "
                 "on a sample):\n")
    lines.append("| config | server p50 | server p95 | round trip p50 | round trip p95 | satori-cli p50 | satori-cli p95 | cli runs |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    for n in names:
        lat = cfgs[n]["latency"]
        lines.append(f"| {n} | {fmt_ms(lat['server_p50_ms'])} | {fmt_ms(lat['server_p95_ms'])} | "
                     f"{fmt_ms(lat['rtt_p50_ms'])} | {fmt_ms(lat['rtt_p95_ms'])} | "
                     f"{fmt_ms(lat['cli_p50_ms'])} | {fmt_ms(lat['cli_p95_ms'])} | {lat['cli_runs']} |")
    lines.append("")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def write_report_json(f, report):
    """Pretty JSON, except that each query record takes one line (the file stays small and
    greppable by query id)."""
    def records(items, indent):
        pad = " " * indent
        return "[\n" + ",\n".join(pad + json.dumps(r, separators=(",", ":")) for r in items) + \
            "\n" + " " * (indent - 1) + "]"

    parts = []
    for key, value in report.items():
        if key == "query_set":
            body = records(value, 2)
        elif key == "queries":
            body = "{\n" + ",\n".join(f"  {json.dumps(c)}: " + records(rs, 3)
                                       for c, rs in value.items()) + "\n }"
        else:
            body = json.dumps(value, indent=1).replace("\n", "\n ")
        parts.append(f" {json.dumps(key)}: {body}")
    f.write("{\n" + ",\n".join(parts) + "\n}\n")


# ---------------------------------------------------------------- main

def git_info():
    try:
        commit = subprocess.run(["git", "-C", REPO_ROOT, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip() or "unknown"
        dirty = bool(subprocess.run(["git", "-C", REPO_ROOT, "status", "--porcelain",
                                     "--untracked-files=no"],
                                    capture_output=True, text=True).stdout.strip())
    except OSError:
        commit, dirty = "unknown", False
    return commit, dirty


def parse_list(value, known, what):
    if not value:
        return list(known)
    items = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [v for v in items if v not in known]
    if unknown:
        raise BenchError(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return items


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", help=f"comma-separated configurations (default: all: {', '.join(CONFIGS)}; "
                                      f"plus {', '.join(PEERS)} with --semble-python)")
    ap.add_argument("--semble-python", metavar="PYTHON",
                    help="a Python with semble installed (pip install semble==0.7.0): adds the "
                         "peer's rows to the run")
    ap.add_argument("--repos", help="comma-separated packages of corpus.json (default: all)")
    ap.add_argument("--split", choices=SPLITS,
                    help="only the repositories of one half: constants are tuned on 'tune'; "
                         "'heldout' is never looked at while tuning")
    ap.add_argument("--kinds", help=f"comma-separated query kinds (default: {', '.join(KINDS)})")
    ap.add_argument("--limit-queries", type=int, metavar="N",
                    help="only the first N queries of each kind per package (quick runs)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory (default: bench/quality/results)")
    ap.add_argument("--bin-dir", default=DEFAULT_BIN_DIR,
                    help="directory with satori and satori-cli (default: target/release)")
    ap.add_argument("--model", help="SATORI_EMBEDDING_MODEL for the server: bundled, none (lexical "
                                    "only), a model2vec directory or hf:<org>/<name>@<commit> "
                                    "(default: $SATORI_EMBEDDING_MODEL, else the bundled model)")
    ap.add_argument("--cache", help="corpus cache (default: $SATORI_BENCH_CACHE or ~/.cache/satori-bench/corpus)")
    ap.add_argument("--reindex", action="store_true", help="index again even when a matching index exists")
    ap.add_argument("--cli-sample", type=int, default=2, metavar="N",
                    help="queries per package also run through satori-cli, to time it (default 2)")
    ap.add_argument("--seed", type=int, default=7, help="bootstrap seed")
    ap.add_argument("--call-timeout", type=float, default=600, help="seconds per search call")
    ap.add_argument("--weights", metavar="JSON",
                    help="ranking weights to change, as a JSON object passed to every server as "
                         "SATORI_SEARCH_WEIGHTS (e.g. '{\"rrf_k\": 30}'; default: the shipped weights)")
    args = ap.parse_args(argv)
    if args.weights is not None:
        try:
            if not isinstance(json.loads(args.weights), dict):
                raise ValueError("not an object")
        except ValueError as e:
            log(f"error: --weights must be a JSON object: {e}")
            return 2
    if args.model is None:
        # SATORI_EMBEDDING_MODEL in the environment counts as --model.
        args.model = os.environ.get("SATORI_EMBEDDING_MODEL") or None

    try:
        known = list(CONFIGS) + (list(PEERS) if args.semble_python else [])
        configs = parse_list(args.configs, known, "configuration")
        if args.semble_python and not args.configs:
            configs += list(PEERS)
        kinds = parse_list(args.kinds, KINDS, "query kind")
        packages = fetch_corpus.load_corpus(fetch_corpus.DEFAULT_CORPUS)
        packages = fetch_corpus.select(packages, args.repos)
        if args.split:
            packages = [p for p in packages if p.get("split") == args.split]
        server_bin, cli = find_binaries(os.path.abspath(args.bin_dir))
        cache = fetch_corpus.resolve_cache(args.cache)
        ensure_corpus(packages, cache)

        # Queries and working copies.
        queries_by_repo, work, work_keys = collections.OrderedDict(), {}, {}
        for pkg in packages:
            queries, blanks = load_queries(pkg)
            selected = []
            for kind in kinds:
                ofkind = [q for q in queries if q["kind"] == kind]
                selected.extend(ofkind[:args.limit_queries] if args.limit_queries else ofkind)
            queries_by_repo[pkg["name"]] = selected
            src_root = os.path.join(cache, "src", pkg["name"], pkg["root"])
            work[pkg["name"]], work_keys[pkg["name"]] = ensure_workcopy(pkg, src_root, blanks, cache)

        # One index per embedding model, shared by every search configuration.
        home = os.path.join(cache, "homes", model_key(args.model))
        os.makedirs(home, exist_ok=True)
        env = base_env(home, args.model, server_bin, args.weights)
        server_sha = sha256_file(server_bin)
        index = {}
        for pkg in packages:
            index[pkg["name"]] = ensure_index(pkg, work[pkg["name"]], work_keys[pkg["name"]],
                                              home, env, cli, server_sha, args.reindex)

        records, cli_runs, server_info = {}, {}, None
        for name in configs:
            if name in PEERS:
                records[name], cli_runs[name], _ = run_peer(
                    name, args.semble_python, work, queries_by_repo)
                continue
            records[name], cli_runs[name], server_info = run_config(
                name, CONFIGS[name], server_bin, cli, env, work, queries_by_repo,
                args.cli_sample, args.call_timeout)
    except (BenchError, fetch_corpus.CorpusError) as e:
        log(f"error: {e}")
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130

    reference = "default" if "default" in configs else configs[0]
    report_cfgs, rows_for_ci = collections.OrderedDict(), collections.OrderedDict()
    for name in configs:
        summary, groups, latency, errors, modes = summarize(records[name], cli_runs[name])
        report_cfgs[name] = {"ablation": CONFIGS.get(name, "peer"), "summary": summary, "latency": latency,
                             "errors": errors, "retrieval_modes": modes, "cli": cli_runs[name]}
        rows_for_ci[name] = {g: rows for g, rows in groups.items()
                             if g == "overall" or g.startswith(("kind:", "category:", "split:"))}
    log("bootstrapping confidence intervals")
    ci = bootstrap(rows_for_ci, args.seed, reference=reference, baselines=BASELINES)
    for name in configs:
        report_cfgs[name]["ci"] = ci.get(name, {})

    commit, dirty = git_info()
    counts = collections.Counter(q["kind"] for qs in queries_by_repo.values() for q in qs)
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "git_commit": commit, "git_dirty": dirty,
        "server": server_bin, "server_sha256": server_sha,
        "model_env": args.model if args.model is not None else "(unset: bundled)",
        "satori_home": home, "cache": cache, "repos": [p["name"] for p in packages],
        "kinds": kinds, "limit_queries": args.limit_queries,
        "weights": json.loads(args.weights) if args.weights is not None else None,
        "query_counts": {"total": sum(counts.values()), **{k: counts.get(k, 0) for k in kinds}},
        "bootstrap": {"samples": BOOTSTRAP_SAMPLES, "seed": args.seed,
                      "resampling": "queries, within each repository"},
        "server_info": server_info,
    }
    query_set = [{k: q.get(k) for k in ("id", "repo", "kind", "category", "language", "split",
                                         "query", "gold", "blank")}
                 for qs in queries_by_repo.values() for q in qs]
    report = {"meta": meta, "reference": reference, "index": index, "configs": report_cfgs,
              "query_set": query_set, "queries": records}
    os.makedirs(args.out, exist_ok=True)
    json_path = os.path.join(args.out, "results.json")
    md_path = os.path.join(args.out, "results.md")
    with open(json_path, "w", encoding="utf-8") as f:
        write_report_json(f, report)
    write_markdown(md_path, report)
    log(f"wrote {json_path} and {md_path}")

    out = {"results_json": json_path, "results_md": md_path, "reference": reference,
           "queries": meta["query_counts"], "configs": {}}
    for name in configs:
        s = report_cfgs[name]["summary"]
        out["configs"][name] = {
            "overall_macro": {m: round(s["overall"][f"macro_{m}"], 4) for m in METRICS},
            "overall_macro_ndcg@10_ci": report_cfgs[name]["ci"].get("overall", {}).get("macro_ndcg@10"),
            "ndcg@10_by_kind": {k: round(s[f"kind:{k}"]["macro_ndcg@10"], 4)
                                for k in kinds if f"kind:{k}" in s},
            "latency_ms": {k: (round(v, 2) if isinstance(v, float) else v)
                           for k, v in report_cfgs[name]["latency"].items()},
            "errors": report_cfgs[name]["errors"],
        }
    json.dump(out, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
