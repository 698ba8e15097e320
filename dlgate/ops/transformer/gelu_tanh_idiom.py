from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.transformer._shared import _w
from dlgate.ops.transformer.gelu_erf_idiom import GeluErfIdiom


class GeluTanhIdiom(GeluErfIdiom):
    """Gelu's tanh approximation as torch.onnx writes it: ``0.5 * (x * (1 + Tanh(beta * (x
    + kappa * x^3))))`` with x^3 as ``x * (x * x)`` or ``Pow(x, 3)`` (Hugging Face's
    NewGELU), beta = sqrt(2 / pi), kappa = 0.044715."""

    name = "GeluTanhIdiom"
    onnx_op = "Tanh"
    onnx_ops: ClassVar[tuple] = ("Mul", "Add", "Pow")

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

    valley = (-0.8, -0.7, -0.1701)

    def reference_defect(self, a, ins, opset):
        return None


OPS = [GeluTanhIdiom]
