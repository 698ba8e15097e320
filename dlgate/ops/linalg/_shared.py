"""What the linalg operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.binary._shared import mul0, mul_bounds
from dlgate.ops.binary.mul import sqrt_span


#: Largest contracted (summed-over) dimension for float16; other dtypes only have the
#: generator's dimension cap.
MAX_K = 16


def _small_k(k, dtype):
    return [k <= MAX_K] if dtype == dt.FLOAT16 else []


# -- value bounds of sums of products (shared with the convolutions) -------------------------
def product_bounds(*rs) -> tuple:
    """Bounds of a product of one value from each of ``rs``: a product is linear in each
    factor, so its extremes lie at the corners."""
    out = (1.0, 1.0)
    for r in rs:
        out = mul_bounds(out, r)
    return out


def sum_bounds(p: tuple, m_min: int, m_max: int) -> tuple:
    """Bounds of a sum of m terms within ``p``, m between ``m_min`` and ``m_max`` (an
    empty sum is 0): m terms lie in [m * p[0], m * p[1]], linear in m."""
    return (min(mul0(m_min, p[0]), mul0(m_max, p[0])), max(mul0(m_min, p[1]), mul0(m_max, p[1])))


# -- MatMul ---------------------------------------------------------------------------------
def product_span(i: int, span: tuple, k: int) -> tuple:
    """A starting range for factor ``i`` of a sum of ``k`` two-factor products meant to
    land in ``span``: each product within span / k."""
    return sqrt_span((span[0] / k, span[1] / k), i)
