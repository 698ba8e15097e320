from __future__ import annotations

import numpy as np

from dlgate.ops.layout._shared import set_dim, spell_axis
from dlgate.ops.sequence._shared import (INDEX_TYPES, ONE_SIG, Sequence, draw_split, equal_split, pieces, spell_pos,
                                         split_sizes, torch_split, write_split)
from dlgate.ops.sequence.split_to_sequence_concat import SplitToSequenceConcat


class SplitToSequenceAt(Sequence):
    """One piece of a split (SequenceAt, its position positive or counted from the back):
    ``torch.split(x, s)[i]``, ``x.unbind(d)[i]``. (The length of a split sequence is
    ``SequenceEditConcat``'s second output.) Not generated: ``keepdims`` 0 with a split
    input (as for ``SplitToSequenceConcat``), positions out of range (invalid)."""

    name = "SplitToSequenceAt"
    onnx_op = "SplitToSequence"
    onnx_ops = ("SequenceAt",)
    schema_inputs = (0,)
    dtypes = ONE_SIG
    ranks = (1, 2, 3, 4, 5)

    def sample(self, ctx, ins):
        x = ins[0]
        ax = ctx.rng.randrange(x.rank)
        a = draw_split(ctx, x.shape[ax])
        n = len(split_sizes(a, x.shape[ax]))
        a.update(axis=spell_axis(ctx, ax, x.rank), pos=spell_pos(ctx, ctx.rng.randrange(n), n),
                 pos_idx=ctx.choice(INDEX_TYPES))
        return a

    def backward(self, ctx, out):
        r = out.rank
        if r + 1 <= ctx.limits.max_rank and ctx.coin(0.4):  # one tensor of an unbind
            n, ax = ctx.rng.randint(1, 8), ctx.rng.randint(0, r)
            a = {"mode": "none", "split": None, "chunk": None, "keepdims": 0, "idx": ctx.choice(INDEX_TYPES),
                 "axis": spell_axis(ctx, ax, r + 1), "pos": spell_pos(ctx, ctx.rng.randrange(n), n),
                 "pos_idx": ctx.choice(INDEX_TYPES)}
            return [out.with_shape(tuple(out.shape[:ax]) + (n,) + tuple(out.shape[ax:]))], a
        if r == 0:
            return None
        ax = ctx.rng.randrange(r)
        s, n = out.shape[ax], ctx.rng.randint(1, 5)
        k = ctx.rng.randrange(n)
        u = ctx.rng.random()
        if u < 0.3:
            a = equal_split(ctx, n, s)
            d = n * s
        elif u < 0.5 and n > 1:  # the short last chunk of a scalar split
            c, k = s + ctx.int(1, 8), n - 1
            a = {"mode": "scalar", "split": None, "chunk": c, "keepdims": 1, "idx": ctx.choice(INDEX_TYPES)}
            d = (n - 1) * c + s
        else:
            sizes = [s if i == k else ctx.dim(8) for i in range(n)]
            a = {"mode": "sizes", "split": sizes, "chunk": None, "keepdims": 1, "idx": ctx.choice(INDEX_TYPES)}
            d = sum(sizes)
        a.update(axis=spell_axis(ctx, ax, r), pos=spell_pos(ctx, k, n), pos_idx=ctx.choice(INDEX_TYPES))
        return [out.with_shape(set_dim(out.shape, ax, d))], a

    def requires(self, ins, a):
        ps = pieces(ins[0].shape, a)
        return [ps is not None and -len(ps) <= a["pos"] < len(ps)]

    def infer(self, ins, a):
        return [ins[0].with_shape(pieces(ins[0].shape, a)[a["pos"]])]

    def onnx(self, b, a, xs, ys):
        seq = write_split(b, a, xs[0], a["axis"])
        b.node("SequenceAt", [seq, b.const(np.asarray(a["pos"], dtype=a["pos_idx"]), hint="pos")], ys)

    def torch(self, a, x):
        return torch_split(a, x)[a["pos"]].clone()

    keeps_range = True  # the piece's values are some of x's
    gaps = SplitToSequenceConcat.gaps[:1] + (("SequenceAt out of [-n, n-1]", "the spec makes a position outside the sequence an error"),)


OPS = [SplitToSequenceAt]
