#!/usr/bin/env python3
"""Packs the teacher and pre-tokenised pairs into a bundle small enough to travel to a GPU
machine, where `teacher.py --bundle` trains on it without a network or a tokenizer.

The working tree that travels with such a command is capped (64 MiB, tracked files
included), so the bundle holds:

  weights.safetensors  the trainable tensors of all-MiniLM-L6-v2 as fp16: every encoder
                       layer, the position embeddings up to the code length, and only the
                       word-embedding rows of tokens that occur in the packed pairs (their
                       ids are renumbered into that list, `vocab_rows` in the manifest);
                       rows left out cannot change in training, so `unpack_teacher.py` takes
                       them from the teacher itself;
  pairs.npz.xz         the pairs as lengths and concatenated uint16 token ids, lzma-compressed
                       (measured smaller than numpy's zip deflate);
  manifest.json        sizes, names, the held-out packages and sha256 of each file.

Which pairs: the retrieval check of the CPU run (the same held-out packages and seed, so both
runs report comparable MRR), then as many training pairs as the budget allows, in a
balanced order: languages share the pairs in proportion to the square root of their size, and
so do the packages of a language (a package gives at most `--package-cap`), while the kinds
of a package (doc, readme, test) take turns. A smaller budget keeps a prefix of that order.

The budget defaults to 64 MiB less the files of the working tree (`git ls-files`, tracked
and untracked-not-ignored) and a 1 MiB margin, at most 60 MiB.

Usage (from the repository root; the tokenised pairs are shared with teacher.py's cache):
  python3 scripts/distill/pack.py                     # writes .teacher-bundle/
  python3 scripts/distill/pack.py --budget-mib 40 --out DIR

A JSON summary goes to stdout, progress to stderr.
"""
import argparse
import io
import json
import lzma
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import teacher  # noqa: E402  (data, split and weights are shared with the trainer)

MIB = 1024 * 1024
TRAVEL_LIMIT = 64 * MIB
SPECIAL = [teacher.PAD, teacher.UNK, teacher.CLS, teacher.SEP, 103]


def log(msg):
    print(f"pack: {msg}", file=sys.stderr, flush=True)


