from __future__ import annotations

import numpy as np
from onnx import helper

from dlgate import dtypes as dt
from dlgate.ops.base import TensorType
from dlgate.ops.layout._shared import composition, set_dim, spell_axis
from dlgate.ops.sequence._shared import INSERT_DEFECT, TWO_SIG, Sequence, concat_shape, torch_concat


class SequenceAppendConcat(Sequence):
    """``l = []`` (SequenceEmpty, its ``dtype`` written, or left out for float32),
    ``l.append(x0)`` (SequenceInsert without a position), ``x1`` inserted at position
    ``pos`` (0, 1, -1, or none: the end; -1 counts from the back, so it goes first), then
    ConcatFromSequence: concatenated along an axis or stacked on a new one. (The empty
    sequence is never concatenated: undefined.)"""

    name = "SequenceAppendConcat"
    onnx_op = "SequenceInsert"
    onnx_ops = ("SequenceEmpty", "ConcatFromSequence")
    schema_inputs = (1,)  # the inserted tensor
    arity = 2
    dtypes = TWO_SIG

    @staticmethod
    def first_second(a) -> bool:
        """Whether x1 ends up before x0."""
        return a["pos"] in (0, -1)

    def sample(self, ctx, ins):
        x = ins[0]
        r = x.rank
        a = {"dtype": x.dtype, "write_dtype": x.dtype != dt.FLOAT32 or ctx.coin(0.5),
             "pos": ctx.choice([None, 0, 1, -1])}
        if r == 0 or (r + 1 <= ctx.limits.max_rank and ctx.coin(0.4)):
            c = ctx.rng.randint(0, r)
            a.update(cat_axis=c - r - 1 if ctx.coin(0.3) else c, new_axis=1)
        else:
            a.update(cat_axis=spell_axis(ctx, ctx.rng.randrange(r), r), new_axis=0)
        return a

    def input_type(self, ctx, i, ins, a, dtype):
        shape = ins[0].shape
        if a["new_axis"]:
            return TensorType(dtype, shape)
        ax = a["cat_axis"] % len(shape)
        room = ctx.limits.max_elems // max(1, int(np.prod(shape)) // shape[ax]) - shape[ax]
        return TensorType(dtype, set_dim(shape, ax, ctx.dim(max(1, min(16, room)))))

    def order(self, a, xs: list) -> list:
        return xs[::-1] if self.first_second(a) else list(xs)

    def backward(self, ctx, out):
        r = out.rank
        a = {"dtype": out.dtype, "write_dtype": out.dtype != dt.FLOAT32 or ctx.coin(0.5),
             "pos": ctx.choice([None, 0, 1, -1])}
        twos = [c for c in range(r) if out.shape[c] == 2]
        if twos and ctx.coin(0.5):
            c = ctx.choice(twos)
            p = out.with_shape(tuple(out.shape[:c]) + tuple(out.shape[c + 1:]))
            a.update(cat_axis=c - r if ctx.coin(0.3) else c, new_axis=1)
            return [p, p], a
        axes = [c for c in range(r) if out.shape[c] >= 2]
        if not axes:
            return None
        c = ctx.choice(axes)
        parts = composition(ctx, out.shape[c], 2)
        a.update(cat_axis=spell_axis(ctx, c, r), new_axis=0)
        ins = [out.with_shape(set_dim(out.shape, c, q)) for q in parts]
        return self.order(a, ins), a

    def requires(self, ins, a):
        return [ins[0].dtype == a["dtype"],
                concat_shape(self.order(a, [x.shape for x in ins]), a["cat_axis"], a["new_axis"]) is not None]

    def infer(self, ins, a):
        return [ins[0].with_shape(concat_shape(self.order(a, [x.shape for x in ins]), a["cat_axis"], a["new_axis"]))]

    def onnx(self, b, a, xs, ys):
        code = helper.np_dtype_to_tensor_dtype(np.dtype(a["dtype"]))
        seq = b.node("SequenceEmpty", [], 1, dtype=code if a["write_dtype"] else None)[0]
        seq = b.node("SequenceInsert", [seq, xs[0]], 1)[0]
        pos = [] if a["pos"] is None else [b.const(np.asarray(a["pos"], dtype=np.int64), hint="pos")]
        seq = b.node("SequenceInsert", [seq, xs[1]] + pos, 1)[0]
        b.node("ConcatFromSequence", [seq], ys, axis=a["cat_axis"], new_axis=b.opt(a["new_axis"], 0))

    def torch(self, a, x0, x1):
        return torch_concat(self.order(a, [x0, x1]), a["cat_axis"], a["new_axis"])

    keeps_range = True
    preserves_values = True
    gaps = (("ConcatFromSequence of the empty sequence", "ONNX defines no output for it (no element type or shape to concatenate)"),)

    def reference_defect(self, a, ins, opset):
        return INSERT_DEFECT if a["pos"] == 1 else None


OPS = [SequenceAppendConcat]
