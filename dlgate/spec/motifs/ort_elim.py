"""onnxruntime's eliminations and small algebraic rewrites (``onnxruntime/core/optimizer``):
the level-1 rules of ``Level1_RuleBasedTransformer`` that drop a node computing nothing
(``identity_elimination.cc``, ``slice_elimination.cc``, ``unsqueeze_elimination.cc``,
``dropout_elimination.cc``, ``expand_elimination.cc``, ``cast_elimination.cc``,
``noop_elimination.cc``, ``pre_shape_node_elimination.cc``) or merge two
(``div_mul_fusion.cc``, ``relu_clip_fusion.cc``, ``not_where_fusion.cc``); the level-1
graph transformers ``ConstantFolding``, ``CommonSubexpressionElimination``,
``ConstantSharing`` and ``TransposeOptimizer``; ``GatherSliceToSplitFusion`` (level 2);
and the float16 fallback the session always applies (``insert_cast_transformer.cc``: Casts
around float16 nodes without a CPU kernel, duplicate Casts removed) with level 4's storing
of such a node's float16 initializers as float32.

An eliminated node sits between two Negs (Unsqueezes for the Cast rules: onnxruntime's
CPU Neg has no float16 kernel, and the Casts it would put around it would blur a count
of Casts): the rules leave a node alone whose input is a graph input or whose output is
a graph output (``graph_utils::CanRemoveNode``)."""
from __future__ import annotations

import numpy as np

from dlgate import dtypes as dt
from dlgate.spec.base import TensorType
from dlgate.spec.motif import Const, In, Out, Step
from dlgate.spec.motifs.ort_common import F16, F32, F64, OrtMotif, scalar
from dlgate.spec.registry import get

FLOATS = (F32, F16, F64)
INT64_MAX = 2**63 - 1


def _neg(j: int) -> Step:
    return Step("Neg", {}, (Out(j),))


class _Eliminated(OrtMotif):
    """Neg, the node the rule drops (reading the Neg), then a Neg of its output."""

    arity = 1
    ranks = (1, 2, 3, 4, 5)
    dtypes = tuple((t,) for t in FLOATS)
    around = "Neg"

    def node(self, a, src) -> Step:
        raise NotImplementedError

    def steps(self, a):
        wrap = {"axes": [0]} if self.around == "Unsqueeze" else {}
        return [Step(self.around, wrap, (In(0),)), self.node(a, Out(0)), Step(self.around, wrap, (Out(1),))]

    def draw(self, ctx, ins, violate):
        x = ins[0]
        return self.drawn(ctx, x.with_shape((1,) + tuple(x.shape)) if self.around == "Unsqueeze" else x, violate)

    def drawn(self, ctx, x, violate) -> dict:
        return {}


class EliminateIdentity(_Eliminated):
    """``identity_elimination.cc``: an Identity whose output is not a graph output."""

    name = "EliminateIdentity"
    onnx_op = "Identity"
    rewrite = "EliminateIdentity"
    expects = ("removed:Identity",)

    def node(self, a, src):
        return Step("Identity", {}, (src,))


class EliminateSlice(_Eliminated):
    """``slice_elimination.cc``: a Slice whose constant starts are 0, ends INT64_MAX and
    steps 1 on every axis it names (it copies its input)."""

    name = "EliminateSlice"
    onnx_op = "Slice"
    rewrite = "EliminateSlice"
    expects = ("removed:Slice",)
    conditions = ("noop",)

    def drawn(self, ctx, x, violate):
        axes = ctx.axes(x.rank)
        ends = [INT64_MAX] * len(axes)
        if violate == "noop":  # a real slice: one element off the end of a long axis, else a reversal
            long = [ax for ax in range(x.rank) if x.shape[ax] > 1]
            if long:
                return {"starts": [0], "ends": [-1], "axes": long[:1], "steps": None}
            return {"starts": [-1] * len(axes), "ends": [-(2**63)] * len(axes), "axes": axes, "steps": [-1] * len(axes)}
        return {"starts": [0] * len(axes), "ends": ends, "axes": axes,
                "steps": [1] * len(axes) if ctx.coin() else None}

    def node(self, a, src):
        return Step("Slice", {k: a[k] for k in ("starts", "ends", "axes", "steps")}, (src,))