def tree_bytes(out):
    """Bytes of the working tree that travel with a command, the bundle itself excluded."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, check=True, stdout=subprocess.PIPE).stdout
    total = 0
    out = os.path.abspath(out)
    for rel in listed.decode("utf-8", "replace").split("\0"):
        path = os.path.join(ROOT, rel)
        if rel and os.path.isfile(path) and not os.path.abspath(path).startswith(out + os.sep):
            total += os.path.getsize(path)
    return total


def priority(pairs, candidates, package_cap, seed):
    """`candidates` ordered so that every prefix is balanced (see the module docstring)."""
    import numpy as np
    rng = np.random.RandomState(seed)
    u = rng.random_sample(len(pairs))
    # Kinds take turns inside a package: rank within (package, kind), in a seeded order.
    cand = candidates[np.lexsort((u[candidates], pairs.kind[candidates],
                                  pairs.package[candidates]))]
    rank_in_kind = np.zeros(len(cand), dtype=np.float64)
    group = pairs.package[cand] * 8 + pairs.kind[cand]
    starts = np.r_[0, np.nonzero(np.diff(group))[0] + 1]
    for a, b in zip(starts, np.r_[starts[1:], len(cand)]):
        rank_in_kind[a:b] = np.arange(b - a)
    # Then rank within the package by that turn (kinds interleave), capped.
    key = rank_in_kind + u[cand] * 0.5
    order = np.lexsort((key, pairs.package[cand]))
    cand, key = cand[order], key[order]
    rank_in_package = np.zeros(len(cand))
    starts = np.r_[0, np.nonzero(np.diff(pairs.package[cand]))[0] + 1]
    for a, b in zip(starts, np.r_[starts[1:], len(cand)]):
        rank_in_package[a:b] = np.arange(b - a)
    keep = rank_in_package < package_cap if package_cap > 0 else np.ones(len(cand), bool)
    cand, rank_in_package = cand[keep], rank_in_package[keep]
    # Packages share a language by sqrt(size); languages share the whole by sqrt(size).
    sizes = np.bincount(pairs.package[cand], minlength=len(pairs.names["packages"]))
    pkey = (rank_in_package + 0.5) / np.sqrt(sizes[pairs.package[cand]])
    order = np.lexsort((u[cand], pkey, pairs.lang[cand]))
    cand = cand[order]
    rank_in_lang = np.zeros(len(cand))
    starts = np.r_[0, np.nonzero(np.diff(pairs.lang[cand]))[0] + 1]
    for a, b in zip(starts, np.r_[starts[1:], len(cand)]):
        rank_in_lang[a:b] = np.arange(b - a)
    lsizes = np.bincount(pairs.lang[cand], minlength=len(pairs.names["languages"]))
    lkey = (rank_in_lang + 0.5) / np.sqrt(lsizes[pairs.lang[cand]])
    return cand[np.lexsort((u[cand], lkey))]


def pack_pairs(pairs, idx, remap):
    """The lzma-compressed arrays of `pairs[idx]`, token ids renumbered by `remap`."""
    import numpy as np
    sub = pairs.subset(idx)
    arrays = sub.to_arrays()
    for side in ("desc_ids", "code_ids"):
        arrays[side] = remap[arrays[side]].astype(np.uint16)
    raw = io.BytesIO()
    np.savez(raw, **arrays)
    return lzma.compress(raw.getvalue(), preset=9 | lzma.PRESET_EXTREME)


def vocab_of(pairs, idx):
    import numpy as np
    used = np.union1d(np.unique(pairs.desc[idx]), np.unique(pairs.code[idx]))
    return np.union1d(used, SPECIAL).astype(np.int64)


def weights_blob(tensors, rows, code_len):
    import numpy as np
    from safetensors.numpy import save
    kept = teacher.trainable(tensors, vocab_rows=rows, positions=code_len)
    return save({k: v.astype(np.float16) for k, v in sorted(kept.items())})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", default=os.environ.get("SATORI_DISTILL_CACHE", teacher.DEFAULT_CACHE))
    ap.add_argument("--work", help="teacher.py's work folder, for its token cache")
    ap.add_argument("--pairs", help="mined pairs (default <cache>/pairs)")
    ap.add_argument("--out", default=os.path.join(ROOT, ".teacher-bundle"))
    ap.add_argument("--budget-mib", type=float, default=0,
                    help="bundle size (default: 64 MiB less the working tree and 1 MiB, <= 60)")
    ap.add_argument("--package-cap", type=int, default=20000)
    ap.add_argument("--desc-len", type=int, default=32)
    ap.add_argument("--code-len", type=int, default=128)
    ap.add_argument("--held-out-share", type=float, default=0.02)
    ap.add_argument("--eval-pairs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=20261127, help="teacher.py's seed (same split)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    # numpy and lzma work on one thread here; pinning would only stop the scheduler from
    # moving the process off a core that the trainer uses.
    teacher.limit_threads(args.threads, pin=False)
    cache = os.path.abspath(os.path.expanduser(args.cache))
    teacher.ensure_runtime(cache, ("numpy", "tokenizers", "safetensors"))
    import numpy as np

    distill = teacher.distill_module()
    teacher_dir = distill.fetch_teacher(cache)
    work = os.path.abspath(os.path.expanduser(args.work or os.path.join(cache, "teacher", "run")))
    pairs = teacher.load_mined(
        os.path.abspath(os.path.expanduser(args.pairs or os.path.join(cache, "pairs"))),
        os.path.join(teacher_dir, "tokenizer.json"), work, args.desc_len, args.code_len)
    held = teacher.held_out_packages(pairs, args.held_out_share, args.seed)
    train, check = teacher.split(pairs, held, args.eval_pairs, args.seed)
    order = priority(pairs, train, args.package_cap, args.seed)
    log(f"{len(pairs):,} pairs; {len(order):,} training candidates after the package cap")

    tree = tree_bytes(args.out)
    budget = args.budget_mib * MIB if args.budget_mib else min(60 * MIB, TRAVEL_LIMIT - tree - MIB)
    log(f"working tree {tree / MIB:.1f} MiB; bundle budget {budget / MIB:.1f} MiB")
    tensors = teacher.load_teacher_tensors(teacher_dir)

    def build(n):
        idx = np.concatenate([check, np.sort(order[:n])])
        rows = vocab_of(pairs, idx)
        remap = np.zeros(65536, dtype=np.int64)
        remap[rows] = np.arange(len(rows))
        return idx, rows, weights_blob(tensors, rows, args.code_len), pack_pairs(pairs, idx, remap)

    # Estimate the bytes of a pair on a sample, then shrink from there until it fits.
    sample = min(len(order), 40000)
    _, _, w, p = build(sample)
    per_pair = len(p) / (sample + len(check))
    n = min(len(order), int((budget - len(w) - 64 * 1024) / per_pair))
    while True:
        idx, rows, w, p = build(n)
        size = len(w) + len(p) + 64 * 1024
        log(f"{n:,} training pairs: weights {len(w) / MIB:.1f} MiB, pairs {len(p) / MIB:.1f} MiB")
        if size <= budget or n == 0:
            break
        n = max(0, int(n - (size - budget) / per_pair * 1.02) - 100)
    # The sample's estimate runs high (its first pairs are the small languages'); one try to
    # fill what is left, at the measured size of a pair, leaving room for the rows of the new
    # pairs' tokens and the larger pairs at the end of the order.
    spare = budget - size
    per_pair = len(p) / (n + len(check))
    grown = min(len(order), n + int(spare / per_pair * 0.75))
    if spare > MIB / 2 and grown > n:
        built = build(grown)
        fits = len(built[2]) + len(built[3]) + 64 * 1024 <= budget
        log(f"{grown:,} training pairs: weights {len(built[2]) / MIB:.1f} MiB, pairs "
            f"{len(built[3]) / MIB:.1f} MiB{'' if fits else ', over the budget: keeping ' + f'{n:,}'}")
        if fits:
            n, (idx, rows, w, p) = grown, built

    os.makedirs(args.out, exist_ok=True)
    for name, blob in (("weights.safetensors", w), ("pairs.npz.xz", p)):
        teacher.atomic_write(os.path.join(args.out, name), lambda f, b=blob: f.write(b))
    sub = pairs.subset(np.sort(order[:n]))
    files = {"weights.safetensors": teacher.sha256_bytes(w), "pairs.npz.xz": teacher.sha256_bytes(p)}
    manifest = {
        "id": teacher.sha256_bytes(json.dumps(files, sort_keys=True).encode()),
        "files": files,
        "teacher_sha256": distill.TEACHER_SHA256,
        "tokenizer_sha256": teacher.sha256_path(os.path.join(teacher_dir, "tokenizer.json")),
        "config": teacher.teacher_config(teacher_dir),
        "desc_len": args.desc_len, "code_len": args.code_len,
        "seed": args.seed, "eval_pairs": args.eval_pairs, "held_out_share": args.held_out_share,
        "package_cap": args.package_cap,
        "pairs": {"train": int(n), "check": int(len(check)), "candidates": int(len(order)),
                  "mined": len(pairs)},
        "per_language": {name: int((sub.lang == li).sum())
                         for li, name in enumerate(pairs.names["languages"])},
        "per_kind": {name: int((sub.kind == ki).sum()) for ki, name in enumerate(pairs.names["kinds"])},
        "held_out_packages": held,
        "names": pairs.names,
        "vocab_rows": [int(r) for r in rows],
    }
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(args.out, x)) for x in os.listdir(args.out))
    summary = {"out": os.path.relpath(args.out, ROOT), "bytes": total,
               "mib": round(total / MIB, 2), "budget_mib": round(budget / MIB, 2),
               "train_pairs": int(n), "check_pairs": int(len(check)),
               "vocab_rows": len(rows), "per_language": manifest["per_language"],
               "per_kind": manifest["per_kind"]}
    json.dump(summary, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
