from __future__ import annotations

import numpy as np
import torch

from dlgate.ops.base import TensorType
from dlgate.ops.layout._shared import composition, set_dim, spell_axis
from dlgate.ops.sequence._shared import (INDEX_TYPES, INSERT_DEFECT, TWO_SIG, Sequence, concat_shape, draw_split,
                                         int64_scalar, pieces, spell_pos, split_sizes, torch_split, write_split)


class SequenceEditConcat(Sequence):
    """``x`` split along an axis (sizes, chunks, or chunks of 1 with the axis kept), one
    piece erased (SequenceErase at a position, or by default the last), the graph tensor
    ``y`` inserted (SequenceInsert at a position in [-m, m], or by default at the end), the
    sequence concatenated back along the axis, and its length (an int64 scalar). Positions
    out of range are invalid and not generated."""

    name = "SequenceEditConcat"
    onnx_op = "SplitToSequence"
    onnx_ops = ("SequenceErase", "SequenceInsert", "ConcatFromSequence", "SequenceLength")
    schema_inputs = (0,)
    arity = 2
    n_outputs = 2
    dtypes = TWO_SIG
    ranks = (1, 2, 3, 4, 5)

    @staticmethod
    def positions(ctx, n: int) -> dict:
        erase = None if ctx.coin(0.3) else spell_pos(ctx, ctx.rng.randrange(n), n)
        m = n - 1  # the length after the erase; an insertion may go anywhere in [-m, m]
        insert = None if ctx.coin(0.3) else ctx.rng.randint(-m, m)
        return {"erase": erase, "insert": insert, "pos_idx": ctx.choice(INDEX_TYPES)}

    def sample(self, ctx, ins):
        x = ins[0]
        ax = ctx.rng.randrange(x.rank)
        a = draw_split(ctx, x.shape[ax], squeeze_ok=False)
        a["axis"] = spell_axis(ctx, ax, x.rank)
        a.update(self.positions(ctx, len(split_sizes(a, x.shape[ax]))))
        return a

    def input_type(self, ctx, i, ins, a, dtype):
        shape = ins[0].shape
        ax = a["axis"] % len(shape)
        room = ctx.limits.max_elems // max(1, int(np.prod(shape)) // shape[ax])
        return TensorType(dtype, set_dim(shape, ax, ctx.dim(max(1, min(16, room)))))

    def backward(self, ctx, out):
        if out.rank == 0:
            return None
        ax = ctx.rng.randrange(out.rank)
        dd = out.shape[ax]
        m = ctx.int(1, dd)  # y's length; the pieces kept from x fill the rest
        kept = [] if dd == m else composition(ctx, dd - m, ctx.rng.randint(1, min(dd - m, 4)))
        gone = ctx.dim(8)
        n = len(kept) + 1
        e = ctx.rng.randint(0, len(kept))  # the erased piece's position among x's
        sizes = kept[:e] + [gone] + kept[e:]
        erase = spell_pos(ctx, e, n) if (e != n - 1 or ctx.coin(0.5)) else None
        p = ctx.rng.randint(0, len(kept))  # where y goes among the kept pieces
        m_len = len(kept)
        insert = None if p == m_len and ctx.coin(0.5) else (p - m_len - 1 if p < m_len and ctx.coin(0.4) else p)
        if insert is not None and insert < 0 and insert + m_len < 0:
            insert = p
        a = {"mode": "sizes", "split": sizes, "chunk": None, "keepdims": 1, "idx": ctx.choice(INDEX_TYPES),
             "axis": spell_axis(ctx, ax, out.rank), "erase": erase, "insert": insert,
             "pos_idx": ctx.choice(INDEX_TYPES)}
        x = out.with_shape(set_dim(out.shape, ax, sum(sizes)))
        return [x, out.with_shape(set_dim(out.shape, ax, m))], a

    def edited(self, ins, a) -> list | None:
        """The shapes of the edited sequence, or None when the instance is invalid."""
        x, y = ins
        ps = pieces(x.shape, a)
        if ps is None or y.rank != x.rank:
            return None
        n = len(ps)
        e = -1 if a["erase"] is None else a["erase"]
        if not -n <= e < n:
            return None
        del ps[e]
        p = len(ps) if a["insert"] is None else a["insert"]
        if not -len(ps) <= p <= len(ps):
            return None
        ps.insert(p, y.shape)
        return ps

    def requires(self, ins, a):
        ps = self.edited(ins, a)
        return [ps is not None and concat_shape(ps, a["axis"], 0) is not None]

    def infer(self, ins, a):
        ps = self.edited(ins, a)
        return [ins[0].with_shape(concat_shape(ps, a["axis"], 0)), int64_scalar()]

    def onnx(self, b, a, xs, ys):
        seq = write_split(b, a, xs[0], a["axis"])
        pos = a["pos_idx"]
        erase = [] if a["erase"] is None else [b.const(np.asarray(a["erase"], dtype=pos), hint="pos")]
        seq = b.node("SequenceErase", [seq] + erase, 1)[0]
        insert = [] if a["insert"] is None else [b.const(np.asarray(a["insert"], dtype=pos), hint="pos")]
        seq = b.node("SequenceInsert", [seq, xs[1]] + insert, 1)[0]
        b.node("ConcatFromSequence", [seq], ys[:1], axis=a["axis"], new_axis=b.opt(0, 0))
        b.node("SequenceLength", [seq], ys[1:])

    def torch(self, a, x, y):
        ps = torch_split(a, x)
        del ps[-1 if a["erase"] is None else a["erase"]]
        # ONNX counts a negative position from the back (p + n), as list.insert does
        ps.insert(len(ps) if a["insert"] is None else a["insert"], y)
        return torch.cat(ps, dim=a["axis"]), torch.tensor(len(ps), dtype=torch.int64)

    gaps = (("positions out of range", "the spec makes a position outside the sequence an error"),)

    def reference_defect(self, a, ins, opset):
        m = len(pieces(ins[0].shape, a)) - 1  # the length before the insertion
        return INSERT_DEFECT if a["insert"] == m else None

    def value_range(self, a, ranges, ins):
        n = len(self.edited(ins, a))
        return [union(ranges), (float(n), float(n))]

    def input_span(self, a, i, span, ins):
        return span


def union(ranges: list) -> tuple:
    return (min(r[0] for r in ranges), max(r[1] for r in ranges))


OPS = [SequenceEditConcat]
