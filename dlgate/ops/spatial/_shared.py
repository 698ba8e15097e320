"""What the spatial operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations


def _hull0(r: tuple) -> tuple:
    """Bounds ``r`` widened to hold 0 (zero padding, empty bins)."""
    return (min(r[0], 0.0), max(r[1], 0.0))


def _dyadic(x: float, bits: int = 10) -> bool:
    return float(x * (1 << bits)).is_integer()


# -- RoiAlign / MaxRoiPool ---------------------------------------------------------------------
SCALES = (0.25, 0.5, 1.0, 2.0)
