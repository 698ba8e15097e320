from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops import losses as L
from dlgate.ops.base import OpSpec, Restricted
from dlgate.ops.norm._shared import _wide


class LpNormalization(Restricted, OpSpec):
    """``y = x / ||x||_p`` along ``axis`` (p in {1, 2}); the ONNX specification defines the
    output as 0 where the norm is 0. Restricted nonetheless to slices whose sum of |x|^p is
    neither tiny (the result jumps from unit norm to 0 at the all-zero slice, and backends
    whose sums underflow differently disagree) nor beyond the dtype's range."""

    onnx_op = "LpNormalization"
    ranks = (1, 2, 3, 4, 5)
    dtypes = tuple((t,) for t in dt.FLOATS)

    def sample(self, ctx, ins):
        return {"axis": ctx.axis(ins[0].rank), "p": ctx.choice((1, 2))}

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        return [out], self.sample(ctx, [out])

    def infer(self, ins, a):
        return [ins[0]]

    def requires(self, ins, a):
        r = ins[0].rank
        return [r >= 1, -r <= a["axis"], a["axis"] < r]

    def onnx_attrs(self, a, b):
        return {"axis": b.opt(a["axis"], -1), "p": b.opt(a["p"], 2)}

    def torch(self, a, x):
        xw = _wide(x)
        ax = a["axis"] % x.dim()
        norm = xw.abs().sum(dim=ax, keepdim=True) if a["p"] == 1 else torch.sqrt((xw * xw).sum(dim=ax, keepdim=True))
        y = torch.where(norm == 0, torch.zeros_like(xw), xw / torch.where(norm == 0, torch.ones_like(norm), norm))
        return y.to(x.dtype)

    out_range = (-1.0, 1.0)

    def reference_defect(self, a, ins, opset):
        if a["p"] == 1:
            return "onnx.reference's LpNormalization sums x ** p, not |x| ** p: wrong for p = 1 and negative values"
        if ins[0].dtype == dt.FLOAT16:
            return ("onnx.reference squares float16 values in float16: subnormal squares (|x| < 2^-7) lose "
                    "precision, and a slice of such values is off by more than float16 tolerance")
        return None

    def _sums(self, a, x):
        xd = x.double().abs()
        return (xd if a["p"] == 1 else xd * xd).sum(dim=a["axis"] % x.dim())

    def losses(self, a, x):
        info = torch.finfo(x.dtype)
        s = self._sums(a, x)
        return [L.gt0(s - float(info.tiny)), L.le0(s - 0.5 * float(info.max))]

    def input_possible(self, a, i, r, t):
        return r != (0.0, 0.0)  # a nonzero norm needs some nonzero element


OPS = [LpNormalization]
