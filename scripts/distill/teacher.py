#!/usr/bin/env python3
"""Fine-tunes all-MiniLM-L6-v2 on the mined (description, code) pairs into a code-aware teacher.

The static model that Satori ships is distilled from a teacher (`distill.py`). The stock
teacher knows English but not which sentence describes which code; this trainer teaches it
that, on the pairs of `mine.py`, before the static table is distilled again from it.

Model: the BERT encoder of all-MiniLM-L6-v2 in jax.numpy, a port of the numpy forward pass of
`distill.py` (checked against it before training: max |delta| of the sentence embeddings
below 1e-4), mean pooling over the attention mask and L2 normalisation, as
sentence-transformers pools this model.

Loss: multiple-negatives ranking, symmetric: the cosine similarities of a batch's
descriptions and codes, times 20, are scored with cross-entropy both ways (each description
against every code of the batch, each code against every description), averaged.

Batches are drawn from one language at a time: across languages the negatives are told apart
by syntax alone, within one language only by what the code does. A description or code that
already is in the batch waits for the next batch, so no batch holds a false negative of the
same text. Each package gives at most `--package-cap` pairs an epoch (the Linux kernel would
otherwise be a fifth of every epoch), drawn anew each epoch. Texts are camelCase-split as
Satori splits them; the code side is `path` newline code, whitespace runs collapsed (the
tokenizer drops whitespace), descriptions cut to `--desc-len` and code to `--code-len` tokens,
[CLS] and [SEP] included.

Optimiser: AdamW (beta 0.9/0.999, eps 1e-6, weight decay 0.01 except on biases, LayerNorm
and the embedding tables, whose rows a batch rarely touches), gradients clipped to norm 1,
learning rate warmed up linearly then decayed linearly to zero; dropout 0.1 as the model was
trained. Everything is seeded: the data order, the held-out split and dropout.

Held out: whole packages, chosen per language until about `--held-out-share` of its pairs are
out (packages of more than 4,000 pairs, or of a quarter of the language's, are never held
out), so no package is on both sides. `--eval-pairs` of them (seeded) are the retrieval check,
logged before training, every `--eval-every` steps (default: at each checkpoint) and at the
end: MRR@10 of each description ranking all the check's codes, and within its language.

CPU threads: `--threads 1` (the default) pins the process to one CPU and sets XLA's
`--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1` and the BLAS, OpenMP and
Rayon thread variables, so the trainer shares a machine politely; `--threads 0` leaves all
as it is (a GPU machine).

Data: either the mined JSONL (`~/.cache/satori-distill/pairs`, tokenised once into
`<work>/tokens.npz`) or a bundle made by `pack.py` (pre-tokenised pairs, fp16 weights of the
rows they use). Checkpoints (weights, optimiser state, data position) are written atomically
to `<work>/checkpoint.npz` every `--checkpoint-every` steps; `--resume` goes on from there.

Output: `--export DIR` writes a teacher folder (config.json, tokenizer.json,
model.safetensors with the teacher's tensor names and shapes, fp32) that
`distill.py --teacher DIR` reads; `--export-delta DIR` (for a bundle, where the full teacher
is absent) writes the trained change against the bundle's weights as fp16 parts of at most
15 MiB, which `unpack_teacher.py` joins back into a teacher folder.

Usage (from the repository root):
  python3 scripts/distill/teacher.py --self-test              # data handling, synthetic pairs
  python3 scripts/distill/teacher.py --check                  # parity of the jax forward only
  nice -n 19 python3 scripts/distill/teacher.py                # <cache>/teacher/run
  nice -n 19 python3 scripts/distill/teacher.py --work ... --resume
  python3 scripts/distill/teacher.py --bundle .teacher-bundle --threads 0 ...   # GPU

Progress goes to stderr and, as JSON lines, to `--log` (default `<work>/train.jsonl`).
"""
import argparse
import hashlib
import json
import os
import random
import re
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CACHE = os.path.join("~", ".cache", "satori-distill")
REQUIREMENTS = os.path.join(HERE, "teacher-requirements.txt")
PAD, UNK, CLS, SEP = 0, 100, 101, 102
SCALE = 20.0
BIG_PACKAGE = 4000
# Tensors that training changes; the pooler and position_ids are carried over unchanged.
FROZEN = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")
PART_BYTES = 15 * 1024 * 1024
CHECKS = 8  # checks of --self-test
PARITY_TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Returns the value of the header, or None when it is absent.",
    "src/http/header.rs\npub fn parse_header(line: &str) -> Option<Header> {\n    line.split_once(':')\n}",
    "parse Http Header",
]