class UnsqueezeElimination(OrtMotif):
    """``unsqueeze_elimination.cc``: an Unsqueeze of a constant initializer (read only by
    it) is folded into a reshaped initializer."""

    name = "UnsqueezeElimination"
    onnx_op = "Add"
    onnx_ops = ("Unsqueeze",)
    rewrite = "UnsqueezeElimination"
    expects = ("removed:Unsqueeze",)
    conditions = ("input_constant",)
    arity = 2
    ranks = (1, 2, 3, 4)
    dtypes = tuple((t, t) for t in FLOATS)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        k = ctx.int(1, x.rank)  # the constant: x's last k dims less one, unsqueezed back to 1 there
        pos = ctx.rng.randrange(k)
        return {"shape": tuple(d for j, d in enumerate(x.shape[x.rank - k:]) if j != pos), "axes": [pos]}

    def steps(self, a):
        return [Step("Unsqueeze", {"axes": a["axes"]}, (In(1),)), Step("Add", {}, (In(0), Out(0)))]

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, a["shape"])

    def constant_input(self, a, i):
        return a["violate"] != "input_constant"


class EliminateDropout(_Eliminated):
    """``dropout_elimination.cc``: an inference Dropout (its mask output unused)."""

    name = "EliminateDropout"
    onnx_op = "Dropout"
    rewrite = "EliminateDropout"
    expects = ("removed:Dropout",)

    def drawn(self, ctx, x, violate):
        return {"dropout": get("Dropout").sample(ctx, [x])}

    def node(self, a, src):
        return Step("Dropout", a["dropout"], (src,))


class ExpandElimination(_Eliminated):
    """``expand_elimination.cc``: an Expand to a shape that broadcasts to the input's own
    (ones, or the input's trailing dims)."""

    name = "ExpandElimination"
    onnx_op = "Expand"
    rewrite = "ExpandElimination"
    expects = ("removed:Expand",)
    conditions = ("noop",)
    ranks = (1, 2, 3, 4)

    def drawn(self, ctx, x, violate):
        k = ctx.int(1, x.rank)
        shape = [1 if ctx.coin() else d for d in x.shape[x.rank - k:]]
        if violate == "noop":
            shape = [2] + list(x.shape)  # a new leading axis of 2
        return {"shape": shape}

    def node(self, a, src):
        return Step("Expand", {"shape": a["shape"]}, (src,))


class CastElimination(_Eliminated):
    """``cast_elimination.cc``: a Cast to the input's own type."""

    name = "CastElimination"
    onnx_op = "Cast"
    rewrite = "CastElimination"
    expects = ("removed:Cast",)
    conditions = ("same_type",)
    around = "Unsqueeze"
    ranks = (0, 1, 2, 3)

    def drawn(self, ctx, x, violate):
        t = x.dtype
        return {"to": ctx.choice([u for u in FLOATS if u != t]) if violate == "same_type" else t}

    def node(self, a, src):
        return Step("Cast", {"to": a["to"]}, (src,))


