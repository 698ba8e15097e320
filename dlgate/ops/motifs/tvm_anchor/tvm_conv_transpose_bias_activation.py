from __future__ import annotations

from dlgate.ops.motif import In, Step
from dlgate.ops.motifs.tvm_anchor.tvm_conv_bias_activation import TvmConvBiasActivation
from dlgate.ops.motifs.tvm_common import named
from dlgate.ops.registry import get


class TvmConvTransposeBiasActivation(TvmConvBiasActivation):
    """ConvTranspose with constant weights and bias, then an activation:
    ``conv{1,2}d_transpose_add_<activation>``."""

    onnx_op = "ConvTranspose"
    rewrite = "FuseOps (conv_transpose + bias + activation)"
    expects = named(("conv1d_transpose_add", "conv2d_transpose_add"))
    ranks = (3, 4)  # Relax has no 3-D transposed convolution

    def draw(self, ctx, ins, violate):
        return self.epilogue(ctx, {"conv": get("ConvTranspose").sample(ctx, ins[:1])}, ins[0])

    def head(self, a):
        return [Step("ConvTranspose", a["conv"], (In(0), In(1), In(2)))]


OPS = [TvmConvTransposeBiasActivation]
