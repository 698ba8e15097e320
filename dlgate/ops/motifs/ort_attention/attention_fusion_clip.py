from __future__ import annotations

import math

from dlgate.ops.motif import In, Out, Step, const_values, last
from dlgate.ops.motifs.ort_common import F16, F32, OrtMotif, scalar


class AttentionFusionClip(OrtMotif):
    """x [B, C, H, W] reshaped to [B, C, H*W] and transposed to tokens [B, L, C]; one
    MatMul by a constant [C, 3C] makes Q, K and V, reshaped to [B, L, 3, N, C/N] and split
    on axis 2; Q and V transposed (2, 0, 3, 1, 4) and squeezed to [B, N, L, C/N], K squeezed
    and transposed to [B, N, C/N, L]; Q scaled by a constant (1/sqrt(C/N), or another
    value, which the fused node takes as its ``scale``); Softmax(Q K) V, transposed back to
    [B, L, N, C/N] and reshaped to [B, L, C]; a constant [C, C] projection and a [C] bias.
    The whole block becomes MultiHeadAttention plus the projection.

    Declines: ``softmax_axis`` (the Softmax's axis written as 3, the same axis as -1, which
    the fusion compares literally), ``bias`` (no bias Add after the projection),
    ``out_projection`` (the bias added without the projection), ``unit_scale`` (a scale of
    1, whose Mul NoopElimination removes at level 1, so Q is no longer scaled). float16 is outside what the
    fusion takes (``dtype``): onnxruntime 1.32 fuses it anyway and fails at session creation
    ("Tensor type mismatch"), at level extended and above."""

    onnx_op = "Softmax"
    onnx_ops = ("Reshape", "Transpose", "MatMul", "Split", "Squeeze", "Mul", "Add")
    rewrite = "AttentionFusion"
    expects = ("transformer:AttentionFusion", "fused:com.microsoft:MultiHeadAttention")
    level = "extended"
    fuse_dtypes = (F32,)
    min_opset = 13  # Split's sizes and Squeeze's axes as inputs
    arity = 1
    ranks = (4,)
    types = (F32, F16)
    conditions = ("softmax_axis", "bias", "out_projection", "unit_scale", "dtype")

    def draw(self, ctx, ins, violate):
        b, c, h, w = ins[0].shape
        heads = ctx.choice([n for n in range(1, c + 1) if c % n == 0 and n <= 4])
        hd = c // heads
        scale = 1.0 / math.sqrt(hd) if ctx.coin(0.8) else ctx.choice((0.25, 0.5, 0.75))
        if violate == "unit_scale":
            scale = 1.0
        elif scale == 1.0:  # one head dim: NoopElimination removes a Mul by 1 first
            scale = 0.5
        return {"b": b, "c": c, "l": h * w, "heads": heads, "scale": scale, "dtype": ins[0].dtype}

    def steps(self, a):
        b, c, n, L, dtype = a["b"], a["c"], a["heads"], a["l"], a["dtype"]
        hd = c // n
        bound = 1.0 / math.sqrt(c)
        wqkv = const_values(a, "wqkv", dtype, (c, 3 * c), -bound, bound)
        wo = const_values(a, "wo", dtype, (c, c), -bound, bound)
        bias = const_values(a, "bias", dtype, (c,), -0.5, 0.5)
        split = (Out(4, 0), Out(4, 1), Out(4, 2))
        s = [Step("Reshape", {"shape": [b, c, L], "spec": [b, c, L]}, (In(0),)),
             Step("Transpose", {"perm": [0, 2, 1], "omit": False}, (Out(0),)),
             Step("MatMul", {}, (Out(1), wqkv)),
             Step("Reshape", {"shape": [b, L, 3, n, hd], "spec": [b, L, 3, n, hd]}, (Out(2),)),
             Step("Split3", {"axis": 2, "split": [1, 1, 1]}, (Out(3),)),
             # Q: [1, B, N, L, hd] -> [B, N, L, hd], scaled
             Step("Transpose", {"perm": [2, 0, 3, 1, 4], "omit": False}, (split[0],)),
             Step("Squeeze", {"axes": [0], "omit": False}, (Out(5),)),
             Step("Mul", {}, (Out(6), scalar(a["scale"], dtype, "scale"))),
             # K: [B, L, N, hd] -> [B, N, hd, L]
             Step("Squeeze", {"axes": [2], "omit": False}, (split[1],)),
             Step("Transpose", {"perm": [0, 2, 3, 1], "omit": False}, (Out(8),)),
             # V like Q
             Step("Transpose", {"perm": [2, 0, 3, 1, 4], "omit": False}, (split[2],)),
             Step("Squeeze", {"axes": [0], "omit": False}, (Out(10),)),
             Step("MatMul", {}, (Out(7), Out(9))),
             Step("Softmax", {"axis": 3 if a["violate"] == "softmax_axis" else -1}, (Out(12),)),
             Step("MatMul", {}, (Out(13), Out(11))),
             Step("Transpose", {"perm": [0, 2, 1, 3], "omit": False}, (Out(14),)),
             Step("Reshape", {"shape": [b, L, c], "spec": [b, L, c]}, (Out(15),))]
        if a["violate"] != "out_projection":
            s.append(Step("MatMul", {}, (last(s), wo)))
        if a["violate"] != "bias":
            s.append(Step("Add", {}, (last(s), bias)))
        return s


OPS = [AttentionFusionClip]
