from __future__ import annotations

from dlgate.ops.pool._shared import _Pool


class AveragePool(_Pool):
    onnx_op = "AveragePool"
    kind = "avg"
    dil_opset = 19

    siblings = "pool"

    def value_range(self, a, ranges, ins):
        # a mean of input values; counted pads add zeros, scaling it by (input elements /
        # counted elements) in [f, 1], f the smallest ratio over windows (a product per dim)
        lo, hi = ranges[0]
        if not a["count_include_pad"]:
            return [(lo, hi)]
        f = 1.0
        for dim in self._counts(ins, a):
            f *= min(r / max(c, 1) for r, c in dim)
        return [(lo * f if lo > 0 else lo, hi * f if hi < 0 else hi)]

    def reference_defect(self, a, ins, opset):
        if self._same_defect(a, ins):
            return self._same_defect(a, ins)
        if any(o >= 2 for o in self._overflows(ins, a)):
            return ("onnx.reference's AveragePool splits a ceil_mode overflow >= 2 between both "
                    "ends, shifting the windows")
        return None


OPS = [AveragePool]
