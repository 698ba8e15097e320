from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.binary._shared import Elementwise, add_bounds


class Sum(Elementwise):
    """Variadic: three inputs."""
    onnx_op = "Sum"
    arity = 3
    types = dt.FLOATS

    def torch(self, a, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = out + x
        return out

    keeps_integers = True

    can_overflow = True
    cancels = True

    def value_range(self, a, ranges, ins):
        return [add_bounds(ranges)]

    def input_span(self, a, i, span, ins):
        return (span[0] / len(ins), span[1] / len(ins))


OPS = [Sum]
