#!/usr/bin/env python3
"""Would a transformer tier pay? Re-ranks the shipped default's top results with the teacher.

For every query of the chosen kinds, the default configuration's top `--depth` results come
from a `satori` server over MCP (the benchmark's index and working copies, so run
`run.py` once first). Each result's lines and the query are embedded by all-MiniLM-L6-v2
itself (the numpy forward pass of `scripts/distill/distill.py`, mean pooling, at most
`--max-tokens` tokens, GELU in its tanh form for speed), and the results are re-ordered by

- the teacher's cosine alone, and
- the default's score plus `w` times the cosine, both z-scored within the query's results,

then scored with the benchmark's nDCG@10 (macro over repositories). The default order of the
same results is the baseline, so the figures isolate what the transformer would add on top.

Needs the teacher fetched by `python3 scripts/distill/distill.py` (run it once); re-executes
itself in that script's virtualenv. Embeddings are cached by text in `--cache-file`.

  python3 bench/quality/teacher_rerank.py                       # hand-written queries
  python3 bench/quality/teacher_rerank.py --kinds handwritten,docstring --depth 20
"""
import argparse
import collections
import os
import pickle
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts", "distill"))

import distill  # noqa: E402
import fetch_corpus  # noqa: E402
import run  # noqa: E402

DISTILL_CACHE = os.path.expanduser(os.path.join("~", ".cache", "satori-distill"))


def require_teacher():
    """Re-executes inside the distillation virtualenv; the teacher must have been fetched."""
    distill.ensure_venv(DISTILL_CACHE)
    if not os.path.exists(os.path.join(DISTILL_CACHE, "teacher", "model.safetensors")):
        sys.exit("teacher_rerank: run `python3 scripts/distill/distill.py` once first")


def candidates(args, kinds):
    """[(query, repo, results)] with each result's text, from the default configuration."""
    cache = fetch_corpus.resolve_cache(args.cache)
    server_bin, _ = run.find_binaries(os.path.abspath(args.bin_dir))
    env = run.base_env(os.path.join(cache, "homes", "bundled"), None, server_bin)
    server = run.McpServer(server_bin, env)
    out = []
    try:
        for pkg in fetch_corpus.load_corpus(fetch_corpus.DEFAULT_CORPUS):
            queries, _ = run.load_queries(pkg)
            copy = os.path.join(cache, "work", pkg["name"])
            if not os.path.isdir(copy):
                sys.exit(f"teacher_rerank: {copy} is missing; run bench/quality/run.py first")
            for q in queries:
                if q["kind"] not in kinds:
                    continue
                result = server.request("tools/call", {"name": "search_codebase", "arguments": {
                    "path": copy, "query": q["query"], "limit": args.depth}}, timeout=600)
                envelope = run.tool_payload(result)
                if envelope.get("status") != "ok":
                    sys.exit(f"teacher_rerank: {q['id']}: {envelope.get('message')}")
                results = run.result_spans(envelope)
                for r in results:
                    start, end = r["spans"][0]
                    with open(os.path.join(copy, r["path"]), encoding="utf-8", errors="replace") as f:
                        lines = f.read().split("\n")
                    r["text"] = "\n".join(lines[(start or 1) - 1:end or len(lines)])
                out.append((q, pkg["name"], results))
    finally:
        server.close()
    return out


def embedder(max_tokens, cache_file):
    import numpy as np
    teacher = os.path.join(DISTILL_CACHE, "teacher")
    bert = distill.Bert(teacher)
    # The tanh form of GELU: within 1e-3 of the exact one, and three times faster in numpy.
    c = np.float32(np.sqrt(2.0 / np.pi))
    bert._gelu = lambda x: 0.5 * x * (1.0 + np.tanh(c * (x + np.float32(0.044715) * x * x * x)))
    tok = distill.load_tokenizer(os.path.join(teacher, "tokenizer.json"))
    cache = {}
    if os.path.exists(cache_file):
        with open(cache_file, "rb") as f:
            cache = pickle.load(f)

    def embed(texts):
        todo = sorted({t for t in texts if t not in cache})
        encoded = {}
        for t in todo:
            ids = tok.encode(distill.split_camel(t)).ids
            encoded[t] = ids[:max_tokens - 1] + ids[-1:] if len(ids) > max_tokens else ids
        todo.sort(key=lambda t: len(encoded[t]))
        started = time.time()
        for lo in range(0, len(todo), 32):
            batch = todo[lo:lo + 32]
            n = max(len(encoded[t]) for t in batch)
            ids = np.zeros((len(batch), n), dtype=np.int64)
            mask = np.zeros_like(ids)
            for i, t in enumerate(batch):
                ids[i, :len(encoded[t])] = encoded[t]
                mask[i, :len(encoded[t])] = 1
            states = bert.forward(ids, mask)
            v = (states * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            for i, t in enumerate(batch):
                cache[t] = v[i]
            run.log(f"teacher: {lo + len(batch)}/{len(todo)} texts ({time.time() - started:.0f}s)")
        with open(cache_file, "wb") as f:
            pickle.dump(cache, f)
        return cache

    return embed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", default="handwritten")
    ap.add_argument("--depth", type=int, default=30, help="results re-ranked per query (<= 50)")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--weights", default="0.25,0.5,1,2", help="blend weights w to try")
    ap.add_argument("--bin-dir", default=run.DEFAULT_BIN_DIR)
    ap.add_argument("--cache", help="benchmark corpus cache (as for run.py)")
    ap.add_argument("--cache-file", default=os.path.join(DISTILL_CACHE, "teacher_rerank.pkl"))
    args = ap.parse_args()
    require_teacher()
    import numpy as np

    kinds = args.kinds.split(",")
    rows = candidates(args, kinds)
    texts = [q["query"] for q, _, _ in rows] + [r["text"] for _, _, rs in rows for r in rs]
    vectors = embedder(args.max_tokens, args.cache_file)(texts)

    def z(x):
        return (x - x.mean()) / (x.std() + 1e-9)

    def ordered(q, results, how):
        if how is None:
            return results
        cos = np.array([float(vectors[r["text"]] @ vectors[q["query"]]) for r in results])
        if how == "teacher":
            key = cos
        else:
            key = z(np.array([r["score"] or 0.0 for r in results], dtype=float)) + how * z(cos)
        return [results[i] for i in np.argsort(-key, kind="stable")]

    report = {}
    for name, how in [("default", None), ("teacher only", "teacher")] + [
            (f"default + {w} x teacher", float(w)) for w in args.weights.split(",")]:
        per = collections.defaultdict(lambda: collections.defaultdict(list))
        for q, repo, results in rows:
            per[q["kind"]][repo].append(run.score(q["gold"], ordered(q, results, how))["ndcg@10"])
        report[name] = {k: round(float(np.mean([np.mean(v) for v in by_repo.values()])), 4)
                        for k, by_repo in per.items()}
    print("| order of the top %d | %s |" % (args.depth, " | ".join(kinds)))
    print("|---|%s" % "---:|" * len(kinds))
    for name, scores in report.items():
        print("| %s | %s |" % (name, " | ".join(f"{scores.get(k, 0):.3f}" for k in kinds)))


if __name__ == "__main__":
    main()
