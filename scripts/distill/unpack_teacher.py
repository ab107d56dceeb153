#!/usr/bin/env python3
"""Joins the trained teacher that a GPU run sent back (`teacher.py --export-delta`) into a
teacher folder that `distill.py --teacher DIR` reads.

The GPU run returns the change of its trainable tensors against the bundle's fp16 weights, as
fp16 safetensors cut into parts of at most 15 MiB (`delta.part0`, ... and `delta.json` with
their sha256). Here the parts are joined and checked, and the change is
added to the sha-checked teacher's fp32 weights. The run started from their fp16 rounding
(at most 2^-11 relative off); adding the change to the exact weights keeps what training
did not move exact. Word-embedding rows that were not in the bundle, position embeddings
past its code length, the pooler and position_ids are the teacher's own, unchanged.

Usage (from the repository root):
  python3 scripts/distill/unpack_teacher.py --parts DIR --bundle .teacher-bundle --out DIR

The folder gets model.safetensors (the teacher's tensor names, shapes and fp32), config.json,
tokenizer.json and LICENSE; a JSON summary goes to stdout.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import teacher  # noqa: E402


def join_parts(folder):
    with open(os.path.join(folder, "delta.json"), encoding="utf-8") as f:
        info = json.load(f)
    blob = bytearray()
    for part in info["parts"]:
        with open(os.path.join(folder, part["name"]), "rb") as f:
            data = f.read()
        if teacher.sha256_bytes(data) != part["sha256"]:
            sys.exit(f"unpack_teacher: {part['name']} fails its sha256")
        blob += data
    if teacher.sha256_bytes(bytes(blob)) != info["sha256"]:
        sys.exit("unpack_teacher: the joined parts fail their sha256")
    return info, bytes(blob)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", default=os.environ.get("SATORI_DISTILL_CACHE", teacher.DEFAULT_CACHE))
    ap.add_argument("--parts", required=True, help="folder with delta.json and delta.part*")
    ap.add_argument("--bundle", default=os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                                     ".teacher-bundle"),
                    help="the bundle that was trained on (its manifest.json)")
    ap.add_argument("--out", required=True, help="teacher folder to write")
    args = ap.parse_args()
    cache = os.path.abspath(os.path.expanduser(args.cache))
    teacher.ensure_runtime(cache, ("numpy", "safetensors", "tokenizers"))
    import numpy as np
    from safetensors.numpy import load

    info, blob = join_parts(args.parts)
    with open(os.path.join(args.bundle, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    if info.get("bundle") != manifest["id"]:
        sys.exit(f"unpack_teacher: the parts come from bundle {info.get('bundle')}, "
                 f"not {manifest['id']}")
    delta = load(blob)
    teacher_dir = teacher.distill_module().fetch_teacher(cache)
    original = teacher.load_teacher_tensors(teacher_dir)
    rows = manifest["vocab_rows"]
    exact = teacher.trainable(original, vocab_rows=rows, positions=manifest["code_len"])
    trained = {}
    for k, v in exact.items():
        trained[k] = v + delta[k].astype(np.float32)
    path = teacher.export_folder(args.out, trained, teacher_dir, rows, base=original)
    changed = {k: float(np.abs(delta[k].astype(np.float32)).max()) for k in sorted(delta)}
    json.dump({"out": args.out, "model": path, "sha256": teacher.sha256_path(path),
               "bundle": manifest["id"], "step": info.get("step"), "mrr10": info.get("mrr10"),
               "largest_change": max(changed.values())}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
