from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.motif import In, Step
from dlgate.ops.motifs.tvm_anchor._shared import _AnchorEpilogue
from dlgate.ops.motifs.tvm_common import ACTIVATIONS, named
from dlgate.ops.registry import get


class TvmLayerNormEpilogue(_AnchorEpilogue):
    """LayerNormalization, then an activation: ``layer_norm_<act>``."""

    onnx_op = "LayerNormalization"
    onnx_ops = tuple(ACTIVATIONS)
    rewrite = "FuseOps (layer_norm + element-wise)"
    expects = named(("layer_norm",))
    arity = 3
    ranks = (2, 3, 4)
    types = (dt.FLOAT32, dt.FLOAT16)  # Relax's layer_norm: no float64
    min_opset = 17

    def draw(self, ctx, ins, violate):
        return self.epilogue(ctx, {"ln": get("LayerNormalization").sample(ctx, ins[:1])}, ins[0])

    def head(self, a):
        return [Step("LayerNormalization", a["ln"], (In(0), In(1), In(2)))]


OPS = [TvmLayerNormEpilogue]
