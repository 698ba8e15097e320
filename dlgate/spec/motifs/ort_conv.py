"""onnxruntime's Conv fusions (``onnxruntime/core/optimizer``): at level 1 a Conv whose
weights are constant initializers absorbs a following BatchNormalization, Add or Mul of
constants, when the Conv's output has no other consumer (``conv_bn_fusion.cc``,
``conv_add_fusion.cc``, ``conv_mul_fusion.cc``), and a zero Pad folds into the Conv or
AveragePool after it (``pad_fusion.cc``); at level 2 an activation joins the Conv as a
``FusedConv`` (``conv_activation_fusion.cc``); at level 3 the NCHWc layout transformer
rewrites 2-D Convs with static weights (``nchwc_transformer.cc``) and the Convs it leaves
take a residual Add and an activation (``conv_add_act_fusion.cc``)."""
from __future__ import annotations

from dlgate.spec.motif import In, Out, Step
from dlgate.spec.motifs.ort_common import (F16, F32, F64, OTHER_ACTIVATIONS, OrtMotif, activation, second_read,
                                           spatial_ones)
from dlgate.spec.registry import get

INT64_MAX = 2**63 - 1


class ConvBnFusion(OrtMotif):
    """``conv_bn_fusion.cc``: Conv -> BatchNormalization with constant W, B, scale, bias,
    mean and var, the Conv's output read only by the BatchNormalization, becomes one Conv
    with folded weights."""

    name = "ConvBnFusion"
    onnx_op = "Conv"
    onnx_ops = ("BatchNormalization", "Add")
    optimizer = "onnxruntime"
    rewrite = "ConvBNFusion"
    expects = ("removed:BatchNormalization",)
    conditions = ("weights_constant", "bn_constant", "single_consumer")
    arity = 7
    ranks = (3, 4, 5)
    dtypes = tuple((t,) * 7 for t in (F32, F16))  # no float64 Conv kernel on the CPU
    min_opset = 14

    def draw(self, ctx, ins, violate):
        conv = get("Conv").sample(ctx, ins[:1])
        c = conv["group"] * conv["m_per_group"]
        out_rank = ins[0].rank
        bn = get("BatchNormalization").sample(ctx, [ins[0].with_shape((1, c) + (1,) * (out_rank - 2))])
        return {"conv": conv, "bn": bn, "channels": c, "dtype": ins[0].dtype}

    def steps(self, a):
        s = [Step("Conv", a["conv"], (In(0), In(1), In(2))),
             Step("BatchNormalization", a["bn"], (Out(0), In(3), In(4), In(5), In(6)))]
        if a["violate"] == "single_consumer":
            s.append(Step("Add", {}, (Out(1), Out(0))))  # the Conv's output is read twice
        return s

    def input_type(self, ctx, i, ins, a, dtype):
        if i <= 2:
            return get("Conv").input_type(ctx, i, ins, a["conv"], dtype)
        return ins[0].with_dtype(dtype).with_shape((a["channels"],))

    def constant_input(self, a, i):
        v = a["violate"]
        if i <= 2:
            return v != "weights_constant"
        return not (v == "bn_constant" and i == 5)  # a live mean


def _conv(ctx, x, **force) -> dict:
    """Conv attributes for ``x``, with ``force`` overriding what was drawn."""
    a = get("Conv").sample(ctx, [x])
    a.update(force)
    return a


def _channels(a: dict) -> int:
    return a["group"] * a["m_per_group"]


def _reduced(steps: list, src: int, last: int, rank: int) -> list:
    """Steps that read step ``src``'s output a second time (its mean, kept as a
    broadcastable all-ones shape) and add it to step ``last``'s output."""
    k = len(steps)
    return [Step("ReduceMean", {"keepdims": 1, "axes": list(range(rank))}, (Out(src),)),
            Step("Add", {}, (Out(last), Out(k)))]


