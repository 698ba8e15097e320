"""onnxruntime's MatMul and Gemm fusions (``onnxruntime/core/optimizer``): MatMul + Add
into Gemm (``matmul_add_fusion.cc``, levels 1 and 2), MatMul + BatchNormalization into
Gemm (``matmul_bn_fusion.cc``, a level-1 rule), a Transpose folded into Gemm's transA /
transB (``gemm_transpose_fusion.cc``, a rule at levels 1 and 2), and at level 2 Gemm +
activation into ``FusedGemm`` (``gemm_activation_fusion.cc``), a scalar scale or a
last-two-axes Transpose folded into ``FusedMatMul`` (``matmul_scale_fusion.cc``,
``matmul_transpose_fusion.cc``) and MatMulInteger -> Cast -> Mul into
``MatMulIntegerToFloat`` (``matmul_integer_to_float.cc``)."""
from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.spec.base import TensorType
from dlgate.spec.motif import In, Out, Step, const_values
from dlgate.spec.motifs.ort_common import F16, F32, F64, OrtMotif, activation, second_read
from dlgate.spec.quant import QR, QTYPES
from dlgate.spec.registry import get

FLOATS = (F32, F16, F64)


def _n(ctx) -> int:
    return ctx.dim(16)


class MatMulAddFusion(OrtMotif):
    """``matmul_add_fusion.cc``: float32 or float16 MatMul(A, B) with B of rank 2, read
    only by an Add of a bias of N > 1 elements that Gemm's C takes ([N], [1, N], [M, N];
    [N] only for A of rank 3, which is reshaped to 2-D around the Gemm), becomes Gemm."""

    name = "MatMulAddFusion"
    onnx_op = "MatMul"
    onnx_ops = ("Add",)
    rewrite = "MatMulAddFusion"
    expects = ("transformer:MatMulAddFusion", "fused:Gemm")
    conditions = ("single_consumer", "b_rank", "bias_shape", "dtype")
    fuse_dtypes = (F32, F16)
    arity = 3
    ranks = (2, 3)
    dtypes = tuple((t,) * 3 for t in FLOATS)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        n = max(2, _n(ctx))
        m = x.shape[-2]
        if violate == "bias_shape":
            c = ()  # a scalar bias
        else:  # A of rank 3 is reshaped to 2-D around the Gemm, its bias must be [N]
            c = ctx.choice(((n,), (1, n), (m, n))) if x.rank == 2 else (n,)
        b = (2, x.shape[-1], n) if violate == "b_rank" else (x.shape[-1], n)
        return {"b": b, "c": c, "rank": x.rank}

    def steps(self, a):
        s = [Step("MatMul", {}, (In(0), In(1))), Step("Add", {}, (Out(0), In(2)))]
        if a["violate"] == "single_consumer":
            s.append(Step("Mul", {}, (Out(1), Out(0))))
        return s

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, a["b"] if i == 1 else a["c"])

    def constant_input(self, a, i):
        return True


class MatMulBnFusion(OrtMotif):
    """``matmul_bn_fusion.cc`` (a level-1 rule): MatMul(A, B) of rank-2 A and constant B,
    read only by a BatchNormalization with constant scale, bias, mean and variance,
    becomes Gemm with the statistics folded into B and C. A rank-3 A (``rank_2`` broken)
    is the rule's other side: BatchNormalization then normalizes the MatMul's rows (axis 1),
    not the columns B's statistics would fold into, and the rule must decline (onnxruntime
    1.20 fused it anyway and failed to build the session)."""

    name = "MatMulBnFusion"
    onnx_op = "MatMul"
    onnx_ops = ("BatchNormalization",)
    rewrite = "MatmulBNFusion"
    expects = ("removed:BatchNormalization",)
    conditions = ("weights_constant", "bn_constant", "single_consumer", "rank_2")
    arity = 6
    ranks = (2, 3)
    dtypes = tuple((t,) * 6 for t in (F32, F64))

    def sample(self, ctx, ins):
        # the first input's rank decides the rank_2 side: a rank-3 A breaks it, a rank-2 A
        # holds it and may break another condition
        a = super().sample(ctx, ins)
        if ins[0].rank == 3:
            a.update(self.draw(ctx, ins, "rank_2"), violate="rank_2")
        elif a["violate"] == "rank_2":
            a.update(self.draw(ctx, ins, None), violate=None)
        return a

    def draw(self, ctx, ins, violate):
        n = max(2, _n(ctx))
        if ins[0].rank == 3 and ctx.coin(0.5):
            # as many columns as rows: BatchNormalization's statistics then fit the columns
            # too, and only the rank tells the rule not to fold them
            n = ins[0].shape[1]
        out = ins[0].shape[:-1] + (n,)  # the MatMul's output
        bn = get("BatchNormalization").sample(ctx, [ins[0].with_shape(out)])
        return {"n": n, "c": out[1], "bn": bn}

    def steps(self, a):
        s = [Step("MatMul", {}, (In(0), In(1))), Step("BatchNormalization", a["bn"], (Out(0), In(2), In(3), In(4), In(5)))]
        if a["violate"] == "single_consumer":
            s += second_read(s, 0, 1)
        return s

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, (ins[0].shape[-1], a["n"]) if i == 1 else (a.get("c", a["n"]),))

    def constant_input(self, a, i):
        v = a["violate"]
        if i == 1:
            return v != "weights_constant"
        return not (v == "bn_constant" and i == 4)  # a live mean

