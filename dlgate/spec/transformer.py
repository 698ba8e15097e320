"""Transformer building blocks: ONNX's own operators (Attention 23/24/25, RMSNormalization
23, RotaryEmbedding 23, Swish 24, LinearAttention 27, SwiGLU 28) and the multi-node idioms
exporters write for them at older opsets (scaled-dot-product attention with masks and a
key/value cache, RMSNorm, Gelu and SiLU decompositions, rotary embeddings, MatMul with
transposed operands, a linear layer).

References follow the ONNX function bodies node by node: every intermediate tensor is
rounded to its declared type (float16 computed in float32 and rounded at each node
boundary), so a float16 model means what the ONNX graph says. The exceptions are said
where they are: Attention and LinearAttention compute float16 in float32 and round once
(as onnxruntime and, for LinearAttention, onnx.reference do). Sizes are kept small (heads
at most 8, sequence and head sizes at most 16) so float16 sums stay accurate.
"""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.spec import losses as L
from dlgate.spec import sym
from dlgate.spec.base import INF, UNBOUNDED, OpSpec, TensorType, f32
from dlgate.spec.binary import mul_bounds
from dlgate.spec.linalg import plus_bounds

#: Largest head, sequence and head-size dimension drawn (float16 sums over them stay exact
#: enough for float16 tolerances).
MAX_SEQ = 16
MAX_HEAD = 16
MAX_HEADS = 8
MAX_BATCH = 3
#: ``softmax_precision`` values and the types they name.
PRECISION = {1: torch.float32, 10: torch.float16, 11: torch.float64}
#: ``stash_type`` values: the same codes.
STASH = PRECISION
NEG_INF = float("-inf")


def _w(x):
    """The type a node computes in: float16 in float32 (rounded once at the node's end)."""
    return x.float() if x.dtype == torch.float16 else x


def _mm(a, b):
    """ONNX MatMul in the operands' type: float16 accumulated in float32, rounded once."""
    return (_w(a) @ _w(b)).to(a.dtype)


def _as(value: float, t) -> float:
    """A float32 attribute or constant cast to type ``t`` (CastLike / Cast <to=T>)."""
    v = np.float32(value)
    if t == torch.float16:
        return float(np.float16(v))
    return float(v)


def _hull(*rs) -> tuple:
    return (min(r[0] for r in rs), max(r[1] for r in rs))


def _widen(r: tuple, rel: float) -> tuple:
    """Bounds widened by ``rel`` of their magnitude (rounding of a weighted average)."""
    m = max(abs(r[0]), abs(r[1])) * rel
    return (r[0] - m, r[1] + m)


def _ulp_rel(dtype: str) -> float:
    return {dt.FLOAT16: 2.0 ** -8, dt.FLOAT32: 2.0 ** -20, dt.FLOAT64: 2.0 ** -48}.get(dtype, 0.0)


def _dims_ok(shape, want) -> list:
    if len(shape) != len(want):
        return [False]
    return [d == e for d, e in zip(shape, want)]


# =========================================================================================
# Attention (opset 23, 24)
# =========================================================================================
#: Shapes of ``attn_mask`` relative to (batch, q_heads, q_len, total_len). onnxruntime 1.32
#: rejects masks that broadcast over the query axis ((T,), (1, T), (B, 1, 1, T): "inconsistent
#: q_sequence_length"), so only forms with the query axis spelled out are drawn.
MASK_FORMS = ("st", "1st", "hst", "bhst", "1hst", "b1st", "11st")


def _mask_shape(form: str, b, h, s, t) -> tuple:
    return {"st": (s, t), "1st": (1, s, t), "hst": (h, s, t), "bhst": (b, h, s, t), "1hst": (1, h, s, t),
            "b1st": (b, 1, s, t), "11st": (1, 1, s, t)}[form]


def sqrt_scale(scale, head: int, t) -> float:
    """``Cast<to=T1>(Sqrt(scale))`` with the default scale ``1 / Sqrt(Cast<float>(head))``,
    all in float32 as the function body computes them."""
    f = np.float32
    s = f(1) / np.sqrt(f(head)) if scale is None else f(scale)
    return _as(float(np.sqrt(f(s))), t)