class RemoveDuplicateCast(OrtMotif):
    """``insert_cast_transformer.cc``'s ``RemoveDuplicateCastTransformer`` (after the
    levels): Cast -> Cast where the first widens without loss (float16 -> float32 ->
    float16, float32 -> float64 -> float32) collapses; a narrowing first Cast (float32
    -> float16 -> float32) rounds, and must stay."""

    name = "RemoveDuplicateCast"
    onnx_op = "Cast"
    rewrite = "RemoveDuplicateCastTransformer"
    expects = ("transformer:RemoveDuplicateCastTransformer",)
    conditions = ("lossless",)
    level = "basic"
    arity = 1
    ranks = (0, 1, 2, 3)
    dtypes = ((F32,), (F16,))

    def draw(self, ctx, ins, violate):
        t = ins[0].dtype
        if violate == "lossless":
            mid = F16 if t == F32 else dt.INT32  # rounds (float32 -> float16) or truncates
        else:
            mid = F64 if t == F32 else ctx.choice((F32, F64))
        return {"mid": mid, "to": t}

    def steps(self, a):
        one = {"axes": [0]}
        return [Step("Unsqueeze", one, (In(0),)), Step("Cast", {"to": a["mid"]}, (Out(0),)),
                Step("Cast", {"to": a["to"]}, (Out(1),)), Step("Unsqueeze", one, (Out(2),))]


class NoopElimination(OrtMotif):
    """``noop_elimination.cc``: Add or Sub of 0, Mul or Div by 1, the constant of one
    element (shapes that would broadcast the other input are left alone)."""

    name = "NoopElimination"
    onnx_op = "Add"
    onnx_ops = ("Sub", "Mul", "Div")
    rewrite = "NoopElimination"
    expects = ("removed:Add", "removed:Sub", "removed:Mul", "removed:Div")
    conditions = ("neutral", "one_element")
    loose = ("one_element",)  # an input of one element takes the constant's shape
    arity = 1
    ranks = (1, 2, 3, 4, 5)
    dtypes = tuple((t,) for t in FLOATS)

    def draw(self, ctx, ins, violate):
        op = ctx.choice(("Add", "Sub", "Mul", "Div"))
        neutral = 0.0 if op in ("Add", "Sub") else 1.0
        value = neutral + ctx.choice((0.5, 1.0, -2.0)) if violate == "neutral" else neutral
        x = ins[0]
        if violate == "one_element":
            shape = tuple(x.shape)  # the neutral value, once per element
        else:
            shape = () if ctx.coin() or not x.rank else (1,) * ctx.int(1, x.rank)
        return {"op": op, "value": value, "shape": shape, "dtype": x.dtype}

    def steps(self, a):
        c = Const(np.full(a["shape"], a["value"], dtype=dt.NUMPY[a["dtype"]]), "noop")
        return [Step("Neg", {}, (In(0),)), Step(a["op"], {}, (Out(0), c)), _neg(1)]


class DivMulFusion(OrtMotif):
    """``div_mul_fusion.cc``: Mul(a, Div(1, b)), the Div read only by the Mul, becomes
    Div(a, b)."""

    name = "DivMulFusion"
    onnx_op = "Div"
    onnx_ops = ("Mul",)
    rewrite = "DivMulFusion"
    expects = ("removed:Mul",)
    conditions = ("numerator_one", "single_consumer")
    arity = 2
    dtypes = tuple((t, t) for t in FLOATS)

    def draw(self, ctx, ins, violate):
        return {"one": 2.0 if violate == "numerator_one" else 1.0, "dtype": ins[0].dtype}

    def steps(self, a):
        s = [Step("Div", {}, (scalar(a["one"], a["dtype"], "one"), In(1))), Step("Mul", {}, (In(0), Out(0)))]
        if a["violate"] == "single_consumer":
            s.append(Step("Add", {}, (Out(1), Out(0))))
        return s

    def input_type(self, ctx, i, ins, a, dtype):
        return ins[0].with_dtype(dtype)

    def constant_input(self, a, i):
        return False


class FuseReluClip(OrtMotif):
    """``relu_clip_fusion.cc``: Relu -> Clip (constant bounds), the Relu read only by the
    Clip, becomes one Clip whose lower bound is at least 0."""

    name = "FuseReluClip"
    onnx_op = "Relu"
    onnx_ops = ("Clip",)
    rewrite = "FuseReluClip"
    expects = ("removed:Relu",)
    conditions = ("single_consumer",)
    arity = 1
    dtypes = tuple((t,) for t in FLOATS)

    def draw(self, ctx, ins, violate):
        clip = get("Clip").sample(ctx, ins[:1])
        lo, hi = sorted((ctx.uniform(-2.0, 1.0), ctx.uniform(-1.0, 4.0)))
        if ctx.coin(0.8):
            clip["min"] = float(np.float16(lo))
        if ctx.coin(0.8):
            clip["max"] = float(np.float16(hi))
        return {"clip": clip}

    def steps(self, a):
        s = [Step("Relu", {}, (In(0),)), Step("Clip", a["clip"], (Out(0),))]
        if a["violate"] == "single_consumer":
            s.append(Step("Add", {}, (Out(1), Out(0))))
        return s


