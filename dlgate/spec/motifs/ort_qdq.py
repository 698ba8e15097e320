"""onnxruntime's QDQ rewrites (``onnxruntime/core/optimizer/qdq_transformer``): a
QuantizeLinear -> DequantizeLinear pair (``FakeQuant``) is the unit they read. Level 1
removes a DQ -> Q pair between two Q -> DQ pairs (``double_qdq_pairs_remover.cc``; level 2
removes one left an identity by then, ``qdq_final_cleanup.cc``),
propagates a Q -> DQ pair past a Transpose or Reshape (``qdq_propagation.cc``), gives each
consumer of a DQ its own copy (``ensure_unique_dq_for_node_unit.cc``) and a Where of a
dequantized tensor and a constant a dummy DQ for the constant (``where_dummy_dq.cc``);
level 2's rules drop a Relu or Clip whose range the Q after it saturates to anyway
(``relu_quantizelinear.cc``, ``clip_quantizelinear.cc``), and its selector/action
transformer drops the DQ -> Q pair around a data-movement node with equal quantization
(``selectors_actions/qdq_selector_action_transformer.cc``; the QDQ idioms of
``dlgate.spec.quant`` cover its Conv, MatMul, Add and activation units); level 3's NHWC
transformer re-lays out QLinearConv (``nhwc_transformer.cc``).

Scales are powers of two, so every rewrite that keeps the meaning keeps the values
exactly (see ``dlgate.spec.quant``)."""
from __future__ import annotations

import math

from dlgate import dtypes as dt
from dlgate.spec.base import TensorType
from dlgate.spec.motif import Const, In, Out, Step
from dlgate.spec.motifs.ort_common import F32, OrtMotif, scalar
from dlgate.spec.quant import MAX_TERMS, QR, _zp
from dlgate.spec.registry import get

I8, U8 = dt.INT8, dt.UINT8


def fq(ctx, qt: str | None = None, e: int | None = None, z: int | None = None) -> dict:
    """``FakeQuant`` attributes: per tensor, float32, scale 2^e, zero point z of type qt."""
    qt = qt or ctx.choice((I8, U8))
    lo, hi = QR[qt]
    e = ctx.rng.randint(-6, -2) if e is None else e
    if z is None:
        z = ctx.choice((0, 0, ctx.rng.randint(-16, 16))) if qt == I8 else ctx.choice((128, 128, ctx.rng.randint(100, 150)))
    return {"mode": "tensor", "axis": 1, "block": 0, "one": False, "to": qt, "sdt": F32, "xdt": F32, "pow2": True,
            "scale": 2.0 ** e, "zp": z, "odt": False, "e": e}


def other(ctx, q: dict) -> dict:
    """Another quantization of the same type: the scale doubled or halved."""
    return fq(ctx, q["to"], q["e"] + ctx.choice((-1, 1)), q["zp"])


class _QDQ(OrtMotif):
    arity = 1
    dtypes = ((F32,),)
    min_opset = 19  # DequantizeLinear is onnx.reference's from 19 (the spec tests compare with it)


class DoubleQDQPairsRemover(_QDQ):
    """``double_qdq_pairs_remover.cc`` (level 1): Q1 -> DQ1 -> Q2 -> DQ2, the four of one
    quantization (type, scale, zero point), drops the DQ1 -> Q2 pair in the middle."""

    name = "DoubleQDQPairsRemover"
    onnx_op = "QuantizeLinear"
    onnx_ops = ("DequantizeLinear",)
    rewrite = "DoubleQDQPairsRemover"
    expects = ("transformer:DoubleQDQPairsRemover",)
    conditions = ("same_type",)

    def draw(self, ctx, ins, violate):
        q1 = fq(ctx)
        q2 = fq(ctx, I8 if q1["to"] == U8 else U8, q1["e"], 0) if violate == "same_type" else q1
        return {"q1": q1, "q2": q2}

    def steps(self, a):
        return [Step("FakeQuant", a["q1"], (In(0),)), Step("FakeQuant", a["q2"], (Out(0),)), Step("Neg", {}, (Out(1),))]