def attention(a: dict, q, k, v, mask=None, past_k=None, past_v=None):
    """ONNX Attention (23/24) as its function body computes it: (Y, present_key,
    present_value, qk_matmul_output for ``a["qk_mode"]``)."""
    t = q.dtype
    if t == torch.float16:
        # computed in float32 and rounded once, as onnxruntime does (the function body rounds
        # every intermediate to float16, which puts scores of a few units beyond float16
        # tolerance of any fused implementation)
        up = [None if x is None else (x if x.dtype == torch.bool else x.float()) for x in (mask, past_k, past_v)]
        sp = a.get("softmax_precision")
        outs = attention(dict(a, softmax_precision=None if sp == 10 else sp), q.float(), k.float(), v.float(), *up)
        return tuple(None if y is None else y.to(t) for y in outs)
    rank3 = q.dim() == 3
    hq, hkv = a["heads"], a["kv_heads"]
    if rank3:
        b, sq = q.shape[0], q.shape[1]
        q = q.reshape(b, sq, hq, -1).transpose(1, 2)
        k = k.reshape(b, k.shape[1], hkv, -1).transpose(1, 2)
        v = v.reshape(b, v.shape[1], hkv, -1).transpose(1, 2)
    sq, head = q.shape[2], q.shape[3]
    s = sqrt_scale(a.get("scale"), head, t)
    if past_k is not None:
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
    present_k, present_v = k, v
    total = k.shape[2]
    if hq != hkv:  # each key/value head serves hq / hkv consecutive query heads
        k = k.repeat_interleave(hq // hkv, dim=1)
        v = v.repeat_interleave(hq // hkv, dim=1)
    qs = (_w(q) * s).to(t)
    ks = (_w(k.transpose(-1, -2)) * s).to(t)
    qk = _mm(qs, ks)
    capped = qk
    if a.get("softcap"):
        c = _as(a["softcap"], t)
        capped = (_w((_w((_w(qk) / c).to(t)).tanh()).to(t)) * c).to(t)
    bias = None
    if mask is not None:
        bias = torch.where(mask, 0.0, NEG_INF).to(t) if mask.dtype == torch.bool else mask
    if a.get("is_causal"):
        past = total - a["kv_len"]
        i = torch.arange(sq).reshape(sq, 1)
        j = torch.arange(total).reshape(1, total)
        causal = torch.where(j <= i + past, 0.0, NEG_INF).to(t)
        bias = causal if bias is None else bias + causal
    scores = capped if bias is None else (_w(capped) + _w(bias)).to(t)
    sp = a.get("softmax_precision")
    pt = t if sp is None or t == torch.float64 else PRECISION[sp]  # float64 inputs: sp is 11
    probs = torch.softmax(_w(scores.to(pt)), dim=-1).to(pt).to(t)
    if bias is not None:
        masked = bias.amax(dim=-1, keepdim=True) == NEG_INF
        probs = torch.where(masked, torch.zeros((), dtype=t), probs)
    y = _mm(probs, v)
    if rank3:
        y = y.transpose(1, 2).reshape(y.shape[0], sq, -1)
    mode = a.get("qk_mode")
    qk_out = None if mode is None else (qk, capped, scores, probs)[mode]
    return y, present_k, present_v, qk_out


class Attention(OpSpec):
    """ONNX Attention, Q/K/V only: 4-D (batch, heads, seq, head_size) inputs, or 3-D
    (batch, seq, heads * head_size) ones with ``q_num_heads``/``kv_num_heads``; grouped-query
    heads (q heads a multiple of kv heads, kv head h serving q heads h*g..h*g+g-1),
    ``is_causal`` (bottom-right aligned: query i sees key j iff j <= i + past length),
    ``scale`` (default 1/sqrt(head_size); Q and K are each multiplied by its square root,
    computed in float32 and cast to the input type, as the function body does),
    ``softcap`` and ``softmax_precision``. A fully masked query row gives a zero row.
    float16 is computed in float32 and rounded once (as onnxruntime does; the function
    body's node-by-node float16 rounding is within float16 tolerance of it only for small
    scores, so onnx.reference is not consulted for float16).

    Reference defects: onnx.reference computes sqrt(scale) and the default scale in float64
    (the function body: float32, then Cast), which float64 tolerances see; and in
    ``qk_matmul_output_mode`` 0 with a softcap it returns the softcapped scores, not the raw
    ones."""

    onnx_op = "Attention"
    arity = 3
    min_opset = 23
    ranks = (3, 4)
    symbolic_ok = False
    dtypes = tuple((t,) * 3 for t in dt.FLOATS)
    #: What the subclasses add: an attn_mask input ("float" or "bool"), past key/value
    #: inputs with present outputs, the qk_matmul_output output.
    mask: ClassVar[str | None] = None
    past: ClassVar[bool] = False
    qk_output: ClassVar[bool] = False
    gaps: ClassVar[tuple] = (
        ("attn_mask broadcast over the query axis ((T,), (1, T), (B, 1, 1, T))",
         "onnxruntime 1.32 rejects it ('inconsistent q_sequence_length (between attn_mask and Q)')"),
        ("negative or zero scale, negative softcap",
         "sqrt of a negative scale is NaN (onnxruntime refuses it); softcap <= 0 means no softcap"),
        ("softmax_precision=10 (float16) for float32/float64 inputs, 1 (float) for float64",
         "a deliberately lossy softmax whose rounding is beyond the inputs' type tolerances"),
        ("integer attn_mask types (U allows them)", "the text defines only boolean and same-type float masks"),
        ("nonpad_kv_seqlen (opset 24) and the opset-25 window attributes", "not generated yet"),
        ("qk_matmul_output_mode 2 with a causal or boolean mask", "the output then holds -inf"),
        ("a causal past-cache step of one query and several new keys",
         "onnxruntime 1.32 lets the query see every key (the spec: keys j <= past length); one query "
         "comes with one new key"),
    )

    # -- shapes -------------------------------------------------------------------------
    @staticmethod
    def _split(q: TensorType, a: dict):
        """(batch, q heads, q len, head size) of Q."""
        if q.rank == 3:
            return q.shape[0], a["heads"], q.shape[1], q.shape[2] // a["heads"]
        return q.shape

    def _attrs(self, ctx, q: TensorType, dv=None, heads=None):
        rank3 = q.rank == 3
        if heads is None:
            heads = ctx.divisor(q.shape[2], MAX_HEADS) if rank3 else q.shape[1]
        b, _, sq, head = self._split(q, {"heads": heads})
        kv_heads = heads if ctx.coin(0.4) else ctx.divisor(heads)
        kv_len = sq if ctx.coin(0.4) else ctx.dim(MAX_SEQ)
        a = {"rank3": rank3, "heads": heads, "kv_heads": kv_heads, "kv_len": kv_len,
             "v_head": dv if dv is not None else (head if ctx.coin(0.5) else ctx.dim(MAX_HEAD)),
             "is_causal": int(ctx.coin(0.4)),
             "scale": None if ctx.coin(0.5) else ctx.choice((ctx.uniform(0.05, 1.0), f32(1 / math.sqrt(head)))),
             "softcap": 0.0 if ctx.coin(0.6) else ctx.choice((ctx.uniform(0.5, 5.0), 20.0, 50.0))}
        precisions = {dt.FLOAT16: (1, 10, 11), dt.FLOAT32: (1, 11), dt.FLOAT64: (11,)}[q.dtype]
        a["softmax_precision"] = None if ctx.coin(0.6) else ctx.choice(precisions)
        a["past_len"] = ctx.dim(MAX_SEQ // 2) if self.past else 0
        if self.past and a["is_causal"] and sq == 1:
            a["kv_len"] = 1  # see gaps: onnxruntime's one-query causal path
        if self.mask is not None:
            a["mask_form"] = ctx.choice(MASK_FORMS)
        if self.qk_output:
            a["qk_mode"] = ctx.choice((0, 1, 2, 3))
            if a["qk_mode"] == 2:
                a["is_causal"] = 0
        return a

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0])

    def _shapes(self, q: TensorType, a: dict) -> list:
        """The shapes of every input, Q's included."""
        b, hq, sq, head = self._split(q, a)
        hkv, skv, dv, past = a["kv_heads"], a["kv_len"], a["v_head"], a["past_len"]
        if q.rank == 3:
            out = [q.shape, (b, skv, hkv * head), (b, skv, hkv * dv)]
        else:
            out = [q.shape, (b, hkv, skv, head), (b, hkv, skv, dv)]
        if self.mask is not None:
            out.append(_mask_shape(a["mask_form"], b, hq, sq, past + skv))
        if self.past:
            out += [(b, hkv, past, head), (b, hkv, past, dv)]
        return out

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self._shapes(ins[0], a)[i])

    def requires(self, ins, a):
        q = ins[0]
        if q.rank not in (3, 4):
            return [False]
        if a["rank3"] != (q.rank == 3) or (q.rank == 3 and q.shape[2] % a["heads"]):
            return [False]
        b, hq, sq, head = self._split(q, a)
        out = [hq == a["heads"], hq % a["kv_heads"] == 0]
        for t, want in zip(ins[1:], self._shapes(q, a)[1:]):
            out += _dims_ok(t.shape, want)
        if q.dtype == dt.FLOAT16:
            out += [head <= MAX_HEAD, a["past_len"] + a["kv_len"] <= MAX_SEQ]
        return out

    def infer(self, ins, a):
        q = ins[0]
        b, hq, sq, head = self._split(q, a)
        dv, total, t = a["v_head"], a["past_len"] + a["kv_len"], q.dtype
        y = (b, sq, hq * dv) if q.rank == 3 else (b, hq, sq, dv)
        outs = [TensorType(t, y)]
        if self.past:
            outs += [TensorType(t, (b, a["kv_heads"], total, head)), TensorType(t, (b, a["kv_heads"], total, dv))]
        if self.qk_output:
            outs.append(TensorType(t, (b, hq, sq, total)))
        return outs

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in (3, 4):
            return None
        head = ctx.dim(MAX_HEAD)
        if out.rank == 3:
            b, sq, hidden = out.shape
            heads = ctx.divisor(hidden, MAX_HEADS)
            q = TensorType(out.dtype, (b, sq, heads * head))
            a = self._attrs(ctx, q, hidden // heads, heads)
        else:
            b, heads, sq, dv = out.shape
            q = TensorType(out.dtype, (b, heads, sq, head))
            a = self._attrs(ctx, q, dv)
        ins = [q] + [TensorType(out.dtype if k != 3 or self.mask != "bool" else dt.BOOL, s)
                     for k, s in enumerate(self._shapes(q, a)) if k > 0]
        return ins, a

    def backward_ranks(self, out):
        return (out.rank,)

    # -- lowering and reference ---------------------------------------------------------------
    def onnx_attrs(self, a, b):
        out = {"is_causal": b.opt(a["is_causal"], 0), "softcap": b.opt(a["softcap"], 0.0),
               "scale": a["scale"], "softmax_precision": a["softmax_precision"]}
        if self.qk_output:
            out["qk_matmul_output_mode"] = b.opt(a["qk_mode"], 0)
        return out

    def onnx(self, b, a, xs, ys):
        attrs = self.onnx_attrs(a, b)
        if a["rank3"]:
            attrs.update(q_num_heads=a["heads"], kv_num_heads=a["kv_heads"])
        ins = list(xs[:3])
        if self.mask is not None:
            ins.append(xs[3])
        if self.past:
            if self.mask is None:
                ins.append("")
            ins += list(xs[-2:])
        outs = list(ys[:3]) if self.past else [ys[0]]
        if self.qk_output:
            outs += [ys[-1]] if self.past else ["", "", ys[-1]]
        b.node(self.onnx_op, ins, outs, **attrs)

    def torch(self, a, *xs):
        q, k, v = xs[:3]
        mask = xs[3] if self.mask is not None else None
        past = xs[-2:] if self.past else (None, None)
        y, pk, pv, qk = attention(a, q, k, v, mask, *past)
        outs = [y]
        if self.past:
            outs += [pk, pv]
        if self.qk_output:
            outs.append(qk)
        return tuple(outs) if len(outs) > 1 else y

    def reference_defect(self, a, ins, opset):
        if ins[0].dtype == dt.FLOAT64:
            return ("onnx.reference computes sqrt(scale) and the default scale in float64; the function body "
                    "computes them in float32 and casts (Cast<to=T1>(Sqrt(scale)))")
        if ins[0].dtype == dt.FLOAT16:
            return ("onnx.reference rounds every float16 intermediate (scores, probabilities); this reference, "
                    "like onnxruntime, computes in float32 and rounds once, and scores of a few units put the "
                    "two beyond float16 tolerance")
        if a.get("qk_mode") == 0 and a.get("softcap"):
            return "onnx.reference's qk_matmul_output in mode 0 holds the softcapped scores, not the raw QK product"
        return None

    def value_range(self, a, ranges, ins):
        # Y: each row a weighted average of V's rows (a zero row where fully masked)
        vr = [ranges[2]] + ([ranges[-1]] if self.past else [])
        y = _hull(*vr)
        if self.mask == "bool":
            y = _hull(y, (0.0, 0.0))
        outs = [_widen(y, 4 * _ulp_rel(ins[0].dtype))]
        if self.past:
            outs += [_hull(ranges[1], ranges[-2]), _hull(ranges[2], ranges[-1])]
        if self.qk_output:
            mode = a["qk_mode"]
            c = a.get("softcap")
            outs.append((0.0, 1.0) if mode == 3 else (-c, c) if mode == 1 and c else UNBOUNDED)
        return outs


class AttentionMask(Attention):
    """Attention with a float ``attn_mask`` (same type as Q) added to the scores."""

    name = "AttentionMask"
    arity = 4
    mask = "float"
    dtypes = tuple((t,) * 4 for t in dt.FLOATS)


class AttentionBoolMask(Attention):
    """Attention with a boolean ``attn_mask`` (True: attend); rows it masks fully are zero."""

    name = "AttentionBoolMask"
    arity = 4
    mask = "bool"
    dtypes = tuple((t, t, t, dt.BOOL) for t in dt.FLOATS)


class AttentionPast(Attention):
    """Attention with past_key/past_value (4-D, concatenated before K/V along the sequence
    axis) and the present_key/present_value outputs; causal masking is offset by the past
    length."""

    name = "AttentionPast"
    arity = 5
    n_outputs = 3
    past = True
    dtypes = tuple((t,) * 5 for t in dt.FLOATS)


class AttentionPastMask(AttentionPast):
    """AttentionPast with a boolean mask over the whole (past + new) key sequence."""

    name = "AttentionPastMask"
    arity = 6
    mask = "bool"
    dtypes = tuple((t, t, t, dt.BOOL, t, t) for t in dt.FLOATS)


class AttentionQK(Attention):
    """Attention with its fourth output, ``qk_matmul_output``, in every mode: 0 the raw QK
    product, 1 after the softcap, 2 with the bias added (no causal mask then: -inf), 3 the
    softmax probabilities."""

    name = "AttentionQK"
    n_outputs = 2
    qk_output = True


# =========================================================================================
# RMSNormalization (opset 23)
# =========================================================================================
def rms_norm(x, scale, axis: int, eps: float, stash: int):
    """The function body: in the stash type, ``X / Sqrt(ReduceMean(X * X) + Cast(eps))``,
    cast back to X's type, times Scale (broadcast) in X's type."""
    t = x.dtype
    st = STASH[stash] if t in (torch.float16, torch.float32, torch.float64) else t
    axes = tuple(range(axis % x.dim(), x.dim()))
    xu = x.to(st)
    sq = (_w(xu) * _w(xu)).to(st)
    mean = _w(sq).mean(dim=axes, keepdim=True).to(st)
    ms = (_w(mean) + _as(eps, st)).to(st)
    rms = _w(ms).sqrt().to(st)
    norm = (_w(xu) / _w(rms)).to(st).to(t)
    return (_w(norm) * _w(scale)).to(t)


def _rms_bound(n: int) -> float:
    """|x / rms(x)| <= sqrt(n) over n values (x_i^2 <= the sum of squares), with a margin."""
    return math.sqrt(n) * (1 + 2.0 ** -8)


#: Scale shapes relative to X: the normalized dims, their last one, a single value, or
#: dims reaching into the non-normalized ones (unidirectional broadcasting).
SCALE_FORMS = ("norm", "norm", "last", "one", "wide", "ones")


def _scale_shape(form: str, x: tuple, axis: int) -> tuple:
    r = len(x)
    ax = axis % r
    if form == "norm":
        return tuple(x[ax:])
    if form == "last":
        return (x[-1],)
    if form == "one":
        return (1,)
    if form == "ones":  # the normalized dims with size-1 dims before them
        return (1,) * ax + tuple(x[ax:])
    # "wide": every dim, the leading ones (before axis) set to 1 except the first
    return tuple(d if (k == 0 or k >= ax) else 1 for k, d in enumerate(x))


class RMSNormalization(OpSpec):
    """ONNX RMSNormalization: over the trailing axes from ``axis`` (negative spellings
    too), ``epsilon`` (cast to the stash type), ``stash_type`` 1 (float32, the default) or
    the input's own type (10 for float16, 11 for float64 and float32 inputs), Scale
    unidirectionally broadcast to X (the normalized dims, their last dim, a single value,
    or a shape reaching into the leading dims). Scale has X's type.

    onnx.reference implements only stash_type 1, and ignores it (statistics in X's own
    type): its result is not consulted for other stash types."""

    onnx_op = "RMSNormalization"
    arity = 2
    min_opset = 23
    ranks = (1, 2, 3, 4, 5)
    dtypes = tuple((t, t) for t in dt.FLOATS)
    gaps: ClassVar[tuple] = (
        ("Scale of another float type than X (V != T)", "dlgate draws one float type per node"),
        ("bfloat16 inputs or stash_type 16", "dlgate has no bfloat16 dtype"),
    )

    def sample(self, ctx, ins):
        x = ins[0]
        stash = {dt.FLOAT16: (1, 1, 10), dt.FLOAT32: (1, 1, 11), dt.FLOAT64: (1, 11, 11)}[x.dtype]
        return {"axis": ctx.axis(x.rank), "epsilon": ctx.choice((f32(1e-5), f32(1e-6), ctx.uniform(1e-6, 1e-1))),
                "stash_type": ctx.choice(stash), "scale_form": ctx.choice(SCALE_FORMS)}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, _scale_shape(a["scale_form"], ins[0].shape, a["axis"]))

    def requires(self, ins, a):
        x, s = ins[0].shape, ins[1].shape
        r = len(x)
        if r < 1 or not -r <= a["axis"] < r or len(s) > r:
            return [False]
        return [sym.Or(d == 1, d == e) for d, e in zip(s, x[r - len(s):])]

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        a = self.sample(ctx, [out])
        return [out, TensorType(out.dtype, _scale_shape(a["scale_form"], out.shape, a["axis"]))], a

    def onnx_attrs(self, a, b):
        return {"axis": b.opt(a["axis"], -1), "epsilon": b.opt(a["epsilon"], f32(1e-5)),
                "stash_type": b.opt(a["stash_type"], 1)}

    def torch(self, a, x, scale):
        return rms_norm(x, scale, a["axis"], a["epsilon"], a["stash_type"])

    def reference_defect(self, a, ins, opset):
        if a["stash_type"] != 1:
            return "onnx.reference's RMSNormalization raises NotImplementedError for stash_type != 1"
        if ins[0].dtype == dt.FLOAT64:
            return "onnx.reference computes float64 statistics in float64, not in the float32 stash_type 1 names"
        return None

    def _n(self, a, x: TensorType) -> int:
        return math.prod(x.shape[a["axis"] % x.rank:])

    def value_range(self, a, ranges, ins):
        z = _rms_bound(self._n(a, ins[0]))
        return [mul_bounds(ranges[1], (-z, z))]


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


