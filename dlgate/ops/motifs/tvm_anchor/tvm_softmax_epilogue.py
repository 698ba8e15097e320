from __future__ import annotations

from dlgate.ops.motif import In, Step
from dlgate.ops.motifs.tvm_anchor._shared import _AnchorEpilogue
from dlgate.ops.motifs.tvm_common import ACTIVATIONS, named
from dlgate.ops.registry import get


class TvmSoftmaxEpilogue(_AnchorEpilogue):
    """Softmax or LogSoftmax (legalized to one reduction-then-element-wise PrimFunc, so
    out-element-wise-fusable), then an activation: ``softmax_<act>``, ``log_softmax_<act>``."""

    onnx_op = "Softmax"
    onnx_ops = ("LogSoftmax",) + tuple(ACTIVATIONS)
    rewrite = "FuseOps (softmax + element-wise)"
    expects = named(("softmax", "log_softmax"))
    arity = 1
    ranks = (2, 3, 4)

    def draw(self, ctx, ins, violate):
        op = ctx.choice(("Softmax", "LogSoftmax"))
        return self.epilogue(ctx, {"op": op, "op_attrs": get(op).sample(ctx, ins)}, ins[0])

    def head(self, a):
        return [Step(a["op"], a["op_attrs"], (In(0),))]


OPS = [TvmSoftmaxEpilogue]
