from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.motif import In, Step
from dlgate.ops.motifs.tvm_anchor._shared import _AnchorEpilogue
from dlgate.ops.motifs.tvm_common import ACTIVATIONS, named
from dlgate.ops.registry import get


class TvmBatchNormActivation(_AnchorEpilogue):
    """Inference BatchNormalization with constant statistics, then an activation:
    ``batch_norm_<act>`` (the importer reads output 0 of Relax's batch_norm tuple)."""

    onnx_op = "BatchNormalization"
    onnx_ops = tuple(ACTIVATIONS)
    rewrite = "FuseOps (batch_norm + element-wise)"
    expects = named(("batch_norm",))
    arity = 5
    ranks = (2, 3, 4)
    # float16: TVM's compiled batch_norm returns float32 where its IR says float16 (a
    # defect the BatchNormalization spec meets alone; here it would fail every model the
    # motif joins, hiding what else they hold)
    types = (dt.FLOAT32, dt.FLOAT64)
    min_opset = 14

    def draw(self, ctx, ins, violate):
        return self.epilogue(ctx, {"bn": get("BatchNormalization").sample(ctx, ins[:1])}, ins[0])

    def head(self, a):
        return [Step("BatchNormalization", a["bn"], (In(0), In(1), In(2), In(3), In(4)))]

    def constant_input(self, a, i):
        return True


OPS = [TvmBatchNormActivation]
