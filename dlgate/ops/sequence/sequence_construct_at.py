from __future__ import annotations

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import TensorType
from dlgate.ops.sequence._shared import INDEX_TYPES, Sequence, int64_scalar, spell_pos


# -- sequences built from graph tensors -------------------------------------------------

class SequenceConstructAt(Sequence):
    """``[x0, x1, x2][i]`` (SequenceAt at a position in [-3, 2]) and ``len([x0, x1, x2])``
    (SequenceLength): the tensors share a dtype, their shapes may differ."""

    name = "SequenceConstructAt"
    onnx_op = "SequenceConstruct"
    onnx_ops = ("SequenceAt", "SequenceLength")
    arity = 3
    n_outputs = 2
    dtypes = tuple((t,) * 3 for t in dt.ALL)

    def sample(self, ctx, ins):
        return {"pos": spell_pos(ctx, ctx.rng.randrange(3), 3), "pos_idx": ctx.choice(INDEX_TYPES)}

    def input_type(self, ctx, i, ins, a, dtype):
        if ctx.coin(0.5):
            return TensorType(dtype, ins[0].shape)
        return TensorType(dtype, ctx.shape(ctx.rng.randint(0, 3), 256))

    def backward(self, ctx, out):
        k = ctx.rng.randrange(3)
        ins = [out if i == k or ctx.coin(0.5) else TensorType(out.dtype, ctx.shape(ctx.rng.randint(0, 3), 256))
               for i in range(3)]
        return ins, {"pos": spell_pos(ctx, k, 3), "pos_idx": ctx.choice(INDEX_TYPES)}

    def requires(self, ins, a):
        return [-3 <= a["pos"] < 3]

    def infer(self, ins, a):
        return [ins[a["pos"]], int64_scalar()]

    def onnx(self, b, a, xs, ys):
        seq = b.node("SequenceConstruct", xs, 1)[0]
        b.node("SequenceAt", [seq, b.const(np.asarray(a["pos"], dtype=a["pos_idx"]), hint="pos")], ys[:1])
        b.node("SequenceLength", [seq], ys[1:])

    def torch(self, a, *xs):
        return xs[a["pos"]].clone(), torch.tensor(len(xs), dtype=torch.int64)

    def value_range(self, a, ranges, ins):
        return [ranges[a["pos"]], (3.0, 3.0)]

    def input_span(self, a, i, span, ins):
        return span if i == a["pos"] % 3 else None


OPS = [SequenceConstructAt]
