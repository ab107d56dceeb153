#!/usr/bin/env python3
"""Run the independent benchmark's tuning half: queries that Satori's authors did not write.

The suite is semble's public code-search benchmark (MinishLab/semble, `benchmarks/annotations/`,
MIT): real repositories at pinned commits, with queries written and labelled by a language
model reading each repository. Fourteen of its twenty-eight repositories are handed to the
project as the tuning half (a directory with `annotations/<repo>.json` and
`corpus/<repo>.tar.gz`, see its README); the other fourteen are held out and scored elsewhere.

One command: extract each repository, index its benchmark root with `satori-cli manage_index
--action create`, ask every query through a `satori` server over MCP stdio
(`search_codebase`, `resultMode: raw`, `scope: mixed`, `limit: 10`), run semble 0.7.0 beside
it on the same roots (BM25 and its ranking, `alpha=0.0`; `--semble-hybrid` adds its hybrid),
and score both with semble's metric:

- a returned chunk (path, start, end) covers a target when the paths are equal or one ends with
  `/` + the other, and, when the target has lines, the line ranges overlap (inclusive);
- targets are `relevant` + `secondary`, gain 1 each, found at the first result that covers them;
- nDCG@10 = DCG of the found targets / DCG of min(10, targets) ideal ones;
- mean over a repository's queries, then mean over repositories (macro); per category and per
  language the same way, over the repositories that have the category or language.

Paths on both sides are made relative to the repository's checkout root before matching, as the
annotations are. A file-level nDCG@10 (each target file found once, lines ignored) is reported
beside it.

Usage:
  cargo build --release --bins
  python3 -m venv /tmp/semble && /tmp/semble/bin/pip install semble==0.7.0
  bench/quality/independent.py --semble-python /tmp/semble/bin/python
  bench/quality/independent.py --repos tokio,fmtlib --configs default,-kind

Every figure of this suite is in-sample for any constant chosen on it: it is the tuning half.
Writes <out>/independent.json (every query, every engine, with ranks) and <out>/independent.md;
progress goes to stderr and a JSON summary to stdout. Python 3.11 standard library only.
"""
import argparse
import collections
import datetime
import hashlib
import json
import shutil
import math
import os
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402  (the dev suite's MCP client, indexing and configurations)

REPO_ROOT = run.REPO_ROOT
# The suite is not part of this repository: it sits beside the checkout, or wherever
# --suite / $SATORI_BENCH_INDEPENDENT points.
DEFAULT_SUITE = os.path.join(os.path.dirname(REPO_ROOT), "shared", "bench", "semble-tune")
BLIND_SUITE = os.path.join(HERE, "blind")
LIMIT = 10
CATEGORIES = ("architecture", "semantic", "symbol")
PEERS = collections.OrderedDict([("semble-bm25", 0.0), ("semble-hybrid", None)])
EXTRACT_VERSION = 1

log = run.log
BenchError = run.BenchError


# ---------------------------------------------------------------- the suite

def load_suite(suite_dir, only=None):
    """[(annotation, source)] for every repository of a suite, sorted by name. A suite is a
    directory of `annotations/<repo>.json`; the code is either `corpus/<repo>.tar.gz` beside
    them (the independent suite) or the registry pin inside the annotation (`pin`, fetched and
    verified by fetch_corpus.py: the blind suite)."""
    ann_dir = os.path.join(suite_dir, "annotations")
    if not os.path.isdir(ann_dir):
        raise BenchError(f"{suite_dir} is not a query suite (no annotations/ in it); "
                         f"pass --suite DIR or set SATORI_BENCH_INDEPENDENT")
    repos = []
    for name in sorted(os.listdir(ann_dir)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(ann_dir, name), encoding="utf-8") as f:
            ann = json.load(f)
        ann.setdefault("split", "tune")
        if isinstance(ann.get("pin"), dict):
            repos.append((ann, ("pin", ann["pin"])))
            continue
        tarball = os.path.join(suite_dir, "corpus", ann["repo"] + ".tar.gz")
        if not os.path.isfile(tarball):
            raise BenchError(f"{ann['repo']}: {tarball} is missing and the annotation has no pin")
        repos.append((ann, ("tarball", tarball)))
    if not repos:
        raise BenchError(f"{ann_dir} holds no annotations")
    if only:
        wanted = [r.strip() for r in only.split(",") if r.strip()]
        known = {a["repo"] for a, _ in repos}
        unknown = [r for r in wanted if r not in known]
        if unknown:
            raise BenchError(f"unknown repositories: {', '.join(unknown)} "
                             f"(known: {', '.join(sorted(known))})")
        repos = [(a, t) for a, t in repos if a["repo"] in wanted]
    return repos


def ensure_source(ann, source, cache):
    """(checkout dir, index root, key) of one repository: annotation paths are relative to the
    checkout dir, and the index root is the benchmark root inside it."""
    kind, value = source
    if kind == "tarball":
        return ensure_extracted(ann, value, cache)
    pins = run.fetch_corpus.load_corpus(write_pins([value], cache))
    src_dir = os.path.join(cache, "src", pins[0]["name"])
    if not run.fetch_corpus.is_ready(pins[0], src_dir):
        run.ensure_corpus(pins, cache, corpus=write_pins(pins, cache))
    root = os.path.join(src_dir, pins[0]["root"])
    return root, root, f"{EXTRACT_VERSION}-{pins[0]['sha256'][:16]}"


def write_pins(pins, cache):
    """A corpus file holding these pins, for fetch_corpus.py (which reads pins from a file)."""
    path = os.path.join(cache, "blind-corpus.json")
    os.makedirs(cache, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"packages": pins}, f, indent=1)
    return path


