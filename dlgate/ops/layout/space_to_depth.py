from __future__ import annotations

from dlgate.ops.layout._shared import BlockOp


class SpaceToDepth(BlockOp):
    onnx_op = "SpaceToDepth"
    to_space = False

    def onnx(self, b, a, xs, ys):
        b.node("SpaceToDepth", xs, ys, blocksize=a["blocksize"])

    def torch(self, a, x):
        (n, c, h, w), bs = x.shape, a["blocksize"]
        y = x.reshape(n, c, h // bs, bs, w // bs, bs).permute(0, 3, 5, 1, 2, 4)
        return y.reshape(n, c * bs * bs, h // bs, w // bs)

    exact_values = True


OPS = [SpaceToDepth]