class QDQPropagation(_QDQ):
    """``qdq_propagation.cc`` (level 1): a Q -> DQ pair before a Transpose, Reshape,
    Squeeze or Unsqueeze whose output is not quantized is copied past it."""

    name = "QDQPropagation"
    onnx_op = "QuantizeLinear"
    onnx_ops = ("DequantizeLinear", "Transpose", "Reshape", "Squeeze", "Unsqueeze")
    rewrite = "QDQPropagationTransformer"
    expects = ("transformer:QDQPropagationTransformer",)
    conditions = ("movement_op",)
    ranks = (1, 2, 3, 4)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        if violate == "movement_op":  # an op that computes: nothing to propagate past
            op, attrs = "Sigmoid", {}
        else:
            op = ctx.choice(("Transpose", "Reshape", "Unsqueeze"))
            attrs = get(op).sample(ctx, [x])
        return {"q": fq(ctx), "op": op, "attrs": attrs}

    def steps(self, a):
        return [Step("FakeQuant", a["q"], (In(0),)), Step(a["op"], a["attrs"], (Out(0),)), Step("Neg", {}, (Out(1),))]


class QDQFinalCleanup(_QDQ):
    """``qdq_final_cleanup.cc`` (level 2, after the QDQ fusions): a DQ -> Q pair that maps
    every value to itself is removed. Q(uint8, z) -> DQ -> Q(int8, z - 128) -> DQ becomes
    such a pair once ``QDQS8ToU8Transformer`` (where registered) has turned the int8 pair
    into uint8 with zero point z; a zero point off by one is no identity."""

    name = "QDQFinalCleanup"
    onnx_op = "QuantizeLinear"
    onnx_ops = ("DequantizeLinear",)
    rewrite = "QDQFinalCleanupTransformer"
    expects = ("transformer:QDQFinalCleanupTransformer",)
    conditions = ("identity_pair",)
    level = "extended"
    #: The transformer that makes the pair an identity, registered on some machines only.
    needs = "QDQS8ToU8Transformer"

    def draw(self, ctx, ins, violate):
        q1 = fq(ctx, U8, z=ctx.rng.randint(100, 150))
        z2 = q1["zp"] - 128 + (ctx.choice((-1, 1)) if violate == "identity_pair" else 0)
        return {"q1": q1, "q2": fq(ctx, I8, q1["e"], z2)}

    def steps(self, a):
        return [Step("FakeQuant", a["q1"], (In(0),)), Step("FakeQuant", a["q2"], (Out(0),)), Step("Neg", {}, (Out(1),))]


class EnsureUniqueDQ(_QDQ):
    """``ensure_unique_dq_for_node_unit.cc`` (before level 1, and in it): a DQ read by two
    nodes is duplicated, one copy each, so every node unit owns its DQ."""

    name = "EnsureUniqueDQ"
    onnx_op = "QuantizeLinear"
    onnx_ops = ("DequantizeLinear", "Relu", "Neg")
    rewrite = "EnsureUniqueDQForNodeUnit"
    expects = ("transformer:EnsureUniqueDQForNodeUnit",)
    conditions = ("two_consumers",)

    def draw(self, ctx, ins, violate):
        return {"q": fq(ctx)}

    def steps(self, a):
        s = [Step("FakeQuant", a["q"], (In(0),)), Step("Relu", {}, (Out(0),))]
        if a["violate"] == "two_consumers":  # one consumer only
            return s + [Step("Neg", {}, (Out(1),))]
        return s + [Step("Neg", {}, (Out(0),)), Step("Add", {}, (Out(1), Out(2)))]


class ReluQuantFusion(_QDQ):
    """``relu_quantizelinear.cc`` (a level-2 rule): a Relu read only by a QuantizeLinear
    whose zero point is its type's minimum (uint8 0, int8 -128) is dropped: the Q
    saturates negative values to that zero point anyway."""

    name = "ReluQuantFusion"
    onnx_op = "Relu"
    onnx_ops = ("QuantizeLinear", "DequantizeLinear")
    rewrite = "ReluQuantFusion"
    expects = ("removed:Relu",)
    conditions = ("zero_point_min",)
    level = "extended"

    def draw(self, ctx, ins, violate):
        qt = ctx.choice((I8, U8))
        lo = QR[qt][0]
        return {"q": fq(ctx, qt, z=lo + ctx.rng.randint(1, 8) if violate == "zero_point_min" else lo)}

    def steps(self, a):
        return [Step("Neg", {}, (In(0),)), Step("Relu", {}, (Out(0),)), Step("FakeQuant", a["q"], (Out(1),)),
                Step("Neg", {}, (Out(2),))]


