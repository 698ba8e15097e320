from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import INF, OpSpec, TensorType

#: The values pool n-grams are drawn from: dlgate's integer tensors hold small values
#: (|x| <= 16, most near 0), so a pool drawn here is matched often.
TOKENS = tuple(range(-3, 6))
MAX_GRAM = 3
#: The most n-grams a pool holds: fewer than ``TOKENS``, so its unigrams can be distinct.
MAX_POOL = 8


class TfIdfVectorizer(OpSpec):
    """N-gram counts of integer token ids against a pool (``pool_int64s``), as a text
    pipeline's vectorizer exports them: every n-gram of ``min_gram_length`` to
    ``max_gram_length`` tokens, each skip of 0 to ``max_skip_count`` tokens between them
    (unigrams counted once), counted into the output column ``ngram_indexes`` gives it,
    then weighted (``TF``, ``IDF``, ``TFIDF``). The pool holds n-grams of lengths outside
    [min, max] too (they must count nothing), the columns are permuted and may leave gaps
    (columns that stay 0), and ``weights`` is present or not; the output's size is
    ``max(ngram_indexes) + 1`` whatever the input's length, so the input's last dimension
    may change with a dynamic binding."""

    onnx_op = "TfIdfVectorizer"
    dtypes = ((dt.INT64,), (dt.INT32,))
    ranks = (1, 2)
    symbolic_ok = False  # the pool is a list drawn concretely

    def sample(self, ctx, ins):
        return _draw(ctx, ctx.rng.randint(1, 8))

    def backward(self, ctx, out):
        k = out.shape[-1] if out.rank in (1, 2) else None
        if out.dtype != dt.FLOAT32 or not isinstance(k, int) or k < 1:
            return None
        c = ctx.dim(8)
        x = TensorType(ctx.choice(self.dtypes)[0], (c,) if out.rank == 1 else (out.shape[0], c))
        return [x], _draw(ctx, k)

    def requires(self, ins, a):
        return [ins[0].rank == 1 or ins[0].rank == 2]

    def infer(self, ins, a):
        k = max(a["ngram_indexes"]) + 1
        return [TensorType(dt.FLOAT32, (k,) if ins[0].rank == 1 else (ins[0].shape[0], k))]

    def onnx(self, b, a, xs, ys):
        b.node("TfIdfVectorizer", xs, ys, mode=a["mode"], min_gram_length=a["min_gram_length"],
               max_gram_length=a["max_gram_length"], max_skip_count=a["max_skip_count"],
               ngram_counts=a["ngram_counts"], ngram_indexes=a["ngram_indexes"], pool_int64s=a["pool_int64s"],
               weights=a["weights"])

    def torch(self, a, x):
        grams = _grams(a)
        counts = torch.zeros(x.shape[:-1] + (len(a["ngram_indexes"]),), dtype=torch.int64)
        x = x.to(torch.int64)
        c = x.shape[-1]
        for n in range(a["min_gram_length"], a["max_gram_length"] + 1):
            if not grams.get(n):
                continue
            pool = torch.tensor([g for _, g in grams[n]], dtype=torch.int64)  # [m, n]
            at = torch.tensor([j for j, _ in grams[n]])  # their places in the pool
            for d in range(1, (a["max_skip_count"] + 2) if n > 1 else 2):  # a unigram has no skip
                starts = torch.arange(c - (n - 1) * d) if c > (n - 1) * d else torch.arange(0)
                win = torch.stack([x[..., starts + i * d] for i in range(n)], -1)  # [..., L, n]
                hit = (win.unsqueeze(-2) == pool).all(-1)  # [..., L, m]
                counts[..., at] += hit.sum(-2)
        w = torch.ones(len(a["ngram_indexes"])) if a["weights"] is None else \
            torch.tensor(a["weights"], dtype=torch.float32)
        if a["mode"] == "TF":
            val = counts.to(torch.float32)
        elif a["mode"] == "IDF":
            val = torch.where(counts > 0, w, torch.zeros(()))
        else:
            val = w * counts.to(torch.float32)
        y = torch.zeros(x.shape[:-1] + (max(a["ngram_indexes"]) + 1,), dtype=torch.float32)
        y[..., torch.tensor(a["ngram_indexes"])] = val
        return y

    # -- optional knowledge ------------------------------------------------------------
    out_range = (0.0, INF)  # counts, weighted by positive weights
    jumps = True  # a count changes by one as one token changes

    def reference_defect(self, a, ins, opset):
        if a["weights"] is None and a["mode"] != "TF":
            return "onnx.reference takes the length of the absent weights (None) in IDF and TFIDF modes"
        if a["weights"] is not None and a["ngram_indexes"] != list(range(len(a["ngram_indexes"]))):
            return ("onnx.reference weights output column i by weights[i], not by the weight of the n-gram "
                    "counted there (the i-th in the pool), and fails once a column has no n-gram")
        return None

    gaps = (("pool_strings and string inputs", "string tensors: dlgate generates numeric and boolean tensors only"),
            ("two pool n-grams in one output column, or one n-gram twice in the pool",
             "the text does not say whether their counts add or one wins"),
            ("negative or zero weights", "none in real vectorizers; kept out so the output stays a count's scale"))


def _draw(ctx, k: int) -> dict:
    """A pool of n-grams for ``k`` output columns: some n-grams of each length up to
    ``max_gram_length`` (at least one counted), each given a distinct column, the last
    column always used."""
    lo = ctx.rng.choice((1, 1, 1, 2, 2, 3))  # short n-grams mostly: random tokens seldom meet a long one
    hi = ctx.rng.randint(lo, MAX_GRAM)
    m = ctx.rng.randint(1, min(k, MAX_POOL))  # n-grams in the pool (the other columns stay 0)
    sizes = [ctx.rng.randint(1, hi) for _ in range(m - 1)] + [ctx.rng.randint(lo, hi)]
    pool, counts = [], []
    for n in range(1, hi + 1):
        counts.append(len(pool))
        seen = set()
        for _ in range(sizes.count(n)):
            g = tuple(ctx.choice(TOKENS) for _ in range(n))
            while g in seen:  # the pool's n-grams are distinct
                g = tuple(ctx.choice(TOKENS) for _ in range(n))
            seen.add(g)
            pool.extend(g)
    cols = ctx.rng.sample(range(k - 1), m - 1) + [k - 1]
    ctx.rng.shuffle(cols)
    weights = [round(ctx.uniform(0.25, 4.0), 2) for _ in range(m)] if ctx.coin(0.6) else None
    return {"mode": ctx.choice(("TF", "IDF", "TFIDF")), "min_gram_length": lo, "max_gram_length": hi,
            "max_skip_count": ctx.rng.randint(0, 2), "ngram_counts": counts, "ngram_indexes": cols, "pool_int64s": pool,
            "weights": weights}


def _grams(a: dict) -> dict:
    """The pool's n-grams by length: ``{n: [(place in the pool, n-gram), ...]}``."""
    pool, starts = a["pool_int64s"], a["ngram_counts"]
    out, j = {}, 0
    for i, s in enumerate(starts):
        n, e = i + 1, starts[i + 1] if i + 1 < len(starts) else len(pool)
        out[n] = []
        for p in range(s, e, n):
            out[n].append((j, pool[p:p + n]))
            j += 1
    return out


OPS = [TfIdfVectorizer]