class NotWhereFusion(OrtMotif):
    """``not_where_fusion.cc``: Where(Not(c), x, y), the Not read only by Where nodes,
    becomes Where(c, y, x); a Not read by an And too stays."""

    name = "NotWhereFusion"
    onnx_op = "Where"
    onnx_ops = ("Not",)
    rewrite = "NotWhereFusion"
    expects = ("removed:Not",)
    conditions = ("single_consumer",)
    arity = 3
    dtypes = tuple((dt.BOOL, t, t) for t in FLOATS)

    def draw(self, ctx, ins, violate):
        return {}

    def steps(self, a):
        s = [Step("Not", {}, (In(0),)), Step("Where", {}, (Out(0), In(1), In(2)))]
        if a["violate"] == "single_consumer":  # the Not is read by an And too
            s += [Step("And", {}, (Out(0), In(0))), Step("Where", {}, (Out(2), In(2), In(1))),
                  Step("Add", {}, (Out(1), Out(3)))]
        return s

    def input_type(self, ctx, i, ins, a, dtype):
        return ins[0].with_dtype(dtype)


class ConstantFolding(OrtMotif):
    """``constant_folding.cc`` (level 1): a node whose inputs are all constant initializers
    is computed once and replaced by its result."""

    name = "ConstantFolding"
    onnx_op = "Add"
    onnx_ops = ("Mul", "Sigmoid")
    rewrite = "ConstantFolding"
    expects = ("transformer:ConstantFolding",)
    conditions = ("inputs_constant",)
    arity = 3
    dtypes = tuple((t,) * 3 for t in (F32, F64))

    def draw(self, ctx, ins, violate):
        return {"shape": tuple(ins[0].shape[ins[0].rank - ctx.int(0, ins[0].rank):])}

    def steps(self, a):
        return [Step("Mul", {}, (In(1), In(2))), Step("Sigmoid", {}, (Out(0),)), Step("Add", {}, (In(0), Out(1)))]

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, a["shape"])

    def constant_input(self, a, i):
        return a["violate"] != "inputs_constant" or i == 1


class CommonSubexpression(OrtMotif):
    """``common_subexpression_elimination.cc`` (level 1): two nodes of the same type, with
    the same attributes and inputs, are computed once."""

    name = "CommonSubexpression"
    onnx_op = "Add"
    onnx_ops = ("Sigmoid", "Softmax", "Mul")
    rewrite = "CommonSubexpressionElimination"
    expects = ("transformer:CommonSubexpressionElimination",)
    conditions = ("same_attributes",)
    arity = 1
    ranks = (1, 2, 3, 4)
    dtypes = tuple((t,) for t in FLOATS)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        first = ctx.choice((("Sigmoid", {}), ("Softmax", {"axis": x.rank - 1}), ("Mul2", {})))
        second = first
        if violate == "same_attributes":  # Softmax along another axis (rank 1: another op)
            first = ("Softmax", {"axis": x.rank - 1})
            second = ("Softmax", {"axis": 0}) if x.rank > 1 else ("Sigmoid", {})
        return {"ops": [list(first), list(second)]}

    def steps(self, a):
        out = []
        for op, attrs in a["ops"]:
            out.append(Step("Mul", {}, (In(0), In(0))) if op == "Mul2" else Step(op, attrs, (In(0),)))
        return out + [Step("Add", {}, (Out(0), Out(1)))]


