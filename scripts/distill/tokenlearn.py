"""Trains the static table to reproduce the code-aware teacher's embeddings of whole texts.

Distillation gives each token a row from the teacher's view of that token alone, between
[CLS] and [SEP]. A text's static embedding is then the normalised sum of its tokens' rows,
which is not what the teacher makes of the same tokens in context. Here the rows are moved
so that, for real code and real descriptions, the static embedding points where the teacher's
does: the cosine distance of each text's summed rows to the teacher's embedding of it,
projected into the table's space, is minimised with Adam, starting from the distilled rows.
Rows of tokens that no training text holds keep their distilled values.

The targets are what `teacher.py --export-targets` writes on the machine that trained the
teacher (`targets.code.npz` and `targets.desc.npz`: an `index` into the bundle's pairs and
fp16 `vectors`), and the texts are the bundle's own pre-tokenised pairs (`pack.py`), so the
teacher need not run again here. The texts are training pairs of the teacher: none is from a
held-out package, and none from a benchmark's.

Projection: the teacher's embeddings are centred on their mean (code and descriptions
together, so the offset between the two kinds of text is kept) and multiplied by the PCA
basis that made the table; then normalised.

A seeded share of the texts is held out and its mean cosine logged per epoch, with the
retrieval MRR of the held-out descriptions among the held-out codes. Everything is seeded;
numpy and scipy only.
"""
import os
import time


def load_targets(folder, bundle, vocab):
    """Token bags (csr, texts x vocab, the tokenizer's own ids) and teacher vectors of the
    exported targets, descriptions first then codes, with the pair index of each row and
    whether it is a code."""
    import sys
    import numpy as np
    import scipy.sparse as sp
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import teacher
    manifest, _, pairs = teacher.load_bundle(bundle)
    rows = np.asarray(manifest["vocab_rows"], dtype=np.int64)
    markers = [rows.tolist().index(t) for t in (teacher.PAD, teacher.UNK, teacher.CLS, teacher.SEP)]
    bags, vectors, index, is_code = [], [], [], []
    for side in ("desc", "code"):
        with np.load(os.path.join(folder, f"targets.{side}.npz")) as z:
            idx, vec = z["index"].astype(np.int64), z["vectors"].astype(np.float32)
        m = getattr(pairs, side)[idx].astype(np.int64)
        keep = ~np.isin(m, markers)
        r, c = np.nonzero(keep)
        bags.append(sp.csr_matrix((np.ones(len(r), np.float32), (r, rows[m[r, c]])),
                                  shape=(len(idx), vocab)))
        vectors.append(vec)
        index.append(idx)
        is_code.append(np.full(len(idx), side == "code"))
    return (sp.vstack(bags).tocsr(), np.concatenate(vectors), np.concatenate(index),
            np.concatenate(is_code))


def project(vectors, basis):
    import numpy as np
    t = (vectors - vectors.mean(0)) @ basis
    return (t / (np.linalg.norm(t, axis=1, keepdims=True) + 1e-9)).astype(np.float32)


def _normalised(u):
    import numpy as np
    n = np.linalg.norm(u, axis=1, keepdims=True) + 1e-9
    return u / n, n


def _check(E, X, T, index, is_code):
    """Mean cosine to the targets, and MRR of descriptions finding their code."""
    import numpy as np
    s, _ = _normalised(np.asarray(X @ E))
    cos = float(np.mean((s * T).sum(1)))
    desc = {int(i): k for k, i in enumerate(index) if not is_code[k]}
    code = {int(i): k for k, i in enumerate(index) if is_code[k]}
    both = sorted(set(desc) & set(code))
    if not both:
        return cos, None
    q = s[[desc[i] for i in both]]
    d = s[[code[i] for i in both]]
    sc = q @ d.T
    rank = (sc > np.diag(sc)[:, None]).sum(1)
    return cos, float(np.mean(1.0 / (1 + rank)))


def fit(table, bags, targets, index, is_code, *, epochs, seed, log, batch=256, lr=2e-3,
        held_out=0.05):
    """Returns the trained copy of `table` (rows = tokens, weights folded in) and a report."""
    import numpy as np
    started = time.time()
    n = bags.shape[0]
    # Hold out whole pairs (both sides), so the retrieval check is of unseen pairs.
    pair_ids = np.unique(index)
    rng = np.random.RandomState(seed)
    held_pairs = set(rng.permutation(pair_ids)[: int(held_out * len(pair_ids))].tolist())
    held = np.array([i in held_pairs for i in index])
    train = np.nonzero(~held)[0]
    val = np.nonzero(held)[0]
    Xv, Tv = bags[val], targets[val]
    log(f"tokenlearn on {len(train):,} texts ({len(val):,} held out), {epochs} epochs")
    before = _check(table, Xv, Tv, index[val], is_code[val])
    log(f"held-out cosine {before[0]:.4f}, description->code MRR {before[1]:.4f} before")
    E = table.astype(np.float32).copy()
    m = np.zeros_like(E)
    v = np.zeros_like(E)
    b1, b2, step = 0.9, 0.999, 0
    history = []
    for epoch in range(epochs):
        order = np.random.RandomState(seed + 1 + epoch).permutation(train)
        for lo in range(0, len(order), batch):
            idx = order[lo:lo + batch]
            X, T = bags[idx], targets[idx]
            s, norm = _normalised(np.asarray(X @ E))
            cos = (s * T).sum(1, keepdims=True)
            # d(1 - cos)/d(sum of rows), through the normalisation, averaged over the batch.
            g = -(T - s * cos) / norm / len(idx)
            grad = np.asarray(X.T @ g, dtype=np.float32)
            step += 1
            m = b1 * m + (1 - b1) * grad
            v = b2 * v + (1 - b2) * grad * grad
            E -= lr * (m / (1 - b1 ** step)) / (np.sqrt(v / (1 - b2 ** step)) + 1e-8)
        cos, mrr = _check(E, Xv, Tv, index[val], is_code[val])
        history.append({"epoch": epoch + 1, "cosine": round(cos, 4), "mrr": round(mrr, 4)})
        log(f"epoch {epoch + 1}/{epochs}: held-out cosine {cos:.4f}, description->code MRR "
            f"{mrr:.4f} ({time.time() - started:.0f}s)")
    report = {"texts": int(len(train)), "held_out": int(len(val)), "epochs": epochs,
              "batch": batch, "learning_rate": lr,
              "held_out_cosine_before": round(before[0], 4),
              "held_out_mrr_before": round(before[1], 4), "history": history}
    return E, report
