from __future__ import annotations

from dlgate.ops.layout._shared import Layout, axes_node, insert_ones, spell_axis


class Unsqueeze(Layout):
    """``axes`` index the output; written in any order, some negative."""
    onnx_op = "Unsqueeze"
    ranks = (0, 1, 2, 3, 4)

    @staticmethod
    def spell(ctx, pos, r_out) -> list:
        axes = [spell_axis(ctx, i, r_out) for i in pos]
        if ctx.coin(0.3):
            ctx.rng.shuffle(axes)
        return axes

    def sample(self, ctx, ins):
        r = ins[0].rank
        k = ctx.rng.randint(1, max(1, min(3, ctx.limits.max_rank - r)))
        axes = ctx.axes(r + k, k, k)  # under the degenerate regime, every output axis for a scalar
        return {"axes": self.spell(ctx, axes, r + k)}

    def out_shape(self, shape, a):
        r_out = len(shape) + len(a["axes"])
        return insert_ones(shape, {ax % r_out for ax in a["axes"]})

    def backward_ranks(self, out):
        return tuple(r for r in (out.rank - 1, out.rank - 2) if r >= 0)

    def backward(self, ctx, out):
        ones = [i for i, d in enumerate(out.shape) if d == 1]
        if not ones:
            return None
        pos = sorted(ctx.rng.sample(ones, ctx.rng.randint(1, min(3, len(ones)))))
        shape = tuple(d for i, d in enumerate(out.shape) if i not in pos)
        return [out.with_shape(shape)], {"axes": self.spell(ctx, pos, out.rank)}

    def requires(self, ins, a):
        r_out = ins[0].rank + len(a["axes"])
        return [len({ax % r_out for ax in a["axes"]}) == len(a["axes"])]

    def onnx(self, b, a, xs, ys):
        axes_node(b, "Unsqueeze", xs, ys, a["axes"])

    def torch(self, a, x):
        r_out = x.dim() + len(a["axes"])
        for ax in sorted(ax % r_out for ax in a["axes"]):
            x = x.unsqueeze(ax)
        return x

    preserves_values = True
    exact_values = True


OPS = [Unsqueeze]