def log(msg):
    print(f"teacher: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ environment

def limit_threads(threads, pin=True):
    """Keeps XLA, BLAS and the tokenizer to `threads` threads; must run before jax loads."""
    if threads <= 0:
        return
    n = str(threads)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS"):
        os.environ[var] = n
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    if threads == 1:
        # XLA sizes its CPU thread pool by the CPUs this process may run on, and its Eigen
        # pool ignores the flag below in recent releases: one CPU in the affinity mask is what
        # actually keeps it to one core.
        if pin and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
        flags = os.environ.get("XLA_FLAGS", "")
        if "xla_cpu_multi_thread_eigen" not in flags:
            os.environ["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false "
                                       "intra_op_parallelism_threads=1").strip()


def ensure_runtime(cache, modules=("jax", "optax", "numpy", "safetensors")):
    """Uses this Python when it has the modules (the GPU machine's does); otherwise re-executes
    the script in a private virtualenv with the pinned `teacher-requirements.txt`."""
    import importlib.util
    if all(importlib.util.find_spec(m) is not None for m in modules):
        return
    venv = os.path.join(cache, "teacher-venv")
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        sys.exit(f"teacher: the virtualenv {venv} lacks one of {', '.join(modules)}")
    distill_module().reexec_in_venv(venv, REQUIREMENTS, log)


def distill_module():
    sys.path.insert(0, HERE)
    import distill
    return distill


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def sha256_path(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def atomic_write(path, write):
    """Writes through `write(file)` into a temporary file, then renames it over `path`."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# ------------------------------------------------------------------ data

WHITESPACE = re.compile(r"\s+")


def prepare_code(code, max_tokens):
    # The tokenizer splits on whitespace and keeps none, so collapsing runs changes no token;
    # cutting the text first keeps tokenising 800k long chunks cheap (12 characters a token
    # is far more than any code needs).
    return WHITESPACE.sub(" ", code[: max_tokens * 24])[: max_tokens * 12]


def tokenise(tok, split_camel, texts, max_len):
    """Token ids of each text, camelCase-split and lower-cased by the tokenizer, without [CLS]
    and [SEP], cut to `max_len - 2`."""
    import numpy as np
    out = []
    for enc in tok.encode_batch([split_camel(t) for t in texts], add_special_tokens=False):
        out.append(np.asarray(enc.ids[: max_len - 2], dtype=np.uint16))
    return out


class Pairs:
    """Tokenised pairs: padded id matrices ([CLS] ... [SEP], 0 = padding) and per-pair
    language, kind and package indices, with the names they index."""

    def __init__(self, desc, code, lang, kind, package, names):
        self.desc, self.code = desc, code
        self.lang, self.kind, self.package = lang, kind, package
        self.names = names  # {"languages": [...], "kinds": [...], "packages": [...]}

    def __len__(self):
        return len(self.lang)

    def subset(self, idx):
        return Pairs(self.desc[idx], self.code[idx], self.lang[idx], self.kind[idx],
                     self.package[idx], self.names)

    # Flat storage: lengths and the concatenated content tokens, far smaller than padding.
    def to_arrays(self):
        import numpy as np
        out = {}
        for side in ("desc", "code"):
            m = getattr(self, side)
            lens = (m != PAD).sum(1) - 2
            out[side + "_len"] = lens.astype(np.uint8)
            out[side + "_ids"] = m[:, 1:][(np.arange(m.shape[1] - 1)[None, :] < lens[:, None])]
        out["lang"], out["kind"], out["package"] = self.lang, self.kind, self.package
        return out

    @staticmethod
    def from_arrays(arrays, names, desc_len, code_len, cls=CLS, sep=SEP):
        """`cls` and `sep` are the ids of [CLS] and [SEP] in the arrays' numbering (a
        bundle renumbers every token into its list of rows)."""
        import numpy as np

        def padded(ids, lens, width):
            lens = lens.astype(np.int64)
            m = np.zeros((len(lens), width), dtype=np.uint16)
            m[:, 0] = cls
            cols = np.arange(width)[None, :]
            inside = (cols >= 1) & (cols <= lens[:, None])
            m[inside] = ids
            m[np.arange(len(lens)), lens + 1] = sep
            return m

        return Pairs(padded(arrays["desc_ids"], arrays["desc_len"], desc_len),
                     padded(arrays["code_ids"], arrays["code_len"], code_len),
                     arrays["lang"].astype(np.int64), arrays["kind"].astype(np.int64),
                     arrays["package"].astype(np.int64), names)


def pairs_fingerprint(pairs_dir):
    with open(os.path.join(pairs_dir, "stats.json"), "rb") as f:
        return sha256_bytes(f.read())


def load_mined(pairs_dir, tok_path, work, desc_len, code_len):
    """Tokenises every mined pair once (about 10 minutes on one core) and caches the result;
    refuses pairs of a package that `exclusion.py` would not admit today."""
    pairs = _load_mined(pairs_dir, tok_path, work, desc_len, code_len)
    import exclusion
    with open(os.path.join(HERE, "mine_corpus.json"), encoding="utf-8") as f:
        pins = json.load(f)["packages"]
    exclusion.Exclusions.load(fingerprint=False).refuse_packages(
        pairs.names["packages"], pins, "teacher: mined pairs")
    return pairs


def _load_mined(pairs_dir, tok_path, work, desc_len, code_len):
    import numpy as np
    os.makedirs(work, exist_ok=True)
    cache = os.path.join(work, "tokens.npz")
    key = {"pairs": pairs_fingerprint(pairs_dir), "tokenizer": sha256_path(tok_path),
           "desc_len": desc_len, "code_len": code_len, "format": 1}
    if os.path.exists(cache):
        with np.load(cache) as z:
            meta = json.loads(str(z["meta"]))
            if meta["key"] == key:
                arrays = {k: z[k] for k in z.files if k != "meta"}
                return Pairs.from_arrays(arrays, meta["names"], desc_len, code_len)
        log("token cache is stale; tokenising again")
    distill = distill_module()
    tok = distill.load_tokenizer(tok_path)
    files = sorted(f for f in os.listdir(pairs_dir) if f.endswith(".jsonl"))
    names = {"languages": [f[: -len(".jsonl")] for f in files], "kinds": ["doc", "readme", "test"],
             "packages": []}
    package_index = {}
    cols = {k: [] for k in ("desc", "code", "lang", "kind", "package")}
    started = time.time()
    for li, name in enumerate(files):
        rows = []
        with open(os.path.join(pairs_dir, name), encoding="utf-8") as f:
            for line in f:
                rows.append(json.loads(line))
        for lo in range(0, len(rows), 20000):
            chunk = rows[lo:lo + 20000]
            cols["desc"] += tokenise(tok, distill.split_camel, [r["description"] for r in chunk],
                                     desc_len)
            cols["code"] += tokenise(tok, distill.split_camel,
                                     [prepare_code(r["code"], code_len) for r in chunk], code_len)
        for r in rows:
            if r["package"] not in package_index:
                package_index[r["package"]] = len(names["packages"])
                names["packages"].append(r["package"])
            cols["lang"].append(li)
            cols["kind"].append(names["kinds"].index(r["kind"]))
            cols["package"].append(package_index[r["package"]])
        log(f"tokenised {name}: {len(rows):,} pairs ({time.time() - started:.0f}s)")
    arrays = {
        "desc_len": np.array([len(d) for d in cols["desc"]], dtype=np.uint8),
        "desc_ids": np.concatenate(cols["desc"]),
        "code_len": np.array([len(c) for c in cols["code"]], dtype=np.uint8),
        "code_ids": np.concatenate(cols["code"]),
        "lang": np.array(cols["lang"], dtype=np.uint8),
        "kind": np.array(cols["kind"], dtype=np.uint8),
        "package": np.array(cols["package"], dtype=np.uint16),
    }
    meta = json.dumps({"key": key, "names": names})
    atomic_write(cache, lambda f: np.savez(f, meta=np.array(meta), **arrays))
    return Pairs.from_arrays(arrays, names, desc_len, code_len)


def held_out_packages(pairs, share, seed):
    """Whole packages held out: per language (sorted), a seeded order of its packages of at
    most BIG_PACKAGE pairs, and at most a quarter of the language's, is taken until `share`
    of the language's pairs are out."""
    import numpy as np
    names = pairs.names["packages"]
    sizes = np.bincount(pairs.package, minlength=len(names))
    out = set()
    rng = random.Random(seed)
    for li, _ in enumerate(pairs.names["languages"]):
        in_lang = pairs.package[pairs.lang == li]
        counts = np.bincount(in_lang, minlength=len(names))
        target = share * len(in_lang)
        order = sorted(int(p) for p in np.nonzero(counts)[0])
        rng.shuffle(order)
        held = sum(int(counts[p]) for p in out)
        for p in order:
            if held >= target:
                break
            # A package with a quarter of a language's pairs (TypeScript's compiler) would
            # leave too little of the language to train on.
            if p in out or sizes[p] > BIG_PACKAGE or counts[p] > len(in_lang) / 4:
                continue
            out.add(p)
            held += int(counts[p])
    return sorted(names[p] for p in out)


def split(pairs, held_packages, eval_pairs, seed):
    """Indices of the training pairs and of the seeded retrieval check."""
    import numpy as np
    held_idx = {pairs.names["packages"].index(p) for p in held_packages
                if p in pairs.names["packages"]}
    is_held = np.isin(pairs.package, sorted(held_idx))
    train = np.nonzero(~is_held)[0]
    held = np.nonzero(is_held)[0]
    rng = np.random.RandomState(seed)
    check = np.sort(rng.permutation(held)[:eval_pairs])
    return train, check


def row_keys(matrix):
    """One integer per distinct row, for finding repeated texts."""
    import numpy as np
    _, inverse = np.unique(np.ascontiguousarray(matrix).view(
        np.dtype((np.void, matrix.dtype.itemsize * matrix.shape[1]))).ravel(), return_inverse=True)
    return inverse.ravel()


def epoch_batches(pairs, train, epoch, batch, package_cap, seed, desc_key, code_key):
    """The batches of one epoch, each from one language, no description or code twice in a
    batch, at most `package_cap` pairs of a package; seeded by (seed, epoch)."""
    import numpy as np
    rng = np.random.RandomState((seed * 1000003 + epoch) % (2 ** 32))
    order = rng.permutation(train)
    if package_cap > 0:
        seen = {}
        keep = []
        for i in order:
            p = int(pairs.package[i])
            if seen.get(p, 0) < package_cap:
                seen[p] = seen.get(p, 0) + 1
                keep.append(i)
        order = np.array(keep, dtype=np.int64)
    batches = []
    for li in range(len(pairs.names["languages"])):
        waiting = []
        current, descs, codes = [], set(), set()
        for i in order[pairs.lang[order] == li]:
            waiting.append(int(i))
            while waiting:
                # Retry what waited first; a pair whose text repeats in the batch keeps waiting.
                placed = False
                for j, w in enumerate(waiting):
                    if desc_key[w] not in descs and code_key[w] not in codes:
                        current.append(w)
                        descs.add(desc_key[w])
                        codes.add(code_key[w])
                        del waiting[j]
                        placed = True
                        break
                if len(current) == batch:
                    batches.append(current)
                    current, descs, codes = [], set(), set()
                elif not placed:
                    break
    order = rng.permutation(len(batches))
    return [batches[k] for k in order]


# ------------------------------------------------------------------ weights

def teacher_config(folder):
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    return {"heads": cfg["num_attention_heads"], "layers": cfg["num_hidden_layers"],
            "eps": cfg["layer_norm_eps"]}


def load_teacher_tensors(folder):
    """All tensors of the teacher's model.safetensors, as numpy arrays."""
    from safetensors.numpy import load_file
    return load_file(os.path.join(folder, "model.safetensors"))


def trainable(tensors, vocab_rows=None, positions=None):
    """The float32 tensors that training changes; with `vocab_rows`, only those rows of the
    word embeddings (token ids then index that list), and only the first `positions` rows of
    the position embeddings."""
    import numpy as np
    out = {}
    for k, v in tensors.items():
        if k in FROZEN:
            continue
        v = np.asarray(v, dtype=np.float32)
        if k == "embeddings.word_embeddings.weight" and vocab_rows is not None:
            v = v[np.asarray(vocab_rows)]
        if k == "embeddings.position_embeddings.weight" and positions is not None:
            v = v[:positions]
        out[k] = v
    return out


def numpy_bert(params, cfg):
    """distill.py's numpy BERT over the given tensors (the reference of the parity check)."""
    import numpy as np
    bert = distill_module().Bert.__new__(distill_module().Bert)
    bert.np = np
    bert.heads, bert.layers, bert.eps = cfg["heads"], cfg["layers"], cfg["eps"]
    bert.w = {k: np.asarray(v, dtype=np.float32) for k, v in params.items()}
    return bert


# ------------------------------------------------------------------ model (jax)

def make_model(cfg, dropout):
    import jax
    import jax.numpy as jnp

    heads, layers, eps = cfg["heads"], cfg["layers"], cfg["eps"]

    def ln(x, p, name):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + eps) * p[name + ".weight"] + p[name + ".bias"]

    def dense(x, p, name):
        return x @ p[name + ".weight"].T + p[name + ".bias"]

    def forward(p, ids, key=None):
        """Last hidden states [batch, len, hidden]; dropout when a key is given."""
        mask = ids != PAD
        b, n = ids.shape
        calls = [0]

        def drop(x):
            if key is None or dropout <= 0:
                return x
            calls[0] += 1
            keep = jax.random.bernoulli(jax.random.fold_in(key, calls[0]), 1.0 - dropout, x.shape)
            return jnp.where(keep, x / (1.0 - dropout), 0.0)

        x = (p["embeddings.word_embeddings.weight"][ids]
             + p["embeddings.position_embeddings.weight"][:n][None, :, :]
             + p["embeddings.token_type_embeddings.weight"][0][None, None, :])
        x = drop(ln(x, p, "embeddings.LayerNorm"))
        hidden = x.shape[-1]
        hd = hidden // heads
        bias = jnp.where(mask[:, None, None, :], 0.0, -1e9).astype(jnp.float32)
        for i in range(layers):
            pre = f"encoder.layer.{i}."

            def split_heads(t):
                return t.reshape(b, n, heads, hd).transpose(0, 2, 1, 3)

            q = split_heads(dense(x, p, pre + "attention.self.query"))
            k = split_heads(dense(x, p, pre + "attention.self.key"))
            v = split_heads(dense(x, p, pre + "attention.self.value"))
            s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.float32(hd)) + bias
            a = drop(jax.nn.softmax(s, axis=-1))
            a = jnp.einsum("bhqk,bhkd->bhqd", a, v).transpose(0, 2, 1, 3).reshape(b, n, hidden)
            x = ln(drop(dense(a, p, pre + "attention.output.dense")) + x, p,
                   pre + "attention.output.LayerNorm")
            h = jax.nn.gelu(dense(x, p, pre + "intermediate.dense"), approximate=False)
            x = ln(drop(dense(h, p, pre + "output.dense")) + x, p, pre + "output.LayerNorm")
        return x

    def embed(p, ids, key=None):
        """Mean of the states under the mask, L2-normalised (sentence-transformers' pooling)."""
        x = forward(p, ids, key)
        m = (ids != PAD).astype(x.dtype)[:, :, None]
        v = (x * m).sum(1) / jnp.maximum(m.sum(1), 1.0)
        return v / jnp.maximum(jnp.linalg.norm(v, axis=-1, keepdims=True), 1e-12)

    def loss(p, desc, code, key):
        kd, kc = jax.random.split(key)
        d = embed(p, desc, kd)
        c = embed(p, code, kc)
        s = SCALE * d @ c.T
        by_desc = -jnp.mean(jnp.diagonal(jax.nn.log_softmax(s, axis=1)))
        by_code = -jnp.mean(jnp.diagonal(jax.nn.log_softmax(s, axis=0)))
        return 0.5 * (by_desc + by_code)

    return forward, embed, loss


