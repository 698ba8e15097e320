"""What the ort_qdq motifs share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.motifs.ort_common import F32, OrtMotif
from dlgate.ops.quant._shared import QR


I8, U8, F16 = dt.INT8, dt.UINT8, dt.FLOAT16


def fq(ctx, qt: str | None = None, e: int | None = None, z: int | None = None) -> dict:
    """``FakeQuant`` attributes: per tensor, float32, scale 2^e, zero point z of type qt."""
    qt = qt or ctx.choice((I8, U8))
    lo, hi = QR[qt]
    e = ctx.rng.randint(-6, -2) if e is None else e
    if z is None:
        z = ctx.choice((0, 0, ctx.rng.randint(-16, 16))) if qt == I8 else ctx.choice((128, 128, ctx.rng.randint(100, 150)))
    return {"mode": "tensor", "axis": 1, "block": 0, "one": False, "to": qt, "sdt": F32, "xdt": F32, "pow2": True,
            "scale": 2.0 ** e, "zp": z, "odt": False, "e": e}


class _QDQ(OrtMotif):
    arity = 1
    types = (F32,)
    min_opset = 19  # DequantizeLinear is onnx.reference's from 19 (the spec tests compare with it)
