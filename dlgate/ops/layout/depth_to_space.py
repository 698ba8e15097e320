from __future__ import annotations

from dlgate.ops.layout._shared import BlockOp


class DepthToSpace(BlockOp):
    """Modes DCR (the default, sometimes left out) and CRD."""

    onnx_op = "DepthToSpace"

    def attrs(self, ctx, bs):
        return {"blocksize": bs, "mode": ctx.choice(("DCR", "CRD"))}

    def onnx(self, b, a, xs, ys):
        b.node("DepthToSpace", xs, ys, blocksize=a["blocksize"], mode=b.opt(a["mode"], "DCR"))

    def torch(self, a, x):
        (n, c, h, w), bs = x.shape, a["blocksize"]
        c2 = c // (bs * bs)
        if a["mode"] == "DCR":
            y = x.reshape(n, bs, bs, c2, h, w).permute(0, 3, 4, 1, 5, 2)
        else:
            y = x.reshape(n, c2, bs, bs, h, w).permute(0, 1, 4, 2, 5, 3)
        return y.reshape(n, c2, h * bs, w * bs)

    exact_values = True


OPS = [DepthToSpace]
