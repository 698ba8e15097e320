from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType, f32
from dlgate.ops.binary._shared import mul_bounds
from dlgate.ops.transformer._shared import _const, _dims_ok, _rms_bound, _w


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

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        a = self.sample(ctx, [out])
        return [out, TensorType(out.dtype, self._wshape(out.shape, a))], a

    def requires(self, ins, a):
        x = ins[0]
        return [x.rank >= a["axes"], ins[0].dtype == a["dtype"]] + _dims_ok(ins[1].shape, self._wshape(x.shape, a))

    def infer(self, ins, a):
        return [ins[0]]

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


OPS = [RMSNormIdiom]
