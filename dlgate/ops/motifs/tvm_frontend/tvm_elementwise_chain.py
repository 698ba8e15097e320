from __future__ import annotations

from dlgate.ops.motif import In, Out, Step, last
from dlgate.ops.motifs.tvm_common import TvmMotif
from dlgate.ops.registry import get


#: Element-wise ONNX operators defined everywhere -> their Relax PrimFunc names.
ELEMENTWISE = {"Exp": "exp", "Abs": "abs", "Neg": "negative", "Erf": "erf", "Sin": "sin", "Cos": "cos",
               "Floor": "floor", "Ceil": "ceil", "Round": "round", "Sign": "sign", "Sigmoid": "sigmoid",
               "Tanh": "tanh", "Relu": "relu"}


class TvmElementwiseChain(TvmMotif):
    """Two element-wise operators in a row: one function ``<op1>_<op2>``. Broken
    (``no_reduction_between``): a ReduceMax (kept dims) between them; the first fuses into
    the reduction (``<op1>_max``), the second stays alone."""

    onnx_op = "Exp"
    onnx_ops = tuple(k for k in ELEMENTWISE if k != "Exp") + ("ReduceMax",)
    rewrite = "FuseOps (element-wise chain)"
    expects = tuple(f"fused:{p}_{q}" for p in ELEMENTWISE.values() for q in ELEMENTWISE.values()
                    if q not in ("floor", "ceil", "round", "sign"))
    arity = 1
    ranks = (1, 2, 3, 4)
    conditions = ("no_reduction_between",)

    def draw(self, ctx, ins, violate):
        # the second op is continuous: a rounding-level difference in the first op's
        # result must not flip a Floor or a Sign (which would be no compiler's fault)
        p, q = ctx.choice(tuple(ELEMENTWISE)), ctx.choice([k for k in ELEMENTWISE if not get(k).jumps])
        a = {"op1": p, "op2": q}
        if violate:
            a["reduce"] = {"keepdims": 1, "axes": [ins[0].rank - 1]}
        return a

    def steps(self, a):
        s = [Step(a["op1"], {}, (In(0),))]
        if a["violate"] == "no_reduction_between":
            s.append(Step("ReduceMax", a["reduce"], (Out(0),)))
        return s + [Step(a["op2"], {}, (last(s),))]


OPS = [TvmElementwiseChain]
