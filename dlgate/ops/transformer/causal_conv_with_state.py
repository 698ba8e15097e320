from __future__ import annotations

from typing import ClassVar

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.linalg._shared import product_bounds, sum_bounds
from dlgate.ops.linalg.gemm import plus_bounds
from dlgate.ops.transformer._shared import _dims_ok, _hull, swish_bounds, _ulp_rel, _w, _widen


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
    dtypes = tuple((t,) * 2 for t in (dt.FLOAT32, dt.FLOAT16))
    keys: ClassVar[str] = "xw"  # b: bias, s: past_state

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

    def backward(self, ctx, out):
        if out.dtype not in (dt.FLOAT32, dt.FLOAT16) or out.rank != 3:
            return None
        a = self.sample(ctx, [out])
        sh = self._shapes(out.shape, a)
        return [TensorType(out.dtype, sh[key]) for key in self.keys], a

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

    gaps: ClassVar[tuple] = (
        ("kernel size 1", "the past and present states are then zero-length tensors, which dlgate does not draw"),
        ("bfloat16", "outside dlgate's dtypes"),
    )

    def value_range(self, a, ranges, ins):
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


OPS = [CausalConvWithState, CausalConvWithStateBias, CausalConvWithStatePast, CausalConvWithStateBiasPast]
