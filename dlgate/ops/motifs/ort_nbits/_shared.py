"""What the ort_nbits motifs share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.motif import Const, const_values
from dlgate.ops.motifs.ort_common import F32, OrtMotif
from dlgate.ops.quant._shared import QR, _scale_values


I8, U8 = dt.INT8, dt.UINT8
#: Block sizes the selector takes (powers of two, at least 16) and some it declines.
BLOCKS, OTHER_BLOCKS = (16, 32, 64), (8, 24, 48)
#: The value range of each weight width and signedness.
RANGE = {(4, I8): (-8, 7), (4, U8): (0, 15), (8, I8): QR[I8], (8, U8): QR[U8]}


def dq_weights(ctx, k: int, n: int, bits: int, qt: str, axis: int, block: int, zp: bool) -> dict:
    """The DequantizeLinear attributes of a [K, N] weight: blocked along ``axis`` with
    ``block``, float32 scales, a zero point of the weights' type or none."""
    shape = [k, n]
    shape[axis] = -(-shape[axis] // block)
    lo, hi = RANGE[bits, qt]
    zps = [[ctx.rng.randint(lo, hi) for _ in range(shape[1])] for _ in range(shape[0])] if zp else None
    return {"mode": "block", "axis": axis, "block": block, "one": False, "sdt": F32, "out": F32, "zdt": qt,
            "odt": False, "scale": _scale_values(ctx, tuple(shape), F32, ctx.coin(0.5)), "zp": zps,
            "bits": 4 if bits == 4 else 0, "k": k, "n": n}


def weight_const(a: dict, dq: dict, key: str) -> Const:
    """The weights a DequantizeLinear of ``dq`` reads: [K, N] values of its type and width,
    from the motif's seed."""
    qt = dq["zdt"]
    lo, hi = RANGE[8 if dq["bits"] != 4 else 4, qt]
    return const_values(a, key, qt, (dq["k"], dq["n"]), lo, hi, bits=dq["bits"])


def float_const(a: dict, key: str, shape: tuple, lo: float = -1.0, hi: float = 1.0) -> Const:
    """float32 constant values in [lo, hi) from the motif's seed (biases, a norm's gamma and beta)."""
    return const_values(a, key, F32, shape, lo, hi)


class _NBits(OrtMotif):
    level = "extended"
    fuse_dtypes = (F32,)
    min_opset = 21  # blocked DequantizeLinear and 4-bit types
    arity = 1
    types = (F32,)

    @staticmethod
    def _width(ctx) -> tuple:
        return ctx.choice((4, 4, 8)), ctx.choice((I8, U8))