class ClipQuantFusion(_QDQ):
    """``clip_quantizelinear.cc`` (a level-2 rule): a Clip with constant bounds read only
    by a QuantizeLinear is dropped when its bounds hold the Q's whole representable range
    ([(qmin - z) * s, (qmax - z) * s]); a narrower Clip stays."""

    name = "ClipQuantFusion"
    onnx_op = "Clip"
    onnx_ops = ("QuantizeLinear", "DequantizeLinear")
    rewrite = "ClipQuantFusion"
    expects = ("removed:Clip",)
    conditions = ("wide_bounds",)
    level = "extended"

    def draw(self, ctx, ins, violate):
        q = fq(ctx)
        lo, hi = QR[q["to"]]
        s = q["scale"]
        qlo, qhi = (lo - q["zp"]) * s, (hi - q["zp"]) * s
        if violate == "wide_bounds":
            bounds = (qlo + (qhi - qlo) / 4, qhi)  # cuts off the lower quarter
        else:
            bounds = (qlo - ctx.choice((0.0, s, 1.0)), qhi + ctx.choice((0.0, s, 1.0)))
        return {"q": q, "clip": {"dtype": F32, "min": float(bounds[0]), "max": float(bounds[1])}}

    def steps(self, a):
        return [Step("Neg", {}, (In(0),)), Step("Clip", a["clip"], (Out(0),)), Step("FakeQuant", a["q"], (Out(1),)),
                Step("Neg", {}, (Out(2),))]


class QDQDropPair(_QDQ):
    """``qdq_selector_action_transformer.cc``'s DropQDQ rule (level 2): DQ -> Transpose,
    Reshape or MaxPool -> Q with the same type, scale and zero point on both sides drops
    the DQ and Q around the node, which then moves the quantized values themselves."""

    name = "QDQDropPair"
    onnx_op = "QuantizeLinear"
    onnx_ops = ("DequantizeLinear", "Transpose", "Reshape", "MaxPool")
    rewrite = "QDQSelectorActionTransformer"
    expects = ("transformer:QDQSelectorActionTransformer",)
    conditions = ("same_quantization",)
    level = "extended"
    ranks = (1, 2, 3, 4)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        ops = ["Transpose", "Reshape"] + (["MaxPool"] if x.rank >= 3 else [])
        op = ctx.choice(ops)
        attrs = get(op).sample(ctx, [x])
        if op == "MaxPool":
            attrs.update(auto_pad="NOTSET", pads=[0] * len(attrs["pads"]), ceil_mode=0)
        q = fq(ctx)
        return {"q": q, "q2": other(ctx, q) if violate == "same_quantization" else q, "op": op, "attrs": attrs}

    def steps(self, a):
        return [Step("FakeQuant", a["q"], (In(0),)), Step(a["op"], a["attrs"], (Out(0),)),
                Step("FakeQuant", a["q2"], (Out(1),)), Step("Neg", {}, (Out(2),))]


class WhereDummyDq(_QDQ):
    """``where_dummy_dq.cc`` (level 1): Where(c, DQ(x), constant scalar) followed by a Q
    gets a DequantizeLinear for the constant (so the Where forms a QDQ node unit); a Where
    of two dequantized tensors needs none."""

    name = "WhereDummyDq"
    onnx_op = "Where"
    onnx_ops = ("QuantizeLinear", "DequantizeLinear")
    rewrite = "WhereDummyDq"
    expects = ("transformer:WhereDummyDq",)
    conditions = ("constant_branch",)
    arity = 2
    ranks = (0, 1, 2, 3, 4)
    dtypes = ((dt.BOOL, F32),)

    def draw(self, ctx, ins, violate):
        q = fq(ctx)
        lo, hi = QR[q["to"]]
        value = (ctx.rng.randint(lo, hi) - q["zp"]) * q["scale"]  # on the grid
        return {"q": q, "value": float(value), "first": ctx.coin()}

    def steps(self, a):
        s = [Step("FakeQuant", a["q"], (In(1),))]
        if a["violate"] == "constant_branch":
            s.append(Step("FakeQuant", a["q"], (Out(0),)))  # the other branch dequantized too
            branch = Out(1)
        else:
            branch = scalar(a["value"], F32, "branch")
        ab = (Out(0), branch) if a["first"] else (branch, Out(0))
        s.append(Step("Where", {}, (In(0),) + ab))
        return s + [Step("FakeQuant", a["q"], (Out(len(s) - 1),)), Step("Neg", {}, (Out(len(s)),))]

    def input_type(self, ctx, i, ins, a, dtype):
        return ins[0].with_dtype(dtype)


