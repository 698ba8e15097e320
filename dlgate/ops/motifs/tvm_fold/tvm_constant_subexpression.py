from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.tvm_common import TvmMotif
from dlgate.ops.registry import get


#: Element-wise operators the importer leaves to FoldConstant on a constant.
LEFT = ("Exp", "Sigmoid", "Tanh", "Relu", "Sin", "Cos", "Floor", "Ceil", "Round", "Sign", "Erf")
#: Element-wise operators the importer evaluates itself on a constant.
EVALUATED = ("Neg", "Abs")


class TvmConstantSubexpression(TvmMotif):
    """``x (+ or *) f(C)`` with C a constant initializer: ``f(C)`` is folded. Broken:
    C is a graph input (``operand_constant``), or f is one the importer evaluates itself,
    leaving FoldConstant nothing (``left_by_importer``)."""

    onnx_op = "Add"
    onnx_ops = ("Mul",) + LEFT + EVALUATED
    rewrite = "FoldConstant (element-wise of a constant)"
    expects = ("pass:FoldConstant",)
    arity = 2
    ranks = (1, 2, 3, 4)
    conditions = ("operand_constant", "left_by_importer")

    def draw(self, ctx, ins, violate):
        f = ctx.choice(EVALUATED if violate == "left_by_importer" else LEFT)
        return {"f": f, "f_attrs": get(f).sample(ctx, ins), "op": ctx.choice(("Add", "Mul"))}

    def input_type(self, ctx, i, ins, a, dtype):
        return get("Add").input_type(ctx, i, ins, {}, dtype)

    def steps(self, a):
        return [Step(a["f"], a["f_attrs"], (In(1),)), Step(a["op"], {}, (In(0), Out(0)))]

    def constant_input(self, a, i):
        return a["violate"] != "operand_constant"


OPS = [TvmConstantSubexpression]