class GemmTransposeFusion(OrtMotif):
    """``gemm_transpose_fusion.cc`` (a rule): a Transpose with perm [1, 0], read only by
    Gemm as A or B, is folded into the Gemm's transA / transB."""

    name = "GemmTransposeFusion"
    onnx_op = "Transpose"
    onnx_ops = ("Gemm",)
    rewrite = "GemmTransposeFusion"
    expects = ("removed:Transpose",)
    conditions = ("single_consumer",)
    arity = 3
    ranks = (2,)
    dtypes = tuple((t,) * 3 for t in FLOATS)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        at = TensorType(x.dtype, (x.shape[1], x.shape[0]))  # Transpose's output, Gemm's A
        gemm = get("Gemm").sample(ctx, [at])
        n = ctx.dim(16)
        m, k = (at.shape[1], at.shape[0]) if gemm["transA"] else at.shape
        return {"gemm": gemm, "b": (n, k) if gemm["transB"] else (k, n), "c": ctx.choice(((n,), (1, n), (m, n)))}

    def steps(self, a):
        s = [Step("Transpose", {"perm": [1, 0], "omit": False}, (In(0),)), Step("Gemm", a["gemm"], (Out(0), In(1), In(2)))]
        if a["violate"] == "single_consumer":
            s += [Step("ReduceSum", {"keepdims": 1, "axes": [0, 1]}, (Out(0),)), Step("Add", {}, (Out(1), Out(2)))]
        return s

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, a["b"] if i == 1 else a["c"])

    def constant_input(self, a, i):
        return True