class NhwcQLinearConv(OrtMotif):
    """``nhwc_transformer.cc`` (level 3): a 1-D or 2-D QLinearConv (fused from its QDQ
    form by level 2, or written so) becomes ``com.microsoft:QLinearConv`` in NHWC layout
    between Transposes."""

    name = "NhwcQLinearConv"
    onnx_op = "QLinearConv"
    rewrite = "NhwcTransformer"
    expects = ("transformer:NhwcTransformer",)
    level = "all"
    arity = 2
    ranks = (3, 4)
    dtypes = ((U8, U8), (U8, I8), (I8, I8))  # no CPU QLinearConv for int8 x with uint8 w

    def draw(self, ctx, ins, violate):
        return {"conv": get("QLinearConv").sample(ctx, ins[:1])}

    def steps(self, a):
        return [Step("QLinearConv", a["conv"], (In(0), In(1)))]

    def input_type(self, ctx, i, ins, a, dtype):
        return get("QLinearConv").input_type(ctx, i, ins, a["conv"], dtype)

    def constant_input(self, a, i):
        return True


class QDQS8ToU8(OrtMotif):
    """``qdq_s8_to_u8.cc`` (level 2, registered where the CPU's int8 kernels want uint8
    activations): a QDQ Conv unit whose activations are int8 has them re-quantized as
    uint8 (zero point + 128) before the unit is fused; uint8 activations need nothing."""

    name = "QDQS8ToU8"
    onnx_op = "Conv"
    onnx_ops = ("QuantizeLinear", "DequantizeLinear")
    rewrite = "QDQS8ToU8Transformer"
    expects = ("transformer:QDQS8ToU8Transformer",)
    conditions = ("int8_activations",)
    level = "extended"
    min_opset = 19
    arity = 1
    ranks = (3, 4)
    dtypes = ((F32,),)

    def draw(self, ctx, ins, violate):
        conv = get("QDQConv").sample(ctx, ins[:1])
        qt = U8 if violate == "int8_activations" else I8
        conv.update(xt=qt, xz=_zp(ctx, qt), yt=qt, yz=_zp(ctx, qt))
        return {"conv": conv}

    def steps(self, a):
        return [Step("QDQConv", a["conv"], (In(0),)), Step("Neg", {}, (Out(0),))]


