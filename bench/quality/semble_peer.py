#!/usr/bin/env python3
"""Runs the peer, semble (PyPI `semble`, MIT), over the benchmark's working copies, for
`run.py --semble-python`. It runs under the Python that has semble installed, reads the
job from stdin and writes the ranked results to stdout, both JSON:

  in:  {"model": DIR, "alpha": 0.0 | null, "limit": 10,
        "repos": {name: path}, "queries": [{"id", "repo", "query"}]}
  out: {"version": "...", "results": {id: [{"path", "start_line", "end_line"}]}}

`alpha` 0.0 is semble's BM25 with its ranking and no semantic weight; null lets semble blend
BM25 and the model by query type (its hybrid). The model is given as a model2vec directory
(the benchmark passes Satori's bundled model), so nothing is downloaded.
"""
import json
import sys

import semble


def main():
    job = json.load(sys.stdin)
    indexes = {name: semble.SembleIndex.from_path(path, model_path=job["model"])
               for name, path in job["repos"].items()}
    out = {}
    for q in job["queries"]:
        hits = indexes[q["repo"]].search(q["query"], top_k=job["limit"], alpha=job["alpha"])
        out[q["id"]] = [{"path": h.chunk.file_path, "start_line": h.chunk.start_line,
                         "end_line": h.chunk.end_line} for h in hits]
    json.dump({"version": semble.__version__, "results": out}, sys.stdout)


if __name__ == "__main__":
    main()
