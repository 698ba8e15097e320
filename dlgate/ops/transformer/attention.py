from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import UNBOUNDED, OpSpec, TensorType, f32
from dlgate.ops.transformer._shared import (MAX_HEAD, MAX_HEADS, MAX_SEQ, NEG_INF, PRECISION, _as, _dims_ok, _hull,
                                            _mm, _ulp_rel, _w, _widen)


# =========================================================================================
# Attention (opset 23, 24)
# =========================================================================================
#: Shapes of ``attn_mask`` relative to (batch, q_heads, q_len, total_len). onnxruntime 1.32
#: rejects masks that broadcast over the query axis ((T,), (1, T), (B, 1, 1, T): "inconsistent
#: q_sequence_length"), so only forms with the query axis spelled out are drawn.
MASK_FORMS = ("st", "1st", "hst", "bhst", "1hst", "b1st", "11st")


class Attention(OpSpec):
    """ONNX Attention, Q/K/V only: 4-D (batch, heads, seq, head_size) inputs, or 3-D
    (batch, seq, heads * head_size) ones with ``q_num_heads``/``kv_num_heads``; grouped-query
    heads (q heads a multiple of kv heads, kv head h serving q heads h*g..h*g+g-1),
    ``is_causal`` (bottom-right aligned: query i sees key j iff j <= i + past length),
    ``scale`` (default 1/sqrt(head_size); Q and K are each multiplied by its square root,
    computed in float32 and cast to the input type, as the function body does),
    ``softcap`` and ``softmax_precision``. A fully masked query row gives a zero row.
    float16 is computed in float32 and rounded once, the value closest to the exact result
    (the function body rounds every intermediate to float16; onnxruntime rounds the scores
    after the product, the softcap and the mask, and the probabilities; with
    ``softmax_precision`` unset the specification allows both; they are within float16
    tolerance of the once-rounded value only for small scores, so onnx.reference is not
    consulted for float16).

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
    dtypes = tuple((t,) * 4 for t in dt.FLOATS)
    mask = "float"


class AttentionBoolMask(Attention):
    """Attention with a boolean ``attn_mask`` (True: attend); rows it masks fully are zero."""

    name = "AttentionBoolMask"
    arity = 4
    dtypes = tuple((t, t, t, dt.BOOL) for t in dt.FLOATS)
    mask = "bool"


class AttentionPast(Attention):
    """Attention with past_key/past_value (4-D, concatenated before K/V along the sequence
    axis) and the present_key/present_value outputs; causal masking is offset by the past
    length."""

    name = "AttentionPast"
    arity = 5
    n_outputs = 3
    dtypes = tuple((t,) * 5 for t in dt.FLOATS)
    past = True


class AttentionPastMask(AttentionPast):
    """AttentionPast with a boolean mask over the whole (past + new) key sequence."""

    name = "AttentionPastMask"
    arity = 6
    dtypes = tuple((t, t, t, dt.BOOL, t, t) for t in dt.FLOATS)
    mask = "bool"


class AttentionQK(Attention):
    """Attention with its fourth output, ``qk_matmul_output``, in every mode: 0 the raw QK
    product, 1 after the softcap, 2 with the bias added (no causal mask then: -inf), 3 the
    softmax probabilities."""

    name = "AttentionQK"
    n_outputs = 2
    qk_output = True


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
        # computed in float32 and rounded once (the function body rounds every intermediate
        # to float16, onnxruntime the scores and probabilities, which puts scores of a few
        # units beyond float16 tolerance of the exact result)
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


OPS = [Attention, AttentionMask, AttentionBoolMask, AttentionPast, AttentionPastMask, AttentionQK]
