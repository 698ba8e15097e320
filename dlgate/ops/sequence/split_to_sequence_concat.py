from __future__ import annotations

from dlgate.ops.layout._shared import set_dim, spell_axis
from dlgate.ops.sequence._shared import (MAX_PIECES, ONE_SIG, Sequence, concat_shape, draw_split, equal_split, pieces,
                                         torch_concat, torch_split, write_split)


# -- split, then concatenate or pick ----------------------------------------------------

class SplitToSequenceConcat(Sequence):
    """``x`` split into a sequence (sizes, a scalar chunk size, or no split input: chunks
    of 1, ``keepdims`` 0 or 1), concatenated back by ConcatFromSequence: along any axis
    where the pieces agree (``new_axis`` 0), or stacked on a new axis (``new_axis`` 1, its
    axis in [-r-1, r]); axes sometimes negative. Stacking the pieces of an unbind at
    another axis moves that axis, as exporters' ``torch.stack(x.unbind(d), c)`` does. Not
    generated: ``keepdims`` 0 with a split input (ignored by the spec, but onnxruntime
    squeezes a scalar split's axis), and concatenations of an empty sequence (undefined)."""

    name = "SplitToSequenceConcat"
    onnx_op = "SplitToSequence"
    onnx_ops = ("ConcatFromSequence",)
    schema_inputs = (0,)  # the input tensor (the split is a constant of the model)
    dtypes = ONE_SIG
    ranks = (1, 2, 3, 4, 5)

    def concat_choice(self, ctx, ps: list, ax: int, a: dict) -> bool:
        rp, n = len(ps[0]), len(ps)
        equal = all(p == ps[0] for p in ps)
        stack_ok = equal and rp + 1 <= ctx.limits.max_rank
        if stack_ok and (rp == 0 or ctx.coin(0.5)):
            c = ctx.rng.randint(0, rp)
            a.update(cat_axis=c - rp - 1 if ctx.coin(0.3) else c, new_axis=1)
            return True
        if rp == 0:
            return False
        c = ctx.rng.randrange(rp) if equal and n > 1 else ax
        a.update(cat_axis=spell_axis(ctx, c, rp), new_axis=0)
        return True

    def sample(self, ctx, ins):
        x = ins[0]
        ax = ctx.rng.randrange(x.rank)
        a = draw_split(ctx, x.shape[ax])
        a["axis"] = spell_axis(ctx, ax, x.rank)
        ps = pieces(x.shape, a)
        if not self.concat_choice(ctx, ps, ax, a):
            a.update(cat_axis=0, new_axis=0)  # a rank-0 concatenation: fails ``requires``
        return a

    def backward(self, ctx, out):
        r, lim = out.rank, ctx.limits
        if r == 0:
            return None
        u = ctx.rng.random()
        stackable = [c for c in range(r) if 1 <= out.shape[c] <= MAX_PIECES]
        if u < 0.4 or not stackable:  # split and concatenate along the same axis: the same shape
            ax = ctx.rng.randrange(r)
            a = draw_split(ctx, out.shape[ax], squeeze_ok=False)
            a.update(axis=spell_axis(ctx, ax, r), cat_axis=spell_axis(ctx, ax, r), new_axis=0)
            return [out], a
        c = ctx.choice(stackable)
        n, p = out.shape[c], tuple(out.shape[:c]) + tuple(out.shape[c + 1:])
        rp = len(p)
        if u < 0.75 or rp == 0:  # unbind along ax, stack along c
            ax = ctx.rng.randint(0, rp)
            a = {"mode": "none", "split": None, "chunk": None, "keepdims": 0, "idx": "int64",
                 "axis": spell_axis(ctx, ax, rp + 1), "cat_axis": c - rp - 1 if ctx.coin(0.3) else c, "new_axis": 1}
            return [out.with_shape(p[:ax] + (n,) + p[ax:])], a
        ax = ctx.rng.randrange(rp)  # equal pieces (their axis kept), stacked along c
        s = p[ax]
        if n * s > 4 * lim.max_dim:
            return None
        a = equal_split(ctx, n, s)
        a.update(axis=spell_axis(ctx, ax, rp), cat_axis=c - rp - 1 if ctx.coin(0.3) else c, new_axis=1)
        return [out.with_shape(set_dim(p, ax, n * s))], a

    def out_shape(self, shape, a):
        ps = pieces(shape, a)
        return None if ps is None else concat_shape(ps, a["cat_axis"], a["new_axis"])

    def requires(self, ins, a):
        return [self.out_shape(ins[0].shape, a) is not None]

    def infer(self, ins, a):
        return [ins[0].with_shape(self.out_shape(ins[0].shape, a))]

    def onnx(self, b, a, xs, ys):
        seq = write_split(b, a, xs[0], a["axis"])
        b.node("ConcatFromSequence", [seq], ys, axis=a["cat_axis"], new_axis=b.opt(a["new_axis"], 0))

    def torch(self, a, x):
        return torch_concat(torch_split(a, x), a["cat_axis"], a["new_axis"])

    keeps_range = True
    preserves_values = True
    gaps = (("SplitToSequence with keepdims 0 and a split input",
             "the spec ignores keepdims then, but onnxruntime 1.32 squeezes the axis of a scalar split "
             "('Tensor size (4) != new size (1)' for chunks longer than 1)"),
            ("ConcatFromSequence of an empty sequence", "ONNX defines no output for it (no element type or shape to concatenate)"))


OPS = [SplitToSequenceConcat]
