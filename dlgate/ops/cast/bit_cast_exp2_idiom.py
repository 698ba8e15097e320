from __future__ import annotations

from typing import ClassVar

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.cast._shared import WIDTH


#: For the integer types BitCastExp2Idiom reads: (float type, exponent bias, mantissa bits).
EXP2 = {dt.INT32: (dt.FLOAT32, 127, 23), dt.INT64: (dt.FLOAT64, 1023, 52)}


class BitCastExp2Idiom(OpSpec):
    """The bit trick that builds ``2^x`` (times ``1 + m / 2^M``) from an integer ``x``:
    ``BitCast(Add(Mul(Add(x, bias), 2^M), m), to=float)`` with bias 127 and M = 23 for
    int32 -> float32, 1023 and 52 for int64 -> float64, and ``m`` a constant mantissa in
    [0, 2^M) (the last Add omitted when it is 0): integer -> float BitCast on integers
    whose bits are normal floats, so the exponent and mantissa fields both show in the
    float comparison. Integer Add and Mul wrap; a signed overflow (``x + bias`` outside
    [-2^(31 - M), 2^(31 - M)) for int32) is undefined, and so, in practice, is a biased
    exponent of 0 with a nonzero mantissa, a subnormal float that backends flushing
    subnormals (FTZ/DAZ) read as 0: both reported by ``undefined`` (dlgate's own integers,
    |x| <= 16, reach neither)."""

    name = "BitCastExp2Idiom"
    onnx_op = "BitCast"
    onnx_ops: ClassVar[tuple] = ("Add", "Mul")
    min_opset = 26
    dtypes = ((dt.INT32,), (dt.INT64,))

    def sample(self, ctx, ins):
        src = ins[0].dtype if ins[0].dtype in EXP2 else dt.INT32
        top = (1 << EXP2[src][2]) - 1
        return {"src": src, "mantissa": ctx.choice((0, 0, (top + 1) // 2, top, ctx.rng.randint(1, top)))}

    def backward(self, ctx, out):
        src = {dt.FLOAT32: dt.INT32, dt.FLOAT64: dt.INT64}.get(out.dtype)
        if src is None or src not in ctx.dtypes:
            return None
        x = TensorType(src, out.shape)
        return [x], self.sample(ctx, [x])

    def requires(self, ins, a):
        src = ins[0].dtype
        return [src in EXP2, a["src"] == src, 0 <= a["mantissa"] < (1 << EXP2.get(src, EXP2[dt.INT32])[2])]

    def infer(self, ins, a):
        return [TensorType(EXP2[ins[0].dtype][0], ins[0].shape)]

    def onnx(self, b, a, xs, ys):
        src = a["src"]
        ft, bias, mbits = EXP2[src]
        y = b.node("Add", [xs[0], b.const(bias, src, hint="bias")], 1)
        y = b.node("Mul", [y[0], b.const(1 << mbits, src, hint="scale")], 1)
        if a["mantissa"]:
            y = b.node("Add", [y[0], b.const(a["mantissa"], src, hint="mantissa")], 1)
        b.node("BitCast", y, ys, to=int(dt.ONNX[ft]))

    def _bits(self, a, x):
        """The integer the BitCast reads (wrapping as the integer nodes do)."""
        _, bias, mbits = EXP2[a["src"]]
        return (x + bias) * (1 << mbits) + a["mantissa"]

    def torch(self, a, x):
        return self._bits(a, x).view(dt.torch_dtype(EXP2[a["src"]][0]))

    def value_range(self, a, ranges, ins):
        # normal powers of two while the biased exponent stays in [1, 2 * bias]
        _, bias, mbits = EXP2[a["src"]]
        lo, hi = ranges[0]
        if not (1 - bias <= lo and hi <= bias):
            return None
        f = 1 + a["mantissa"] / (1 << mbits)
        return [(2.0 ** lo * f, 2.0 ** hi * f)]

    def undefined(self, a, ins, out_types):
        _, bias, mbits = EXP2[a["src"]]
        x = ins[0].to(torch.float64)  # exact for |x| < 2^53; beyond that the Add overflows anyway
        width = 8 * WIDTH[a["src"]]
        top = 2.0 ** (width - 1)  # the type holds [-top, top)
        prod = (x + bias) * float(1 << mbits)
        if bool(((x + bias >= top) | (prod >= top) | (prod < -top) | (prod + a["mantissa"] >= top)).any()):
            return f"signed integer overflow: (x + {bias}) * 2^{mbits} + {a['mantissa']} beyond {a['src']}"
        bits = self._bits(a, ins[0])
        field = (bits >> mbits) & ((1 << (width - 1 - mbits)) - 1)
        if bool(((field == 0) & ((bits & ((1 << mbits) - 1)) != 0)).any()):
            return "a subnormal float (biased exponent 0): backends flushing subnormals (FTZ/DAZ) read it as 0"
        return None


OPS = [BitCastExp2Idiom]