def rotary_bounds(rx: tuple, rc: tuple, rs: tuple) -> tuple:
    """Bounds of ``c * x1 -+ s * x2`` (and of x itself, for the part not rotated)."""
    cx = mul_bounds(rc, rx)
    sx = mul_bounds(rs, rx)
    neg = (-sx[1], -sx[0])
    return _hull(plus_bounds(cx, neg), plus_bounds(sx, cx), rx)


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
    gaps: ClassVar[tuple] = (
        ("caches broadcast over the batch, (1, seq, rot/2)", "not allowed by the text; onnxruntime rejects it"),
        ("position_ids as a graph tensor", "values out of [0, positions) are undefined: they are constants"),
        ("caches with fewer rows than the sequence length (with position_ids in range)",
         "onnxruntime 1.32 refuses them: 'Updating cos_cache and sin_cache in RotaryEmbedding is not "
         "currently supported'"),
    )

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

    def backward(self, ctx, out):
        if out.dtype not in (dt.FLOAT32, dt.FLOAT16) or out.rank not in self.ranks:
            return None
        a = self._attrs(ctx, out)
        return [out] + [TensorType(out.dtype, self._cache(out, a))] * (self.arity - 1), a

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

    def value_range(self, a, ranges, ins):
        return [rotary_bounds(ranges[0], ranges[1], ranges[2])]


def rope_cache(positions: int, half: int, theta: float, dtype: str) -> tuple:
    """cos and sin of ``p * theta ** (-2i / rot)`` for p < positions, i < half, computed in
    float64 and rounded to 6 decimals (so the bytes do not depend on the CPU's libm)."""
    inv = theta ** (-np.arange(half, dtype=np.float64) / half)
    ang = np.arange(positions, dtype=np.float64)[:, None] * inv[None, :]
    return (np.round(np.cos(ang), 6).astype(dtype), np.round(np.sin(ang), 6).astype(dtype))


class RotaryEmbeddingConstCache(RotaryEmbedding):
    """RotaryEmbedding with real cos/sin caches as constants (theta 10000 or 500000 and
    others), indexed by constant position ids, as exported language models carry them."""

    name = "RotaryEmbeddingConstCache"
    arity = 1
    dtypes = tuple((t,) for t in (dt.FLOAT32, dt.FLOAT16))

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

    def requires(self, ins, a):
        return super().requires(ins, a) + [ins[0].dtype == a["dtype"], self._cache(ins[0], a)[-1] == a["half"]]

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
# Swish (24), SwiGLU (28)
# =========================================================================================
#: x * sigmoid(x) is smallest at x = -1.27846 (-0.278465)
SILU_MIN_X, SILU_MIN = -1.2784645, -0.27846454


def swish(x, alpha: float):
    """The function body: ``X * Sigmoid(CastLike(alpha, X) * X)``, node by node."""
    t = x.dtype
    al = _as(alpha, t)
    ax = (_w(x) * al).to(t)
    return (_w(x) * torch.sigmoid(_w(ax)).to(t)).to(t)


def swish_bounds(alpha: float, r: tuple) -> tuple:
    """Bounds of x * sigmoid(alpha x) (alpha > 0) over ``r``: falls to its minimum at
    x = SILU_MIN_X / alpha, then rises; f(-inf) = 0, f(inf) = inf."""
    lo, hi = r
    xm, fmin = SILU_MIN_X / alpha, SILU_MIN / alpha * (1 + 1e-3)

    def f(v):
        if v == -INF:
            return 0.0
        if v == INF:
            return INF
        return v / (1 + math.exp(min(-alpha * v, 700.0)))

    ends = (f(lo), f(hi))
    low = fmin if lo <= xm <= hi else min(ends)
    return (low - abs(low) * 1e-3, max(ends) + abs(max(ends)) * 1e-3)