def ensure_extracted(ann, tarball, cache):
    """The repository's checkout directory (its benchmark root kept at the same relative path),
    extracted once per tarball hash. Returns (checkout dir, index root, key)."""
    digest = run.sha256_file(tarball)
    key = f"{EXTRACT_VERSION}-{digest[:16]}"
    checkout = os.path.join(cache, "independent", ann["repo"])
    marker = os.path.join(checkout, ".bench-extracted")
    try:
        with open(marker, encoding="utf-8") as f:
            fresh = f.read().strip() == key
    except OSError:
        fresh = False
    if not fresh:
        log(f"{ann['repo']}: extracting {os.path.basename(tarball)}")
        if os.path.isdir(checkout):
            shutil.rmtree(checkout)
        os.makedirs(checkout)
        with tarfile.open(tarball, "r:gz") as tar:
            tar.extractall(checkout, filter="data")
        with open(marker, "w", encoding="utf-8") as f:
            f.write(key + "\n")
    root = ann.get("benchmark_root") or "."
    index_root = checkout if root in (".", "") else os.path.join(checkout, root)
    if not os.path.isdir(index_root):
        raise BenchError(f"{ann['repo']}: benchmark root {root} is not in {tarball}")
    return checkout, index_root, key


# ---------------------------------------------------------------- semble's metric

def same_path(a, b):
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def covers(target, path, start, end):
    if not same_path(path, target["path"]):
        return False
    ts, te = target.get("start_line"), target.get("end_line")
    if ts is None and te is None:
        return True
    if start is None:
        return False
    ts = te if ts is None else ts
    te = ts if te is None else te
    end = start if end is None else end
    return start <= te and ts <= end


def dcg_ideal(n):
    return sum(1.0 / math.log2(i + 1) for i in range(1, min(n, LIMIT) + 1))


def score(query, results):
    """semble's nDCG@10 for one query, and the file-level variant. `results` are
    [{"path", "spans": [(start, end)]}] best first, paths relative to the checkout root."""
    targets = list(query.get("relevant") or []) + list(query.get("secondary") or [])
    found = [None] * len(targets)
    for rank, r in enumerate(results[:LIMIT], 1):
        for ti, t in enumerate(targets):
            if found[ti] is None and any(covers(t, r["path"], s, e) for s, e in r["spans"]):
                found[ti] = rank
    dcg = sum(1.0 / math.log2(rank + 1) for rank in found if rank is not None)
    ideal = dcg_ideal(len(targets))
    files = list(dict.fromkeys(t["path"] for t in targets))
    file_found = {}
    for rank, r in enumerate(results[:LIMIT], 1):
        for f in files:
            if f not in file_found and same_path(r["path"], f):
                file_found[f] = rank
    file_dcg = sum(1.0 / math.log2(rank + 1) for rank in file_found.values())
    relevant_files = {t["path"] for t in query.get("relevant") or []}
    first_relevant = min((rank for f, rank in file_found.items() if f in relevant_files),
                         default=None)
    return {"ndcg@10": dcg / ideal if ideal else 0.0,
            "file_ndcg@10": file_dcg / dcg_ideal(len(files)) if files else 0.0,
            "first_relevant_rank": first_relevant,
            "targets": len(targets), "found": sum(r is not None for r in found)}


