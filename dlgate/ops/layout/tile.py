from __future__ import annotations

from dlgate.ops.layout._shared import Layout


class Tile(Layout):
    """A scalar too (rank 0, empty ``repeats``: the scalar itself), which kernels have
    special-cased (onnxruntime's CPU Tile refused it before 1.24)."""
    onnx_op = "Tile"
    ranks = (0, 1, 2, 3, 4, 5)

    def sample(self, ctx, ins):
        reps = [1 if ctx.coin(0.5) else ctx.int(1, 3) for _ in ins[0].shape]
        return {"repeats": [1] * len(reps) if ctx.degenerate_draw() else reps}

    def out_shape(self, shape, a):
        return tuple(d * t for d, t in zip(shape, a["repeats"]))

    def backward(self, ctx, out):
        if out.rank == 0:
            return [out], {"repeats": []}
        reps = [1 if ctx.coin(0.4) else ctx.divisor(d, 4) for d in out.shape]
        return [out.with_shape([d // t for d, t in zip(out.shape, reps)])], {"repeats": reps}

    def requires(self, ins, a):
        return [len(a["repeats"]) == ins[0].rank]

    def onnx(self, b, a, xs, ys):
        b.node("Tile", [xs[0], b.ints(a["repeats"])], ys)

    def torch(self, a, x):
        return x.repeat(tuple(a["repeats"]))

    preserves_values = True


OPS = [Tile]
