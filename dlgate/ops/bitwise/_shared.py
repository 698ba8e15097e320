"""What the bitwise operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.binary._shared import Elementwise


#: The opset from which BitShift defines signed types and every shift amount.
SHIFT_DEFINED = 28


def bit_shift(x, s, left: bool):
    """ONNX BitShift-28: shift ``x`` by ``s`` (broadcast); an amount that is negative or at
    least the bit width gives the sign fill (-1 for a right shift of a negative x, else 0).
    Signed left shifts wrap: bits shifted past the sign bit are discarded."""
    width = torch.iinfo(x.dtype).bits
    valid = (s >= 0) & (s < width)
    s0 = torch.where(valid, s, torch.zeros_like(s))
    if left:
        shifted, fill = torch.bitwise_left_shift(x, s0), torch.zeros_like(x)
    else:
        shifted = torch.bitwise_right_shift(x, s0)  # arithmetic for signed types
        fill = torch.where(x < 0, -torch.ones_like(x), torch.zeros_like(x)) if x.dtype != torch.uint8 \
            else torch.zeros_like(x)
    return torch.where(valid, shifted, fill)


class Bitwise(Elementwise):
    """``y = x1 <op> x2`` on integers of one dtype (opset 18), broadcast."""

    min_opset = 18
    types = dt.INTS
