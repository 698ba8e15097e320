from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.base import TensorType
from dlgate.ops.motif import In, Step, const_values, last
from dlgate.ops.motifs.ort_common import F32, OrtMotif
from dlgate.ops.motifs.ort_matmul._shared import _n
from dlgate.ops.quant._shared import QR, QTYPES
from dlgate.ops.registry import get


class MatMulIntegerToFloat(OrtMotif):
    """``matmul_integer_to_float.cc`` (level 2): MatMulInteger -> Cast -> Mul by the
    product of two scales (a Mul node), the Cast, the MatMulInteger and the scales' Mul
    each read only by the next, becomes ``com.microsoft:MatMulIntegerToFloat`` (a constant
    bias of N > 1 elements added after it joins the fused node). The motif takes a tensor
    of any type, casts it to float32 (unless it is float32) and quantizes it inside (a
    QuantizeLinear with constant scale and zero point, to int8 or uint8); B (int8 or
    uint8, its type drawn with A's) is a constant made inside the motif. The two scales
    are live scalars of the input's type (graph inputs), cast to float32 likewise:
    constants would be folded into one before the fusion. Breaking ``scale_product``
    multiplies by one scale at a time (no Mul of the two); breaking ``single_consumer``
    reads the MatMulInteger's, the Cast's or the scales' Mul's output once more."""

    onnx_op = "Cast"  # the one op whose schema takes every input type the motif does
    onnx_ops = ("QuantizeLinear", "MatMulInteger", "Mul", "Add")
    rewrite = "MatMulIntegerToFloatFusion"
    expects = ("transformer:MatMulIntegerToFloatFusion", "fused:com.microsoft:MatMulIntegerToFloat")
    level = "extended"
    arity = 3
    ranks = (2, 3, 4)
    types = dt.ALL
    conditions = ("scale_product", "single_consumer")

    def draw(self, ctx, ins, violate):
        x = ins[0]
        ta, tb = ctx.choice(QTYPES), ctx.choice(QTYPES)
        q = get("QuantizeLinear")._attrs(ctx, x.with_dtype(F32), ta)
        mmi = get("MatMulInteger")._attrs(ctx, ta, tb, _n(ctx))
        bias = mmi["n"] > 1 and ctx.coin(0.4)
        again = ctx.choice(("mmi", "cast", "scale")) if violate == "single_consumer" else None
        return {"q": q, "mmi": mmi, "k": x.shape[-1], "bias": bias, "again": again, "cast": x.dtype != F32}

    def backward(self, ctx, out):
        """A float32 output [.., M, N] from an input [.., M, K] of an allowed type."""
        types = [t for t in self.types if t in ctx.dtypes]
        if out.dtype != F32 or out.rank not in self.ranks or not types:
            return None
        t = ctx.choice(types)
        x = TensorType(t, tuple(out.shape[:-1]) + (ctx.dim(16),))
        a = self.sample(ctx, [x])
        n = out.shape[-1]
        a["mmi"]["n"] = n
        a["bias"] = a["bias"] and n > 1
        return [x, TensorType(t, ()), TensorType(t, ())], a

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, ())

    def steps(self, a):
        m = a["mmi"]
        s: list = []

        def add(op, attrs, *ins):
            s.append(Step(op, attrs, ins))
            return last(s)

        x, s1, s2 = In(0), In(1), In(2)
        if a["cast"]:
            x, s1, s2 = (add("Cast", {"to": F32}, r) for r in (x, s1, s2))
        w = const_values(a, "w", m["bt"], (a["k"], m["n"]), *QR[m["bt"]])
        mmi = add("MatMulInteger", m, add("QuantizeLinear", a["q"], x), w)
        cast = add("Cast", {"to": F32}, mmi)
        scale = None
        if a["violate"] == "scale_product":  # one scale at a time: no Mul of the two scales
            y = add("Mul", {}, add("Mul", {}, cast, s1), s2)
        else:
            scale = add("Mul", {}, s1, s2)
            y = add("Mul", {}, cast, scale)
        if a["bias"]:
            y = add("Add", {}, y, const_values(a, "bias", F32, (m["n"],)))
        if a["again"] == "mmi":
            add("Add", {}, y, add("Cast", {"to": F32}, mmi))
        elif a["again"] == "cast":
            add("Add", {}, y, cast)
        elif a["again"] == "scale":
            add("Mul", {}, y, scale)
        return s

    def constant_input(self, a, i):
        return False  # live scales: two constants would be folded into one


OPS = [MatMulIntegerToFloat]