class ConstantSharing(OrtMotif):
    """``constant_sharing.cc`` (level 1): scalar initializers of equal type and value read
    by different nodes become one shared initializer."""

    name = "ConstantSharing"
    onnx_op = "Mul"
    onnx_ops = ("Add",)
    rewrite = "ConstantSharing"
    expects = ("transformer:ConstantSharing",)
    conditions = ("same_value",)
    arity = 1
    dtypes = tuple((t,) for t in FLOATS)

    def draw(self, ctx, ins, violate):
        v = float(np.float16(ctx.uniform(-3.0, 3.0)))
        w = v + 0.5 if violate == "same_value" else v
        return {"values": [v, w], "dtype": ins[0].dtype}

    def steps(self, a):
        v, w = a["values"]
        return [Step("Mul", {}, (In(0), scalar(v, a["dtype"], "shared"))),
                Step("Add", {}, (Out(0), scalar(w, a["dtype"], "shared")))]


class TransposeCancel(OrtMotif):
    """``transpose_optimizer`` (level 1): a Transpose pushed through an element-wise node
    meets its inverse and both vanish."""

    name = "TransposeCancel"
    onnx_op = "Transpose"
    onnx_ops = ("Sigmoid",)
    rewrite = "TransposeOptimizer"
    expects = ("transformer:TransposeOptimizer", "removed:Transpose")
    conditions = ()
    arity = 1
    ranks = (2, 3, 4, 5)
    dtypes = tuple((t,) for t in FLOATS)

    def draw(self, ctx, ins, violate):
        r = ins[0].rank
        perm = ctx.perm(r)
        if perm == list(range(r)):
            perm = perm[1:] + perm[:1]
        return {"perm": perm, "inverse": [perm.index(i) for i in range(r)]}

    def steps(self, a):
        return [Step("Transpose", {"perm": a["perm"], "omit": False}, (In(0),)), Step("Sigmoid", {}, (Out(0),)),
                Step("Transpose", {"perm": a["inverse"], "omit": False}, (Out(1),))]


class GatherSliceToSplit(OrtMotif):
    """``gather_slice_fusion.cc``'s ``GatherSliceToSplitFusion`` (level 2): scalar Gathers
    of every index 0..d-1 of one axis of the same tensor become a Split (and Squeezes);
    one index short, they stay. An input without an axis of 2 to 6 elements is outside
    (``axis_length``)."""

    name = "GatherSliceToSplit"
    onnx_op = "Gather"
    onnx_ops = ("Add",)
    rewrite = "GatherSliceToSplitFusion"
    expects = ("transformer:GatherSliceToSplitFusion",)
    conditions = ("cover_axis", "axis_length")
    forced = ("dtype", "axis_length")
    level = "extended"
    arity = 1
    ranks = (1, 2, 3, 4)
    dtypes = tuple((t,) for t in FLOATS)

    @staticmethod
    def _axes(x) -> list:
        return [ax for ax in range(x.rank) if 2 <= x.shape[ax] <= 6]

    def outside(self, ctx, ins):
        return None if self._axes(ins[0]) else "axis_length"

    def draw(self, ctx, ins, violate):
        x = ins[0]
        axis = ctx.choice(self._axes(x) or [0])
        return {"axis": axis, "d": x.shape[axis]}

    def steps(self, a):
        v = a["violate"]
        n = 1 if v == "axis_length" else a["d"] - 1 if v == "cover_axis" else a["d"]
        s = [Step("Gather", {"axis": a["axis"], "indices": i}, (In(0),)) for i in range(n)]
        if n == 1:
            return s + [Step("Neg", {}, (Out(0),))]
        acc = 0
        for j in range(1, n):
            s.append(Step("Add", {}, (Out(acc), Out(j))))
            acc = len(s) - 1
        return s


