from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.motif import In, Out, Step, last
from dlgate.ops.motifs.ort_common import F32, scalar
from dlgate.ops.motifs.ort_qdq._shared import _QDQ, fq
from dlgate.ops.quant._shared import QR


class WhereDummyDq(_QDQ):
    """``where_dummy_dq.cc`` (level 1): Where(c, DQ(x), constant scalar) followed by a Q
    gets a DequantizeLinear for the constant (so the Where forms a QDQ node unit); a Where
    of two dequantized tensors needs none."""

    onnx_op = "Where"
    onnx_ops = ("QuantizeLinear", "DequantizeLinear")
    rewrite = "WhereDummyDq"
    arity = 2
    ranks = (0, 1, 2, 3, 4)
    dtypes = ((dt.BOOL, F32),)
    conditions = ("constant_branch",)

    def draw(self, ctx, ins, violate):
        q = fq(ctx)
        lo, hi = QR[q["to"]]
        value = (ctx.rng.randint(lo, hi) - q["zp"]) * q["scale"]  # on the grid
        return {"q": q, "value": float(value), "first": ctx.coin()}

    def input_type(self, ctx, i, ins, a, dtype):
        return ins[0].with_dtype(dtype)

    def steps(self, a):
        s = [Step("FakeQuant", a["q"], (In(1),))]
        if a["violate"] == "constant_branch":
            s.append(Step("FakeQuant", a["q"], (Out(0),)))  # the other branch dequantized too
            branch = Out(1)
        else:
            branch = scalar(a["value"], F32, "branch")
        ab = (Out(0), branch) if a["first"] else (branch, Out(0))
        s.append(Step("Where", {}, (In(0),) + ab))
        return s + [Step("FakeQuant", a["q"], (last(s),)), Step("Neg", {}, (Out(len(s)),))]


OPS = [WhereDummyDq]
