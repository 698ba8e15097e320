from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.transformer._shared import MAX_HEADS, MAX_SEQ, _dims_ok, rotary_bounds, _w


class RotaryEmbedding(OpSpec):
    """ONNX RotaryEmbedding: X 4-D (batch, heads, seq, head) or 3-D (batch, seq, hidden)
    with ``num_heads``; rotation by halves or ``interleaved`` pairs, of the whole head or
    its first ``rotary_embedding_dim`` (even) values; the caches as graph tensors, (batch,
    seq, rot/2) without position_ids or (positions, rot/2) indexed by constant
    ``position_ids`` (batch, seq) within range.

    Not generated: caches broadcast over the batch ((1, seq, rot/2)), which the text does
    not allow and onnxruntime rejects; position ids out of range (undefined); float64 (the
    schema excludes it)."""

    onnx_op = "RotaryEmbedding"
    arity = 3
    min_opset = 23
    ranks = (3, 4)
    symbolic_ok = False
    dtypes = tuple((t, t, t) for t in (dt.FLOAT32, dt.FLOAT16))

    def _heads(self, x: TensorType, a: dict):
        """(batch, seq, heads, head) of X."""
        if x.rank == 3:
            return x.shape[0], x.shape[1], a["num_heads"], x.shape[2] // a["num_heads"]
        return x.shape[0], x.shape[2], x.shape[1], x.shape[3]

    def _attrs(self, ctx, x: TensorType):
        if x.rank == 3:
            hidden = x.shape[2]
            cands = [h for h in range(1, min(hidden, MAX_HEADS) + 1) if hidden % h == 0 and (hidden // h) % 2 == 0]
            a = {"num_heads": ctx.choice(cands) if cands else 1}  # odd sizes: requires refuses them
        else:
            a = {"num_heads": None}
        b, s, _, head = self._heads(x, a)
        rot = 0 if ctx.coin(0.5) or head < 2 else 2 * ctx.int(1, head // 2)
        a.update(rotary_dim=rot, interleaved=int(ctx.coin()))
        if ctx.coin(0.5):
            p = ctx.int(s, max(s, MAX_SEQ))  # onnxruntime wants a cache row per position
            a["positions"] = p
            a["position_ids"] = [[ctx.rng.randrange(p) for _ in range(s)] for _ in range(b)]
        else:
            a["positions"], a["position_ids"] = None, None
        return a

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0])

    def _cache(self, x: TensorType, a: dict) -> tuple:
        b, s, _, head = self._heads(x, a)
        half = (a["rotary_dim"] or head) // 2
        return (a["positions"], half) if a["position_ids"] is not None else (b, s, half)

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self._cache(ins[0], a))

    def backward(self, ctx, out):
        if out.dtype not in (dt.FLOAT32, dt.FLOAT16) or out.rank not in self.ranks:
            return None
        a = self._attrs(ctx, out)
        return [out] + [TensorType(out.dtype, self._cache(out, a))] * (self.arity - 1), a

    def requires(self, ins, a):
        x = ins[0]
        if x.rank not in (3, 4):
            return [False]
        if x.rank == 3 and (not a["num_heads"] or x.shape[2] % a["num_heads"]):
            return [False]
        b, s, _, head = self._heads(x, a)
        out = [head % 2 == 0, a["rotary_dim"] % 2 == 0, a["rotary_dim"] <= head]
        if a["position_ids"] is not None:
            ids = a["position_ids"]
            out += [len(ids) == b] + [len(r) == s for r in ids]
        want = self._cache(x, a)
        for t in ins[1:]:
            out += _dims_ok(t.shape, want)
        return out

    def infer(self, ins, a):
        return [ins[0]]

    def onnx_attrs(self, a, b):
        return {"interleaved": b.opt(a["interleaved"], 0), "rotary_embedding_dim": b.opt(a["rotary_dim"], 0),
                "num_heads": a["num_heads"]}

    def onnx(self, b, a, xs, ys):
        ins = list(xs)
        if a["position_ids"] is not None:
            ins.append(b.const(np.asarray(a["position_ids"], dtype=np.int64), hint="position_ids"))
        b.node(self.onnx_op, ins, ys, **self.onnx_attrs(a, b))

    def _ids(self, a):
        return None if a["position_ids"] is None else torch.tensor(a["position_ids"], dtype=torch.int64)

    def torch(self, a, x, cos, sin):
        return rotary(a, x, cos, sin, self._ids(a))

    gaps: ClassVar[tuple] = (
        ("caches broadcast over the batch, (1, seq, rot/2)", "not allowed by the text; onnxruntime rejects it"),
        ("position_ids as a graph tensor", "values out of [0, positions) are undefined: they are constants"),
        ("caches with fewer rows than the sequence length (with position_ids in range)",
         "onnxruntime 1.32 refuses them: 'Updating cos_cache and sin_cache in RotaryEmbedding is not "
         "currently supported'"),
    )

    def value_range(self, a, ranges, ins):
        return [rotary_bounds(ranges[0], ranges[1], ranges[2])]


