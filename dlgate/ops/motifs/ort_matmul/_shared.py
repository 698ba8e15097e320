"""What the ort_matmul motifs share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from dlgate.ops.motifs.ort_common import F16, F32, F64


FLOATS = (F32, F16, F64)


def _n(ctx) -> int:
    return ctx.dim(16)
