"""TVM's ONNX importer (``python/tvm/relax/frontend/onnx/onnx_frontend.py``) writes many
ONNX operators as several Relax operators, which ``FuseOps`` then joins into one fused
function named after the pieces: HardSwish is ``add_clip_divide_multiply``, Elu
``exp_subtract_relu_multiply_relu_add``, InstanceNormalization a mean-subtract-divide
function and a variance one. Each motif's condition ``decomposed`` is broken by an
operator the importer maps to one Relax operator (Relu, Gelu, LayerNormalization), which
leaves nothing to fuse; the element-wise chain's by a reduction between its two ops.
Where the importer refuses a dtype ONNX allows, the motif leaves that dtype out and says
why."""
from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.spec.motif import In, Motif, Out, Step
from dlgate.spec.registry import get

FLOAT_SIGS = tuple((t,) for t in dt.FLOATS)

#: Activations the importer decomposes -> the fused functions FuseOps makes of them.
DECOMPOSED_ACTS = {
    "HardSwish": ("add_clip_divide_multiply",),
    "HardSigmoid": ("multiply_add_clip",),
    "Softplus": ("maximum_abs_negative_exp_add_log_add",),
    "Selu": ("exp_subtract_relu_multiply_relu_add_multiply",),
    "Elu": ("exp_subtract_relu_multiply_relu_add",),
    "Softsign": ("abs_add_divide",),
    "ThresholdedRelu": ("greater_cast_multiply",),
    "Mish": ("exp_add_log_tanh_multiply",),
    "Shrink": ("greater_subtract_where_less_subtract_where_add", "greater_subtract_where_less_add_where_add"),
}
#: Float16 and float64 Elu, Selu and ThresholdedRelu fail to import (float32 constants
#: meet the tensor: "Binary operators must have the same datatype"), a defect of the
#: importer that the motif leaves to the operators' own specs.
FLOAT32_ONLY = ("Elu", "Selu", "ThresholdedRelu")
#: Activations the importer maps to one Relax operator each.
NATIVE_ACTS = ("Relu", "Sigmoid", "Tanh", "LeakyRelu", "Gelu")


class TvmActivationDecomposition(Motif):
    """An activation the importer writes as several element-wise Relax operators, fused
    back into one function by FuseOps."""

    name = "TvmActivationDecomposition"
    onnx_op = "HardSwish"
    onnx_ops = tuple(k for k in DECOMPOSED_ACTS if k != "HardSwish") + NATIVE_ACTS
    optimizer = "tvm"
    rewrite = "ONNX importer activation decomposition + FuseOps"
    expects = tuple(f"fused:{n}" for names in DECOMPOSED_ACTS.values() for n in names)
    conditions = ("decomposed",)
    arity = 1
    ranks = (1, 2, 3, 4)
    dtypes = FLOAT_SIGS
    min_opset = 18  # Mish

    def draw(self, ctx, ins, violate):
        ops = NATIVE_ACTS if violate else tuple(DECOMPOSED_ACTS)
        if ins[0].dtype != dt.FLOAT32:
            ops = tuple(o for o in ops if o not in FLOAT32_ONLY)
        op = ctx.choice([o for o in ops if get(o).available(ctx.opset)])
        return {"op": op, "op_attrs": get(op).sample(ctx, ins)}

    def steps(self, a):
        return [Step(a["op"], a["op_attrs"], (In(0),))]


class TvmNormDecomposition(Motif):
    """InstanceNormalization, which the importer writes as mean, variance and element-wise
    operators: FuseOps makes a normalizing function (``mean_subtract_divide_multiply_add``)
    and a variance one (``variance_add_sqrt``). Broken (``decomposed``):
    LayerNormalization, one Relax ``layer_norm``."""

    name = "TvmNormDecomposition"
    onnx_op = "InstanceNormalization"
    onnx_ops = ("LayerNormalization",)
    optimizer = "tvm"
    rewrite = "ONNX importer normalization decomposition + FuseOps"
    expects = ("fused:mean_subtract_divide_multiply_add", "fused:variance_add_sqrt",
               "fused:mean_subtract_divide_reshape_multiply_reshape_add")  # the last: live scale and bias
    conditions = ("decomposed",)
    arity = 3
    ranks = (3, 4)
    dtypes = tuple((t,) * 3 for t in (dt.FLOAT32, dt.FLOAT16))  # Relax's layer_norm: no float64
    min_opset = 17  # LayerNormalization

    def draw(self, ctx, ins, violate):
        op = "LayerNormalization" if violate else "InstanceNormalization"
        return {"op": op, "op_attrs": get(op).sample(ctx, ins[:1])}

    def steps(self, a):
        return [Step(a["op"], a["op_attrs"], (In(0), In(1), In(2)))]

    def input_type(self, ctx, i, ins, a, dtype):
        return get(a["op"]).input_type(ctx, i, ins, a["op_attrs"], dtype)

    def constant_input(self, a, i):
        return True  # constant scale and bias: the input is then live, never folded away


#: Element-wise ONNX operators defined everywhere -> their Relax PrimFunc names.
ELEMENTWISE = {"Exp": "exp", "Abs": "abs", "Neg": "negative", "Erf": "erf", "Sin": "sin", "Cos": "cos",
               "Floor": "floor", "Ceil": "ceil", "Round": "round", "Sign": "sign", "Sigmoid": "sigmoid",
               "Tanh": "tanh", "Relu": "relu"}


class TvmElementwiseChain(Motif):
    """Two element-wise operators in a row: one function ``<op1>_<op2>``. Broken
    (``no_reduction_between``): a ReduceMax (kept dims) between them; the first fuses into
    the reduction (``<op1>_max``), the second stays alone."""

    name = "TvmElementwiseChain"
    onnx_op = "Exp"
    onnx_ops = tuple(k for k in ELEMENTWISE if k != "Exp") + ("ReduceMax",)
    optimizer = "tvm"
    rewrite = "FuseOps (element-wise chain)"
    expects = tuple(f"fused:{p}_{q}" for p in ELEMENTWISE.values() for q in ELEMENTWISE.values()
                    if q not in ("floor", "ceil", "round", "sign"))
    conditions = ("no_reduction_between",)
    arity = 1
    ranks = (1, 2, 3, 4)
    dtypes = FLOAT_SIGS

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
        return s + [Step(a["op2"], {}, (Out(len(s) - 1),))]


OPS = [TvmActivationDecomposition, TvmNormDecomposition, TvmElementwiseChain]