class Swish(OpSpec):
    """``x * sigmoid(alpha * x)`` (opset 24); ``alpha`` > 0, float16-representable for
    float16 inputs (the function body casts it to X's type)."""

    onnx_op = "Swish"
    min_opset = 24
    elementwise = True
    dtypes = tuple((t,) for t in dt.FLOATS)
    gaps: ClassVar[tuple] = (("alpha <= 0", "a mirrored curve; not a regime exporters write"),)

    def sample(self, ctx, ins):
        al = 1.0 if ctx.coin(0.4) else ctx.choice((1.702, ctx.uniform(0.1, 3.0)))
        if ins[0].dtype == dt.FLOAT16:
            al = float(np.float16(al))
        return {"alpha": f32(al)}

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS:
            return None
        return [out], self.sample(ctx, [out])

    def onnx_attrs(self, a, b):
        return {"alpha": b.opt(a["alpha"], 1.0)}

    def torch(self, a, x):
        return swish(x, a.get("alpha", 1.0))

    def value_range(self, a, ranges, ins):
        return [swish_bounds(a.get("alpha", 1.0), ranges[0])]


class SwiGLU(OpSpec):
    """``Swish_alpha(A) * B`` (opset 28): A and B of one shape, no broadcasting."""

    onnx_op = "SwiGLU"
    arity = 2
    min_opset = 28
    dtypes = tuple((t, t) for t in dt.FLOATS)

    def sample(self, ctx, ins):
        return Swish.sample(self, ctx, ins)

    def requires(self, ins, a):
        return _dims_ok(ins[1].shape, ins[0].shape)

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS:
            return None
        return [out, out], self.sample(ctx, [out])

    def onnx_attrs(self, a, b):
        return {"alpha": b.opt(a["alpha"], 1.0)}

    def torch(self, a, x, y):
        return (_w(swish(x, a["alpha"])) * _w(y)).to(x.dtype)

    def value_range(self, a, ranges, ins):
        return [mul_bounds(swish_bounds(a["alpha"], ranges[0]), ranges[1])]


