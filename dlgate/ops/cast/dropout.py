from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import IEEE, OpSpec


class Dropout(OpSpec):
    """Inference-mode Dropout: ``y = x`` (a copy) and, when asked for, a ``mask`` output of
    all True. ``training_mode`` is absent or a constant False (spelled as an omitted input,
    "" before a later one, or a bool scalar); ``ratio`` is absent or a constant scalar in
    [0, 1) of any float type (T1); ``seed`` is sometimes given. Neither changes the result
    outside training.

    Not generated: ``training_mode`` true, whose output is random (ONNX fixes no generator)."""

    onnx_op = "Dropout"
    dtypes = tuple((t,) for t in dt.FLOATS)

    def sample(self, ctx, ins):
        a = {"ratio": ctx.choice((None, 0.0, 0.5, ctx.uniform(0.0, 0.95))), "ratio_dtype": ctx.choice(dt.FLOATS),
             "training_mode": ctx.choice((None, None, False)), "mask": ctx.coin(0.4), "seed": None}
        if ctx.coin(0.3):
            a["seed"] = ctx.rng.randint(0, 2 ** 31 - 1)
        return a

    def backward(self, ctx, out):
        if (out.dtype,) not in self.dtypes:
            return None
        return [out], self.sample(ctx, [out])

    def infer(self, ins, a):
        return [ins[0]] + ([ins[0].with_dtype(dt.BOOL)] if a["mask"] else [])

    def onnx(self, b, a, xs, ys):
        ins = [xs[0]]
        if a["ratio"] is not None:
            ins.append(b.const(np.asarray(a["ratio"], dtype=dt.NUMPY[a["ratio_dtype"]]), hint="ratio"))
        if a["training_mode"] is not None:
            if len(ins) == 1:
                ins.append("")
            ins.append(b.const(np.asarray(False), hint="training_mode"))
        b.node("Dropout", ins, ys, seed=a["seed"])

    def torch(self, a, x):
        y = x.clone()
        return (y, torch.ones(x.shape, dtype=torch.bool)) if a["mask"] else y

    nonfinite = IEEE
    exact_values = True
    gaps: ClassVar[tuple] = (("training_mode true", "random output: ONNX defines no random generator"),)

    def value_range(self, a, ranges, ins):
        return [tuple(ranges[0])] + ([(1.0, 1.0)] if a["mask"] else [])

    def exact(self, a, exacts, ins):
        return exacts[0]

    def input_span(self, a, i, span, ins):
        return span


OPS = [Dropout]