def optimiser(weight_decay):
    """AdamW without its learning rate: the step multiplies the update by the scheduled rate,
    so the schedule can be fixed once the speed of the machine is known."""
    import optax

    def decays(params):
        return {k: not (k.endswith(".bias") or "LayerNorm" in k or k.startswith("embeddings."))
                for k in params}

    return optax.chain(optax.clip_by_global_norm(1.0),
                       optax.scale_by_adam(b1=0.9, b2=0.999, eps=1e-6),
                       optax.add_decayed_weights(weight_decay, mask=decays))


def learning_rate(step, total, warmup, peak):
    if step < warmup:
        return peak * (step + 1) / warmup
    return peak * max(0.0, (total - step) / max(1, total - warmup))


# ------------------------------------------------------------------ parity and evaluation

def matmul_precision(jax, value):
    """The float32 matrix-product precision set to `value` for a `with` block, and the one
    before restored after it (through the config, which every release has, rather than a
    context manager some releases lack)."""
    import contextlib

    @contextlib.contextmanager
    def scope():
        before = jax.config.jax_default_matmul_precision
        jax.config.update("jax_default_matmul_precision", value)
        try:
            yield
        finally:
            jax.config.update("jax_default_matmul_precision", before)

    return scope()


def parity(cfg, params, samples):
    """Max |delta| between the jax and numpy sentence embeddings of `samples` (id lists)."""
    import jax
    import numpy as np
    bert = numpy_bert(params, cfg)
    _, embed, _ = make_model(cfg, 0.0)
    worst = 0.0
    with matmul_precision(jax, "highest"):
        p = jax.tree_util.tree_map(jax.numpy.asarray, params)
        for ids in samples:
            ids = np.asarray([ids], dtype=np.int32)
            ref = bert.forward(ids, np.ones_like(ids))[0].mean(0)
            ref /= np.linalg.norm(ref)
            got = np.asarray(embed(p, ids))[0]
            worst = max(worst, float(np.abs(got - ref).max()))
    return worst


