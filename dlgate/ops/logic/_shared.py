"""What the logic operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.base import INF_ONLY
from dlgate.ops.binary._shared import Elementwise


class Compare(Elementwise):
    """``y = x1 <op> x2`` over broadcast inputs of one dtype; the output is bool."""
    types = dt.NUMERIC
    out_dtype = dt.BOOL

    jumps = True
    nonfinite = INF_ONLY  # ONNX does not say what a comparison with NaN gives


class Logical(Elementwise):
    """``y = x1 <op> x2`` on bool tensors."""

    types = (dt.BOOL,)
    out_dtype = dt.BOOL
