"""``x * 1``: one Mul by a rank-0 one of the tensor's own dtype.

Exact for every value of every dtype it is used on: IEEE multiplication by one returns its
operand (NaN stays NaN, infinities and -0 keep their sign), and an integer times one is
itself. ``x + 0`` is not used: ``-0 + 0`` is ``+0``. Applies to float16, float32, float64,
int32 and int64 tensors (the types Mul takes at every opset dlgate generates; int8 and
uint8 only from opset 14), any rank and shape."""
from __future__ import annotations

import numpy as np

from dlgate.rewrite.base import Rewrite, Step, chain_twin

TYPES = ("float16", "float32", "float64", "int32", "int64")


class MulOne(Rewrite):
    name = "mul_one"
    applies = "float16, float32, float64, int32, int64 tensors; any rank"

    def apply(self, graph, model, rng, prefer=None):
        def make(ty, _rng):
            return [Step("Mul", {}, ty, const=np.ones((), dtype=ty.dtype))], {}

        return chain_twin(self, graph, model, rng, lambda ty: ty.dtype in TYPES, make, prefer)


REWRITE = MulOne()
