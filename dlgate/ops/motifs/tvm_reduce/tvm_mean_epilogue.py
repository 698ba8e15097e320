from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.tvm_common import ACTIVATIONS, TvmMotif, activation, named
from dlgate.ops.registry import get


class TvmMeanEpilogue(TvmMotif):
    """ReduceMean, legalized as one sum-then-divide PrimFunc (out-element-wise-fusable),
    takes a following activation: ``mean_<act>``. Broken (``reduction_with_epilogue``):
    ReduceSum instead, a pure comm-reduce, which FuseOps never fuses forward."""

    onnx_op = "ReduceMean"
    onnx_ops = ("ReduceSum",) + tuple(ACTIVATIONS)
    rewrite = "FuseOps (mean + element-wise)"
    expects = named(("mean",))
    arity = 1
    ranks = (1, 2, 3, 4)
    conditions = ("reduction_with_epilogue",)

    def draw(self, ctx, ins, violate):
        op = "ReduceSum" if violate else "ReduceMean"
        act, act_attrs = activation(ctx, ins[0])
        return {"op": op, "op_attrs": get(op).sample(ctx, ins), "act": act, "act_attrs": act_attrs}

    def steps(self, a):
        return [Step(a["op"], a["op_attrs"], (In(0),)), Step(a["act"], a["act_attrs"], (Out(0),))]


OPS = [TvmMeanEpilogue]
