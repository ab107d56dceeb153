#!/usr/bin/env python3
"""Try a file-level ranking signal offline, before building it into the engine.

Reads the per-query records that `independent.py` wrote (`<out>/independent.json`), takes the
default engine's ten results of each described behaviour (architecture and semantic
questions), reorders their files by the engine's rank fused with one signal computed from the
whole file, and prints file-level nDCG@10 before and after, per category and repository.
Symbol questions are left as they were.

The fusion is `1/sqrt(rank) + weight * signal`, the signal scaled to [0, 1] among the ten
files. A signal that does not gain here, where it can only reorder files the engine already
found, will not gain inside the engine either; one that gains is worth building and measuring
with `independent.py` (and on the blind suite's held-out packages).

Signals (`--signal`):
  coverage     share of the question's words the file uses anywhere, each word weighed by
               how few of the ten files use it
  bm25         BM25 of the question against whole files, the repository's files as corpus
  size         log of the file's lines
  depth        fewer directories first
  definitions  how many definitions (`fn`, `class`, `def`, ...) the file holds

Usage:
  bench/quality/file_signals.py RESULTS.json --signal bm25 --weight 0.3
The checkouts are those `independent.py` extracted (`--checkouts`, default
`~/.cache/satori-bench/corpus/independent`). Python 3.11 standard library only.
"""
import argparse
import collections
import glob
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import independent  # noqa: E402  (the suite's location)

STOP = set("a an the and or of to in on for with by is are how does do what where which when "
           "why from into at as be it its this that via using use used".split())
CODE = re.compile(r"\.(rs|go|py|ex|exs|rb|kt|java|ts|tsx|js|h|hpp|cc|cpp|c)$")
DEFINITION = re.compile(r"\b(def|fn|func|function|class|struct|trait|interface|fun|defmodule|"
                        r"object|enum|type)\b")


def parts(text):
    """Lower-cased identifier parts of two letters or more, cut to six (a crude stem)."""
    out = []
    for word in re.findall(r"[A-Za-z][A-Za-z0-9]*", text):
        for p in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", word):
            if len(p) > 1:
                out.append(p.lower()[:6])
    return out


class Repo:
    """One checkout's code files, read once, with the document frequencies BM25 needs."""

    def __init__(self, root):
        self.root = root
        self.counts = {}
        self.df = collections.Counter()
        for dirpath, _, names in os.walk(root):
            if "/.git" in dirpath or "node_modules" in dirpath:
                continue
            for name in names:
                if not CODE.search(name):
                    continue
                path = os.path.join(dirpath, name)
                counts = collections.Counter(parts(self.text_at(path)))
                self.counts[os.path.relpath(path, root)] = counts
                self.df.update(counts.keys())
        sizes = [sum(c.values()) for c in self.counts.values()]
        self.avg = sum(sizes) / max(1, len(sizes))

    @staticmethod
    def text_at(path):
        try:
            with open(path, encoding="utf-8", errors="ignore") as f:
                return f.read()
        except OSError:
            return ""

    def text(self, rel):
        return self.text_at(os.path.join(self.root, rel))

    def bm25(self, rel, words):
        counts = self.counts.get(rel)
        if not counts:
            return 0.0
        n, total = len(self.counts), sum(counts.values())
        score = 0.0
        for w in set(words):
            f = counts.get(w, 0)
            if f:
                idf = math.log(1 + (n - self.df[w] + 0.5) / (self.df[w] + 0.5))
                score += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * total / self.avg))
        return score


def signal(kind, repo, files, words):
    if kind == "bm25":
        return [repo.bm25(f, words) for f in files]
    if kind == "size":
        return [math.log(1 + repo.text(f).count("\n")) for f in files]
    if kind == "depth":
        return [-f.count("/") for f in files]
    if kind == "definitions":
        return [len(DEFINITION.findall(repo.text(f))) for f in files]
    # coverage
    uses = [[w in set(parts(repo.text(f))) for w in words] for f in files]
    weight = [math.log(1 + len(files) / max(1, sum(u[i] for u in uses)))
              for i in range(len(words))]
    total = sum(weight) or 1.0
    return [sum(x for u, x in zip(used, weight) if u) / total for used in uses]


def file_ndcg(files, query):
    targets = {t["path"] for t in query["relevant"] + query.get("secondary", [])}
    dcg = sum(1 / math.log2(i + 2) for i, f in enumerate(files[:10]) if f in targets)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(targets), 10)))
    return dcg / ideal if ideal else 0.0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", help="independent.json written by independent.py")
    ap.add_argument("--signal", default="coverage",
                    choices=("coverage", "bm25", "size", "depth", "definitions"))
    ap.add_argument("--weight", type=float, default=0.3)
    ap.add_argument("--suite", default=independent.DEFAULT_SUITE)
    ap.add_argument("--checkouts", default=os.path.expanduser(
        "~/.cache/satori-bench/corpus/independent"))
    args = ap.parse_args(argv)

    queries = {}
    for path in glob.glob(os.path.join(args.suite, "annotations", "*.json")):
        with open(path, encoding="utf-8") as f:
            for q in json.load(f)["queries"]:
                queries[q["id"]] = q
    with open(args.results, encoding="utf-8") as f:
        records = json.load(f)["engines"]["default"]["records"]
    repos = {}
    rows = collections.defaultdict(list)
    for r in records:
        q = queries[r["id"]]
        files = list(dict.fromkeys(x["path"] for x in r["results"]))
        before = after = file_ndcg(files, q)
        if r["category"] != "symbol" and files:
            repo = repos.get(r["repo"]) or repos.setdefault(
                r["repo"], Repo(os.path.join(args.checkouts, r["repo"])))
            words = parts(" ".join(w for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", q["query"])
                                   if w.lower() not in STOP))
            values = signal(args.signal, repo, files, words)
            lo, hi = min(values), max(values)
            scaled = [(v - lo) / (hi - lo) if hi > lo else 0.0 for v in values]
            fused = [1 / math.sqrt(i + 1) + args.weight * s for i, s in enumerate(scaled)]
            order = sorted(range(len(files)), key=lambda i: -fused[i])
            after = file_ndcg([files[i] for i in order], q)
        for key in ("overall", r["category"], "repo " + r["repo"]):
            rows[key].append((before, after))
    print(f"signal {args.signal}, weight {args.weight}: file-level nDCG@10, mean over queries")
    for key in sorted(rows, key=lambda k: (k.startswith("repo "), k)):
        pairs = rows[key]
        b = sum(x for x, _ in pairs) / len(pairs)
        a = sum(y for _, y in pairs) / len(pairs)
        print(f"{key:24s} {len(pairs):4d}  {b:.3f} -> {a:.3f}")


if __name__ == "__main__":
    main()
