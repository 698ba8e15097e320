from __future__ import annotations

from typing import ClassVar

from dlgate import dtypes as dt
from dlgate.ops.base import TensorType
from dlgate.ops.transformer._shared import MAX_HEAD, MAX_SEQ
from dlgate.ops.transformer.attention_idiom import AttentionIdiom


class AttentionIdiomWhereMask(AttentionIdiom):
    """AttentionIdiom with a boolean graph mask: ``Where(mask, scores, fill)`` (finite fill,
    so a fully masked row is uniform). The mask comes first: onnx_op is Where."""

    name = "AttentionIdiomWhereMask"
    onnx_op = "Where"
    onnx_ops: ClassVar[tuple] = ("MatMul", "Transpose", "Mul", "Div", "Add", "Softmax")
    arity = 4
    ranks = (2, 3, 4)
    dtypes = tuple((dt.BOOL, t, t, t) for t in dt.FLOATS)
    keys = "mqkv"
    mask_input = "where"

    def sample(self, ctx, ins):
        m = ins[0].shape
        rank = ctx.choice((3, 4)) if len(m) <= 2 else len(m)
        lead = tuple(m[:-2])
        bdims = tuple(1 for _ in range(rank - 2 - len(lead))) + lead
        bdims = tuple(d if d != 1 or ctx.coin() else ctx.dim(4) for d in bdims)
        sq = m[-2] if m[-2] != 1 else ctx.dim(MAX_SEQ)
        q = TensorType(ctx.choice([t for t in dt.FLOATS if t in ctx.dtypes] or [dt.FLOAT32]),
                       bdims + (sq, ctx.dim(MAX_HEAD)))
        a = self._attrs(ctx, q, total=m[-1])
        a["mask_shape"] = list(m)
        a["q_shape"] = list(q.shape)
        return a

    def _q(self, ins):
        return ins[1]

    def input_type(self, ctx, i, ins, a, dtype):
        sh = self._shapes(tuple(a["q_shape"]), a)
        return TensorType(dtype, sh[self.keys[i]])

    def backward(self, ctx, out):
        res = super().backward(ctx, out)
        if res is None:
            return None
        ins, a = res
        a["q_shape"] = list(ins[1].shape)
        return ins, a

    def requires(self, ins, a):
        return super().requires(ins, a) + [ins[1].dtype == a["dtype"]]


OPS = [AttentionIdiomWhereMask]