class RotaryEmbeddingConstCache(RotaryEmbedding):
    """RotaryEmbedding with real cos/sin caches as constants (theta 10000 or 500000 and
    others), indexed by constant position ids, as exported language models carry them."""

    name = "RotaryEmbeddingConstCache"
    arity = 1
    dtypes = tuple((t,) for t in (dt.FLOAT32, dt.FLOAT16))

    def requires(self, ins, a):
        return super().requires(ins, a) + [ins[0].dtype == a["dtype"], self._cache(ins[0], a)[-1] == a["half"]]

    def _attrs(self, ctx, x):
        a = super()._attrs(ctx, x)
        if a["position_ids"] is None:
            b, s, _, _ = self._heads(x, a)
            a["positions"] = s
            a["position_ids"] = [list(range(s)) for _ in range(b)]
        a["theta"] = ctx.choice((10000.0, 500000.0, 100.0, ctx.uniform(10.0, 1e4)))
        a["dtype"] = x.dtype
        a["half"] = self._cache(x, a)[-1]
        return a

    def _tables(self, a) -> tuple:
        return rope_cache(a["positions"], a["half"], a["theta"], a["dtype"])

    def onnx(self, b, a, xs, ys):
        ids = b.const(np.asarray(a["position_ids"], dtype=np.int64), hint="position_ids")
        cos, sin = self._tables(a)
        ins = [xs[0], b.const(cos, hint="cos_cache"), b.const(sin, hint="sin_cache"), ids]
        b.node(self.onnx_op, ins, ys, **self.onnx_attrs(a, b))

    def torch(self, a, x):
        c, s = self._tables(a)
        return rotary(a, x, torch.from_numpy(c).to(x.dtype), torch.from_numpy(s).to(x.dtype), self._ids(a))

    def value_range(self, a, ranges, ins):
        return [rotary_bounds(ranges[0], (-1.0, 1.0), (-1.0, 1.0))]


# =========================================================================================
# RotaryEmbedding (opset 23)
# =========================================================================================
def rotary(a: dict, x, cos, sin, position_ids=None):
    """The function body of RotaryEmbedding, node by node."""
    t = x.dtype
    rank3 = x.dim() == 3
    shape = x.shape
    if rank3:
        b, s, hidden = shape
        x = x.reshape(b, s, a["num_heads"], hidden // a["num_heads"])
    else:
        x = x.transpose(1, 2)  # (batch, seq, heads, head)
    head = x.shape[-1]
    rot = a.get("rotary_dim") or head
    xr, xp = x[..., :rot], x[..., rot:]
    if position_ids is not None:
        cos, sin = cos[position_ids], sin[position_ids]
    cos, sin = cos.unsqueeze(2), sin.unsqueeze(2)
    if a["interleaved"]:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
    else:
        x1, x2 = xr[..., :rot // 2], xr[..., rot // 2:]

    def mul(p, q):
        return (_w(p) * _w(q)).to(t)

    real = (_w(mul(cos, x1)) - _w(mul(sin, x2))).to(t)
    imag = (_w(mul(sin, x1)) + _w(mul(cos, x2))).to(t)
    if a["interleaved"]:
        xr = torch.stack([real, imag], dim=-1).reshape(xr.shape)
    else:
        xr = torch.cat([real, imag], dim=-1)
    y = torch.cat([xr, xp], dim=-1)
    return y.reshape(shape) if rank3 else y.transpose(1, 2)


def rope_cache(positions: int, half: int, theta: float, dtype: str) -> tuple:
    """cos and sin of ``p * theta ** (-2i / rot)`` for p < positions, i < half, computed in
    float64 and rounded to 6 decimals (so the bytes do not depend on the CPU's libm)."""
    inv = theta ** (-np.arange(half, dtype=np.float64) / half)
    ang = np.arange(positions, dtype=np.float64)[:, None] * inv[None, :]
    return (np.round(np.cos(ang), 6).astype(dtype), np.round(np.sin(ang), 6).astype(dtype))


OPS = [RotaryEmbedding, RotaryEmbeddingConstCache]