class _ConvThen(OrtMotif):
    """Conv (constant weights and bias) then ``binop`` with a constant per-channel operand
    (shape [M, 1, ...] or [1, M, 1, ...], as many axes as the weights at most): the rule
    folds the operand into the weights (Mul) or the bias (Add) when the Conv's output is
    read by that node only and the operand is the node's second input."""

    onnx_op = "Conv"
    binop = ""
    conditions = ("weights_constant", "operand_constant", "operand_shape", "single_consumer", "operand_first")
    arity = 4
    ranks = (3, 4, 5)
    dtypes = tuple((t,) * 4 for t in (F32, F16))
    fuse_dtypes = (F32, F16)
    min_opset = 13

    def draw(self, ctx, ins, violate):
        conv = _conv(ctx, ins[0])
        m, r = _channels(conv), ins[0].rank
        if violate == "operand_shape":
            shape = (1, 1, m) + spatial_ones(r)  # one axis more than the weights: not folded
        elif ctx.coin():
            shape = (m,) + spatial_ones(r)
        else:
            shape = (1, m) + spatial_ones(r)
        return {"conv": conv, "shape": shape, "rank": r}

    def steps(self, a):
        v = a["violate"]
        operands = (In(3), Out(0)) if v == "operand_first" else (Out(0), In(3))
        s = [Step("Conv", a["conv"], (In(0), In(1), In(2))), Step(self.binop, {}, operands)]
        if v == "single_consumer":
            s += second_read(s, 0, 1)
        return s

    def input_type(self, ctx, i, ins, a, dtype):
        if i <= 2:
            return get("Conv").input_type(ctx, i, ins, a["conv"], dtype)
        return ins[0].with_dtype(dtype).with_shape(a["shape"])

    def constant_input(self, a, i):
        v = a["violate"]
        if i <= 2:
            return v != "weights_constant"
        return v != "operand_constant"


class ConvAddFusion(_ConvThen):
    """``conv_add_fusion.cc``: Conv -> Add of a constant [M, 1, ...] becomes the Conv's bias."""

    name = "ConvAddFusion"
    onnx_ops = ("Add",)
    rewrite = "ConvAddFusion"
    expects = ("removed:Add",)
    binop = "Add"


class ConvMulFusion(_ConvThen):
    """``conv_mul_fusion.cc``: Conv -> Mul by a constant [M, 1, ...] scales the weights and bias."""

    name = "ConvMulFusion"
    onnx_ops = ("Mul",)
    rewrite = "ConvMulFusion"
    expects = ("removed:Mul",)
    binop = "Mul"


