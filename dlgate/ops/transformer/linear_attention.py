from __future__ import annotations

import math
from typing import ClassVar

import torch

from dlgate import dtypes as dt
from dlgate.ops import losses as L
from dlgate.ops.base import INF, OpSpec, Restricted, TensorType
from dlgate.ops.transformer._shared import MAX_HEAD, MAX_HEADS, MAX_SEQ, _dims_ok


class LinearAttention(Restricted, OpSpec):
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

    gaps: ClassVar[tuple] = (
        ("decay > 0, beta outside [0, 1], beta * |k|^2 > 1",
         "growing states: implementations (chunked or sequential) then differ by rounding beyond tolerance"),
        ("a state type S other than T", "dlgate draws one float type per node"),
    )
    # -- the restricted domains of decay and beta ----------------------------------------------
    open_domain = False

    def input_domain(self, a, i):
        key = self.keys[i]
        return (-INF, 0.0) if key == "d" else (0.0, 1.0) if key == "b" else None

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
    dtypes = tuple((t,) * 4 for t in (dt.FLOAT32, dt.FLOAT16))
    rule = "gated"
    keys = "qkvd"


class LinearAttentionDelta(LinearAttention):
    """LinearAttention, ``update_rule`` "delta": v_t replaced by beta_t * (v_t - S^T k_t)
    (beta per kv head, or one for all)."""

    name = "LinearAttentionDelta"
    arity = 4
    dtypes = tuple((t,) * 4 for t in (dt.FLOAT32, dt.FLOAT16))
    rule = "delta"
    keys = "qkvb"


class LinearAttentionGatedDelta(LinearAttention):
    """LinearAttention, ``update_rule`` "gated_delta" (the default, sometimes left
    unwritten) with every input: a past state, decay and beta."""

    name = "LinearAttentionGatedDelta"
    arity = 6
    dtypes = tuple((t,) * 6 for t in (dt.FLOAT32, dt.FLOAT16))
    rule = "gated_delta"
    keys = "qkvsdb"


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


OPS = [LinearAttention, LinearAttentionGated, LinearAttentionDelta, LinearAttentionGatedDelta]
