from __future__ import annotations

from typing import ClassVar

import torch

from dlgate.ops.base import INF
from dlgate.ops.transformer._shared import SILU_MIN, _w
from dlgate.ops.transformer.gelu_erf_idiom import GeluErfIdiom


class SiluIdiom(GeluErfIdiom):
    """SiLU as exporters write it: ``Mul(x, Sigmoid(x))``."""

    name = "SiluIdiom"
    onnx_op = "Sigmoid"
    onnx_ops: ClassVar[tuple] = ("Mul",)

    def onnx(self, b, a, xs, ys):
        b.node("Mul", [xs[0], b.node("Sigmoid", [xs[0]], 1)[0]], ys)

    def torch(self, a, x):
        return (_w(x) * _w(torch.sigmoid(_w(x)).to(x.dtype))).to(x.dtype)

    valley = (-1.3, -1.25, SILU_MIN * (1 + 1e-3))
    out_range = (SILU_MIN * (1 + 1e-3), INF)

    def reference_defect(self, a, ins, opset):
        return None


OPS = [SiluIdiom]
