from __future__ import annotations

import math
from typing import ClassVar

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import INF, OpSpec


# -- Det ------------------------------------------------------------------------------------
#: Largest matrix Det is given, per dtype (see Det).
DET_MAX = {dt.FLOAT32: 4, dt.FLOAT64: 4, dt.FLOAT16: 3}


class Det(OpSpec):
    """Determinants of the square matrices in the last two axes, ``(*, M, M) -> (*)``.

    The reference is computed in float64 and rounded to the input's dtype. Matrices are
    kept small (``DET_MAX``): a determinant computed by LU (or by cofactors) sums M!
    products of M factors, and an M x M matrix with entries of a few units has an absolute
    error of about ``eps * |a|^M``; up to 4 (3 in float16) it stays within the comparison's
    tolerance even for the nearly singular matrices graphs make (Expand, Tile and
    broadcasting repeat rows; Relu zeroes them), and the oracle's perturbation test
    excuses the remaining ill-conditioned ones, which are computed from other operators.
    float16 is generated (onnxruntime computes it; onnx.reference cannot, see
    ``reference_defect``) but only up to 3 x 3, where it stays as accurate as a float16 dot
    product of a few terms."""

    onnx_op = "Det"
    dtypes = tuple((t,) for t in dt.FLOATS)
    ranks = (2, 3, 4, 5)

    def backward(self, ctx, out):
        if (out.dtype,) not in self.dtypes or out.rank + 2 > ctx.limits.max_rank:
            return None
        m = ctx.rng.randint(1, DET_MAX[out.dtype])
        return [out.with_shape(tuple(out.shape) + (m, m))], {}

    def backward_ranks(self, out):
        return (out.rank + 2,)

    def requires(self, ins, a):
        s = ins[0].shape
        return [s[-1] == s[-2], s[-1] <= DET_MAX[ins[0].dtype]]

    def infer(self, ins, a):
        return [ins[0].with_shape(tuple(ins[0].shape[:-2]))]

    def torch(self, a, x):
        return torch.linalg.det(x.double()).to(x.dtype)

    gaps: ClassVar[tuple] = (
        ("matrices larger than 4 x 4 (3 x 3 in float16)", "the error of a determinant grows like eps * |a|^M: "
                                                           "beyond the comparison's tolerance"),
    )

    def value_range(self, a, ranges, ins):
        # Hadamard: |det| <= product of the row norms <= (sqrt(M) max|a|)^M
        m = ins[0].shape[-1]
        if sym.is_sym(m):
            return None
        top = max(abs(ranges[0][0]), abs(ranges[0][1]))
        try:
            bound = (math.sqrt(m) * top) ** m if math.isfinite(top) else INF
        except OverflowError:  # beyond float64: no bound
            bound = INF
        return [(-bound, bound)]

    def reference_defect(self, a, ins, opset):
        if ins[0].dtype == dt.FLOAT16:
            return "onnx.reference's Det uses numpy.linalg.det, which refuses float16 (array type float16 is unsupported)"
        return None


OPS = [Det]
