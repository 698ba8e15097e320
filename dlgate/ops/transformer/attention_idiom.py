from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import OpSpec, TensorType, f32
from dlgate.ops.transformer._shared import (MAX_HEAD, MAX_SEQ, NEG_INF, _const, _dims_ok, _hull, _mm, _ulp_rel, _w,
                                            _widen)


#: Large negative fills exporters write for masked scores: HF's -1e4 (older models), the
#: float32 lowest (torch.finfo(torch.float32).min) and the type's own lowest value.
FILLS = ("-1e4", "f32min", "lowest")


class AttentionIdiom(OpSpec):
    """Scaled-dot-product attention as exporters write it before opset 23:
    ``Softmax(MatMul(Q, Transpose(K)) * scale [masked], axis=-1) @ V`` over 3-D (batch*heads,
    seq, head) or 4-D (batch, heads, seq, head) tensors. The scale is a Div by sqrt(head)
    (Hugging Face), a Mul of the scores, or a Mul of Q and of K^T each by sqrt(scale)
    (torch.onnx's SDPA export). Masks: none, or a constant causal mask (top-left or
    bottom-right aligned) applied with ``Where(mask, scores, fill)`` or added as ``0 / fill``
    with fill -1e4, the float32 lowest, the type's lowest or -inf (the last only added, and
    only where no row is fully masked: a fully masked row of -inf is NaN). Every
    intermediate is rounded to the input type, node by node."""

    name = "AttentionIdiom"
    onnx_op = "MatMul"
    onnx_ops: ClassVar[tuple] = ("Transpose", "Mul", "Div", "Where", "Add", "Softmax")
    arity = 3
    ranks = (3, 4)
    symbolic_ok = False
    dtypes = tuple((t,) * 3 for t in dt.FLOATS)
    keys: ClassVar[str] = "qkv"  # the graph inputs, in order: q, k, v, m (mask), p (past k), w (past v)
    mask_input: ClassVar[str | None] = None  # "add" or "where": a graph mask input
    past: ClassVar[bool] = False

    # -- shapes -------------------------------------------------------------------------
    def _q(self, ins) -> TensorType:
        return ins[self.keys.index("q")]

    def _attrs(self, ctx, q: TensorType, dv=None, sq=None, total=None, batch=None):
        """Attributes for Q of type ``q`` (its shape may be adjusted by the mask variants)."""
        *bdims, sq0, head = q.shape
        t = q.dtype
        past = ctx.dim(MAX_SEQ // 2) if self.past else 0
        if total is not None:
            kv_len = max(1, total - past)
            past = total - kv_len
        else:
            kv_len = sq0 if (self.past or ctx.coin(0.4)) else ctx.dim(MAX_SEQ)
        total = past + kv_len
        a = {"kv_len": kv_len, "past_len": past, "v_head": dv if dv is not None else ctx.dim(MAX_HEAD),
             "scale_form": ctx.choice(("div", "mul", "qk")),
             "scale": ctx.choice((f32(1 / math.sqrt(head)), ctx.uniform(0.05, 1.0)))}
        if t == dt.FLOAT16:
            a["scale"] = min(a["scale"], f32(1 / math.sqrt(head)))
        masks = ("none", "causal_where", "causal_add") if self.mask_input is None else ("none", "causal_where")
        a["mask"] = ctx.choice(masks)
        a["align"] = ctx.choice(("top", "bottom")) if not self.past else "bottom"
        fills = FILLS if t != dt.FLOAT16 else ("-1e4", "lowest")
        rows_ok = a["align"] == "top" or total >= sq0  # no fully masked row
        if t == dt.FLOAT16 and a["mask"] == "causal_add" and not rows_ok:
            # a fully masked float16 row adds the fill to every score: rounded to float16
            # they are all equal (a uniform row), kept wider (onnxruntime runs float16 Add
            # and Softmax in float32) the scores survive. Where(mask, scores, fill) is uniform
            # either way.
            a["mask"] = "causal_where"
        if t == dt.FLOAT16 and self.mask_input == "add" and a["mask"] == "causal_where" and not rows_ok:
            # the graph mask is added to the fill of a fully masked row: rounded to float16
            # the row is the fill alone (uniform), kept wider (onnxruntime casts float16
            # Where/Add/Softmax to float32) the graph mask alone decides it. Top alignment
            # leaves a key in every row; no draw is spent.
            a["align"] = "top"
        a["fill"] = ctx.choice(fills + (("-inf",) if a["mask"] == "causal_add" and rows_ok else ()))
        if self.mask_input is not None:
            a["mask_shape"] = list(_bcast_form(ctx, tuple(bdims), sq0, total))
            a["mask_fill"] = ctx.choice(fills)
        # what the lowering needs to know of Q (it only sees tensor names)
        a.update(dtype=t, rank=q.rank, sq=sq0, head=head)
        return a

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0])

    def _shapes(self, q: tuple, a: dict) -> dict:
        *bdims, sq, head = q
        bdims = tuple(bdims)
        kv, dv, past = a["kv_len"], a["v_head"], a["past_len"]
        out = {"q": tuple(q), "k": bdims + (kv, head), "v": bdims + (kv, dv)}
        if self.mask_input is not None:
            out["m"] = tuple(a["mask_shape"])
        if self.past:
            out["p"], out["w"] = bdims + (past, head), bdims + (past, dv)
        return out

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self._shapes(self._q(ins).shape, a)[self.keys[i]])

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        q = TensorType(out.dtype, tuple(out.shape[:-1]) + (ctx.dim(MAX_HEAD),))
        a = self._attrs(ctx, q, dv=out.shape[-1])
        sh = self._shapes(q.shape, a)
        return [TensorType(dt.BOOL if k == "m" and self.mask_input == "where" else out.dtype, sh[k])
                for k in self.keys], a

    def requires(self, ins, a):
        q = self._q(ins)
        if q.rank not in (3, 4):
            return [False]
        want = self._shapes(q.shape, a)
        out = [q.dtype == a["dtype"], q.rank == a["rank"], q.shape[-2] == a["sq"], q.shape[-1] == a["head"]]
        for key, t in zip(self.keys, ins):
            out += _dims_ok(t.shape, want[key])
        if q.dtype == dt.FLOAT16:
            out += [q.shape[-1] <= MAX_HEAD, a["past_len"] + a["kv_len"] <= MAX_SEQ,
                    a["mask"] != "causal_add" or a["align"] == "top" or a["past_len"] + a["kv_len"] >= a["sq"]]
            if self.mask_input == "add":
                out += [a["mask"] == "none" or a["align"] == "top" or a["past_len"] + a["kv_len"] >= a["sq"]]
        if self.mask_input is not None:
            m = tuple(a["mask_shape"])
            full = tuple(q.shape[:-1]) + (a["past_len"] + a["kv_len"],)
            if len(m) > len(full):
                return [False]
            out += [sym.Or(d == 1, d == e) for d, e in zip(m, full[len(full) - len(m):])]
        return out

    def infer(self, ins, a):
        q = self._q(ins)
        y = TensorType(q.dtype, tuple(q.shape[:-1]) + (a["v_head"],))
        if not self.past:
            return [y]
        sh = self._shapes(q.shape, a)
        total = a["past_len"] + a["kv_len"]
        return [y, TensorType(q.dtype, sh["k"][:-2] + (total, q.shape[-1])),
                TensorType(q.dtype, sh["v"][:-2] + (total, a["v_head"]))]

    # -- lowering and reference ---------------------------------------------------------------
    def _consts(self, a, t: str, head: int, sq: int):
        """(sqrt(scale) for "qk", the divisor or factor, causal mask, fill) as written."""
        total = a["past_len"] + a["kv_len"]
        root = _const(math.sqrt(a["scale"]), t)
        factor = _const(math.sqrt(head), t) if a["scale_form"] == "div" else _const(a["scale"], t)
        allowed = _causal(sq, total, a["align"])
        return root, factor, allowed, _const(_fill(a["fill"], t), t)

    def onnx(self, b, a, xs, ys):
        names = dict(zip(self.keys, xs))
        t, head, sq, rank = a["dtype"], a["head"], a["sq"], a["rank"]
        root, factor, allowed, fill = self._consts(a, t, head, sq)
        npt = dt.NUMPY[t]
        k, v = names["k"], names["v"]
        if self.past:
            k = b.node("Concat", [names["p"], k], [ys[1]], axis=-2)[0]
            v = b.node("Concat", [names["w"], v], [ys[2]], axis=-2)[0]
        perm = list(range(rank - 2)) + [rank - 1, rank - 2]
        kt = b.node("Transpose", [k], 1, perm=perm)[0]
        q = names["q"]
        if a["scale_form"] == "qk":
            c = b.const(np.asarray(root, npt), hint="sqrt_scale")
            q = b.node("Mul", [q, c], 1)[0]
            kt = b.node("Mul", [kt, c], 1)[0]
        s = b.node("MatMul", [q, kt], 1)[0]
        if a["scale_form"] != "qk":
            s = b.node("Div" if a["scale_form"] == "div" else "Mul", [s, b.const(np.asarray(factor, npt), hint="scale")], 1)[0]
        if a["mask"] == "causal_where":
            s = b.node("Where", [b.const(allowed, hint="causal"), s, b.const(np.asarray(fill, npt), hint="fill")], 1)[0]
        elif a["mask"] == "causal_add":
            s = b.node("Add", [s, b.const(np.where(allowed, 0.0, fill).astype(npt), hint="causal")], 1)[0]
        if self.mask_input == "add":
            s = b.node("Add", [s, names["m"]], 1)[0]
        elif self.mask_input == "where":
            mf = np.asarray(_const(_fill(a["mask_fill"], t), t), npt)
            s = b.node("Where", [names["m"], s, b.const(mf, hint="fill")], 1)[0]
        p = b.node("Softmax", [s], 1, axis=-1)[0]
        b.node("MatMul", [p, v], [ys[0]])

    def torch(self, a, *xs):
        x = dict(zip(self.keys, xs))
        q, k, v = x["q"], x["k"], x["v"]
        t = q.dtype
        tn = a["dtype"]
        if self.past:
            k = torch.cat([x["p"], k], dim=-2)
            v = torch.cat([x["w"], v], dim=-2)
        root, factor, allowed, fill = self._consts(a, tn, q.shape[-1], q.shape[-2])
        kt = k.transpose(-1, -2)
        if a["scale_form"] == "qk":
            q, kt = (_w(q) * root).to(t), (_w(kt) * root).to(t)
        s = _mm(q, kt)
        if a["scale_form"] == "div":
            s = (_w(s) / factor).to(t)
        elif a["scale_form"] == "mul":
            s = (_w(s) * factor).to(t)
        allowed = torch.from_numpy(allowed)
        if a["mask"] == "causal_where":
            s = torch.where(allowed, s, torch.tensor(fill, dtype=t))
        elif a["mask"] == "causal_add":
            s = (_w(s) + _w(torch.where(allowed, torch.tensor(0.0, dtype=t), torch.tensor(fill, dtype=t)))).to(t)
        if self.mask_input == "add":
            s = (_w(s) + _w(x["m"])).to(t)
        elif self.mask_input == "where":
            s = torch.where(x["m"], s, torch.tensor(_const(_fill(a["mask_fill"], tn), tn), dtype=t))
        p = torch.softmax(_w(s), dim=-1).to(t)
        y = _mm(p, v)
        return (y, k, v) if self.past else y

    gaps: ClassVar[tuple] = (
        ("Where(mask, scores, -inf) with a graph mask", "a fully masked row is NaN, which implementations "
                                                        "may well spell differently"),
        ("grouped-query heads (Expand/Reshape of K and V)", "not written as an idiom yet"),
    )

    def value_range(self, a, ranges, ins):
        # each output row a weighted average of V's rows (masks use finite fills or leave a
        # key in every row)
        r = dict(zip(self.keys, ranges))
        vr = _hull(r["v"], r["w"]) if self.past else r["v"]
        y = _widen(vr, 4 * _ulp_rel(self._q(ins).dtype))
        if not self.past:
            return [y]
        return [y, _hull(r["k"], r["p"]), vr]