def macro(records, metric, key=None):
    """Mean over each repository's queries, then over repositories; `key` picks a group."""
    per_repo = collections.defaultdict(list)
    for r in records:
        if key is None or key(r):
            per_repo[r["repo"]].append(r[metric])
    if not per_repo:
        return None
    return sum(sum(v) / len(v) for v in per_repo.values()) / len(per_repo)


def summarize(records, repos):
    languages = sorted({a["language"] for a, _ in repos})
    out = {}
    for metric in ("ndcg@10", "file_ndcg@10"):
        s = {"overall": macro(records, metric)}
        for c in CATEGORIES:
            s[f"category:{c}"] = macro(records, metric, lambda r, c=c: r["category"] == c)
        for split in sorted({a["split"] for a, _ in repos}):
            s[f"split:{split}"] = macro(records, metric, lambda r, sp=split: r["split"] == sp)
            for c in CATEGORIES:
                s[f"split:{split}:{c}"] = macro(
                    records, metric, lambda r, sp=split, c=c: r["split"] == sp and r["category"] == c)
        for lang in languages:
            s[f"language:{lang}"] = macro(records, metric, lambda r, l=lang: r["language"] == l)
        for a, _ in repos:
            s[f"repo:{a['repo']}"] = macro(records, metric, lambda r, n=a["repo"]: r["repo"] == n)
        out[metric] = s
    return out


# ---------------------------------------------------------------- engines

def relative_to_checkout(path, index_root, checkout):
    """A result path (relative to the index root, or absolute) made relative to the checkout."""
    if path is None:
        return ""
    full = path if os.path.isabs(path) else os.path.join(index_root, path)
    return os.path.relpath(os.path.normpath(full), checkout).replace(os.sep, "/")


def run_satori(name, config, server_bin, env_base, repos, where, call_timeout):
    env, ablation, _ = run.config_env(config, env_base)
    log(f"[{name}] starting satori (SATORI_SEARCH_ABLATION={ablation!r})")
    server = run.McpServer(server_bin, env)
    records = []
    try:
        for ann, _ in repos:
            checkout, index_root = where[ann["repo"]]
            for q in ann["queries"]:
                server.drain_telemetry()
                args = {"path": index_root, "query": q["query"], "limit": LIMIT,
                        "resultMode": "raw", "scope": "mixed"}
                t0 = time.perf_counter()
                result = server.request("tools/call", {"name": "search_codebase",
                                                       "arguments": args}, timeout=call_timeout)
                rtt_ms = (time.perf_counter() - t0) * 1000
                envelope = run.tool_payload(result)
                status = envelope.get("status")
                hits = run.result_spans(envelope) if status == "ok" else []
                results = [{"path": relative_to_checkout(h["path"], index_root, checkout),
                            "spans": h["spans"]} for h in hits]
                if status != "ok":
                    log(f"[{name}] {q['id']}: status {status}: "
                        f"{envelope.get('message') or envelope.get('reason')}")
                records.append(record(ann, q, results, status, rtt_ms))
    finally:
        server.close()
    return records, server.server_info


