"""Pooling: MaxPool, AveragePool and LpPool (1-D and 2-D, explicit possibly asymmetric
pads or ``auto_pad`` SAME_UPPER / SAME_LOWER / VALID, strides, dilations, ceil_mode),
GlobalAveragePool and GlobalMaxPool.

The windowed pools share one PyTorch implementation: pad explicitly (-inf for max, 0
otherwise), extend the end for ceil_mode, cut windows with ``unfold`` and reduce them,
in float64, cast back. Averages divide by a pooled mask, so count_include_pad and the
ceil_mode overflow (never counted) come out exactly as ONNX defines them.
The output size is symbolic (``sym``), so backward insertion goes through z3.
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("max_pool", "average_pool", "lp_pool", "global_average_pool", "global_max_pool", "global_lp_pool")