def embed_all(embed_fn, params, matrix, batch=64):
    import numpy as np
    out = []
    for lo in range(0, len(matrix), batch):
        chunk = matrix[lo:lo + batch]
        if len(chunk) < batch:
            chunk = np.concatenate([chunk, np.zeros((batch - len(chunk), chunk.shape[1]),
                                                    dtype=chunk.dtype)])
        out.append(np.asarray(embed_fn(params, chunk.astype(np.int32))))
    return np.concatenate(out)[: len(matrix)]


def mrr_at_10(scores):
    import numpy as np
    rank = (scores > np.diag(scores)[:, None]).sum(1)
    return float(np.mean(np.where(rank < 10, 1.0 / (rank + 1), 0.0)))


def evaluate(embed_fn, params, check):
    """MRR@10 of each check description ranking all the check's codes, and within its
    language (languages with at least 20 check pairs)."""
    import numpy as np
    d = embed_all(embed_fn, params, check.desc)
    c = embed_all(embed_fn, params, check.code)
    s = d @ c.T
    result = {"mrr10": round(mrr_at_10(s), 4)}
    per = {}
    for li, name in enumerate(check.names["languages"]):
        idx = np.nonzero(check.lang == li)[0]
        if len(idx) >= 20:
            per[name] = round(mrr_at_10(s[np.ix_(idx, idx)]), 4)
    result["mrr10_within_language"] = per
    return result


