from __future__ import annotations

import math

from dlgate import dtypes as dt
from dlgate.ops.base import TensorType
from dlgate.ops.motif import Const, In, Out, Step, last
from dlgate.ops.motifs.ort_common import F32, OrtMotif
from dlgate.ops.motifs.ort_qdq._shared import fq
from dlgate.ops.quant._shared import MAX_TERMS
from dlgate.ops.registry import get


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

    onnx_op = "Cast"  # the one op whose schema takes every input type the motif does
    onnx_ops = ("QuantizeLinear", "DequantizeLinear", "Conv", "Gemm", "Reshape")
    rewrite = "WeightBiasQuantization"
    min_opset = 19
    arity = 1
    ranks = (1, 2, 3, 4, 5)
    types = dt.ALL
    conditions = ("output_quantized",)

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
        types = [t for t in self.types if t in ctx.dtypes]
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
            x = last(s)
        s.append(Step("FakeQuant", a["q"], (x,)))
        fq_out = last(s)
        if "gemm" in a:
            s.append(Step("Gemm", a["gemm"], (fq_out, w, b)))
        else:
            s.append(Step("Conv", a["conv"], (fq_out, w, b)))
        if a["violate"] != "output_quantized":
            s.append(Step("FakeQuant", a["y"], (last(s),)))
        return s + [Step("Neg", {}, (last(s),))]


OPS = [WeightBiasQuantization]