class GemmActivationFusion(OrtMotif):
    """``gemm_activation_fusion.cc`` (level 2): float32 Gemm read only by an element-wise
    activation MLAS applies in the Gemm's epilogue becomes ``com.microsoft:FusedGemm``."""

    name = "GemmActivationFusion"
    onnx_op = "Gemm"
    onnx_ops = ("Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "Elu", "Softsign", "Softplus")
    rewrite = "GemmActivationFusion"
    expects = ("transformer:GemmActivationFusion", "fused:com.microsoft:FusedGemm")
    conditions = ("activation", "single_consumer", "dtype")
    level = "extended"
    fuse_dtypes = (F32,)
    arity = 3
    ranks = (2,)
    dtypes = tuple((t,) * 3 for t in (F32, F16))
    fused = ("Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "Elu", "Softsign", "Softplus")
    unfused = ("Abs", "Clip")

    def draw(self, ctx, ins, violate):
        gemm = get("Gemm").sample(ctx, ins[:1])
        act, act_attrs = activation(ctx, ins[0], self.unfused if violate == "activation" else self.fused)
        return {"gemm": gemm, "act": act, "act_attrs": act_attrs}

    def steps(self, a):
        s = [Step("Gemm", a["gemm"], (In(0), In(1), In(2))), Step(a["act"], a["act_attrs"], (Out(0),))]
        if a["violate"] == "single_consumer":
            s += second_read(s, 0, 1)
        return s

    def input_type(self, ctx, i, ins, a, dtype):
        return get("Gemm").input_type(ctx, i, ins, a["gemm"], dtype)

    def constant_input(self, a, i):
        return True


class MatMulScaleFusion(OrtMotif):
    """``matmul_scale_fusion.cc`` (level 2): a float32 Mul or Div by a constant scalar on
    an input of MatMul, or on its output when nothing else reads it, becomes
    ``com.microsoft:FusedMatMul``'s alpha. The scalar is a one-element tensor of a rank up to
    the scaled tensor's; one rank more (``scale_rank`` broken) broadcasts the result up a
    rank, which the fusion must decline."""

    name = "MatMulScaleFusion"
    onnx_op = "MatMul"
    onnx_ops = ("Mul", "Div")
    rewrite = "MatMulScaleFusion"
    expects = ("transformer:MatMulScaleFusion", "fused:com.microsoft:FusedMatMul")
    conditions = ("scale_constant", "scale_scalar", "single_consumer", "dtype", "scale_rank")
    level = "extended"
    fuse_dtypes = (F32,)
    arity = 3
    ranks = (2, 3, 4)
    dtypes = tuple((t,) * 3 for t in FLOATS)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        where = "out" if violate == "single_consumer" or (violate == "scale_scalar" and x.shape[-1] < 2) \
            else ctx.choice(("a", "b", "out"))
        n = max(2, _n(ctx))
        if violate == "scale_scalar":
            shape = (n,) if where != "a" else (x.shape[-1],)  # a vector (of 2 or more) along the last axis
        else:
            # one element, of a rank up to the tensor it scales; one more (scale_rank broken)
            # broadcasts the result up a rank, and the fusion must decline (onnxruntime before
            # 1.23 folded it into alpha and lost that rank)
            scaled = 2 if where == "b" else x.rank
            shape = (1,) * (scaled + 1 if violate == "scale_rank" else ctx.choice((0, 1, scaled)))
        return {"where": where, "op": ctx.choice(("Mul", "Div")) if where == "out" else "Mul", "b": (x.shape[-1], n),
                "shape": shape}

    def steps(self, a):
        v, where = a["violate"], a["where"]
        scale = In(2)
        if where == "a":
            s = [Step(a["op"], {}, (In(0), scale)), Step("MatMul", {}, (Out(0), In(1)))]
        elif where == "b":
            s = [Step(a["op"], {}, (In(1), scale)), Step("MatMul", {}, (In(0), Out(0)))]
        else:
            s = [Step("MatMul", {}, (In(0), In(1))), Step(a["op"], {}, (Out(0), scale))]
        if v == "single_consumer":
            s += [Step("ReduceSum", {"keepdims": 0, "axes": list(range(len(a["b"])))}, (Out(0),)),
                  Step("Add", {}, (Out(1), Out(2)))]
        return s

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, a["b"] if i == 1 else a["shape"])

    def constant_input(self, a, i):
        return i == 2 and a["violate"] != "scale_constant"  # B stays live: a constant B would be folded


class MatMulTransposeFusion(OrtMotif):
    """``matmul_transpose_fusion.cc`` (level 2): a float32 or float64 Transpose that swaps
    the last two axes of MatMul's A or B becomes ``com.microsoft:FusedMatMul``'s transA /
    transB (the Transpose stays when something else reads it)."""

    name = "MatMulTransposeFusion"
    onnx_op = "Transpose"
    onnx_ops = ("MatMul",)
    rewrite = "MatmulTransposeFusion"
    expects = ("transformer:MatmulTransposeFusion", "fused:com.microsoft:FusedMatMul")
    conditions = ("perm", "dtype")
    level = "extended"
    fuse_dtypes = (F32, F64)
    arity = 2
    ranks = (3, 4)
    dtypes = tuple((t,) * 2 for t in FLOATS)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        r = x.rank
        if violate == "perm":  # a rotation of all axes: the last two are not just swapped
            perm = [r - 1] + list(range(r - 1))
        else:
            perm = list(range(r - 2)) + [r - 1, r - 2]
        t = [x.shape[p] for p in perm]
        side = ctx.choice(("a", "b"))
        n = _n(ctx)
        other = tuple(t[:-2]) + ((t[-1], n) if side == "a" else (n, t[-2]))
        return {"perm": perm, "side": side, "other": other, "rank": r}

    def steps(self, a):
        tr = Step("Transpose", {"perm": a["perm"], "omit": False}, (In(0),))
        mm = Step("MatMul", {}, (Out(0), In(1)) if a["side"] == "a" else (In(1), Out(0)))
        return [tr, mm]

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, a["other"])


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

    name = "MatMulIntegerToFloat"
    onnx_op = "Cast"  # the one op whose schema takes every input type the motif does
    onnx_ops = ("QuantizeLinear", "MatMulInteger", "Mul", "Add")
    rewrite = "MatMulIntegerToFloatFusion"
    expects = ("transformer:MatMulIntegerToFloatFusion", "fused:com.microsoft:MatMulIntegerToFloat")
    conditions = ("scale_product", "single_consumer")
    level = "extended"
    arity = 3
    ranks = (2, 3, 4)
    dtypes = tuple((t, t, t) for t in dt.ALL)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        ta, tb = ctx.choice(QTYPES), ctx.choice(QTYPES)
        q = get("QuantizeLinear")._attrs(ctx, x.with_dtype(F32), ta)
        mmi = get("MatMulInteger")._attrs(ctx, ta, tb, _n(ctx))
        bias = mmi["n"] > 1 and ctx.coin(0.4)
        again = ctx.choice(("mmi", "cast", "scale")) if violate == "single_consumer" else None
        return {"q": q, "mmi": mmi, "k": x.shape[-1], "bias": bias, "again": again, "cast": x.dtype != F32}

    def steps(self, a):
        m = a["mmi"]
        s: list = []

        def add(op, attrs, *ins):
            s.append(Step(op, attrs, ins))
            return Out(len(s) - 1)

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

    def backward(self, ctx, out):
        """A float32 output [.., M, N] from an input [.., M, K] of an allowed type."""
        types = [sig[0] for sig in self.dtypes if sig[0] in ctx.dtypes]
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

    def constant_input(self, a, i):
        return False  # live scales: two constants would be folded into one