class WeightBiasQuantization(OrtMotif):
    """``weight_bias_quantization.cc`` (level 1): DQ (per-tensor scale) -> Conv,
    ConvTranspose or Gemm with float32 constant weights (and a 1-D constant bias) -> Q,
    each read only by the next, gets the weights quantized (int8 per tensor, scale
    (max - min) / 255) and the bias (int32, scale input scale x weight scale), so the unit
    can be fused. The transformer reads neither the rank nor the activations' type before
    the DQ, so the motif takes a tensor of any type and rank, cast to float32 first
    unless it is float32: rank 3 to 5 gets a 1-D, 2-D or 3-D Conv, rank 2 a Gemm (alpha
    a power of two, beta 1), rank 1 a Gemm after a Reshape to [1, n]. The weights are
    multiples of 2^we from -128 to 127 times it, both ends present, and the bias a
    multiple of the product of scales, so the quantization is exact (anything else would
    change the results by design); without a Q after the Conv or Gemm nothing is
    quantized."""

    name = "WeightBiasQuantization"
    onnx_op = "Cast"  # the one op whose schema takes every input type the motif does
    onnx_ops = ("QuantizeLinear", "DequantizeLinear", "Conv", "Gemm", "Reshape")
    rewrite = "WeightBiasQuantization"
    expects = ("transformer:WeightBiasQuantization",)
    conditions = ("output_quantized",)
    min_opset = 19
    arity = 1
    ranks = (1, 2, 3, 4, 5)
    dtypes = tuple((t,) for t in dt.ALL)

    def draw(self, ctx, ins, violate):
        x = ins[0].with_dtype(F32)
        q = fq(ctx)
        a = {"q": q, "we": ctx.rng.randint(-8, -5), "rank": x.rank, "cast": ins[0].dtype != F32,
             "y": fq(ctx, e=q["e"] + ctx.rng.randint(-8, -5) + ctx.rng.randint(2, 5))}
        if x.rank <= 2:
            m, k = (1, x.shape[0]) if x.rank == 1 else x.shape
            gemm = get("Gemm").sample(ctx, [x.with_shape((m, k))])
            gemm.update(alpha=ctx.choice((1.0, 1.0, 0.5, 2.0)), beta=1.0)
            kk = m if gemm["transA"] else k
            if kk > MAX_TERMS:
                gemm["transA"], kk = 1 - gemm["transA"], k + m - kk
            n = max(2, ctx.dim(16))
            return dict(a, gemm=gemm, c=x.shape[0], w=(n, kk) if gemm["transB"] else (kk, n), m=n)
        conv = get("Conv").sample(ctx, [x])
        c, r = x.shape[1], x.rank - 2
        if (c // conv["group"]) * math.prod(conv["kernel"]) > MAX_TERMS:
            conv["kernel"] = [1] * r
        conv["m_per_group"] = max(2, conv["m_per_group"])  # two weights at least: -128 and 127
        m = conv["group"] * conv["m_per_group"]
        return dict(a, conv=conv, c=c, w=(m, c // conv["group"]) + tuple(conv["kernel"]), m=m)

    def backward(self, ctx, out):
        """A float32 output [M, N] from a Gemm of an input [M, K] of an allowed type."""
        types = [sig[0] for sig in self.dtypes if sig[0] in ctx.dtypes]
        if out.dtype != F32 or out.rank != 2 or not types:
            return None
        m, n = out.shape
        x = TensorType(ctx.choice(types), (m, max(2, ctx.dim(16))))
        a = self.sample(ctx, [x])
        a["gemm"]["transA"] = 0
        a["w"], a["m"] = ((n, x.shape[1]) if a["gemm"]["transB"] else (x.shape[1], n)), n
        return [x], a

    def _consts(self, a):
        import numpy as np

        rng = np.random.Generator(np.random.PCG64(a["seed"]))
        w = rng.integers(-32, 33, size=tuple(a["w"]))
        # onnxruntime quantizes per tensor to int8 with scale (max - min) / 255 and zero
        # point -128 - min / scale: with -128 and 127 (times 2^we) present, exactly 2^we and 0
        w.reshape(-1)[:2] = (-128, 127)
        bias = rng.integers(-300, 301, size=(a["m"],)) * 2.0 ** (a["q"]["e"] + a["we"])
        return (Const((w * 2.0 ** a["we"]).astype(np.float32), "w"), Const(bias.astype(np.float32), "b"))

    def steps(self, a):
        w, b = self._consts(a)
        s = []
        x = In(0)
        if a["cast"]:
            s.append(Step("Cast", {"to": F32}, (x,)))
            x = Out(0)
        if a["rank"] == 1:
            s.append(Step("Reshape", {"shape": [1, a["c"]], "spec": [1, a["c"]]}, (x,)))
            x = Out(len(s) - 1)
        s.append(Step("FakeQuant", a["q"], (x,)))
        fq_out = Out(len(s) - 1)
        if "gemm" in a:
            s.append(Step("Gemm", a["gemm"], (fq_out, w, b)))
        else:
            s.append(Step("Conv", a["conv"], (fq_out, w, b)))
        if a["violate"] != "output_quantized":
            s.append(Step("FakeQuant", a["y"], (Out(len(s) - 1),)))
        return s + [Step("Neg", {}, (Out(len(s) - 1),))]


class TransposeResizeNhwc(OrtMotif):
    """``transpose_optimizer`` on the CPU EP (level 2, ``TransposeOptimizer_CPUExecutionProvider``):
    NHWC -> Transpose to NCHW -> Resize of H and W -> Transpose back to NHWC becomes one
    Resize on the NHWC tensor (the CPU EP's Resize takes channels-last input): both
    Transposes vanish. Without the Transpose back, nothing moves."""

    name = "TransposeResizeNhwc"
    onnx_op = "Transpose"
    onnx_ops = ("Resize",)
    rewrite = "TransposeOptimizer_CPUExecutionProvider"
    expects = ("transformer:TransposeOptimizer_CPUExecutionProvider",)
    conditions = ("transpose_back",)
    level = "extended"
    arity = 1
    ranks = (4,)
    dtypes = ((F32,),)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        nchw = x.with_shape((x.shape[0], x.shape[3], x.shape[1], x.shape[2]))
        resize = get("Resize").sample(ctx, [nchw])
        return {"resize": resize}

    def steps(self, a):
        s = [Step("Transpose", {"perm": [0, 3, 1, 2], "omit": False}, (In(0),)), Step("Resize", a["resize"], (Out(0),))]
        if a["violate"] == "transpose_back":
            return s + [Step("Neg", {}, (Out(1),))]
        return s + [Step("Transpose", {"perm": [0, 2, 3, 1], "omit": False}, (Out(1),))]


OPS = [DoubleQDQPairsRemover, QDQFinalCleanup, QDQPropagation, EnsureUniqueDQ, ReluQuantFusion, ClipQuantFusion, QDQDropPair,
       WhereDummyDq, NhwcQLinearConv, QDQS8ToU8, WeightBiasQuantization, TransposeResizeNhwc]
