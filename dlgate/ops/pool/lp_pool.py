from __future__ import annotations

from dlgate.ops.base import abs_bounds
from dlgate.ops.binary._shared import mul0
from dlgate.ops.pool._shared import _Pool


class LpPool(_Pool):
    onnx_op = "LpPool"
    kind = "lp"
    ceil_opset = 18
    dil_opset = 18

    def value_range(self, a, ranges, ins):
        # the p-norm of r window elements (pads add 0) within [r^(1/p) min|x|, r^(1/p) max|x|],
        # r between the fewest and most input elements a window holds (products over dims)
        m, big = abs_bounds(ranges[0])
        rmin = rmax = 1
        for dim in self._counts(ins, a):
            rmin *= min(r for r, _ in dim)
            rmax *= max(r for r, _ in dim)
        p = 1.0 / a["p"]
        return [(mul0(rmin ** p, m), mul0(rmax ** p, big))]

    def reference_defect(self, a, ins, opset):
        if self._same_defect(a, ins):
            return self._same_defect(a, ins)
        if any(o >= 1 for o in self._overflows(ins, a)):
            return ("onnx.reference's LpPool averages over the window without the ceil_mode "
                    "overflow and rescales by the kernel size (and shifts windows for overflow >= 2)")
        return None


OPS = [LpPool]
