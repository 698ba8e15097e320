from __future__ import annotations

from dlgate.ops.motif import In, Step
from dlgate.ops.motifs.tvm_anchor._shared import _AnchorEpilogue
from dlgate.ops.motifs.tvm_common import named
from dlgate.ops.registry import get


class TvmConvBiasActivation(_AnchorEpilogue):
    """Conv with constant weights and bias, then an activation: the importer writes the
    bias as ``add`` of the reshaped constant, so the fused function is
    ``conv{1,2,3}d_add_<activation>``."""

    onnx_op = "Conv"
    onnx_ops = ("Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "Clip")
    rewrite = "FuseOps (conv + bias + activation)"
    expects = named(("conv1d_add", "conv2d_add", "conv3d_add"))
    arity = 3
    ranks = (3, 4, 5)

    def draw(self, ctx, ins, violate):
        conv = get("Conv").sample(ctx, ins[:1])
        return self.epilogue(ctx, {"conv": conv}, ins[0])  # the output has the input's rank and dtype

    def head(self, a):
        return [Step("Conv", a["conv"], (In(0), In(1), In(2)))]

    def constant_input(self, a, i):
        return True


OPS = [TvmConvBiasActivation]
