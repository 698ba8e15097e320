"""TVM Relax ``FuseOps``, phase 0: an out-element-wise-fusable anchor (convolution, matrix
product, pooling, softmax, normalization) absorbs the element-wise and broadcast ops that
follow it into one fused function, ``fused:<anchor>_<epilogue>``, when every path from the
anchor to its post-dominator is element-wise (see :mod:`dlgate.spec.motifs.tvm_common`).
The condition each motif may break, ``elementwise_consumers``, reads the anchor's output
a second time through a reduction that rejoins the epilogue: the post-dominator is then
reached through a path that is not element-wise, and the activation is not fused (the
importer's own bias add still is)."""
from __future__ import annotations

import math

import numpy as np

from dlgate import dtypes as dt
from dlgate.spec.binary import broadcast_partner
from dlgate.spec.motif import Const, In, Motif, Out, Step, const_values
from dlgate.spec.motifs.tvm_common import ACTIVATIONS, activation, named, second_consumer
from dlgate.spec.registry import get

FLOAT_SIGS = tuple((t,) for t in dt.FLOATS)


class _AnchorEpilogue(Motif):
    """Anchor steps, then an activation of the anchor's output (the last anchor step)."""

    optimizer = "tvm"
    conditions = ("elementwise_consumers",)

    def head(self, a) -> list:
        raise NotImplementedError

    def steps(self, a):
        s = self.head(a)
        k = len(s) - 1
        s.append(Step(a["act"], a["act_attrs"], (Out(k),)))
        if a["violate"] == "elementwise_consumers":
            s += second_consumer(s, k, len(s) - 1, a["out_rank"])
        return s

    def epilogue(self, ctx, a, out, names=tuple(ACTIVATIONS)) -> dict:
        a["act"], a["act_attrs"] = activation(ctx, out, names)
        a["out_rank"] = out.rank
        return a