def run_semble(name, python, repos, where):
    job = {"model": run.BUNDLED_MODEL_DIR, "alpha": PEERS[name], "limit": LIMIT,
           "repos": {a["repo"]: where[a["repo"]][1] for a, _ in repos},
           "queries": [{"id": q["id"], "repo": a["repo"], "query": q["query"]}
                       for a, _ in repos for q in a["queries"]]}
    log(f"[{name}] running semble_peer.py under {python}")
    proc = subprocess.run([python, os.path.join(HERE, "semble_peer.py")], input=json.dumps(job),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise BenchError(f"{name}: semble_peer.py failed: {proc.stderr.strip()[-500:]}")
    answer = json.loads(proc.stdout)
    records = []
    for ann, _ in repos:
        checkout, index_root = where[ann["repo"]]
        for q in ann["queries"]:
            hits = answer["results"].get(q["id"], [])
            results = [{"path": relative_to_checkout(h["path"], index_root, checkout),
                        "spans": [(h["start_line"], h["end_line"])]} for h in hits]
            records.append(record(ann, q, results, "ok", None))
    return records, f"semble {answer['version']}"


def record(ann, q, results, status, rtt_ms):
    m = score(q, results)
    return {"id": q["id"], "repo": ann["repo"], "language": ann["language"], "split": ann["split"],
            "category": q["category"], "status": status,
            "rtt_ms": None if rtt_ms is None else round(rtt_ms, 3),
            "results": [{"path": r["path"], "start_line": r["spans"][0][0],
                         "end_line": r["spans"][0][1]} for r in results],
            **{k: (round(v, 6) if isinstance(v, float) else v) for k, v in m.items()}}


# ---------------------------------------------------------------- report

def fmt(x):
    return "" if x is None else f"{x:.3f}"


HEADINGS = {
    "independent": ("Independent benchmark, tuning half",
                    "semble's annotations. These are the queries the ranking is tuned on: every "
                    "figure here is in-sample for a constant chosen on them. The held-out half is "
                    "scored outside the project."),
    "blind": ("Blind suite",
              "queries written from the code alone, before any engine ran on them "
              "(`bench/quality/blind/`). Constants are chosen on the `tune` packages only; the "
              "`heldout` rows are out-of-sample."),
}


def write_markdown(path, meta, engines, repos):
    names = list(engines)
    title, about = HEADINGS[meta["suite"]]
    lines = [
        f"# {title}",
        "",
        f"{meta['date']} · commit `{meta['git_commit']}`{' (dirty)' if meta['git_dirty'] else ''}"
        f" · {meta['queries']} queries over {len(repos)} repositories · "
        "`bench/quality/independent.py`",
        "",
        "semble's metric (README of the independent suite): nDCG@10 over `relevant` + "
        "`secondary` targets, macro over repositories. The queries: " + about,
        "",
    ]

    def table(title, keys, label):
        lines.extend([f"## {title}", "", "| " + label + " | " + " | ".join(names) + " |",
                      "|---|" + "---:|" * len(names)])
        for key, shown in keys:
            lines.append(f"| {shown} | " + " | ".join(
                fmt(engines[n]["summary"]["ndcg@10"].get(key)) for n in names) + " |")
        lines.append("")

    table("Overall and by category (nDCG@10)",
          [("overall", "**overall**")] + [(f"category:{c}", c) for c in CATEGORIES], "group")
    splits = sorted({a["split"] for a, _ in repos})
    if len(splits) > 1:
        keys = [(f"split:{sp}{suffix}", f"{sp}{suffix.replace(':', ', ')}")
                for sp in splits for suffix in [""] + [f":{c}" for c in CATEGORIES]]
        table("By half (nDCG@10): constants are chosen on `tune` only", keys, "half")
    langs = sorted({a["language"] for a, _ in repos})
    table("By language (nDCG@10)", [(f"language:{l}", l) for l in langs], "language")
    table("By repository (nDCG@10)", [(f"repo:{a['repo']}", f"{a['repo']} ({a['language']}, "
                                       f"{len(a['queries'])})") for a, _ in repos], "repository")
    lines.extend(["## File level (nDCG@10, each target file once, lines ignored)", "",
                  "| group | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)])
    file_keys = ["overall"] + [f"category:{c}" for c in CATEGORIES]
    if len(splits) > 1:
        file_keys += [f"split:{sp}{sfx}" for sp in splits for sfx in [""] + [f":{c}" for c in CATEGORIES]]
    for key in file_keys:
        lines.append(f"| {key.replace('category:', '').replace('split:', '').replace(':', ', ')} | " + " | ".join(
            fmt(engines[n]["summary"]["file_ndcg@10"].get(key)) for n in names) + " |")
    lines.append("")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default=os.environ.get("SATORI_BENCH_INDEPENDENT", DEFAULT_SUITE),
                    help="the suite directory (default: $SATORI_BENCH_INDEPENDENT, else "
                         "../shared/bench/semble-tune; `bench/quality/blind` runs the blind suite)")
    ap.add_argument("--repos", help="comma-separated repositories (default: all)")
    ap.add_argument("--configs", default="default",
                    help=f"comma-separated Satori configurations of run.py (default: default; "
                         f"known: {', '.join(run.CONFIGS)})")
    ap.add_argument("--semble-python", metavar="PYTHON",
                    help="a Python with semble==0.7.0 installed: adds semble's rows")
    ap.add_argument("--semble-hybrid", action="store_true",
                    help="also run semble's hybrid (its BM25 blended with Satori's bundled model)")
    ap.add_argument("--bin-dir", default=run.DEFAULT_BIN_DIR,
                    help="directory with satori and satori-cli (default: target/release)")
    ap.add_argument("--model", help="SATORI_EMBEDDING_MODEL for the server (default: bundled)")
    ap.add_argument("--weights", metavar="JSON", help="SATORI_SEARCH_WEIGHTS for every server")
    ap.add_argument("--cache", help="where repositories are extracted and indexed (default: "
                                    "$SATORI_BENCH_CACHE or ~/.cache/satori-bench/corpus)")
    ap.add_argument("--reindex", action="store_true", help="index again even when current")
    ap.add_argument("--out", default=run.DEFAULT_OUT, help="output directory")
    ap.add_argument("--call-timeout", type=float, default=600, help="seconds per search call")
    args = ap.parse_args(argv)
    # The blind suite lives in this repository; anything else is the independent suite.
    suite = ("blind" if os.path.abspath(args.suite) == os.path.abspath(BLIND_SUITE)
             else "independent")

    try:
        repos = load_suite(os.path.abspath(args.suite), args.repos)
        configs = run.parse_list(args.configs, list(run.CONFIGS), "configuration")
        server_bin, cli = run.find_binaries(os.path.abspath(args.bin_dir))
        cache = run.fetch_corpus.resolve_cache(args.cache)
        home = os.path.join(cache, "homes", f"{suite}-" + run.model_key(args.model))
        os.makedirs(home, exist_ok=True)
        env = run.base_env(home, args.model, server_bin, args.weights)
        server_sha = run.sha256_file(server_bin)
        where, index = {}, {}
        for ann, source in repos:
            checkout, index_root, key = ensure_source(ann, source, cache)
            where[ann["repo"]] = (checkout, index_root)
            index[ann["repo"]] = run.ensure_index({"name": ann["repo"]}, index_root, key, home,
                                                  env, cli, server_sha, args.reindex)
        engines, server_info = collections.OrderedDict(), None
        for name in configs:
            records, server_info = run_satori(name, run.CONFIGS[name], server_bin, env, repos,
                                              where, args.call_timeout)
            engines[name] = {"records": records}
        if args.semble_python:
            for name in PEERS:
                if name == "semble-hybrid" and not args.semble_hybrid:
                    continue
                records, version = run_semble(name, args.semble_python, repos, where)
                engines[name] = {"records": records, "version": version}
    except (BenchError, run.fetch_corpus.CorpusError) as e:
        log(f"error: {e}")
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130

    for e in engines.values():
        e["summary"] = summarize(e["records"], repos)
        e["errors"] = sum(r["status"] != "ok" for r in e["records"])
    commit, dirty = run.git_info()
    meta = {"suite": suite, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "git_commit": commit, "git_dirty": dirty, "server_sha256": server_sha,
            "server_info": server_info, "model_env": args.model or "(unset: bundled)",
            "suite_sha256": hashlib.sha256(json.dumps(
                [a for a, _ in repos], sort_keys=True).encode()).hexdigest(),
            "queries": sum(len(a["queries"]) for a, _ in repos),
            "repos": [a["repo"] for a, _ in repos], "index": index}
    os.makedirs(args.out, exist_ok=True)
    json_path = os.path.join(args.out, f"{suite}.json")
    md_path = os.path.join(args.out, f"{suite}.md")
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "engines": engines}, f, indent=1)
    write_markdown(md_path, meta, engines, repos)
    log(f"wrote {json_path} and {md_path}")
    out = {"results_md": md_path, "queries": meta["queries"], "engines": {
        n: {"errors": e["errors"], **{k: (None if v is None else round(v, 4))
                                      for k, v in e["summary"]["ndcg@10"].items()
                                      if not k.startswith(("repo:", "language:"))}}
        for n, e in engines.items()}}
    json.dump(out, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
