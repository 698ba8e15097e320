"""What the ort_matmul motifs share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations


def _n(ctx) -> int:
    """A product's drawn inner or outer size N (at most 16)."""
    return ctx.dim(16)