class AttentionIdiomAddMask(AttentionIdiom):
    """AttentionIdiom with a float graph mask added to the scores (broadcast: (q, k), the
    full score shape, padding style (batch, 1, 1, k), or dims of 1). In float16 a causal
    mask leaves a key in every row: the graph mask added to a fully masked row's fill
    rounds away in float16 but decides the row when kept wider (ill-conditioned)."""

    name = "AttentionIdiomAddMask"
    arity = 4
    dtypes = tuple((t,) * 4 for t in dt.FLOATS)
    keys = "qkvm"
    mask_input = "add"


def _fill(kind: str, dtype: str) -> float:
    if kind == "-1e4":
        return -1e4
    if kind == "f32min":
        return float(np.finfo(np.float32).min)
    if kind == "-inf":
        return NEG_INF
    return float(np.finfo(dt.NUMPY[dtype]).min)


def _causal(sq: int, total: int, align: str) -> np.ndarray:
    """The allowed (query, key) pairs: key j <= query i (top-left, torch's SDPA is_causal),
    or j <= i + total - sq (bottom-right, a cache of total - sq earlier keys)."""
    off = 0 if align == "top" else total - sq
    return np.arange(total)[None, :] <= np.arange(sq)[:, None] + off


def _bcast_form(ctx, batch: tuple, sq: int, t: int) -> tuple:
    """A mask shape that broadcasts to (*batch, sq, t): (sq, t), the full shape, padding
    style (b, 1, ..., 1, t), or the full shape with some dims 1."""
    form = ctx.choice(("st", "full", "pad", "ones"))
    if form == "st":
        return (sq, t)
    if form == "full":
        return tuple(batch) + (sq, t)
    if form == "pad":
        return tuple(batch[:1]) + (1,) * (len(batch) - 1) + (1, t)
    return tuple(1 if ctx.coin() else d for d in batch) + (sq, t)


OPS = [AttentionIdiom, AttentionIdiomAddMask]
