"""Loss terms for restricted-domain operators (NNSmith, Table 2).

A predicate is rewritten to ``f(x) <= 0`` or ``f(x) < 0`` and turned into a loss that is
positive exactly when some element violates it: ``sum(max(f(x), 0))``, or with ``+eps``
for strict inequalities. Losses are computed in float64 so float16 graphs search well.
"""
from __future__ import annotations

EPS = 1e-10

#: Largest x for which exp(x) stays finite, with margin, per dtype.
LOG_MAX = {"float16": 10.0, "float32": 80.0, "float64": 700.0}


def _f(x):
    return x.double()


def le0(x):
    """Loss for ``x <= 0``."""
    return _f(x).clamp(min=0).sum()


def lt0(x):
    """Loss for ``x < 0``."""
    return (_f(x) + EPS).clamp(min=0).sum()


def ge0(x):
    """Loss for ``x >= 0``."""
    return le0(-_f(x))


def gt0(x):
    """Loss for ``x > 0``."""
    return lt0(-_f(x))


def log_max(x) -> float:
    return LOG_MAX.get(str(x.dtype).replace("torch.", ""), 80.0)