# =========================================================================================
# LinearAttention (opset 27)
# =========================================================================================
def linear_attention(a: dict, q, k, v, state=None, decay=None, beta=None):
    """onnx.reference's recurrence (the text's "equivalent to running the recurrent update
    sequentially"), in float32 whatever the input type, the output cast to Q's type and
    the present state to the past state's (or Q's)."""
    t = q.dtype
    wt = torch.float32 if t in (torch.float16, torch.float32) else t
    hq, hkv = a["heads"], a["kv_heads"]
    b, n = q.shape[0], q.shape[1]
    dk, dv = q.shape[-1] // hq, v.shape[-1] // hkv

    def unpack(x, h):  # (B, T, H*D) -> (B, H, T, D)
        return x.reshape(b, n, h, -1).transpose(1, 2).to(wt)

    q4, k4, v4 = unpack(q, hq), unpack(k, hkv), unpack(v, hkv)
    st = t if state is None else state.dtype
    s = torch.zeros(b, hkv, dk, dv, dtype=wt) if state is None else state.to(wt)
    if decay is not None:
        decay = unpack(decay, hkv)  # (B, Hkv, T, 1) per head, (B, Hkv, T, dk) per key dim
    if beta is not None:
        beta = beta.reshape(b, n, beta.shape[-1], 1).transpose(1, 2).to(wt)
    scale = a.get("scale") or 1.0 / math.sqrt(dk)
    outs = []
    for i in range(n):
        qt, kt, vt = q4[:, :, i], k4[:, :, i], v4[:, :, i]
        if decay is not None:
            s = s * torch.exp(decay[:, :, i]).unsqueeze(-1)
        if beta is not None:
            vt = beta[:, :, i] * (vt - torch.einsum("bhdm,bhd->bhm", s, kt))
        s = s + kt.unsqueeze(-1) * vt.unsqueeze(-2)
        sr = s.repeat_interleave(hq // hkv, dim=1) if hq != hkv else s
        outs.append(scale * torch.einsum("bhd,bhdm->bhm", qt, sr))
    y = torch.stack(outs, dim=2).transpose(1, 2).reshape(b, n, hq * dv)
    return y.to(t), s.to(st)


class LinearAttention(OpSpec):
    """ONNX LinearAttention (opset 27), ``update_rule`` "linear": S_t = S_{t-1} + k_t v_t^T,
    o_t = scale * q_t^T S_t over 3-D packed (batch, T, heads * d) inputs, grouped-query heads
    (kv head h serving q heads h*g..h*g+g-1), ``scale`` 0 (1/sqrt(d_k)) or given,
    ``chunk_size`` a tuning hint. Outputs the (batch, T, q_heads * d_v) result and the
    (batch, kv_heads, d_k, d_v) state, computed in float32 (as onnx.reference does) and cast.

    The subclasses add past_state, decay (gated, in log space: kept <= 0, a decay) and beta
    (delta, kept in [0, 1], with beta * |k|^2 <= 1 so the delta rule contracts: the text
    says the keys should be L2-normalized)."""

    onnx_op = "LinearAttention"
    arity = 3
    n_outputs = 2
    min_opset = 27
    ranks = (3,)
    symbolic_ok = False
    dtypes = tuple((t,) * 3 for t in (dt.FLOAT32, dt.FLOAT16))
    rule: ClassVar[str] = "linear"
    keys: ClassVar[str] = "qkv"  # s: past_state, d: decay, b: beta
    gaps: ClassVar[tuple] = (
        ("decay > 0, beta outside [0, 1], beta * |k|^2 > 1",
         "growing states: implementations (chunked or sequential) then differ by rounding beyond tolerance"),
        ("a state type S other than T", "dlgate draws one float type per node"),
    )

    def sample(self, ctx, ins):
        q = ins[0]
        heads = ctx.divisor(q.shape[2], MAX_HEADS)
        a = {"heads": heads, "kv_heads": heads if ctx.coin(0.4) else ctx.divisor(heads),
             "v_head": ctx.dim(8), "scale": None if ctx.coin(0.6) else ctx.uniform(0.05, 1.0),
             "chunk_size": None if ctx.coin(0.6) else ctx.choice((1, 2, 64)),
             "decay_form": ctx.choice(("head", "key")), "beta_form": ctx.choice(("head", "one"))}
        return a

    def _shapes(self, q: tuple, a: dict) -> dict:
        b, n, hidden = q
        hkv, dk, dv = a["kv_heads"], hidden // a["heads"], a["v_head"]
        return {"q": tuple(q), "k": (b, n, hkv * dk), "v": (b, n, hkv * dv), "s": (b, hkv, dk, dv),
                "d": (b, n, hkv if a["decay_form"] == "head" else hkv * dk),
                "b": (b, n, hkv if a["beta_form"] == "head" else 1)}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self._shapes(ins[0].shape, a)[self.keys[i]])

    def requires(self, ins, a):
        q = ins[0]
        if q.rank != 3 or q.shape[2] % a["heads"] or a["heads"] % a["kv_heads"]:
            return [False]
        want = self._shapes(q.shape, a)
        out = [q.shape[1] <= MAX_SEQ, q.shape[2] // a["heads"] <= MAX_HEAD]
        for key, t in zip(self.keys, ins):
            out += _dims_ok(t.shape, want[key])
        return out

    def infer(self, ins, a):
        q = ins[0]
        b, n, hidden = q.shape
        sh = self._shapes(q.shape, a)
        return [TensorType(q.dtype, (b, n, a["heads"] * a["v_head"])), TensorType(q.dtype, sh["s"])]

    def backward(self, ctx, out):
        if out.dtype not in (dt.FLOAT32, dt.FLOAT16) or out.rank != 3:
            return None
        b, n, hidden = out.shape
        heads = ctx.divisor(hidden, MAX_HEADS)
        q = TensorType(out.dtype, (b, n, heads * ctx.dim(8)))
        a = self.sample(ctx, [q])
        a.update(heads=heads, kv_heads=heads if ctx.coin(0.4) else ctx.divisor(heads), v_head=hidden // heads)
        sh = self._shapes(q.shape, a)
        return [TensorType(out.dtype, sh[key]) for key in self.keys], a

    def onnx(self, b, a, xs, ys):
        x = dict(zip(self.keys, xs))
        ins = [x["q"], x["k"], x["v"], x.get("s", ""), x.get("d", ""), x.get("b", "")]
        while ins[-1] == "":
            ins.pop()
        attrs = {"q_num_heads": a["heads"], "kv_num_heads": a["kv_heads"], "update_rule": self.rule,
                 "scale": a["scale"], "chunk_size": a["chunk_size"]}
        if self.rule == "gated_delta" and b.rng.random() < 0.5:
            del attrs["update_rule"]  # the default
        b.node(self.onnx_op, ins, ys, **attrs)

    def torch(self, a, *xs):
        x = dict(zip(self.keys, xs))
        return linear_attention(a, x["q"], x["k"], x["v"], x.get("s"), x.get("d"), x.get("b"))

    # -- the restricted domains of decay and beta ----------------------------------------------
    restricted = True

    def input_domain(self, a, i):
        key = self.keys[i]
        return (-INF, 0.0) if key == "d" else (0.0, 1.0) if key == "b" else None

    open_domain = False

    def input_range(self, a, i):
        key = self.keys[i]
        if key == "d":
            return (-1.0, 0.0)
        if key == "b":
            return (0.0, 1.0)
        if key == "k" and "b" in self.keys:
            return (-0.25, 0.25)  # |k|^2 <= d_k / 16: beta * |k|^2 <= 1 for d_k <= 16
        return None

    def losses(self, a, *xs):
        x = dict(zip(self.keys, xs))
        out = []
        if "d" in x:
            out.append(L.le0(x["d"]))
        if "b" in x:
            beta, k = x["b"].double(), x["k"].double()
            b, n = k.shape[0], k.shape[1]
            k2 = (k.reshape(b, n, a["kv_heads"], -1) ** 2).sum(-1)  # (B, T, Hkv)
            out += [L.ge0(beta), L.le0(beta - 1), L.le0(beta * k2 - 1)]
        return out


class LinearAttentionGated(LinearAttention):
    """LinearAttention, ``update_rule`` "gated": the state decays by exp(decay) first
    (decay per kv head, or per key dimension)."""

    name = "LinearAttentionGated"
    arity = 4
    rule = "gated"
    keys = "qkvd"
    dtypes = tuple((t,) * 4 for t in (dt.FLOAT32, dt.FLOAT16))


class LinearAttentionDelta(LinearAttention):
    """LinearAttention, ``update_rule`` "delta": v_t replaced by beta_t * (v_t - S^T k_t)
    (beta per kv head, or one for all)."""

    name = "LinearAttentionDelta"
    arity = 4
    rule = "delta"
    keys = "qkvb"
    dtypes = tuple((t,) * 4 for t in (dt.FLOAT32, dt.FLOAT16))


class LinearAttentionGatedDelta(LinearAttention):
    """LinearAttention, ``update_rule`` "gated_delta" (the default, sometimes left
    unwritten) with every input: a past state, decay and beta."""

    name = "LinearAttentionGatedDelta"
    arity = 6
    rule = "gated_delta"
    keys = "qkvsdb"
    dtypes = tuple((t,) * 6 for t in (dt.FLOAT32, dt.FLOAT16))


# =========================================================================================
# Exporter idioms (opset 13+): several ONNX nodes per spec
# =========================================================================================
def _const(v, dtype: str) -> float:
    """A scalar constant as the lowering writes it (``np.asarray(v, dtype)``), as a float."""
    return float(np.asarray(v, dtype=dt.NUMPY[dtype]))


#: Large negative fills exporters write for masked scores: HF's -1e4 (older models), the
#: float32 lowest (torch.finfo(torch.float32).min) and the type's own lowest value.
FILLS = ("-1e4", "f32min", "lowest")


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
    gaps: ClassVar[tuple] = (
        ("Where(mask, scores, -inf) with a graph mask", "a fully masked row is NaN, which implementations "
                                                        "may well spell differently"),
        ("grouped-query heads (Expand/Reshape of K and V)", "not written as an idiom yet"),
    )

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

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        q = TensorType(out.dtype, tuple(out.shape[:-1]) + (ctx.dim(MAX_HEAD),))
        a = self._attrs(ctx, q, dv=out.shape[-1])
        sh = self._shapes(q.shape, a)
        return [TensorType(dt.BOOL if k == "m" and self.mask_input == "where" else out.dtype, sh[k])
                for k in self.keys], a

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
    keys = "qkvm"
    mask_input = "add"
    dtypes = tuple((t,) * 4 for t in dt.FLOATS)


class AttentionIdiomWhereMask(AttentionIdiom):
    """AttentionIdiom with a boolean graph mask: ``Where(mask, scores, fill)`` (finite fill,
    so a fully masked row is uniform). The mask comes first: onnx_op is Where."""

    name = "AttentionIdiomWhereMask"
    onnx_op = "Where"
    onnx_ops: ClassVar[tuple] = ("MatMul", "Transpose", "Mul", "Div", "Add", "Softmax")
    arity = 4
    keys = "mqkv"
    mask_input = "where"
    ranks = (2, 3, 4)
    dtypes = tuple((dt.BOOL, t, t, t) for t in dt.FLOATS)

    def sample(self, ctx, ins):
        m = ins[0].shape
        rank = ctx.choice((3, 4)) if len(m) <= 2 else len(m)
        lead = tuple(m[:-2])
        bdims = tuple(1 for _ in range(rank - 2 - len(lead))) + lead
        bdims = tuple(d if d != 1 or ctx.coin() else ctx.dim(4) for d in bdims)
        sq = m[-2] if m[-2] != 1 else ctx.dim(MAX_SEQ)
        q = TensorType(ctx.choice([t for t in dt.FLOATS if t in ctx.dtypes] or [dt.FLOAT32]),
                       bdims + (sq, ctx.dim(MAX_HEAD)))
        a = self._attrs(ctx, q, total=m[-1])
        a["mask_shape"] = list(m)
        a["q_shape"] = list(q.shape)
        return a

    def _q(self, ins):
        return ins[1]

    def input_type(self, ctx, i, ins, a, dtype):
        sh = self._shapes(tuple(a["q_shape"]), a)
        return TensorType(dtype, sh[self.keys[i]])

    def requires(self, ins, a):
        return super().requires(ins, a) + [ins[1].dtype == a["dtype"]]

    def backward(self, ctx, out):
        res = super().backward(ctx, out)
        if res is None:
            return None
        ins, a = res
        a["q_shape"] = list(ins[1].shape)
        return ins, a


class AttentionIdiomPast(AttentionIdiom):
    """AttentionIdiom with a key/value cache: ``Concat(past, new, axis=-2)`` for K and V
    (also outputs: the present cache), causal masks aligned bottom-right."""

    name = "AttentionIdiomPast"
    onnx_ops: ClassVar[tuple] = ("Concat", "Transpose", "Mul", "Div", "Where", "Add", "Softmax")
    arity = 5
    n_outputs = 3
    keys = "qkvpw"
    past = True
    dtypes = tuple((t,) * 5 for t in dt.FLOATS)


class RMSNormIdiom(OpSpec):
    """RMSNorm as exporters write it (Hugging Face's LlamaRMSNorm): optionally Cast to
    float32 (float16 inputs), ``Pow(x, 2)`` or ``Mul(x, x)``, ``ReduceMean`` over the last
    one or two axes (keepdims; axes an attribute before opset 18, an input from 18),
    ``Add`` eps, ``Sqrt``, then ``Reciprocal`` and Mul, ``Div(1, .)`` and Mul, or ``Div(x,
    .)``; Cast back, ``Mul`` by the weight (the normalized dims' shape)."""

    name = "RMSNormIdiom"
    onnx_op = "Mul"  # the weight's; ReduceMean's schema (axes an int64 input from 18) would not match
    onnx_ops: ClassVar[tuple] = ("Cast", "Pow", "ReduceMean", "Add", "Sqrt", "Reciprocal", "Div")
    arity = 2
    ranks = (1, 2, 3, 4)
    dtypes = tuple((t, t) for t in dt.FLOATS)

    def sample(self, ctx, ins):
        x = ins[0]
        return {"axes": 1 if x.rank < 2 or ctx.coin(0.7) else 2, "square": ctx.choice(("pow", "mul")),
                "inv": ctx.choice(("recip", "div1", "div")), "cast": x.dtype == dt.FLOAT16 and ctx.coin(0.7),
                "epsilon": ctx.choice((f32(1e-6), f32(1e-5), ctx.uniform(1e-6, 1e-2))), "dtype": x.dtype}

    def _wshape(self, x, a):
        return tuple(x[len(x) - a["axes"]:])

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self._wshape(ins[0].shape, a))

    def requires(self, ins, a):
        x = ins[0]
        return [x.rank >= a["axes"], ins[0].dtype == a["dtype"]] + _dims_ok(ins[1].shape, self._wshape(x.shape, a))

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        a = self.sample(ctx, [out])
        return [out, TensorType(out.dtype, self._wshape(out.shape, a))], a

    def onnx(self, b, a, xs, ys):
        x, w = xs
        t = a["dtype"]
        ct = dt.FLOAT32 if a["cast"] else t
        npc = dt.NUMPY[ct]
        if a["cast"]:
            x = b.node("Cast", [x], 1, to=dt.ONNX[dt.FLOAT32])[0]
        if a["square"] == "pow":
            sq = b.node("Pow", [x, b.const(np.asarray(2.0, npc), hint="two")], 1)[0]
        else:
            sq = b.node("Mul", [x, x], 1)[0]
        axes = list(range(-a["axes"], 0))
        if b.opset >= 18:
            var = b.node("ReduceMean", [sq, b.ints(axes)], 1, keepdims=1)[0]
        else:
            var = b.node("ReduceMean", [sq], 1, axes=axes, keepdims=1)[0]
        ve = b.node("Add", [var, b.const(np.asarray(a["epsilon"], npc), hint="eps")], 1)[0]
        r = b.node("Sqrt", [ve], 1)[0]
        if a["inv"] == "div":
            h = b.node("Div", [x, r], 1)[0]
        else:
            inv = (b.node("Reciprocal", [r], 1)[0] if a["inv"] == "recip"
                   else b.node("Div", [b.const(np.asarray(1.0, npc), hint="one"), r], 1)[0])
            h = b.node("Mul", [x, inv], 1)[0]
        if a["cast"]:
            h = b.node("Cast", [h], 1, to=dt.ONNX[t])[0]
        b.node("Mul", [w, h], ys)

    def torch(self, a, x, w):
        t = x.dtype
        xc = x.float() if a["cast"] else x
        c = xc.dtype
        eps = _const(a["epsilon"], dt.FLOAT32 if a["cast"] else a["dtype"])
        sq = (_w(xc) * _w(xc)).to(c)
        var = _w(sq).mean(dim=tuple(range(-a["axes"], 0)), keepdim=True).to(c)
        r = (_w(var) + eps).to(c).sqrt() if c != torch.float16 else (_w(var) + eps).to(c).float().sqrt().to(c)
        if a["inv"] == "div":
            h = (_w(xc) / _w(r)).to(c)
        else:
            inv = (1.0 / _w(r)).to(c)
            h = (_w(xc) * _w(inv)).to(c)
        h = h.to(t)
        return (_w(w) * _w(h)).to(t)

    def value_range(self, a, ranges, ins):
        n = math.prod(ins[0].shape[ins[0].rank - a["axes"]:])
        z = _rms_bound(n) * (1 + 2.0 ** -8)
        return [mul_bounds(ranges[1], (-z, z))]


class GeluErfIdiom(OpSpec):
    """Gelu as torch.onnx writes it before opset 20: ``Mul(Mul(x, Add(Erf(Div(x, sqrt(2))),
    1)), 0.5)``, each node rounded to the input type."""

    name = "GeluErfIdiom"
    onnx_op = "Erf"
    onnx_ops: ClassVar[tuple] = ("Div", "Add", "Mul")
    elementwise = True
    valley = (-0.8, -0.7, -0.1701)
    out_range = (-0.1701, INF)
    dtypes = tuple((t,) for t in dt.FLOATS)

    def sample(self, ctx, ins):
        return {"dtype": ins[0].dtype}

    def infer(self, ins, a):
        return [ins[0]]

    def requires(self, ins, a):
        return [ins[0].dtype == a["dtype"]]

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS:
            return None
        return [out], self.sample(ctx, [out])

    def reference_defect(self, a, ins, opset):
        if ins[0].dtype == dt.FLOAT64:
            return "onnx.reference's Erf returns float32 values (np.vectorize(math.erf, otypes=['f']))"
        return None

    def onnx(self, b, a, xs, ys):
        npt = dt.NUMPY[a["dtype"]]
        x = xs[0]
        d = b.node("Div", [x, b.const(np.asarray(math.sqrt(2.0), npt), hint="sqrt2")], 1)[0]
        e = b.node("Erf", [d], 1)[0]
        p = b.node("Add", [e, b.const(np.asarray(1.0, npt), hint="one")], 1)[0]
        m = b.node("Mul", [x, p], 1)[0]
        b.node("Mul", [m, b.const(np.asarray(0.5, npt), hint="half")], ys)

    def _c(self, a, v, t):
        """A constant of the lowering, rounded to the model's type (kept exact when a
        float16 model is evaluated in float64)."""
        tn = a.get("dtype") or str(t).replace("torch.", "")
        return _const(v, tn) if t != torch.float64 or tn == dt.FLOAT64 else v

    def torch(self, a, x):
        t = x.dtype
        s2 = self._c(a, math.sqrt(2.0), t)
        d = (_w(x) / s2).to(t)
        e = torch.erf(_w(d)).to(t)
        p = (_w(e) + 1.0).to(t)
        m = (_w(x) * _w(p)).to(t)
        return (_w(m) * 0.5).to(t)


class GeluTanhIdiom(GeluErfIdiom):
    """Gelu's tanh approximation as torch.onnx writes it: ``0.5 * (x * (1 + Tanh(beta * (x
    + kappa * x^3))))`` with x^3 as ``x * (x * x)`` or ``Pow(x, 3)`` (Hugging Face's
    NewGELU), beta = sqrt(2 / pi), kappa = 0.044715."""

    name = "GeluTanhIdiom"
    onnx_op = "Tanh"
    onnx_ops: ClassVar[tuple] = ("Mul", "Add", "Pow")
    valley = (-0.8, -0.7, -0.1701)

    def reference_defect(self, a, ins, opset):
        return None

    def sample(self, ctx, ins):
        return {"dtype": ins[0].dtype, "cube": ctx.choice(("mul", "pow"))}

    def onnx(self, b, a, xs, ys):
        npt = dt.NUMPY[a["dtype"]]
        x = xs[0]

        def c(v, hint):
            return b.const(np.asarray(v, npt), hint=hint)

        if a["cube"] == "pow":
            cube = b.node("Pow", [x, c(3.0, "three")], 1)[0]
        else:
            cube = b.node("Mul", [x, b.node("Mul", [x, x], 1)[0]], 1)[0]
        kc = b.node("Mul", [c(0.044715, "kappa"), cube], 1)[0]
        inner = b.node("Mul", [c(math.sqrt(2 / math.pi), "beta"), b.node("Add", [x, kc], 1)[0]], 1)[0]
        th = b.node("Tanh", [inner], 1)[0]
        one = b.node("Add", [c(1.0, "one"), th], 1)[0]
        b.node("Mul", [c(0.5, "half"), b.node("Mul", [x, one], 1)[0]], ys)

    def torch(self, a, x):
        t = x.dtype

        def r(y):
            return y.to(t)

        if a.get("cube") == "pow":
            cube = r(torch.pow(_w(x), 3.0))
        else:
            cube = r(_w(x) * _w(r(_w(x) * _w(x))))
        kc = r(self._c(a, 0.044715, t) * _w(cube))
        inner = r(self._c(a, math.sqrt(2 / math.pi), t) * _w(r(_w(x) + _w(kc))))
        th = r(torch.tanh(_w(inner)))
        one = r(1.0 + _w(th))
        return r(0.5 * _w(r(_w(x) * _w(one))))


class SiluIdiom(GeluErfIdiom):
    """SiLU as exporters write it: ``Mul(x, Sigmoid(x))``."""

    name = "SiluIdiom"
    onnx_op = "Sigmoid"
    onnx_ops: ClassVar[tuple] = ("Mul",)
    valley = (-1.3, -1.25, SILU_MIN * (1 + 1e-3))
    out_range = (SILU_MIN * (1 + 1e-3), INF)

    def reference_defect(self, a, ins, opset):
        return None

    def onnx(self, b, a, xs, ys):
        b.node("Mul", [xs[0], b.node("Sigmoid", [xs[0]], 1)[0]], ys)

    def torch(self, a, x):
        return (_w(x) * _w(torch.sigmoid(_w(x)).to(x.dtype))).to(x.dtype)


class RotaryIdiom(OpSpec):
    """Rotary embeddings as exporters write them: Hugging Face's ``x * cos + rotate_half(x)
    * sin`` with rotate_half = ``Concat(Neg(Slice(x, half:)), Slice(x, :half))``, or GPT-J's
    interleaved pairs (strided Slices, Neg, Unsqueeze, Concat, Reshape); optionally on the
    first ``rot`` values of the head only (Slice, then Concat with the rest). cos and sin
    are graph tensors broadcast to the rotated part: (seq, rot), (batch, 1, seq, rot) /
    (batch, seq, rot), or with leading 1s."""

    name = "RotaryIdiom"
    onnx_op = "Neg"
    onnx_ops: ClassVar[tuple] = ("Slice", "Concat", "Mul", "Add", "Unsqueeze", "Reshape")
    arity = 3
    ranks = (3, 4)
    symbolic_ok = False
    dtypes = tuple((t,) * 3 for t in dt.FLOATS)

    def _attrs(self, ctx, x: TensorType):
        head = x.shape[-1]
        rot = head if ctx.coin(0.6) or head < 4 else 2 * ctx.int(1, head // 2)
        return {"rot": rot, "form": ctx.choice(("half", "interleaved")), "cache": ctx.choice(("sd", "full", "ones")),
                "head": head, "shape": list(x.shape)}

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0])

    def _cshape(self, x: tuple, a) -> tuple:
        r, s, rot = len(x), x[-2], a["rot"]
        if a["cache"] == "sd":
            return (s, rot)
        if a["cache"] == "ones":
            return (1,) * (r - 2) + (s, rot)
        return (x[0],) + (1,) * (r - 3) + (s, rot)

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self._cshape(ins[0].shape, a))

    def requires(self, ins, a):
        x = ins[0]
        if x.rank not in (3, 4):
            return [False]
        out = [x.shape[-1] % 2 == 0, a["rot"] % 2 == 0, a["rot"] <= x.shape[-1]] + _dims_ok(x.shape, a["shape"])
        for t in ins[1:]:
            out += _dims_ok(t.shape, self._cshape(x.shape, a))
        return out

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks or out.shape[-1] % 2:
            return None
        a = self._attrs(ctx, out)
        return [out] + [TensorType(out.dtype, self._cshape(out.shape, a))] * 2, a

    def onnx(self, b, a, xs, ys):
        x, cos, sin = xs
        rot, head = a["rot"], a["head"]

        def sl(v, start, end, step=None):
            ins = [v, b.ints([start]), b.ints([end]), b.ints([-1])] + ([b.ints([step])] if step else [])
            return b.node("Slice", ins, 1)[0]

        xr, xp = x, None
        if rot < head:
            xr, xp = sl(x, 0, rot), sl(x, rot, head)
        if a["form"] == "half":
            x1, x2 = sl(xr, 0, rot // 2), sl(xr, rot // 2, rot)
            rh = b.node("Concat", [b.node("Neg", [x2], 1)[0], x1], 1, axis=-1)[0]
        else:
            x1, x2 = sl(xr, 0, rot, 2), sl(xr, 1, rot, 2)
            n2 = b.node("Neg", [x2], 1)[0]
            u1 = b.node("Unsqueeze", [n2, b.ints([-1])], 1)[0]
            u2 = b.node("Unsqueeze", [x1, b.ints([-1])], 1)[0]
            st = b.node("Concat", [u1, u2], 1, axis=-1)[0]
            rh = b.node("Reshape", [st, b.ints(list(a["shape"][:-1]) + [rot])], 1)[0]
        m1 = b.node("Mul", [xr, cos], 1)[0]
        m2 = b.node("Mul", [rh, sin], 1)[0]
        if xp is None:
            b.node("Add", [m1, m2], ys)
        else:
            yr = b.node("Add", [m1, m2], 1)[0]
            b.node("Concat", [yr, xp], ys, axis=-1)

    def torch(self, a, x, cos, sin):
        t, rot = x.dtype, a["rot"]
        xr, xp = x[..., :rot], x[..., rot:]
        if a["form"] == "half":
            rh = torch.cat([-xr[..., rot // 2:], xr[..., :rot // 2]], dim=-1)
        else:
            rh = torch.stack([-xr[..., 1::2], xr[..., 0::2]], dim=-1).reshape(xr.shape)
        y = (_w((_w(xr) * _w(cos)).to(t)) + _w((_w(rh) * _w(sin)).to(t))).to(t)
        return y if rot == x.shape[-1] else torch.cat([y, xp], dim=-1)

    def value_range(self, a, ranges, ins):
        # rotate_half(x) holds -x2 as well as x1: each rotated value is x * cos -+ x' * sin
        return [rotary_bounds(*ranges)]


class MatMulTransposed(OpSpec):
    """``MatMul`` with Transpose (perm swapping the last two axes) on either operand, as
    exporters write ``x @ w.T`` and ``a.transpose(-1, -2) @ b``: A (..., M, K) or its
    transpose (..., K, M); B (..., N, K) transposed, or (..., K, N); B 2-D (a weight) or
    with A's batch dims."""

    name = "MatMulTransposed"
    onnx_op = "MatMul"
    onnx_ops: ClassVar[tuple] = ("Transpose",)
    arity = 2
    ranks = (2, 3, 4)
    symbolic_ok = False
    dtypes = tuple((t, t) for t in dt.FLOATS)

    def sample(self, ctx, ins):
        ta = ctx.coin(0.4)
        a = {"trans_a": int(ta), "trans_b": int(not ta or ctx.coin()), "n": ctx.dim(MAX_HEAD),
             "b_batch": int(ins[0].rank > 2 and ctx.coin())}
        a.update(rank_a=ins[0].rank, rank_b=len(self._bshape(ins[0].shape, a)))
        return a

    def _k(self, a, x):
        return x[-2] if a["trans_a"] else x[-1]

    def _bshape(self, x: tuple, a) -> tuple:
        k, n = self._k(a, x), a["n"]
        last = (n, k) if a["trans_b"] else (k, n)
        return (tuple(x[:-2]) if a["b_batch"] else ()) + last

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self._bshape(ins[0].shape, a))

    def requires(self, ins, a):
        x = ins[0]
        out = _dims_ok(ins[1].shape, self._bshape(x.shape, a)) + [x.rank == a["rank_a"]]
        if x.dtype == dt.FLOAT16:
            out.append(self._k(a, x.shape) <= MAX_HEAD)
        return out

    def infer(self, ins, a):
        x = ins[0].shape
        m = x[-1] if a["trans_a"] else x[-2]
        return [TensorType(ins[0].dtype, tuple(x[:-2]) + (m, a["n"]))]

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        *batch, m, n = out.shape
        k = ctx.dim(MAX_HEAD)
        ta = ctx.coin(0.4)
        a = {"trans_a": int(ta), "trans_b": int(not ta or ctx.coin()), "n": n, "b_batch": int(bool(batch) and ctx.coin())}
        x = TensorType(out.dtype, tuple(batch) + ((k, m) if ta else (m, k)))
        w = TensorType(out.dtype, self._bshape(x.shape, a))
        a.update(rank_a=x.rank, rank_b=w.rank)
        return [x, w], a

    def onnx(self, b, a, xs, ys):
        x, w = xs
        if a["trans_a"]:
            r = a["rank_a"]
            x = b.node("Transpose", [x], 1, perm=list(range(r - 2)) + [r - 1, r - 2])[0]
        if a["trans_b"]:
            r = a["rank_b"]
            w = b.node("Transpose", [w], 1, perm=list(range(r - 2)) + [r - 1, r - 2])[0]
        b.node("MatMul", [x, w], ys)

    def torch(self, a, x, w):
        if a["trans_a"]:
            x = x.transpose(-1, -2)
        if a["trans_b"]:
            w = w.transpose(-1, -2)
        return _mm(x, w)

    def value_range(self, a, ranges, ins):
        from dlgate.spec.linalg import product_bounds, sum_bounds

        k = self._k(a, ins[0].shape)
        return [sum_bounds(product_bounds(ranges[0], ranges[1]), k, k)]


class LinearTransposed(OpSpec):
    """A linear layer as exporters write it: ``Add(MatMul(x, Transpose(W)), bias)`` with W
    (out, in) and bias (out,)."""

    name = "LinearTransposed"
    onnx_op = "MatMul"
    onnx_ops: ClassVar[tuple] = ("Transpose", "Add")
    arity = 3
    ranks = (2, 3, 4)
    dtypes = tuple((t,) * 3 for t in dt.FLOATS)

    def sample(self, ctx, ins):
        return {"n": ctx.dim(MAX_HEAD)}

    def input_type(self, ctx, i, ins, a, dtype):
        k = ins[0].shape[-1]
        return TensorType(dtype, (a["n"], k) if i == 1 else (a["n"],))

    def requires(self, ins, a):
        x = ins[0]
        out = _dims_ok(ins[1].shape, (a["n"], x.shape[-1])) + _dims_ok(ins[2].shape, (a["n"],))
        if x.dtype == dt.FLOAT16:
            out.append(x.shape[-1] <= MAX_HEAD)
        return out

    def infer(self, ins, a):
        x = ins[0]
        return [TensorType(x.dtype, tuple(x.shape[:-1]) + (a["n"],))]

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        k, n = ctx.dim(MAX_HEAD), out.shape[-1]
        t = out.dtype
        return [TensorType(t, tuple(out.shape[:-1]) + (k,)), TensorType(t, (n, k)), TensorType(t, (n,))], {"n": n}

    def onnx(self, b, a, xs, ys):
        wt = b.node("Transpose", [xs[1]], 1, perm=[1, 0])[0]
        y = b.node("MatMul", [xs[0], wt], 1)[0]
        b.node("Add", [y, xs[2]], ys)

    def torch(self, a, x, w, bias):
        return (_w(_mm(x, w.t())) + _w(bias)).to(x.dtype)

    def value_range(self, a, ranges, ins):
        from dlgate.spec.linalg import product_bounds, sum_bounds

        k = ins[0].shape[-1]
        return [plus_bounds(sum_bounds(product_bounds(ranges[0], ranges[1]), k, k), ranges[2])]


# =========================================================================================
# TensorScatter (opset 24): the KV-cache update
# =========================================================================================
class TensorScatter(OpSpec):
    """``present_cache`` = ``past_cache`` with ``update`` written along the sequence ``axis``
    (any axis but the batch axis 0; -2 by default, spelled positively or negatively, or
    left to the default) at ``write_indices[b]`` for each batch entry b (a constant input,
    or omitted: zeros). Mode "linear" keeps ``write_indices[b] + sequence_length <=
    max_sequence_length``; mode "circular" wraps the positions modulo
    ``max_sequence_length`` (write indices up to twice it are drawn). Every dlgate dtype;
    the update's sequence length is 1 (a decode step), the whole cache (a prefill) or
    between.

    Not generated: negative write indices (the text does not define them; C++ ``%`` would
    keep them negative in circular mode)."""

    onnx_op = "TensorScatter"
    arity = 2
    min_opset = 24
    ranks = (2, 3, 4, 5)
    dtypes = tuple((t, t) for t in dt.ALL)
    symbolic_ok = False
    keeps_range = True  # every output value is a past or an update value
    keeps_integers = True
    gaps: ClassVar[tuple] = (
        ("negative write_indices", "undefined by the text (linear mode requires write_indices + sequence_length "
                                   "<= max_sequence_length; a negative index has no wrap-around rule in C++)"),
        ("linear mode writing past the cache's end", "the text forbids it (onnxruntime fails, onnx.reference "
                                                     "raises IndexError)"),
    )

    def sample(self, ctx, ins):
        x = ins[0]
        r = x.rank
        if r < 2:
            return {"axis": -2, "mode": "linear", "seq": 1, "write": None}
        ax = ctx.rng.randint(1, r - 1)
        spelled = ax - r if ctx.coin(0.4) else ax
        n = x.shape[ax]
        seq = ctx.choice((1, 1, n, ctx.rng.randint(1, n)))
        mode = ctx.choice(("linear", "circular"))
        write = None
        if ctx.coin(0.75):
            hi = n - seq if mode == "linear" else 2 * n - 1
            write = [ctx.rng.randint(0, hi) for _ in range(x.shape[0])]
        return {"axis": spelled, "mode": mode, "seq": seq, "write": write}

    def _update_shape(self, shape, a):
        ax = a["axis"] % len(shape)
        return tuple(a["seq"] if k == ax else d for k, d in enumerate(shape))

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self._update_shape(ins[0].shape, a))

    def requires(self, ins, a):
        x, u = ins
        r = x.rank
        if r < 2 or not (-r <= a["axis"] < r) or a["axis"] % r == 0:
            return [False]
        n, seq = x.shape[a["axis"] % r], a["seq"]
        ok = [1 <= seq, seq <= n] + _dims_ok(u.shape, self._update_shape(x.shape, a))
        if a["write"] is not None:
            w = a["write"]
            ok += [len(w) == x.shape[0], min(w) >= 0]
            ok += [max(w) + seq <= n] if a["mode"] == "linear" else []
        return ok

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if out.rank not in self.ranks or not self.sigs(out.dtype):
            return None
        a = self.sample(ctx, [out])
        return [out, TensorType(out.dtype, self._update_shape(out.shape, a))], a

    def onnx(self, b, a, xs, ys):
        ins = list(xs)
        if a["write"] is not None:
            ins.append(b.ints(a["write"], hint="write_indices"))
        b.node(self.onnx_op, ins, ys, mode=b.opt(a["mode"], "linear"), axis=b.opt(a["axis"], -2))

    def torch(self, a, past, update):
        ax = a["axis"] % past.dim()
        n, seq = past.shape[ax], update.shape[ax]
        write = a["write"] if a["write"] is not None else [0] * past.shape[0]
        rows = []
        for bi, w in enumerate(write):
            pos = [w + j for j in range(seq)]
            if a["mode"] == "circular":
                pos = [p % n for p in pos]
            rows.append(past[bi].index_copy(ax - 1, torch.tensor(pos, dtype=torch.int64), update[bi]))
        return torch.stack(rows)


# =========================================================================================
# CausalConvWithState (opset 27)
# =========================================================================================
def causal_conv(a: dict, x, w, bias=None, state=None):
    """onnx.reference's CausalConvWithState: the input left-padded with the past state (or
    k - 1 zeros), a depthwise valid Conv1d (float16 accumulated in float32, rounded once),
    the optional SiLU computed in float32 from the rounded convolution, and the last k - 1
    padded positions as the present state."""
    t = x.dtype
    k = w.shape[2]
    pad = torch.zeros(x.shape[0], x.shape[1], k - 1, dtype=t) if state is None else state
    padded = torch.cat([pad, x], dim=2)
    y = torch.nn.functional.conv1d(_w(padded), _w(w), None if bias is None else _w(bias), groups=x.shape[1]).to(t)
    if a["activation"] in ("silu", "swish"):
        yf = y.float()
        y = (yf * torch.sigmoid(yf)).to(t)
    return y, padded[:, :, padded.shape[2] - (k - 1):]


class CausalConvWithState(OpSpec):
    """ONNX CausalConvWithState (opset 27): a stateful causal depthwise 1-D convolution over
    (batch, channels, length) input with a (channels, 1, k) weight, k from 2 to 8; the
    optional ``activation`` "silu"/"swish" (the same function) or "none" (written or left to
    its default). Outputs the convolution (batch, channels, length) and the present state
    (batch, channels, k - 1), the last k - 1 positions of the padded input. This spec omits
    bias and past_state; the subclasses add them (past_state after an empty bias name when
    there is no bias).

    Not generated: k = 1 (the states are then empty tensors, which dlgate does not draw),
    bfloat16 (outside dlgate's dtypes)."""

    onnx_op = "CausalConvWithState"
    arity = 2
    n_outputs = 2
    min_opset = 27
    ranks = (3,)
    symbolic_ok = False
    keys: ClassVar[str] = "xw"  # b: bias, s: past_state
    dtypes = tuple((t,) * 2 for t in (dt.FLOAT32, dt.FLOAT16))
    gaps: ClassVar[tuple] = (
        ("kernel size 1", "the past and present states are then zero-length tensors, which dlgate does not draw"),
        ("bfloat16", "outside dlgate's dtypes"),
    )

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.arity = len(cls.keys)
        cls.dtypes = tuple((t,) * cls.arity for t in (dt.FLOAT32, dt.FLOAT16))

    def sample(self, ctx, ins):
        return {"k": ctx.choice((2, 3, 4, 4, ctx.rng.randint(2, 8))),
                "activation": ctx.choice((None, "none", "silu", "silu", "swish"))}

    def _shapes(self, x: tuple, a: dict) -> dict:
        bsz, c, _ = x
        return {"x": tuple(x), "w": (c, 1, a["k"]), "b": (c,), "s": (bsz, c, a["k"] - 1)}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self._shapes(ins[0].shape, a)[self.keys[i]])

    def requires(self, ins, a):
        x = ins[0]
        if x.rank != 3 or a["k"] < 2:
            return [False]
        want = self._shapes(x.shape, a)
        out = []
        for key, t in zip(self.keys, ins):
            out += _dims_ok(t.shape, want[key])
        return out

    def infer(self, ins, a):
        x = ins[0]
        return [x, TensorType(x.dtype, self._shapes(x.shape, a)["s"])]

    def backward(self, ctx, out):
        if out.dtype not in (dt.FLOAT32, dt.FLOAT16) or out.rank != 3:
            return None
        a = self.sample(ctx, [out])
        sh = self._shapes(out.shape, a)
        return [TensorType(out.dtype, sh[key]) for key in self.keys], a

    def onnx(self, b, a, xs, ys):
        x = dict(zip(self.keys, xs))
        ins = [x["x"], x["w"], x.get("b", ""), x.get("s", "")]
        while ins[-1] == "":
            ins.pop()
        act = a["activation"]
        b.node(self.onnx_op, ins, ys, activation=None if act is None else b.opt(act, "none"))

    def torch(self, a, *xs):
        x = dict(zip(self.keys, xs))
        return causal_conv(a, x["x"], x["w"], x.get("b"), x.get("s"))

    def value_range(self, a, ranges, ins):
        from dlgate.spec.linalg import product_bounds, sum_bounds

        r = dict(zip(self.keys, ranges))
        padded = _hull(r["x"], r["s"]) if "s" in r else _hull(r["x"], (0.0, 0.0))
        k = a["k"]
        conv = sum_bounds(product_bounds(padded, r["w"]), k, k)
        if "b" in r:
            conv = plus_bounds(conv, r["b"])
        conv = _widen(conv, 2 * k * _ulp_rel(ins[0].dtype))
        if a["activation"] in ("silu", "swish"):
            conv = swish_bounds(1.0, conv)
        return [conv, padded]


class CausalConvWithStateBias(CausalConvWithState):
    """CausalConvWithState with the optional bias (channels,)."""

    name = "CausalConvWithStateBias"
    keys = "xwb"


class CausalConvWithStatePast(CausalConvWithState):
    """CausalConvWithState with a past state (batch, channels, k - 1) and no bias (an empty
    input name in its place)."""

    name = "CausalConvWithStatePast"
    keys = "xws"


class CausalConvWithStateBiasPast(CausalConvWithState):
    """CausalConvWithState with every input: bias and past state."""

    name = "CausalConvWithStateBiasPast"
    keys = "xwbs"


OPS = [Attention, AttentionMask, AttentionBoolMask, AttentionPast, AttentionPastMask, AttentionQK,
       RMSNormalization, RotaryEmbedding, RotaryEmbeddingConstCache, Swish, SwiGLU,
       AttentionIdiom, AttentionIdiomAddMask, AttentionIdiomWhereMask, AttentionIdiomPast,
       RMSNormIdiom, GeluErfIdiom, GeluTanhIdiom, SiluIdiom, RotaryIdiom, MatMulTransposed, LinearTransposed,
       LinearAttention, LinearAttentionGated, LinearAttentionDelta, LinearAttentionGatedDelta,
       TensorScatter, CausalConvWithState, CausalConvWithStateBias, CausalConvWithStatePast,
       CausalConvWithStateBiasPast]
