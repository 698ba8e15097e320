"""What the tvm_reduce motifs share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from dlgate import dtypes as dt


FLOAT_SIGS = tuple((t,) for t in dt.FLOATS)
