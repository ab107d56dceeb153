"""Contrastive fine-tuning of a static embedding table on (description, code) pairs.

A static model embeds a text as the normalised sum of its tokens' rows (the mean's 1/n
cancels in the normalisation; per-token weights are folded into the rows). Distillation
gives every token a row from the teacher's view of that token alone, which knows English but
not which words describe which code. Fine-tuning moves the rows so that a description and
its code embed close together and far from the other code of the batch (symmetric InfoNCE
with in-batch negatives), starting from the distilled rows, with Adam. Rows of tokens never
seen in training keep their distilled values.

Batches are drawn from one package at a time where possible: the other code of a package
shares its vocabulary, which makes the negatives look like the other chunks of a repository
at search time. Everything is seeded; numpy and scipy only.
"""
import time


def encode(texts, tok, split_camel, vocab, max_tokens):
    """Sparse bag-of-tokens counts (texts x vocab), tokenised as Satori does at run time."""
    import numpy as np
    import scipy.sparse as sp
    unk = tok.token_to_id("[UNK]")
    encodings = tok.encode_batch([split_camel(t) for t in texts], add_special_tokens=False)
    rows, cols = [], []
    for i, e in enumerate(encodings):
        ids = [t for t in e.ids if t != unk][:max_tokens]
        rows.extend([i] * len(ids))
        cols.extend(ids)
    data = np.ones(len(rows), dtype=np.float32)
    return sp.csr_matrix((data, (rows, cols)), shape=(len(texts), vocab))


def _normalised(u):
    import numpy as np
    n = np.linalg.norm(u, axis=1, keepdims=True) + 1e-9
    return u / n, n


def retrieval_scores(table, queries, docs):
    """MRR and recall@10 of each query's own document among all `docs`."""
    import numpy as np
    q, _ = _normalised(queries @ table)
    d, _ = _normalised(docs @ table)
    s = q @ d.T
    rank = (s > np.diag(s)[:, None]).sum(1)
    return float(np.mean(1.0 / (1 + rank))), float(np.mean(rank < 10))


def fine_tune(table, pairs, groups, tok, split_camel, *, epochs, seed, log, batch=512,
              temperature=0.05, lr=1e-3, held_out=2000, max_tokens=512):
    """Returns the tuned copy of `table` (rows = tokens, weights folded in) and a report."""
    import numpy as np
    vocab = table.shape[0]
    started = time.time()
    order = np.random.RandomState(seed).permutation(len(pairs))
    pairs = [pairs[i] for i in order]
    groups = [groups[i] for i in order]
    Q = encode([p[0] for p in pairs], tok, split_camel, vocab, max_tokens)
    D = encode([p[1] for p in pairs], tok, split_camel, vocab, max_tokens)
    held = min(held_out, len(pairs) // 10)
    val = np.arange(held)
    train = np.arange(held, len(pairs))
    log(f"fine-tuning on {len(train)} pairs ({held} held out), {epochs} epochs")
    before = retrieval_scores(table, Q[val], D[val])
    log(f"held-out MRR {before[0]:.3f}, R@10 {before[1]:.3f} before fine-tuning")

    E = table.astype(np.float32).copy()
    m = np.zeros_like(E)
    v = np.zeros_like(E)
    b1, b2, step = 0.9, 0.999, 0
    eye = np.eye(batch, dtype=np.float32)
    for epoch in range(epochs):
        rs = np.random.RandomState(seed + epoch)
        by_group = {}
        for i in rs.permutation(train):
            by_group.setdefault(groups[i], []).append(i)
        flat = [i for g in rs.permutation(sorted(by_group)) for i in by_group[g]]
        batches = [flat[k:k + batch] for k in range(0, len(flat) - batch + 1, batch)]
        rs.shuffle(batches)
        for idx in batches:
            Xq, Xd = Q[idx], D[idx]
            q, nq = _normalised(Xq @ E)
            d, nd = _normalised(Xd @ E)
            s = (q @ d.T) / temperature
            p_qd = np.exp(s - s.max(1, keepdims=True))
            p_qd /= p_qd.sum(1, keepdims=True)
            p_dq = np.exp(s.T - s.T.max(1, keepdims=True))
            p_dq /= p_dq.sum(1, keepdims=True)
            # d(loss)/d(s) of the mean of both directions' cross-entropy.
            g = 0.5 * ((p_qd - eye) + (p_dq - eye).T) / batch
            dq = (g @ d) / temperature
            dd = (g.T @ q) / temperature
            # Back through the normalisation, then through the sparse sums of rows.
            duq = (dq - q * (q * dq).sum(1, keepdims=True)) / nq
            dud = (dd - d * (d * dd).sum(1, keepdims=True)) / nd
            grad = np.asarray(Xq.T @ duq + Xd.T @ dud, dtype=np.float32)
            step += 1
            m = b1 * m + (1 - b1) * grad
            v = b2 * v + (1 - b2) * grad * grad
            E -= lr * (m / (1 - b1 ** step)) / (np.sqrt(v / (1 - b2 ** step)) + 1e-8)
        mrr, r10 = retrieval_scores(E, Q[val], D[val])
        log(f"epoch {epoch + 1}/{epochs}: held-out MRR {mrr:.3f}, R@10 {r10:.3f} "
            f"({time.time() - started:.0f}s)")
    after = retrieval_scores(E, Q[val], D[val])
    report = {"pairs": len(train), "held_out": int(held), "epochs": epochs, "batch": batch,
              "temperature": temperature, "learning_rate": lr,
              "held_out_mrr_before": round(before[0], 4), "held_out_mrr_after": round(after[0], 4)}
    return E, report
