from __future__ import annotations

from dlgate.ops.base import TensorType
from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_block._shared import _Block
from dlgate.ops.motifs.ort_common import F32, F64


class BiasSkipLayerNormFusion(_Block):
    """``bias_skip_layer_norm_fusion.cc``: a SkipLayerNormalization without bias (made by
    SkipLayerNormFusion from Add + LayerNormalization) whose input is ``Add(bias, MatMul)``,
    the bias a constant vector of the hidden size, takes the bias in as its fifth input.

    Two earlier rewrites take the pattern otherwise. MatMulAddFusion (level 1) turns
    MatMul + Add into Gemm unless the MatMul has another reader or a weight of rank 3
    (``form``: ``reread`` or ``batched``). SkipLayerNormFusion takes a bias Add whose bias
    is its second input into the SkipLayerNormalization itself, leaving nothing to fuse
    (the broken condition ``bias_first``). A live bias (``bias_constant``) or a 2-D bias
    (``bias_shape``) is declined."""

    onnx_op = "LayerNormalization"
    onnx_ops = ("MatMul", "Add")
    rewrite = "BiasSkipLayerNormFusion"
    min_opset = 17
    arity = 6  # x, weight, bias, skip, gamma, beta
    ranks = (3,)
    types = (F32, F64)  # float16 LayerNormalization: see LayerNormFusion
    conditions = ("bias_first", "bias_constant", "bias_shape", "dtype")

    def draw(self, ctx, ins, violate):
        x = ins[0]
        n = max(2, ctx.dim(16))
        form = ctx.choice(("reread", "batched"))
        weight = (x.shape[0], x.shape[2], n) if form == "batched" else (x.shape[2], n)
        bias = (x.shape[1], n) if violate == "bias_shape" else (n,)
        return {"form": form, "weight": weight, "bias": bias, "n": n, "out": (x.shape[0], x.shape[1], n),
                "skip_first": ctx.coin(0.5),
                "ln": {"epsilon": ctx.choice((1e-5, 1e-12)), "axis": -1, "stash_type": 1}}

    def input_type(self, ctx, i, ins, a, dtype):
        shape = {1: a["weight"], 2: a["bias"], 3: a["out"]}.get(i, (a["n"],))
        return TensorType(dtype, shape)

    def steps(self, a):
        mm = Step("MatMul", {}, (In(0), In(1)))
        biased = Step("Add", {}, (Out(0), In(2)) if a["violate"] == "bias_first" else (In(2), Out(0)))
        skipped = Step("Add", {}, (In(3), Out(1)) if a["skip_first"] else (Out(1), In(3)))
        s = [mm, biased, skipped, Step("LayerNormalization", a["ln"], (Out(2), In(4), In(5)))]
        if a["form"] == "reread":  # the MatMul read once more: MatMulAddFusion leaves it
            s.append(Step("Add", {}, (Out(3), Out(0))))
        return s

    def constant_input(self, a, i):
        if i == 2:
            return a["violate"] != "bias_constant"
        if i == 3:
            return False  # a skip of its own: x itself (when K is 1) would broadcast
        return True if i in (1, 4, 5) else None


OPS = [BiasSkipLayerNormFusion]
