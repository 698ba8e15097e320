from __future__ import annotations

from dlgate.ops.layout._shared import Layout


# -- Transpose / Squeeze / Unsqueeze --------------------------------------------------

class Transpose(Layout):
    """``omit``: the perm attribute is left out, which means reversing the dims."""
    onnx_op = "Transpose"

    @staticmethod
    def attrs(ctx, r):
        if ctx.coin(0.2):
            return {"perm": list(range(r - 1, -1, -1)), "omit": True}
        return {"perm": ctx.perm(r), "omit": False}

    def sample(self, ctx, ins):
        return self.attrs(ctx, ins[0].rank)

    def out_shape(self, shape, a):
        return tuple(shape[p] for p in a["perm"])

    def backward(self, ctx, out):
        if out.rank == 0:
            return None
        a = self.attrs(ctx, out.rank)
        shape = [None] * out.rank
        for i, p in enumerate(a["perm"]):
            shape[p] = out.shape[i]
        return [out.with_shape(shape)], a

    def onnx(self, b, a, xs, ys):
        b.node("Transpose", xs, ys, perm=None if a["omit"] else a["perm"])

    def torch(self, a, x):
        return x.permute(a["perm"])

    preserves_values = True


OPS = [Transpose]
