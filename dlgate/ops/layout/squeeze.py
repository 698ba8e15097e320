from __future__ import annotations

from dlgate.ops.layout._shared import Layout, axes_node, _concrete, insert_ones, spell_axis


class Squeeze(Layout):
    """``axes`` are size-1 dims; ``omit``: the axes input is left out (squeeze every 1-dim),
    only when ``axes`` are exactly the size-1 dims."""
    onnx_op = "Squeeze"

    @staticmethod
    def spell(ctx, pos, r) -> list:
        axes = [spell_axis(ctx, i, r) for i in pos]
        ctx.rng.shuffle(axes)
        return axes

    def sample(self, ctx, ins):
        shape, r = ins[0].shape, ins[0].rank
        if not _concrete(shape):
            return {"axes": self.spell(ctx, ctx.axes(r, 1, 3), r), "omit": False}
        ones = [i for i, d in enumerate(shape) if d == 1]
        if not ones:
            return {"axes": [ctx.axis(r)], "omit": False}  # fails ``requires``
        if ctx.coin(0.25):
            return {"axes": ones, "omit": True}
        axes = self.spell(ctx, ctx.rng.sample(ones, ctx.rng.randint(1, len(ones))), r)
        if ctx.degenerate_draw():  # every size-1 dim, listed
            axes = self.spell(ctx, ones, r)
        return {"axes": axes, "omit": False}

    def out_shape(self, shape, a):
        axes = {ax % len(shape) for ax in a["axes"]}
        return tuple(d for i, d in enumerate(shape) if i not in axes)

    def backward_ranks(self, out):
        return (out.rank + 1, out.rank + 2)

    def backward(self, ctx, out):
        hi = min(3, ctx.limits.max_rank - out.rank)
        if hi < 1:
            return None
        r = out.rank + ctx.rng.randint(1, hi)
        pos = sorted(ctx.rng.sample(range(r), r - out.rank))
        x = out.with_shape(insert_ones(out.shape, pos))
        if all(d != 1 for d in out.shape) and ctx.coin(0.25):
            return [x], {"axes": pos, "omit": True}
        return [x], {"axes": self.spell(ctx, pos, r), "omit": False}

    def requires(self, ins, a):
        shape, r = ins[0].shape, ins[0].rank
        axes = {ax % r for ax in a["axes"]}
        if len(axes) != len(a["axes"]):
            return [False]
        return [shape[i] == 1 if i in axes else shape[i] != 1 for i in range(r) if i in axes or a["omit"]]

    def onnx(self, b, a, xs, ys):
        if a["omit"]:
            b.node("Squeeze", xs, ys)
        else:
            axes_node(b, "Squeeze", xs, ys, a["axes"])

    def torch(self, a, x):
        return x.squeeze(tuple(sorted(ax % x.dim() for ax in a["axes"])))

    preserves_values = True
    exact_values = True


OPS = [Squeeze]