class DynamicQuantizeMatMul(OrtMotif):
    """``dynamic_quantize_matmul_fusion.cc`` (level 2): DynamicQuantizeLinear(x) -> (y,
    y_scale, y_zero_point); MatMulInteger(y, B, y_zero_point[, b_zero_point]) -> Cast to
    float -> Mul by (y_scale * b_scale), which ``MatMulIntegerToFloatFusion`` first makes
    ``com.microsoft:MatMulIntegerToFloat``, becomes ``com.microsoft:DynamicQuantizeMatMul``
    when B (int8 or uint8, made inside the motif) is a constant initializer and the three
    outputs of the DynamicQuantizeLinear feed it and nothing else. A constant
    a_zero_point (the DynamicQuantizeLinear's own left unread), or y_scale read once more
    (the product scaled by it again), breaks it. b_scale is a scalar constant here
    (onnxruntime 1.32 fuses a live one too, and then crashes on a b_scale that is not a
    scalar or a vector of N)."""

    name = "DynamicQuantizeMatMul"
    onnx_op = "DynamicQuantizeLinear"
    onnx_ops = ("MatMulInteger", "Cast", "Mul")
    rewrite = "DynamicQuantizeMatMulFusion"
    expects = ("transformer:DynamicQuantizeMatMulFusion", "fused:com.microsoft:DynamicQuantizeMatMul")
    conditions = ("zero_point_from_dql", "outputs_read_once")
    level = "extended"
    arity = 2
    ranks = (2, 3)
    dtypes = ((F32, F32),)

    def draw(self, ctx, ins, violate):
        y = ins[0].with_dtype(dt.UINT8)
        mmi = get("MatMulIntegerZp").sample(ctx, [y])
        if violate == "zero_point_from_dql":
            mmi["za"] = get("MatMulInteger").sample(ctx, [y])["za"]
        return {"mmi": mmi, "k": ins[0].shape[-1]}

    def steps(self, a):
        m = a["mmi"]
        w = const_values(a, "w", m["bt"], (a["k"], m["n"]), *QR[m["bt"]])
        if a["violate"] == "zero_point_from_dql":
            mmi = Step("MatMulInteger", m, (Out(0, 0), w))
        else:
            mmi = Step("MatMulIntegerZp", m, (Out(0, 0), w, Out(0, 2)))
        s = [Step("DynamicQuantizeLinear", {}, (In(0),)), mmi, Step("Cast", {"to": F32}, (Out(1),)),
             Step("Mul", {}, (Out(0, 1), In(1))), Step("Mul", {}, (Out(2), Out(3)))]
        if a["violate"] == "outputs_read_once":
            s.append(Step("Mul", {}, (Out(4), Out(0, 1))))
        return s

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, ())

    def constant_input(self, a, i):
        return True  # b_scale, a scalar weight scale

OPS = [MatMulAddFusion, MatMulBnFusion, GemmTransposeFusion, GemmActivationFusion, MatMulScaleFusion,
       MatMulTransposeFusion, MatMulIntegerToFloat, DynamicQuantizeMatMul]
