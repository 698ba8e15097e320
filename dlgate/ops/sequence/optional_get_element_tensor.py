from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import TensorType
from dlgate.ops.sequence._shared import ONE_SIG, Sequence


class OptionalGetElementTensor(Sequence):
    """OptionalGetElement and OptionalHasElement on a plain tensor (allowed from opset 18):
    the tensor itself, and true."""

    name = "OptionalGetElementTensor"
    onnx_op = "OptionalGetElement"
    onnx_ops = ("OptionalHasElement",)
    min_opset = 18
    n_outputs = 2
    dtypes = ONE_SIG

    def backward(self, ctx, out):
        return [out], {}

    def infer(self, ins, a):
        return [ins[0], TensorType(dt.BOOL, ())]

    def onnx(self, b, a, xs, ys):
        b.node("OptionalGetElement", xs, ys[:1])
        b.node("OptionalHasElement", xs, ys[1:])

    def torch(self, a, x):
        return x.clone(), torch.tensor(True)

    def value_range(self, a, ranges, ins):
        return [ranges[0], (1.0, 1.0)]

    def input_span(self, a, i, span, ins):
        return span


OPS = [OptionalGetElementTensor]
