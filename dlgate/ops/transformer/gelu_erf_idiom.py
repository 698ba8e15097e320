from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import INF, OpSpec
from dlgate.ops.transformer._shared import _const, _w


class GeluErfIdiom(OpSpec):
    """Gelu as torch.onnx writes it before opset 20: ``Mul(Mul(x, Add(Erf(Div(x, sqrt(2))),
    1)), 0.5)``, each node rounded to the input type."""

    name = "GeluErfIdiom"
    onnx_op = "Erf"
    onnx_ops: ClassVar[tuple] = ("Div", "Add", "Mul")
    dtypes = tuple((t,) for t in dt.FLOATS)

    def sample(self, ctx, ins):
        return {"dtype": ins[0].dtype}

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS:
            return None
        return [out], self.sample(ctx, [out])

    def infer(self, ins, a):
        return [ins[0]]

    def requires(self, ins, a):
        return [ins[0].dtype == a["dtype"]]

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

    elementwise = True
    valley = (-0.8, -0.7, -0.1701)
    out_range = (-0.1701, INF)

    def reference_defect(self, a, ins, opset):
        if ins[0].dtype == dt.FLOAT64:
            return "onnx.reference's Erf returns float32 values (np.vectorize(math.erf, otypes=['f']))"
        return None


OPS = [GeluErfIdiom]