class ConvActivationFusion(OrtMotif):
    """``conv_activation_fusion.cc`` (level 2): Conv -> Relu, Sigmoid, Tanh, LeakyRelu,
    HardSigmoid or Clip with constant bounds becomes ``com.microsoft:FusedConv`` with the
    activation as an attribute (float32 on the CPU), when the Conv's output is read by
    the activation only."""

    name = "ConvActivationFusion"
    onnx_op = "Conv"
    onnx_ops = ("Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "Clip")
    rewrite = "ConvActivationFusion"
    expects = ("transformer:ConvActivationFusion", "fused:com.microsoft:FusedConv")
    conditions = ("activation", "single_consumer", "dtype")
    level = "extended"
    arity = 3
    ranks = (3, 4, 5)
    dtypes = tuple((t,) * 3 for t in (F32, F16))
    fuse_dtypes = (F32,)

    def draw(self, ctx, ins, violate):
        conv = _conv(ctx, ins[0])
        act, act_attrs = activation(ctx, ins[0], OTHER_ACTIVATIONS if violate == "activation" else
                                    ("Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "Clip"))
        return {"conv": conv, "act": act, "act_attrs": act_attrs}

    def steps(self, a):
        s = [Step("Conv", a["conv"], (In(0), In(1), In(2))), Step(a["act"], a["act_attrs"], (Out(0),))]
        if a["violate"] == "single_consumer":
            s += second_read(s, 0, 1)
        return s

    def input_type(self, ctx, i, ins, a, dtype):
        return get("Conv").input_type(ctx, i, ins, a["conv"], dtype)

    def constant_input(self, a, i):
        return True


def _pads_for(ctx, r: int, violate) -> list:
    """Pad's ``pads`` for a rank-``r`` input: spatial only and not all zero, unless the
    draw breaks ``pad_axes`` (the channel axis padded too)."""
    sp = r - 2
    begin = [ctx.int(0, 2) for _ in range(sp)]
    end = [ctx.int(0, 2) for _ in range(sp)]
    if not any(begin + end):
        begin[ctx.rng.randrange(sp)] = 1
    ch = 1 if violate == "pad_axes" else 0
    return [0, ch] + begin + [0, 0] + end


class _PadThen(OrtMotif):
    """``pad_fusion.cc``: a constant-mode Pad with constant zero padding on the spatial
    axes only, read by the next node only, is folded into that node's ``pads``."""

    onnx_op = "Pad"
    rewrite = "PadFusion"
    expects = ("removed:Pad",)
    ranks = (3, 4, 5)
    pad_conditions = ("pad_mode", "pad_value", "pad_axes", "single_consumer")

    def pad(self, ctx, x, violate) -> dict:
        pads = _pads_for(ctx, x.rank, violate)
        mode = "edge" if violate == "pad_mode" else "constant"
        if mode == "edge":
            value = None
        elif violate == "pad_value":
            value = ctx.choice((1.0, -0.5, 2.0))
        else:
            value = 0.0 if ctx.coin() else None
        return {"mode": mode, "pads": pads, "value": value, "value_dtype": None if value is None else x.dtype,
                "axes": None}

    def child(self, a) -> Step:
        raise NotImplementedError

    def steps(self, a):
        s = [Step("Pad", a["pad"], (In(0),)), self.child(a)]
        if a["violate"] == "single_consumer":
            s += _reduced(s, 0, 1, a["rank"])
        return s


class PadConvFusion(_PadThen):
    """Pad -> Conv (explicit ``pads``, not ``auto_pad``)."""

    name = "PadConvFusion"
    onnx_op = "Conv"  # the schema the input signature is checked against
    onnx_ops = ("Pad",)
    conditions = _PadThen.pad_conditions + ("child_auto_pad",)
    arity = 3
    dtypes = tuple((t,) * 3 for t in (F32, F16))

    def draw(self, ctx, ins, violate):
        pad = self.pad(ctx, ins[0], violate)
        padded = get("Pad").infer(ins[:1], pad)[0]
        conv = _conv(ctx, padded, auto_pad="NOTSET")
        r = ins[0].rank - 2
        if violate == "child_auto_pad":
            conv.update(auto_pad="VALID", pads=[0] * (2 * r))
        elif not any(conv["pads"]):
            conv["pads"] = [1] + [0] * (2 * r - 1)  # written out: the fusion adds to them
        return {"pad": pad, "conv": conv, "padded": padded.shape, "rank": ins[0].rank}

    def child(self, a):
        return Step("Conv", a["conv"], (Out(0), In(1), In(2)))

    def input_type(self, ctx, i, ins, a, dtype):
        return get("Conv").input_type(ctx, i, [ins[0].with_shape(a["padded"])], a["conv"], dtype)

    def constant_input(self, a, i):
        return True


class PadAveragePoolFusion(_PadThen):
    """Pad -> AveragePool with ``count_include_pad=1`` (the padded zeros are counted
    either way) and ``ceil_mode=0``, whose pads stay below its kernel once the Pad's are
    added; onnxruntime declines MaxPool (implicit padding is -inf there),
    ``count_include_pad=0`` and ``ceil_mode=1``."""

    name = "PadAveragePoolFusion"
    onnx_ops = ("AveragePool", "MaxPool")
    conditions = _PadThen.pad_conditions + ("count_include_pad", "max_pool", "pads_below_kernel", "ceil_mode")
    arity = 1
    dtypes = ((F32,), (F16,))

    def draw(self, ctx, ins, violate):
        pad = self.pad(ctx, ins[0], violate)
        padded = get("Pad").infer(ins[:1], pad)[0]
        op = "MaxPool" if violate == "max_pool" else "AveragePool"
        pool = get(op).sample(ctx, [padded])
        r = ins[0].rank - 2
        pool.update(auto_pad="NOTSET", kernel=[max(2, k) for k in pool["kernel"]])
        pool["pads"] = [min(p, 1) for p in pool["pads"]]
        if not any(pool["pads"]):
            pool["pads"] = [1] + [0] * (2 * r - 1)  # written out: the fusion adds to them
        # the pads after the fusion stay below the kernel (onnxruntime declines otherwise)
        pp, begin, end = pool["pads"], pad["pads"][2:r + 2], pad["pads"][r + 4:]
        for i in range(r):
            pool["kernel"][i] = max(pool["kernel"][i], pp[i] + begin[i] + 1, pp[r + i] + end[i] + 1)
        if violate == "pads_below_kernel":
            i = next(i for i in range(r) if begin[i] or end[i])
            pp[i] = pp[r + i] = 0
            pool["kernel"][i] = max(begin[i], end[i])
        pool["ceil_mode"] = int(violate == "ceil_mode")
        if op == "AveragePool":
            pool["count_include_pad"] = 0 if violate == "count_include_pad" else 1
        return {"pad": pad, "op": op, "pool": pool, "rank": ins[0].rank}

    def child(self, a):
        return Step(a["op"], a["pool"], (Out(0),))


class ConvAddActivationFusion(OrtMotif):
    """``conv_add_act_fusion.cc`` (level 3): a 2-D float32 Conv with a bias, read only by
    an Add of a tensor of the same shape (a residual), then an activation, becomes
    ``com.microsoft:FusedConv`` with the residual as its fourth input. The NCHWc
    transformer runs first and takes the Convs with static weights it can, so the weights
    here are live (graph inputs), which it never takes on any block size."""

    name = "ConvAddActivationFusion"
    onnx_op = "Conv"
    onnx_ops = ("Add", "Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "Clip")
    rewrite = "ConvAddActivationFusion"
    expects = ("transformer:ConvAddActivationFusion",)
    conditions = ("same_shape", "single_consumer")
    level = "all"
    arity = 4
    ranks = (4,)
    dtypes = ((F32,) * 4,)

    def draw(self, ctx, ins, violate):
        conv = _conv(ctx, ins[0])
        act, act_attrs = activation(ctx, ins[0])
        out = get("Conv").infer(ins[:1], conv)[0]
        shape = (1, _channels(conv), 1, 1) if violate == "same_shape" else out.shape
        return {"conv": conv, "act": act, "act_attrs": act_attrs, "shape": shape}

    def steps(self, a):
        s = [Step("Conv", a["conv"], (In(0), In(1), In(2))), Step("Add", {}, (Out(0), In(3))),
             Step(a["act"], a["act_attrs"], (Out(1),))]
        if a["violate"] == "single_consumer":
            s += second_read(s, 0, 2)
        return s

    def input_type(self, ctx, i, ins, a, dtype):
        if i <= 2:
            return get("Conv").input_type(ctx, i, ins, a["conv"], dtype)
        return ins[0].with_dtype(dtype).with_shape(a["shape"])

    def constant_input(self, a, i):
        return False


class NchwcConv(OrtMotif):
    """``nchwc_transformer.cc`` (level 3, where the CPU has an NCHWc block size: AVX2 8,
    AVX-512 16): a 2-D Conv with static float32 weights and bias becomes
    ``com.microsoft.nchwc:Conv`` between ``ReorderInput``/``ReorderOutput`` when, ungrouped,
    its input channels are fewer than a block or a multiple of it. A channel adapter in
    front (a 1x1 Conv to 3, 16 or 32 channels) makes them so whatever the input's own
    channels; a following Relu is fused into the NCHWc Conv."""

    name = "NchwcConv"
    onnx_op = "Conv"
    onnx_ops = ("Relu",)
    rewrite = "NchwcTransformer"
    expects = ("transformer:NchwcTransformer", "fused:com.microsoft.nchwc:Conv")
    conditions = ("weights_constant", "rank")
    level = "all"
    arity = 4
    ranks = (3, 4)
    # float32 only: NCHWc is float32's; a float16 pair of Convs runs in float32 on the CPU
    # without the intermediate rounding, beyond float16's tolerance on long sums
    dtypes = ((F32,) * 4,)
    forced = ("dtype", "rank")

    def outside(self, ctx, ins):
        return "rank" if ins[0].rank != 4 else super().outside(ctx, ins)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        adapt = ctx.choice((3, 16, 32))
        conv = _conv(ctx, x.with_shape((x.shape[0], adapt) + tuple(x.shape[2:])), group=1)
        conv["m_per_group"] = ctx.choice((conv["m_per_group"], 8, 16, 32))
        return {"conv": conv, "adapt": adapt, "relu": ctx.coin(), "rank": x.rank}

    def _adapter(self, a) -> dict:
        r = a["rank"] - 2
        return {"kernel": [1] * r, "strides": [1] * r, "dilations": [1] * r, "pads": [0] * (2 * r), "group": 1,
                "m_per_group": a["adapt"], "spell_kernel": False, "auto_pad": "NOTSET"}

    def steps(self, a):
        s = [Step("ConvNoBias", self._adapter(a), (In(0), In(3))), Step("Conv", a["conv"], (Out(0), In(1), In(2)))]
        if a["relu"]:
            s.append(Step("Relu", {}, (Out(1),)))
        return s

    def input_type(self, ctx, i, ins, a, dtype):
        x = ins[0]
        if i == 3:
            return get("ConvNoBias").input_type(ctx, 1, [x], self._adapter(a), dtype)
        xin = x.with_shape((x.shape[0], a["adapt"]) + tuple(x.shape[2:]))
        return get("Conv").input_type(ctx, i, [xin], a["conv"], dtype)

    def constant_input(self, a, i):
        return a["violate"] != "weights_constant"  # a live adapter is no NCHWc Conv either


class SliceConcatSpaceToDepth(OrtMotif):
    """``slice_concat_to_space_to_depth_fusion.cc`` (level 1): a YOLO-style focus layer,
    four Slices of one float32 or float64 NCHW tensor with steps 2 on H and W, offsets
    {0, 1} x {0, 1}, full extents, each read only by a Concat of the four on the channel
    axis, becomes SpaceToDepth (blocksize 2), followed by a channel Gather when the phases
    are not in SpaceToDepth's order. A branch is one Slice of both axes or two chained
    Slices, one per axis. An odd H or W is cropped first (the Slices then read the crop).
    Two branches of one phase, or the Concat on the batch axis, break it."""

    name = "SliceConcatSpaceToDepth"
    onnx_op = "Slice"
    onnx_ops = ("Concat",)
    rewrite = "SliceConcatToSpaceToDepthFusion"
    expects = ("transformer:SliceConcatToSpaceToDepthFusion",)
    conditions = ("four_phases", "channel_axis", "dtype")
    fuse_dtypes = (F32, F64)
    arity = 1
    ranks = (4,)
    dtypes = tuple((t,) for t in (F32, F16, F64))
    PHASES = ((0, 0), (0, 1), (1, 0), (1, 1))

    def draw(self, ctx, ins, violate):
        h, w = ins[0].shape[2:]
        crop = [h - h % 2, w - w % 2] if h % 2 or w % 2 else None
        phases = list(self.PHASES)
        if ctx.coin():
            ctx.rng.shuffle(phases)  # YOLOv5 writes (0, 0), (1, 0), (0, 1), (1, 1)
        if violate == "four_phases":
            phases[3] = phases[0]
        full = ctx.choice(("max", "dim"))
        return {"crop": crop, "phases": [list(p) for p in phases], "chain": [ctx.coin(0.3) for _ in phases],
                "ends": [INT64_MAX, INT64_MAX] if full == "max" else list(crop or [h, w]),
                "axis": (0 if violate == "channel_axis" else 1) - (4 if ctx.coin(0.3) else 0)}

    def steps(self, a):
        s, src = [], In(0)
        if a["crop"]:
            s.append(Step("Slice", {"starts": [0, 0], "ends": a["crop"], "axes": [2, 3], "steps": None}, (src,)))
            src = Out(0)
        branches = []
        for (ph, pw), chain in zip(a["phases"], a["chain"]):
            if chain:  # H, then W
                s.append(Step("Slice", {"starts": [ph], "ends": a["ends"][:1], "axes": [2], "steps": [2]}, (src,)))
                s.append(Step("Slice", {"starts": [pw], "ends": a["ends"][1:], "axes": [3], "steps": [2]},
                              (Out(len(s) - 1),)))
            else:
                s.append(Step("Slice", {"starts": [ph, pw], "ends": a["ends"], "axes": [2, 3], "steps": [2, 2]},
                              (src,)))
            branches.append(Out(len(s) - 1))
        return s + [Step("Concat4", {"axis": a["axis"]}, tuple(branches))]


OPS = [ConvBnFusion, ConvAddFusion, ConvMulFusion, ConvActivationFusion, PadConvFusion, PadAveragePoolFusion,
       ConvAddActivationFusion, NchwcConv, SliceConcatSpaceToDepth]
