from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.logic._shared import Compare


class Equal(Compare):
    """Integer and bool inputs only.

    Equality of *computed* floating-point values flips between compilers (fused or
    reordered arithmetic moves a value by one ulp and ``==`` turns it into a different
    bool, which then propagates as a discrete difference): NNSmith's lesson. The ordered
    comparisons have the same hazard only at ties, which are rare with continuous values.
    """

    onnx_op = "Equal"
    types = dt.INTS + (dt.BOOL,)
    fn = torch.eq


OPS = [Equal]