# ------------------------------------------------------------------ bundle

def load_bundle(folder):
    """Reads a `pack.py` bundle: its manifest (sha256-checked), tensors and pairs."""
    import lzma
    import io
    import numpy as np
    from safetensors.numpy import load_file
    with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    for name, sha in manifest["files"].items():
        got = sha256_path(os.path.join(folder, name))
        if got != sha:
            sys.exit(f"teacher: {name} in the bundle has sha256 {got}, expected {sha}")
    tensors = load_file(os.path.join(folder, "weights.safetensors"))
    with open(os.path.join(folder, "pairs.npz.xz"), "rb") as f:
        raw = lzma.decompress(f.read())
    with np.load(io.BytesIO(raw)) as z:
        arrays = {k: z[k] for k in z.files}
    # The bundle's token ids index its own list of rows, [CLS] and [SEP] included: the
    # markers added here must be numbered the same way, or every text would begin and end
    # with whichever tokens happen to sit at rows 101 and 102.
    rows = manifest["vocab_rows"]
    pairs = Pairs.from_arrays(arrays, manifest["names"], manifest["desc_len"],
                              manifest["code_len"], cls=rows.index(CLS), sep=rows.index(SEP))
    return manifest, tensors, pairs


# ------------------------------------------------------------------ export

def export_folder(out, trained, teacher_dir, vocab_rows, base=None):
    """Writes a teacher folder: the teacher's tensors with the trained ones put in (trained
    embedding rows scattered back into the full tables), float32, plus its config,
    tokenizer and licence files."""
    import shutil
    import numpy as np
    from safetensors.numpy import save_file
    os.makedirs(out, exist_ok=True)
    full = base if base is not None else load_teacher_tensors(teacher_dir)
    merged = {}
    for k, v in full.items():
        if k in trained:
            t = np.asarray(trained[k], dtype=np.float32)
            if k == "embeddings.word_embeddings.weight" and vocab_rows is not None:
                table = np.asarray(v, dtype=np.float32).copy()
                table[np.asarray(vocab_rows)] = t
                t = table
            elif k == "embeddings.position_embeddings.weight" and t.shape != v.shape:
                table = np.asarray(v, dtype=np.float32).copy()
                table[: t.shape[0]] = t
                t = table
            merged[k] = t
        else:
            merged[k] = v
    save_file(merged, os.path.join(out, "model.safetensors"))
    for name in ("config.json", "tokenizer.json", "LICENSE"):
        src = os.path.join(teacher_dir, name)
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(out, name))
    return os.path.join(out, "model.safetensors")


