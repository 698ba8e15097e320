"""What the ort_conv motifs share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from dlgate.ops.motif import In, Out, Step, reread
from dlgate.ops.motifs.ort_common import F16, F32, OrtMotif, single_consumer, spatial_ones
from dlgate.ops.registry import get


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
    return reread(steps, src, last, "ReduceMean", {"keepdims": 1, "axes": list(range(rank))})


class _ConvThen(OrtMotif):
    """Conv (constant weights and bias) then ``binop`` with a constant per-channel operand
    (shape [M, 1, ...] or [1, M, 1, ...], as many axes as the weights at most): the rule
    folds the operand into the weights (Mul) or the bias (Add) when the Conv's output is
    read by that node only and the operand is the node's second input."""

    onnx_op = "Conv"
    arity = 4
    ranks = (3, 4, 5)
    types = (F32, F16)
    fuse_dtypes = (F32, F16)
    min_opset = 13
    binop = ""
    conditions = ("weights_constant", "operand_constant", "operand_shape", "single_consumer", "operand_first")

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

    def input_type(self, ctx, i, ins, a, dtype):
        if i <= 2:
            return get("Conv").input_type(ctx, i, ins, a["conv"], dtype)
        return ins[0].with_dtype(dtype).with_shape(a["shape"])

    def steps(self, a):
        v = a["violate"]
        operands = (In(3), Out(0)) if v == "operand_first" else (Out(0), In(3))
        s = [Step("Conv", a["conv"], (In(0), In(1), In(2))), Step(self.binop, {}, operands)]
        return single_consumer(a, s, 0, 1)

    def constant_input(self, a, i):
        v = a["violate"]
        if i <= 2:
            return v != "weights_constant"
        return v != "operand_constant"


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
