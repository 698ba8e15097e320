from __future__ import annotations

from dlgate.ops import sym
from dlgate.ops.binary._shared import add_bounds
from dlgate.ops.binary.sum import Sum


class Mean(Sum):
    """Variadic: three inputs."""

    onnx_op = "Mean"

    def torch(self, a, *xs):
        return super().torch(a, *xs) / len(xs)

    keeps_range = True
    cancels = False  # a mean keeps its operands' range; the oracle has not needed more for it

    def value_range(self, a, ranges, ins):
        lo, hi = add_bounds(ranges)
        return [(lo / len(ranges), hi / len(ranges))]  # the sum's bounds over n

    def reference_defect(self, a, ins, opset):
        if tuple(ins[0].shape) != tuple(sym.broadcast(*(x.shape for x in ins))):
            return "onnx.reference's Mean adds in place into its first input, so it cannot broadcast it"
        return None

    def input_span(self, a, i, span, ins):
        return span  # a mean of values within the span


OPS = [Mean]