def export_delta(out, trained, start, manifest_extra):
    """Writes trained minus start as fp16 safetensors, cut into parts of at most 15 MiB, and
    delta.json with the parts' sha256 (the change is small, so fp16 keeps it precisely)."""
    import numpy as np
    from safetensors.numpy import save
    os.makedirs(out, exist_ok=True)
    delta = {k: (np.asarray(trained[k], dtype=np.float32) - np.asarray(start[k], dtype=np.float32))
             .astype(np.float16) for k in sorted(trained)}
    blob = save(delta)
    parts = []
    for n, lo in enumerate(range(0, len(blob), PART_BYTES)):
        name = f"delta.part{n}"
        with open(os.path.join(out, name), "wb") as f:
            f.write(blob[lo:lo + PART_BYTES])
        parts.append({"name": name, "sha256": sha256_bytes(blob[lo:lo + PART_BYTES])})
    info = dict(manifest_extra, parts=parts, sha256=sha256_bytes(blob))
    with open(os.path.join(out, "delta.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=1)
        f.write("\n")


# ------------------------------------------------------------------ training

def checkpoint_path(work):
    return os.path.join(work, "checkpoint.npz")


def save_checkpoint(work, params, opt_state, meta):
    import jax
    import numpy as np
    leaves = jax.tree_util.tree_leaves(opt_state)
    arrays = {f"p/{k}": np.asarray(v) for k, v in params.items()}
    arrays.update({f"o/{i}": np.asarray(v) for i, v in enumerate(leaves)})
    atomic_write(checkpoint_path(work),
                 lambda f: np.savez(f, meta=np.array(json.dumps(meta)), **arrays))


def load_checkpoint(work, params, opt_state):
    import jax
    import numpy as np
    with np.load(checkpoint_path(work)) as z:
        meta = json.loads(str(z["meta"]))
        new_params = {k: jax.numpy.asarray(z[f"p/{k}"]) for k in params}
        leaves, treedef = jax.tree_util.tree_flatten(opt_state)
        new_leaves = [jax.numpy.asarray(z[f"o/{i}"]) for i in range(len(leaves))]
    return new_params, jax.tree_util.tree_unflatten(treedef, new_leaves), meta


class Logger:
    def __init__(self, path):
        self.path = path
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)

    def __call__(self, **record):
        record["time"] = round(time.time(), 1)
        if self.path:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")


def self_test():
    """Checks the data handling on synthetic pairs: storage round trip, the held-out split,
    the batches of an epoch, the schedule and the fp16 change in parts."""
    import tempfile
    import numpy as np
    rng = np.random.RandomState(7)
    n, failures = 600, []

    def check(name, ok):
        print(f"{'ok  ' if ok else 'FAIL'} {name}", file=sys.stderr)
        if not ok:
            failures.append(name)

    def matrix(width, repeats):
        lens = rng.randint(1, width - 1, n)
        m = np.zeros((n, width), dtype=np.uint16)
        for i, k in enumerate(lens):
            m[i, 0], m[i, 1:k + 1], m[i, k + 1] = CLS, rng.randint(1000, 1000 + repeats, k), SEP
        return m

    names = {"languages": ["c", "go"], "kinds": ["doc", "readme", "test"],
             "packages": [f"p{i}" for i in range(12)]}
    pairs = Pairs(matrix(8, 3), matrix(16, 50), rng.randint(0, 2, n), rng.randint(0, 3, n),
                  rng.randint(0, 12, n), names)
    back = Pairs.from_arrays(pairs.to_arrays(), names, 8, 16)
    check("flat storage round trip", all(np.array_equal(getattr(pairs, k), getattr(back, k))
                                         for k in ("desc", "code", "lang", "kind", "package")))
    held = held_out_packages(pairs, 0.1, 1)
    train, chk = split(pairs, held, 40, 1)
    pk = {names["packages"][p] for p in pairs.package[train]}
    check("no package on both sides", held and not pk & set(held) and len(chk) == 40
          and {names["packages"][p] for p in pairs.package[chk]} <= set(held))
    # A package with most of a language stays in training (it would leave too little).
    lang = np.where(np.arange(n) < 40, 1, 0)
    package = np.where(np.arange(n) < 30, 11, rng.randint(0, 11, n))
    few = Pairs(pairs.desc, pairs.code, lang, pairs.kind, package, names)
    check("a language's main package is not held out",
          "p11" not in held_out_packages(few, 0.5, 1))
    dk, ck = row_keys(pairs.desc), row_keys(pairs.code)
    a = epoch_batches(pairs, train, 0, 8, 30, 1, dk, ck)
    flat = [i for b in a for i in b]
    check("batches: one language, full, no repeated text", all(
        len(b) == 8 and len(set(pairs.lang[b])) == 1 and len(set(dk[b])) == 8
        and len(set(ck[b])) == 8 for b in a))
    check("batches: each pair once, packages capped", len(flat) == len(set(flat))
          and set(flat) <= set(train.tolist()) and np.bincount(pairs.package[flat]).max() <= 30)
    check("batches: seeded", a == epoch_batches(pairs, train, 0, 8, 30, 1, dk, ck)
          and a != epoch_batches(pairs, train, 1, 8, 30, 1, dk, ck))
    lrs = [learning_rate(s, 100, 10, 1.0) for s in range(100)]
    check("warm-up then linear decay", lrs[0] == 0.1 and lrs[9] == 1.0 and lrs[10] == 1.0
          and lrs[55] == 0.5 and all(x >= y for x, y in zip(lrs[10:], lrs[11:])))
    try:
        import safetensors  # noqa: F401
    except ImportError:
        check("fp16 change in parts (safetensors missing)", False)
    else:
        from safetensors.numpy import load
        sys.path.insert(0, HERE)
        import unpack_teacher
        start = {"a": rng.randn(3000, 3000).astype(np.float32), "b": np.ones(4, np.float32)}
        trained = {"a": start["a"] + 1e-3, "b": start["b"]}
        with tempfile.TemporaryDirectory() as tmp:
            export_delta(tmp, trained, start, {"bundle": "x"})
            info, blob = unpack_teacher.join_parts(tmp)
            delta = load(blob)
            check("fp16 change in parts", len(info["parts"]) == 2
                  and all(os.path.getsize(os.path.join(tmp, p["name"])) <= PART_BYTES
                          for p in info["parts"])
                  and np.abs(delta["a"].astype(np.float32) - 1e-3).max() < 1e-6
                  and not delta["b"].any())
    print(f"{CHECKS - len(failures)} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", default=os.environ.get("SATORI_DISTILL_CACHE", DEFAULT_CACHE),
                    help="work root outside the repository (default ~/.cache/satori-distill)")
    ap.add_argument("--work", help="checkpoints, token cache and log (default <cache>/teacher/run)")
    ap.add_argument("--pairs", help="mined pairs (default <cache>/pairs)")
    ap.add_argument("--bundle", help="train on a pack.py bundle instead of the mined pairs")
    ap.add_argument("--teacher", help="teacher folder (default: the sha-checked download)")
    ap.add_argument("--threads", type=int, default=1,
                    help="CPU threads for XLA, BLAS and the tokenizer (0: leave the defaults)")
    ap.add_argument("--check", action="store_true", help="run the parity check and stop")
    ap.add_argument("--self-test", action="store_true",
                    help="check the data handling on synthetic pairs (numpy, safetensors)")
    ap.add_argument("--measure", type=int, default=0,
                    help="time this many training steps (after one to compile) and stop")
    ap.add_argument("--resume", action="store_true", help="go on from <work>/checkpoint.npz")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-5, help="peak learning rate")
    ap.add_argument("--warmup", type=float, default=0.05, help="share of the steps warming up")
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--package-cap", type=int, default=20000,
                    help="pairs of one package an epoch at most (0: no cap)")
    ap.add_argument("--desc-len", type=int, default=32, help="description tokens, [CLS]/[SEP] in")
    ap.add_argument("--code-len", type=int, default=128, help="code tokens, [CLS]/[SEP] in")
    ap.add_argument("--held-out-share", type=float, default=0.02)
    ap.add_argument("--eval-pairs", type=int, default=2000)
    ap.add_argument("--checkpoint-every", type=int, default=200, help="steps")
    ap.add_argument("--eval-every", type=int, default=0,
                    help="steps between retrieval checks (default: at every checkpoint)")
    ap.add_argument("--time-limit", type=float, default=0,
                    help="seconds of training at most; the schedule is shortened to fit")
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps")
    ap.add_argument("--precision", default="default", choices=("default", "high", "highest"),
                    help="float32 matmul precision (default lets a GPU use TF32)")
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--log", help="JSON-lines log (default <work>/train.jsonl)")
    ap.add_argument("--export", help="write the trained teacher folder here at the end")
    ap.add_argument("--export-delta", help="write the trained change as fp16 parts here at the end")
    ap.add_argument("--export-targets",
                    help="write the trained teacher's embeddings of --targets training codes and "
                         "descriptions here at the end (targets for training the static table)")
    ap.add_argument("--targets", type=int, default=20000,
                    help="texts of each side for --export-targets (seeded sample)")
    args = ap.parse_args()
    started = time.time()
    cache = os.path.abspath(os.path.expanduser(args.cache))
    work = os.path.abspath(os.path.expanduser(args.work or os.path.join(cache, "teacher", "run")))
    limit_threads(args.threads)
    if args.self_test:
        ensure_runtime(cache, ("numpy", "safetensors"))
        self_test()
    modules = ("jax", "optax", "numpy", "safetensors")
    if not args.bundle:
        modules += ("tokenizers",)
    ensure_runtime(cache, modules)

    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    jax.config.update("jax_default_matmul_precision", args.precision)
    log(f"jax {jax.__version__} on {', '.join(str(d) for d in jax.devices())}")
    os.makedirs(work, exist_ok=True)
    logger = Logger(args.log or os.path.join(work, "train.jsonl"))

    # Data and starting weights.
    if args.bundle:
        manifest, tensors, pairs = load_bundle(args.bundle)
        cfg = manifest["config"]
        vocab_rows = manifest.get("vocab_rows")
        held_packages = manifest["held_out_packages"]
        start = trainable(tensors)
        teacher_dir = None
        args.desc_len, args.code_len = manifest["desc_len"], manifest["code_len"]
    else:
        distill = distill_module()
        teacher_dir = args.teacher or distill.fetch_teacher(cache)
        if not args.teacher and sha256_path(os.path.join(teacher_dir, "model.safetensors")) \
                != distill.TEACHER_SHA256:
            sys.exit("teacher: the teacher's weights fail their sha256")
        cfg = teacher_config(teacher_dir)
        vocab_rows = None
        start = trainable(load_teacher_tensors(teacher_dir), positions=args.code_len)
        pairs = None if args.check else load_mined(
            os.path.abspath(os.path.expanduser(args.pairs or os.path.join(cache, "pairs"))),
            os.path.join(teacher_dir, "tokenizer.json"), work, args.desc_len, args.code_len)
        held_packages = None if pairs is None else held_out_packages(
            pairs, args.held_out_share, args.seed)

    # Parity of the jax forward pass against distill.py's numpy one, on the weights training
    # starts from: fixed sentences where the tokenizer is at hand, and a few check pairs.
    samples = []
    if teacher_dir:
        distill = distill_module()
        tok = distill.load_tokenizer(os.path.join(teacher_dir, "tokenizer.json"))
        samples += [tok.encode(distill.split_camel(t)).ids[: args.code_len]
                    for t in PARITY_TEXTS]
        # The numpy forward itself is first checked against distill.py's reference values.
        distill.check_teacher(numpy_bert(start, cfg), tok)
    if pairs is not None:
        train, check_idx = split(pairs, held_packages, args.eval_pairs, args.seed)
        for i in check_idx[:3]:
            for m in (pairs.desc[i], pairs.code[i]):
                samples.append([int(t) for t in m if t != PAD])
    worst = parity(cfg, start, samples)
    log(f"parity of the jax forward with distill.py's numpy forward on {len(samples)} texts: "
        f"max |delta| = {worst:.2e}")
    logger(event="parity", max_abs_delta=worst, texts=len(samples))
    if worst >= 1e-4:
        sys.exit("teacher: the jax forward pass disagrees with the numpy reference")
    if args.check:
        return

    check = pairs.subset(check_idx)
    desc_key = row_keys(pairs.desc)
    code_key = row_keys(pairs.code)
    log(f"{len(pairs):,} pairs, {len(train):,} for training, {len(check):,} in the check "
        f"(held-out packages: {len(held_packages)})")

    _, embed, loss = make_model(cfg, args.dropout)
    tx = optimiser(args.weight_decay)
    params = {k: jnp.asarray(v) for k, v in start.items()}
    opt_state = tx.init(params)

    @jax.jit
    def train_step(params, opt_state, desc, code, key, lr):
        value, grads = jax.value_and_grad(loss)(params, desc, code, key)
        updates, opt_state = tx.update(grads, opt_state, params)
        params = jax.tree_util.tree_map(lambda p, u: p - lr * u, params, updates)
        return params, opt_state, value

    embed_eval = jax.jit(lambda p, ids: embed(p, ids))

    plans = {}

    def plan(epoch):
        if epoch not in plans:
            plans[epoch] = epoch_batches(pairs, train, epoch, args.batch, args.package_cap,
                                         args.seed, desc_key, code_key)
        return plans[epoch]

    hyper = {k: getattr(args, k) for k in ("batch", "lr", "warmup", "weight_decay", "dropout",
                                           "epochs", "package_cap", "desc_len", "code_len",
                                           "seed", "eval_pairs", "held_out_share")}
    hyper["data"] = len(pairs)
    step, epoch, position = 0, 0, 0
    total = sum(len(plan(e)) for e in range(args.epochs))
    trained_seconds = 0.0
    if args.resume and os.path.exists(checkpoint_path(work)):
        params, opt_state, meta = load_checkpoint(work, params, opt_state)
        if meta["hyper"] != hyper:
            sys.exit(f"teacher: the checkpoint was made with {meta['hyper']}, not {hyper}")
        step, epoch, position = meta["step"], meta["epoch"], meta["position"]
        total, trained_seconds = meta["total"], meta.get("trained_seconds", 0.0)
        log(f"resumed at step {step}/{total} (epoch {epoch + 1}, batch {position})")
    elif args.resume:
        log("no checkpoint to resume from; starting")
    warmup = max(1, int(args.warmup * total))
    base_key = jax.random.key(args.seed)

    eval_seconds = [0.0]
    speed_from = time.time()

    def check_now(tag):
        t = time.time()
        result = evaluate(embed_eval, params, check)
        eval_seconds[0] = time.time() - t
        log(f"{tag}: held-out MRR@10 {result['mrr10']:.4f} "
            f"(within language {result['mrr10_within_language']}) ({time.time() - t:.0f}s)")
        logger(event="eval", step=step, tag=tag, **result)
        return result

    def save(done):
        meta = {"step": step, "epoch": epoch, "position": position, "total": total,
                "hyper": hyper, "trained_seconds": trained_seconds, "done": done}
        save_checkpoint(work, params, opt_state, meta)
        logger(event="checkpoint", step=step, epoch=epoch, position=position)
        log(f"checkpoint at step {step}/{total}")

    stop = {"signal": None, "stepping": False}

    def on_signal(signum, _frame):
        # Inside a training step, finish it and checkpoint; elsewhere (a retrieval check, a
        # checkpoint being written, which is atomic) stop at once.
        if not stop["stepping"]:
            sys.exit(128 + signum)
        stop["signal"] = signum

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    if step == 0 and not args.measure:
        check_now("before training")
    logger(event="start", step=step, total=total, hyper=hyper,
           devices=[str(d) for d in jax.devices()])
    eval_every = args.eval_every or args.checkpoint_every
    timed = None
    last_loss = []
    last_log = (time.time(), step)
    adjusted = False
    while epoch < args.epochs and step < total:
        batches = plan(epoch)
        if position >= len(batches):
            epoch, position = epoch + 1, 0
            continue
        idx = np.asarray(batches[position])
        key = jax.random.fold_in(base_key, step)
        lr = learning_rate(step, total, warmup, args.lr)
        t0 = time.time()
        stop["stepping"] = True
        params, opt_state, value = train_step(params, opt_state,
                                              jnp.asarray(pairs.desc[idx], dtype=jnp.int32),
                                              jnp.asarray(pairs.code[idx], dtype=jnp.int32),
                                              key, jnp.float32(lr))
        # The loss stays on the device until it is logged, so steps are not synchronised.
        last_loss.append(value)
        if args.measure or step + 1 in (10, 40):
            value.block_until_ready()
        dt = time.time() - t0
        step += 1
        position += 1
        if args.measure:
            if timed is None:
                log(f"first step (compiling) took {dt:.1f}s")
                timed = [time.time(), step]
            elif step - timed[1] >= args.measure:
                secs = time.time() - timed[0]
                pairs_per_s = args.measure * args.batch / secs
                log(f"{args.measure} steps of {args.batch} pairs in {secs:.1f}s: "
                    f"{pairs_per_s:.2f} pairs/s, {secs / args.measure:.2f} s/step")
                logger(event="measure", steps=args.measure, batch=args.batch, seconds=secs,
                       pairs_per_second=pairs_per_s, devices=[str(d) for d in jax.devices()])
                return
            continue
        trained_seconds += dt
        # Once the speed is known (steps 10 to 40, compiled), shorten the schedule so that it,
        # its retrieval checks and the final one end within the time limit.
        if step == 10:
            speed_from = time.time()
        if args.time_limit and not adjusted and step == 40:
            adjusted = True
            per_step = (time.time() - speed_from) / 30
            left = args.time_limit - (time.time() - started) - eval_seconds[0] - 15
            fits = int(left / (per_step + eval_seconds[0] / eval_every)) + step
            if fits < total:
                log(f"{per_step:.3f} s/step: the schedule shrinks from {total} to {fits} steps")
                total = max(step + 1, fits)
                warmup = min(warmup, max(1, int(args.warmup * total)))
        if step % 50 == 0 or step == total:
            mean_loss = float(np.mean([float(v) for v in last_loss]))
            per_step = (time.time() - last_log[0]) / (step - last_log[1])
            log(f"step {step}/{total} epoch {epoch + 1} loss {mean_loss:.4f} lr {lr:.2e}"
                f" ({per_step:.2f}s/step)")
            logger(event="train", step=step, loss=mean_loss, lr=lr, seconds_per_step=per_step)
            last_loss = []
            last_log = (time.time(), step)
        out_of_time = args.time_limit and time.time() - started > args.time_limit
        finished = step >= total or (args.max_steps and step >= args.max_steps) or out_of_time \
            or stop["signal"] is not None
        if step % args.checkpoint_every == 0 or finished:
            save(done=step >= total)
        stop["stepping"] = False
        if step % eval_every == 0 and not finished:
            check_now(f"step {step}")
        if finished:
            break
    result = check_now(f"after step {step}")
    logger(event="end", step=step, total=total, seconds=round(time.time() - started, 1),
           trained_seconds=round(trained_seconds, 1), **result)
    final = {k: np.asarray(v) for k, v in params.items()}
    if args.export:
        if teacher_dir is None:
            sys.exit("teacher: --export needs the full teacher; use --export-delta with a bundle")
        path = export_folder(args.export, final, teacher_dir, vocab_rows)
        log(f"wrote {path}")
    if args.export_delta:
        export_delta(args.export_delta, final, start,
                     {"bundle": manifest["id"] if args.bundle else None,
                      "step": step, "total": total, "mrr10": result["mrr10"]})
        log(f"wrote the change in parts under {args.export_delta}")
    if args.export_targets:
        export_targets(args.export_targets, embed_eval, params, pairs, train, args.targets,
                       args.seed)


def export_targets(out, embed_fn, params, pairs, train, n, seed):
    """Writes the trained teacher's sentence embeddings (fp16) of a seeded sample of `n`
    training pairs, one file per side (`targets.code.npz`, `targets.desc.npz`: `index` into
    the pairs, `vectors`). A static table is then trained to reproduce them where the teacher
    is too slow to run over many texts. Written after everything else: a failure here loses
    nothing already written."""
    import numpy as np
    try:
        os.makedirs(out, exist_ok=True)
        rng = np.random.RandomState((seed * 7 + 3) % (2 ** 32))
        index = np.sort(rng.permutation(train)[:n]).astype(np.int32)
        for side in ("code", "desc"):
            t = time.time()
            vectors = embed_all(embed_fn, params, getattr(pairs, side)[index]).astype(np.float16)
            path = os.path.join(out, f"targets.{side}.npz")
            atomic_write(path, lambda f: np.savez(f, index=index, vectors=vectors))
            log(f"wrote {path}: {len(index):,} embeddings ({time.time() - t:.0f}s)")
    except Exception as e:  # noqa: BLE001 (the delta is already written; report and go on)
        log(f"could not write the targets: {e!r}")


if __name__ == "__main__":
    main()
