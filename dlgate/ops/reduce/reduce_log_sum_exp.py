from __future__ import annotations

import math
import sys

import torch

from dlgate.ops import losses as L
from dlgate.ops.base import Restricted
from dlgate.ops.reduce._shared import Reduce


class ReduceLogSumExp(Restricted, Reduce):
    """Floats only; restricted so that sum(exp(x)) itself is finite, since ONNX defines the
    operator as log(sum(exp(x))) and a backend may compute it without the max shift."""

    onnx_op = "ReduceLogSumExp"
    ranks = (1, 2, 3, 4, 5)  # onnx.reference's ReduceLogSumExp crashes on rank-0 inputs
    #: exp in float64 (the opset-18 function body casts to double first) overflows to inf for
    #: a log-sum-exp above this, and every term underflows to 0 below the other
    DOUBLE_LSE_MAX, DOUBLE_EXP_MIN = math.log(sys.float_info.max), -745.13

    def fn(self, x, dims, keep):
        return torch.logsumexp(x, dims, keepdim=keep)

    def value_range(self, a, ranges, ins):
        # n exp(lo) <= sum(exp(x)) <= n exp(hi): logsumexp(x) lies in [lo, hi] + log(n)
        lo, hi = ranges[0]
        n = self._count(a, ins[0])
        return [(lo + math.log(n), hi + math.log(n))]

    def losses(self, a, x):
        xd = x.double()
        lse = torch.logsumexp(xd, self._dims(a, x)) if x.dim() else xd
        return [L.le0(lse - L.log_max(x))]

    def input_span(self, a, i, span, ins):
        # n terms within [lo - log n, hi - log n] give a log-sum-exp within [lo, hi]
        d = math.log(self._count(a, ins[0]))
        return (span[0] - d, span[1] - d)

    def undefined(self, a, ins, out_types):
        x = ins[0].detach().double()
        if not x.numel() or not x.dim():
            return None
        dims = self._dims(a, x)
        lse, top = (torch.logsumexp(x, dims), x.amax(dim=dims)) if dims else (x, x)
        finite = torch.isfinite(lse)
        if bool((finite & ((lse > self.DOUBLE_LSE_MAX) | (top < self.DOUBLE_EXP_MIN))).any()):
            return ("log(sum(exp(x))) overflows (or underflows) even in float64: ONNX's definition (its function "
                    "body exponentiates in double without shifting by the max) gives +/-inf there, an implementation "
                    "that shifts gives the value")
        return None


OPS = [ReduceLogSumExp]
