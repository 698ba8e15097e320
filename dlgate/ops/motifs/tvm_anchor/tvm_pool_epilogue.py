from __future__ import annotations

from dlgate.ops.motif import In, Step
from dlgate.ops.motifs.tvm_anchor._shared import _AnchorEpilogue
from dlgate.ops.motifs.tvm_common import ACTIVATIONS, named
from dlgate.ops.registry import get


class TvmPoolEpilogue(_AnchorEpilogue):
    """MaxPool, AveragePool or GlobalAveragePool (written as ``mean`` by the importer),
    then an activation: ``max_pool{1,2,3}d_<act>``, ``avg_pool{1,2,3}d_<act>``,
    ``mean_<act>``."""

    onnx_op = "MaxPool"
    onnx_ops = ("AveragePool", "GlobalAveragePool") + tuple(ACTIVATIONS)
    rewrite = "FuseOps (pooling + element-wise)"
    expects = named(tuple(f"{k}_pool{r}d" for k in ("max", "avg") for r in (1, 2, 3)) + ("mean",))
    arity = 1
    ranks = (3, 4, 5)

    def draw(self, ctx, ins, violate):
        op = ctx.choice(("MaxPool", "AveragePool", "GlobalAveragePool"))
        return self.epilogue(ctx, {"op": op, "op_attrs": get(op).sample(ctx, ins)}, ins[0])

    def head(self, a):
        return [Step(a["op"], a["op_attrs"], (In(0),))]


OPS = [TvmPoolEpilogue]
