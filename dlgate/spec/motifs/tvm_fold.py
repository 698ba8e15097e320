"""TVM Relax ``FoldConstant`` (``src/relax/transform/fold_constant.cc``): after
legalization, a ``call_tir`` whose arguments are all constants is evaluated at compile
time and replaced by its result. The ONNX importer evaluates some operators on
constants itself (Neg, Abs, Log, Reshape, Concat, Unsqueeze, Cast...), so FoldConstant
sees what it leaves: other element-wise operators of constants, and the Relax operators
it writes around constant weights (Gemm's transposed B and beta-scaled C, a convolution
bias reshaped to broadcast). Each motif expects ``pass:FoldConstant`` and breaks it by
making the folded operand live (a graph input) or by leaving the importer nothing to
write around the constants."""
from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.spec.motif import In, Motif, Out, Step
from dlgate.spec.registry import get

#: Element-wise operators the importer leaves to FoldConstant on a constant.
LEFT = ("Exp", "Sigmoid", "Tanh", "Relu", "Sin", "Cos", "Floor", "Ceil", "Round", "Sign", "Erf")
#: Element-wise operators the importer evaluates itself on a constant.
EVALUATED = ("Neg", "Abs")


class TvmConstantSubexpression(Motif):
    """``x (+ or *) f(C)`` with C a constant initializer: ``f(C)`` is folded. Broken:
    C is a graph input (``operand_constant``), or f is one the importer evaluates itself,
    leaving FoldConstant nothing (``left_by_importer``)."""

    name = "TvmConstantSubexpression"
    onnx_op = "Add"
    onnx_ops = ("Mul",) + LEFT + EVALUATED
    optimizer = "tvm"
    rewrite = "FoldConstant (element-wise of a constant)"
    expects = ("pass:FoldConstant",)
    conditions = ("operand_constant", "left_by_importer")
    arity = 2
    ranks = (1, 2, 3, 4)
    dtypes = tuple((t, t) for t in dt.FLOATS)

    def draw(self, ctx, ins, violate):
        f = ctx.choice(EVALUATED if violate == "left_by_importer" else LEFT)
        return {"f": f, "f_attrs": get(f).sample(ctx, ins), "op": ctx.choice(("Add", "Mul"))}

    def steps(self, a):
        return [Step(a["f"], a["f_attrs"], (In(1),)), Step(a["op"], {}, (In(0), Out(0)))]

    def input_type(self, ctx, i, ins, a, dtype):
        return get("Add").input_type(ctx, i, ins, {}, dtype)

    def constant_input(self, a, i):
        return a["violate"] != "operand_constant"


class TvmGemmConstantWeights(Motif):
    """Gemm with constant B and C: the importer writes ``permute_dims(B)`` for transB and
    ``C * beta`` for beta != 1 around the constants, and FoldConstant folds them (the draw
    keeps at least one). Broken: B and C are graph inputs (``weights_constant``; transA
    and alpha then stay off, so a constant A leaves nothing either), or transB is 0 and
    beta 1 (``weights_transformed``)."""

    name = "TvmGemmConstantWeights"
    onnx_op = "Gemm"
    optimizer = "tvm"
    rewrite = "FoldConstant (Gemm's transposed and scaled constants)"
    expects = ("pass:FoldConstant",)
    conditions = ("weights_constant", "weights_transformed")
    arity = 3
    ranks = (2,)
    dtypes = tuple((t,) * 3 for t in dt.FLOATS)

    def draw(self, ctx, ins, violate):
        g = get("Gemm").sample(ctx, ins)
        if violate == "weights_constant":
            g.update(transA=0, alpha=1.0)
        elif violate == "weights_transformed":
            g.update(transB=0, beta=1.0)
        elif not g["transB"] and g["beta"] == 1.0:
            g["transB"] = 1
        return {"gemm": g}

    def steps(self, a):
        return [Step("Gemm", a["gemm"], (In(0), In(1), In(2)))]

    def input_type(self, ctx, i, ins, a, dtype):
        return get("Gemm").input_type(ctx, i, ins, a["gemm"], dtype)

    def constant_input(self, a, i):
        return a["violate"] != "weights_constant"


class TvmConvBiasFold(Motif):
    """Conv with constant weights and bias: the importer reshapes the bias to
    (1, C, 1...) to broadcast it, and FoldConstant folds the reshape. Broken
    (``params_constant``): weights and bias are graph inputs; the reshape stays a kernel
    of its own (``RewriteDataflowReshape`` then makes it a view)."""

    name = "TvmConvBiasFold"
    onnx_op = "Conv"
    optimizer = "tvm"
    rewrite = "FoldConstant (the importer's bias reshape)"
    expects = ("pass:FoldConstant",)
    conditions = ("params_constant",)
    arity = 3
    ranks = (3, 4, 5)
    dtypes = tuple((t,) * 3 for t in dt.FLOATS)

    def draw(self, ctx, ins, violate):
        conv = get("Conv").sample(ctx, ins[:1])
        if violate and conv["auto_pad"].startswith("SAME"):
            # SAME_* pads the input with a kernel of its own, which folds when the input
            # is a constant (it may be, once the weights are live)
            conv["auto_pad"] = "VALID"
        return {"conv": conv}

    def steps(self, a):
        return [Step("Conv", a["conv"], (In(0), In(1), In(2)))]

    def input_type(self, ctx, i, ins, a, dtype):
        return get("Conv").input_type(ctx, i, ins, a["conv"], dtype)

    def constant_input(self, a, i):
        return a["violate"] != "params_constant"


OPS = [TvmConstantSubexpression, TvmGemmConstantWeights, TvmConvBiasFold]