class Float16Fallback(OrtMotif):
    """``insert_cast_transformer.cc`` (``CastFloat16Transformer``, run on every session):
    a float16 node the CPU EP has no float16 kernel for (Sigmoid, Neg) runs in float32
    between Casts; float32 needs none."""

    name = "Float16Fallback"
    onnx_op = "Sigmoid"
    onnx_ops = ("Neg",)
    rewrite = "CastFloat16Transformer"
    expects = ("transformer:CastFloat16Transformer",)
    conditions = ("dtype",)
    fuse_dtypes = (F16,)
    arity = 1
    dtypes = ((F16,), (F32,))

    def draw(self, ctx, ins, violate):
        return {"op": ctx.choice(("Sigmoid", "Neg"))}

    def steps(self, a):
        return [Step(a["op"], {}, (In(0),))]


class Float16Initializer(OrtMotif):
    """``fuse_initializers_transformer.cc`` (``FuseFp16InitializerToFp32NodeTransformer``,
    level 4, in ``all``): a float16 initializer cast to float32 for a node that runs in
    float32 (inserted by ``CastFloat16Transformer``) is stored as float32 instead; a live
    float16 input stays cast."""

    name = "Float16Initializer"
    onnx_op = "Add"
    rewrite = "FuseFp16InitializerToFp32NodeTransformer"
    expects = ("transformer:FuseFp16InitializerToFp32NodeTransformer",)
    conditions = ("constant",)
    level = "all"
    arity = 2
    dtypes = ((F16, F16),)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        return {"shape": tuple(x.shape[x.rank - ctx.int(0, x.rank):])}

    def steps(self, a):
        return [Step("Add", {}, (In(0), In(1)))]

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, a["shape"])

    def constant_input(self, a, i):
        return a["violate"] != "constant"


class GatherToSlice(OrtMotif):
    """``gather_fusion.cc``'s ``GatherToSliceFusion`` (level 2): a Range read only by a
    Gather, as its indices, becomes a Slice (starts, ends, steps: the Range's start,
    limit, delta). The Range's limit is ``Size(t)`` of a graph input ``t`` (``GatherArange``):
    with constant bounds level 1's ConstantFolding folds the Range into constant indices
    first, so a constant ``t`` breaks ``live_range``; indices shifted by an Add after the
    Range break ``indices_from_range``. A quarter of the Ranges start below 0 (Gather wraps
    those indices from the end): onnxruntime 1.32 fuses them all the same, into a Slice
    whose negative start means something else (a defect the firing side keeps finding)."""

    name = "GatherToSlice"
    onnx_op = "Range"
    onnx_ops = ("Gather", "Size", "Add")
    rewrite = "GatherToSliceFusion"
    expects = ("transformer:GatherToSliceFusion",)
    conditions = ("live_range", "indices_from_range")
    level = "extended"
    arity = 2
    ranks = (1, 2, 3, 4, 5)
    dtypes = tuple((t, t) for t in FLOATS)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        g = get("GatherArange").sample(ctx, ins[:1])
        g["shift"] = 0
        if violate == "indices_from_range":  # the largest axis, indices 0..d-2 shifted by 1
            ax = max(range(x.rank), key=lambda j: x.shape[j])
            d = x.shape[ax]
            g.update(axis=ax, start=0, delta=ctx.choice((1, 2)), limit=max(1, d - 1), shift=1)
        return {"g": g}

    def steps(self, a):
        return [Step("GatherArange", a["g"], (In(0), In(1)))]

    def input_type(self, ctx, i, ins, a, dtype):
        return get("GatherArange").input_type(ctx, i, ins, a["g"], dtype)

    def constant_input(self, a, i):
        return a["violate"] == "live_range"


OPS = [EliminateIdentity, EliminateSlice, UnsqueezeElimination, EliminateDropout, ExpandElimination, CastElimination,
       RemoveDuplicateCast, NoopElimination, DivMulFusion, FuseReluClip, NotWhereFusion, ConstantFolding,
       CommonSubexpression, ConstantSharing, TransposeCancel, GatherSliceToSplit, Float16Fallback, Float16Initializer,
       GatherToSlice]