class TvmConvBiasActivation(_AnchorEpilogue):
    """Conv with constant weights and bias, then an activation: the importer writes the
    bias as ``add`` of the reshaped constant, so the fused function is
    ``conv{1,2,3}d_add_<activation>``."""

    name = "TvmConvBiasActivation"
    onnx_op = "Conv"
    onnx_ops = ("Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "Clip")
    rewrite = "FuseOps (conv + bias + activation)"
    expects = named(("conv1d_add", "conv2d_add", "conv3d_add"))
    arity = 3
    ranks = (3, 4, 5)
    dtypes = tuple((t,) * 3 for t in dt.FLOATS)

    def draw(self, ctx, ins, violate):
        conv = get("Conv").sample(ctx, ins[:1])
        return self.epilogue(ctx, {"conv": conv}, ins[0])  # the output has the input's rank and dtype

    def head(self, a):
        return [Step("Conv", a["conv"], (In(0), In(1), In(2)))]

    def input_type(self, ctx, i, ins, a, dtype):
        return get("Conv").input_type(ctx, i, ins, a["conv"], dtype)

    def constant_input(self, a, i):
        return True


class TvmConvTransposeBiasActivation(TvmConvBiasActivation):
    """ConvTranspose with constant weights and bias, then an activation:
    ``conv{1,2}d_transpose_add_<activation>``."""

    name = "TvmConvTransposeBiasActivation"
    onnx_op = "ConvTranspose"
    rewrite = "FuseOps (conv_transpose + bias + activation)"
    expects = named(("conv1d_transpose_add", "conv2d_transpose_add"))
    ranks = (3, 4)  # Relax has no 3-D transposed convolution

    def draw(self, ctx, ins, violate):
        return self.epilogue(ctx, {"conv": get("ConvTranspose").sample(ctx, ins[:1])}, ins[0])

    def head(self, a):
        return [Step("ConvTranspose", a["conv"], (In(0), In(1), In(2)))]

    def input_type(self, ctx, i, ins, a, dtype):
        return get("ConvTranspose").input_type(ctx, i, ins, a["conv"], dtype)


class TvmMatMulBiasActivation(_AnchorEpilogue):
    """MatMul by a constant (K, N) weight, Add of a constant (N,) bias, an activation:
    ``matmul_add_<activation>`` (batched left operands broadcast against the 2-D weight)."""

    name = "TvmMatMulBiasActivation"
    onnx_op = "MatMul"
    onnx_ops = ("Add",) + tuple(ACTIVATIONS)
    rewrite = "FuseOps (matmul + bias + activation)"
    expects = named(("matmul_add",))
    arity = 3
    ranks = (2, 3, 4)
    dtypes = tuple((t,) * 3 for t in dt.FLOATS)

    def draw(self, ctx, ins, violate):
        return self.epilogue(ctx, {"n": ctx.dim(16)}, ins[0])

    def head(self, a):
        return [Step("MatMul", {}, (In(0), In(1))), Step("Add", {}, (Out(0), In(2)))]

    def input_type(self, ctx, i, ins, a, dtype):
        return ins[0].with_dtype(dtype).with_shape((ins[0].shape[-1], a["n"]) if i == 1 else (a["n"],))

    def constant_input(self, a, i):
        return True


class TvmDiamondFusion(_AnchorEpilogue):
    """The diamond of ``fuse_ops.cc``'s note: MatMul + bias whose output feeds two
    activations that rejoin in a Mul. The Mul post-dominates the anchor through
    element-wise paths only, so the whole diamond is one function,
    ``matmul_add_<act1>_<act2>_multiply``. Broken (``elementwise_branches``): the second
    branch is a reduction (ReduceMean, kept dims) instead, and the anchor stops at its bias."""

    name = "TvmDiamondFusion"
    onnx_op = "MatMul"
    onnx_ops = ("Add", "Mul", "ReduceMean") + tuple(ACTIVATIONS)
    rewrite = "FuseOps (post-dominator through element-wise branches)"
    conditions = ("elementwise_branches",)
    expects = tuple(f"fused:matmul_add_{p}_{q}_multiply" for p in ACTIVATIONS.values()
                    for q in ACTIVATIONS.values())
    arity = 3
    ranks = (2, 3, 4)
    dtypes = tuple((t,) * 3 for t in dt.FLOATS)

    def draw(self, ctx, ins, violate):
        a = self.epilogue(ctx, {"n": ctx.dim(16)}, ins[0])
        a["act2"], a["act2_attrs"] = activation(ctx, ins[0])
        return a

    def steps(self, a):
        s = [Step("MatMul", {}, (In(0), In(1))), Step("Add", {}, (Out(0), In(2))),
             Step(a["act"], a["act_attrs"], (Out(1),))]
        if a["violate"] == "elementwise_branches":
            s.append(Step("ReduceMean", {"keepdims": 1, "axes": [a["out_rank"] - 1]}, (Out(1),)))
        else:
            s.append(Step(a["act2"], a["act2_attrs"], (Out(1),)))
        return s + [Step("Mul", {}, (Out(2), Out(3)))]

    input_type = TvmMatMulBiasActivation.input_type
    constant_input = TvmMatMulBiasActivation.constant_input


class TvmSoftmaxEpilogue(_AnchorEpilogue):
    """Softmax or LogSoftmax (legalized to one reduction-then-element-wise PrimFunc, so
    out-element-wise-fusable), then an activation: ``softmax_<act>``, ``log_softmax_<act>``."""

    name = "TvmSoftmaxEpilogue"
    onnx_op = "Softmax"
    onnx_ops = ("LogSoftmax",) + tuple(ACTIVATIONS)
    rewrite = "FuseOps (softmax + element-wise)"
    expects = named(("softmax", "log_softmax"))
    arity = 1
    ranks = (2, 3, 4)
    dtypes = FLOAT_SIGS

    def draw(self, ctx, ins, violate):
        op = ctx.choice(("Softmax", "LogSoftmax"))
        return self.epilogue(ctx, {"op": op, "op_attrs": get(op).sample(ctx, ins)}, ins[0])

    def head(self, a):
        return [Step(a["op"], a["op_attrs"], (In(0),))]


class TvmLayerNormEpilogue(_AnchorEpilogue):
    """LayerNormalization, then an activation: ``layer_norm_<act>``."""

    name = "TvmLayerNormEpilogue"
    onnx_op = "LayerNormalization"
    onnx_ops = tuple(ACTIVATIONS)
    rewrite = "FuseOps (layer_norm + element-wise)"
    expects = named(("layer_norm",))
    arity = 3
    ranks = (2, 3, 4)
    dtypes = tuple((t,) * 3 for t in (dt.FLOAT32, dt.FLOAT16))  # Relax's layer_norm: no float64
    min_opset = 17

    def draw(self, ctx, ins, violate):
        return self.epilogue(ctx, {"ln": get("LayerNormalization").sample(ctx, ins[:1])}, ins[0])

    def head(self, a):
        return [Step("LayerNormalization", a["ln"], (In(0), In(1), In(2)))]

    def input_type(self, ctx, i, ins, a, dtype):
        return get("LayerNormalization").input_type(ctx, i, ins, a["ln"], dtype)


class TvmPoolEpilogue(_AnchorEpilogue):
    """MaxPool, AveragePool or GlobalAveragePool (written as ``mean`` by the importer),
    then an activation: ``max_pool{1,2,3}d_<act>``, ``avg_pool{1,2,3}d_<act>``,
    ``mean_<act>``."""

    name = "TvmPoolEpilogue"
    onnx_op = "MaxPool"
    onnx_ops = ("AveragePool", "GlobalAveragePool") + tuple(ACTIVATIONS)
    rewrite = "FuseOps (pooling + element-wise)"
    expects = named(tuple(f"{k}_pool{r}d" for k in ("max", "avg") for r in (1, 2, 3)) + ("mean",))
    arity = 1
    ranks = (3, 4, 5)
    dtypes = FLOAT_SIGS

    def draw(self, ctx, ins, violate):
        op = ctx.choice(("MaxPool", "AveragePool", "GlobalAveragePool"))
        return self.epilogue(ctx, {"op": op, "op_attrs": get(op).sample(ctx, ins)}, ins[0])

    def head(self, a):
        return [Step(a["op"], a["op_attrs"], (In(0),))]


class TvmBatchNormActivation(_AnchorEpilogue):
    """Inference BatchNormalization with constant statistics, then an activation:
    ``batch_norm_<act>`` (the importer reads output 0 of Relax's batch_norm tuple)."""

    name = "TvmBatchNormActivation"
    onnx_op = "BatchNormalization"
    onnx_ops = tuple(ACTIVATIONS)
    rewrite = "FuseOps (batch_norm + element-wise)"
    expects = named(("batch_norm",))
    arity = 5
    ranks = (2, 3, 4)
    # float16: TVM's compiled batch_norm returns float32 where its IR says float16 (a
    # defect the BatchNormalization spec meets alone; here it would fail every model the
    # motif joins, hiding what else they hold)
    dtypes = tuple((t,) * 5 for t in (dt.FLOAT32, dt.FLOAT64))
    min_opset = 14

    def draw(self, ctx, ins, violate):
        return self.epilogue(ctx, {"bn": get("BatchNormalization").sample(ctx, ins[:1])}, ins[0])

    def head(self, a):
        return [Step("BatchNormalization", a["bn"], (In(0), In(1), In(2), In(3), In(4)))]

    def input_type(self, ctx, i, ins, a, dtype):
        return get("BatchNormalization").input_type(ctx, i, ins, a["bn"], dtype)

    def constant_input(self, a, i):
        return True


class TvmMatMulActivation(_AnchorEpilogue):
    """MatMul of two live operands of two or more dims, batch dims broadcast (numpy
    style), then an activation: ``matmul_<act>``. Broken (``two_dim_operands``): the
    second operand is 1-D, which the importer promotes and squeezes back around the
    product, so the activation meets an injective op, not the matmul."""

    name = "TvmMatMulActivation"
    onnx_op = "MatMul"
    onnx_ops = tuple(ACTIVATIONS)
    rewrite = "FuseOps (broadcast matmul + element-wise)"
    conditions = ("two_dim_operands",)
    expects = named(("matmul",))
    arity = 2
    ranks = (2, 3, 4)
    dtypes = tuple((t, t) for t in dt.FLOATS + dt.COMMON_INTS)
    min_opset = 14  # integer Relu

    def draw(self, ctx, ins, violate):
        x = ins[0]
        names = tuple(ACTIVATIONS) if dt.is_float(x.dtype) else ("Relu",)
        a = {"n": ctx.dim(16), "batch": list(broadcast_partner(ctx, tuple(x.shape[:-2])))}
        return self.epilogue(ctx, a, x, names)

    def steps(self, a):
        return [Step("MatMul", {}, (In(0), In(1))), Step(a["act"], a["act_attrs"], (Out(0),))]

    def input_type(self, ctx, i, ins, a, dtype):
        k = ins[0].shape[-1]
        shape = (k,) if a["violate"] else tuple(a["batch"]) + (k, a["n"])
        return ins[0].with_dtype(dtype).with_shape(shape)

    def requires(self, ins, a):
        # a reused second operand must keep the draw's side of the decision
        if len(ins) > 1 and (ins[1].rank == 1) != (a["violate"] == "two_dim_operands"):
            return [False]
        return super().requires(ins, a)


class TvmAttentionScores(Motif):
    """Scaled dot-product attention as exporters write it: ``Softmax(Q @ K' / s [+ mask])
    @ V`` with the scale (a Div or a Mul by a constant) and an optional constant additive
    mask on the scores: the score product takes both as its epilogue,
    ``matmul_divide``, ``matmul_multiply`` (``_add`` with the mask). Broken
    (``scale_after_product``): Q is scaled before the product (the other common spelling),
    which leaves the product no element-wise epilogue but the mask."""

    name = "TvmAttentionScores"
    onnx_op = "MatMul"
    onnx_ops = ("Div", "Mul", "Add", "Softmax")
    optimizer = "tvm"
    rewrite = "FuseOps (attention scores + scale + mask)"
    expects = ("fused:matmul_divide", "fused:matmul_multiply", "fused:matmul_divide_add", "fused:matmul_multiply_add")
    conditions = ("scale_after_product",)
    arity = 3
    ranks = (3, 4)
    # no float16: the CPU has no float16 MatMul kernel, so onnxruntime casts the chain to
    # float32 once and runs it without the float16 rounding of each intermediate (checked:
    # its results equal the unrounded chain's), beyond float16's tolerance after cancellation
    dtypes = tuple((t,) * 3 for t in (dt.FLOAT32, dt.FLOAT64))

    def draw(self, ctx, ins, violate):
        q = ins[0]
        return {"t": ctx.dim(8), "dv": ctx.dim(8), "div": ctx.coin(), "mask": ctx.coin(),
                "s": int(q.shape[-2]), "d": int(q.shape[-1]), "dtype": q.dtype}

    def steps(self, a):
        t = dt.NUMPY[a["dtype"]]
        d = a["d"]
        scale = Const(np.asarray(math.sqrt(d) if a["div"] and not a["violate"] else 1 / math.sqrt(d), dtype=t), "scale")
        if a["violate"] == "scale_after_product":
            s = [Step("Mul", {}, (In(0), scale)), Step("MatMul", {}, (Out(0), In(1)))]
        else:
            s = [Step("MatMul", {}, (In(0), In(1))), Step("Div" if a["div"] else "Mul", {}, (Out(0), scale))]
        if a["mask"]:
            s.append(Step("Add", {}, (Out(len(s) - 1), const_values(a, "mask", a["dtype"], (a["s"], a["t"])))))
        s.append(Step("Softmax", {"axis": -1}, (Out(len(s) - 1),)))
        return s + [Step("MatMul", {}, (Out(len(s) - 1), In(2)))]

    def input_type(self, ctx, i, ins, a, dtype):
        batch = tuple(ins[0].shape[:-2])
        shape = (a["d"], a["t"]) if i == 1 else (a["t"], a["dv"])
        return ins[0].with_dtype(dtype).with_shape(batch + shape)


OPS = [TvmConvBiasActivation, TvmConvTransposeBiasActivation, TvmMatMulBiasActivation, TvmDiamondFusion,
       TvmSoftmaxEpilogue, TvmLayerNormEpilogue, TvmPoolEpilogue, TvmBatchNormActivation, TvmMatMulActivation,
       TvmAttentionScores]
