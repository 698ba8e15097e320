"""Sequences and optionals, as the idioms exporters write around lists of tensors and
``None``-able tensors.

dlgate graphs carry tensors only, so every spec here is one multi-node idiom: it takes
graph tensors and returns graph tensors, and the sequence- or optional-typed values live
between its nodes (``onnx_ops`` lists every further operator type a lowering emits):

* ``SplitToSequenceConcat``: ``torch.cat(torch.split(x, s, d), c)``,
  ``torch.stack(x.unbind(d), c)``: SplitToSequence, then ConcatFromSequence.
* ``SplitToSequenceAt``: ``torch.split(x, s, d)[i]``: SequenceAt.
* ``SequenceEditConcat``: split x, erase one piece, insert the graph tensor y, concatenate
  back, and the list's length: SequenceErase, SequenceInsert.
* ``SequenceConstructAt``: ``[a, b, c][i]`` and ``len([a, b, c])``.
* ``SequenceAppendConcat``: ``l = []; l.append(a); l.insert(p, b); torch.cat(l, c)`` (or
  ``torch.stack``): SequenceEmpty (its ``dtype``), SequenceInsert.
* ``SequenceMapUnary`` / ``SequenceMapBinary``: a body graph (one element-wise operator,
  with a further non-sequence input for the binary one) applied to each piece of a split.
* ``OptionalCoalesce``: ``x if x is not None else d``, with an Optional that holds x or is
  empty (its ``type`` attribute): OptionalHasElement, then If with OptionalGetElement.
* ``OptionalGetElementTensor``: OptionalGetElement and OptionalHasElement on a plain tensor
  (opset 18).

Split sizes and positions are constants of the model, int64 or int32 as drawn (both are
allowed). The attributes record how a split is written (``mode``: ``sizes``, a 1-D input;
``scalar``, a 0-D chunk size; ``none``, no input: chunks of 1) and the pieces follow from
the input's shape, so a split by chunks stays valid when a dynamic dimension changes.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch
from onnx import helper

from dlgate import dtypes as dt
from dlgate.spec.base import OpSpec, TensorType
from dlgate.spec.layout import composition, set_dim, spell_axis

#: At most this many pieces from a split by chunks (a split of a 64-long axis by 1 would
#: make 64 nodes' worth of tensors).
MAX_PIECES = 16
INDEX_TYPES = ("int64", "int32")
ONE_SIG = tuple((t,) for t in dt.ALL)
TWO_SIG = tuple((t, t) for t in dt.ALL)


# -- shapes of splits and concatenations ------------------------------------------------

def chunks(d: int, c: int) -> list:
    """SplitToSequence's pieces for a scalar split ``c`` of a ``d``-long axis: chunks of
    ``c``, the last one smaller when ``c`` does not divide ``d``."""
    return [c] * (d // c) + ([d % c] if d % c else [])


def split_sizes(a: dict, d: int) -> list | None:
    """The piece lengths along the split axis, or None when ``a`` does not fit an axis of
    length ``d``."""
    if a["mode"] == "none":
        return [1] * d
    if a["mode"] == "scalar":
        return chunks(d, a["chunk"]) if a["chunk"] >= 1 else None
    sizes = list(a["split"])
    return sizes if sum(sizes) == d and all(s >= 1 for s in sizes) else None


def squeezes(a: dict) -> bool:
    """Whether the split drops its axis: no split input and ``keepdims`` 0."""
    return a["mode"] == "none" and a["keepdims"] == 0


def pieces(shape: tuple, a: dict) -> list | None:
    """The shapes of the split's pieces, or None when the split is invalid."""
    r = len(shape)
    if r == 0 or not -r <= a["axis"] < r:
        return None
    ax = a["axis"] % r
    sizes = split_sizes(a, shape[ax])
    if not sizes:
        return None
    if squeezes(a):
        return [tuple(shape[:ax]) + tuple(shape[ax + 1:])] * len(sizes)
    return [set_dim(shape, ax, s) for s in sizes]


def concat_shape(shapes: list, axis: int, new_axis: int) -> tuple | None:
    """ConcatFromSequence's output shape, or None when the tensors do not concatenate."""
    if not shapes:
        return None  # an empty sequence: undefined
    rp = len(shapes[0])
    if any(len(s) != rp for s in shapes):
        return None
    if new_axis:
        if not -rp - 1 <= axis <= rp or any(tuple(s) != tuple(shapes[0]) for s in shapes):
            return None
        c = axis % (rp + 1)
        return tuple(shapes[0][:c]) + (len(shapes),) + tuple(shapes[0][c:])
    if rp == 0 or not -rp <= axis < rp:
        return None
    c = axis % rp
    if any(s[j] != shapes[0][j] for s in shapes for j in range(rp) if j != c):
        return None
    return set_dim(shapes[0], c, sum(s[c] for s in shapes))


def draw_split(ctx, d: int, squeeze_ok: bool = True, none_ok: bool = True) -> dict:
    """How to split a ``d``-long axis: ``mode``, ``split`` (sizes), ``chunk``, ``keepdims``
    and the index dtype of the constant written."""
    u = ctx.rng.random()
    a = {"split": None, "chunk": None, "keepdims": 1, "idx": ctx.choice(INDEX_TYPES)}
    if none_ok and d <= MAX_PIECES and u < 0.3:
        a.update(mode="none", keepdims=0 if squeeze_ok and ctx.coin(0.6) else 1)
    elif u < 0.6:
        # a chunk as long as the axis (one piece) now and then: TVM 0.27 hangs on it
        lo, hi = -(-d // MAX_PIECES), (d if d == 1 or ctx.coin(0.1) else d - 1)
        a.update(mode="scalar", chunk=ctx.int(lo, hi))
    else:
        n = 1 if d == 1 or ctx.coin(0.1) else ctx.rng.randint(2, min(d, 6))
        a.update(mode="sizes", split=composition(ctx, d, n))
    return a


def equal_split(ctx, n: int, s: int) -> dict:
    """A split into ``n`` pieces of length ``s``, written any way that means it."""
    modes = ["sizes", "scalar"] + (["none"] if s == 1 and n <= MAX_PIECES else [])
    mode = ctx.choice(modes)
    return {"mode": mode, "split": [s] * n if mode == "sizes" else None, "chunk": s if mode == "scalar" else None,
            "keepdims": 1, "idx": ctx.choice(INDEX_TYPES)}


def spell_pos(ctx, k: int, n: int) -> int:
    """Position ``k`` of ``n``, sometimes counted from the back."""
    return k - n if ctx.coin(0.4) else k


def write_split(b, a: dict, x: str, axis: int) -> str:
    """A SplitToSequence node for ``a``; the sequence's name."""
    ins = [x]
    if a["mode"] == "sizes":
        ins.append(b.const(np.asarray(a["split"], dtype=a["idx"]).reshape(-1), hint="split"))
    elif a["mode"] == "scalar":
        ins.append(b.const(np.asarray(a["chunk"], dtype=a["idx"]), hint="split"))
    keep = a["keepdims"] if a["mode"] == "none" else 1  # ignored with a split input
    return b.node("SplitToSequence", ins, 1, axis=b.opt(axis, 0), keepdims=b.opt(keep, 1))[0]


def torch_split(a: dict, x) -> list:
    ax = a["axis"] % x.dim()
    out = list(torch.split(x, split_sizes(a, x.shape[ax]), dim=ax))
    return [p.squeeze(ax) for p in out] if squeezes(a) else out


def torch_concat(xs: list, axis: int, new_axis: int):
    return torch.stack(xs, dim=axis) if new_axis else torch.cat(xs, dim=axis)


def union(ranges: list) -> tuple:
    return (min(r[0] for r in ranges), max(r[1] for r in ranges))


INSERT_DEFECT = ("onnx.reference's SequenceInsert takes the position modulo the length, so a position equal to "
                 "the length (the end) inserts at the front, and into an empty sequence divides by zero")


def int64_scalar() -> TensorType:
    return TensorType(dt.INT64, ())


class Sequence(OpSpec):
    """Common ground: every spec here is concrete-only (no z3) and states its gaps."""

    symbolic_ok = False
    #: What is deliberately not generated, and why.
    gaps: ClassVar[tuple] = ()


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
    keeps_range = True
    preserves_values = True
    gaps = (("SplitToSequence with keepdims 0 and a split input",
             "the spec ignores keepdims then, but onnxruntime 1.32 squeezes the axis of a scalar split "
             "('Tensor size (4) != new size (1)' for chunks longer than 1)"),
            ("ConcatFromSequence of an empty sequence", "ONNX defines no output for it (no element type or shape to concatenate)"))

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

    def out_shape(self, shape, a):
        ps = pieces(shape, a)
        return None if ps is None else concat_shape(ps, a["cat_axis"], a["new_axis"])

    def requires(self, ins, a):
        return [self.out_shape(ins[0].shape, a) is not None]

    def infer(self, ins, a):
        return [ins[0].with_shape(self.out_shape(ins[0].shape, a))]

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

    def onnx(self, b, a, xs, ys):
        seq = write_split(b, a, xs[0], a["axis"])
        b.node("ConcatFromSequence", [seq], ys, axis=a["cat_axis"], new_axis=b.opt(a["new_axis"], 0))

    def torch(self, a, x):
        return torch_concat(torch_split(a, x), a["cat_axis"], a["new_axis"])


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
    keeps_range = True  # the piece's values are some of x's
    gaps = SplitToSequenceConcat.gaps[:1] + (("SequenceAt out of [-n, n-1]", "the spec makes a position outside the sequence an error"),)

    def sample(self, ctx, ins):
        x = ins[0]
        ax = ctx.rng.randrange(x.rank)
        a = draw_split(ctx, x.shape[ax])
        n = len(split_sizes(a, x.shape[ax]))
        a.update(axis=spell_axis(ctx, ax, x.rank), pos=spell_pos(ctx, ctx.rng.randrange(n), n),
                 pos_idx=ctx.choice(INDEX_TYPES))
        return a

    def requires(self, ins, a):
        ps = pieces(ins[0].shape, a)
        return [ps is not None and -len(ps) <= a["pos"] < len(ps)]

    def infer(self, ins, a):
        return [ins[0].with_shape(pieces(ins[0].shape, a)[a["pos"]])]

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

    def onnx(self, b, a, xs, ys):
        seq = write_split(b, a, xs[0], a["axis"])
        b.node("SequenceAt", [seq, b.const(np.asarray(a["pos"], dtype=a["pos_idx"]), hint="pos")], ys)

    def torch(self, a, x):
        return torch_split(a, x)[a["pos"]].clone()


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
    gaps = (("positions out of range", "the spec makes a position outside the sequence an error"),)

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

    def reference_defect(self, a, ins, opset):
        m = len(pieces(ins[0].shape, a)) - 1  # the length before the insertion
        return INSERT_DEFECT if a["insert"] == m else None

    def value_range(self, a, ranges, ins):
        n = len(self.edited(ins, a))
        return [union(ranges), (float(n), float(n))]

    def input_span(self, a, i, span, ins):
        return span

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


# -- sequences built from graph tensors -------------------------------------------------

class SequenceConstructAt(Sequence):
    """``[x0, x1, x2][i]`` (SequenceAt at a position in [-3, 2]) and ``len([x0, x1, x2])``
    (SequenceLength): the tensors share a dtype, their shapes may differ."""

    name = "SequenceConstructAt"
    onnx_op = "SequenceConstruct"
    onnx_ops = ("SequenceAt", "SequenceLength")
    arity = 3
    n_outputs = 2
    dtypes = tuple((t,) * 3 for t in dt.ALL)

    def sample(self, ctx, ins):
        return {"pos": spell_pos(ctx, ctx.rng.randrange(3), 3), "pos_idx": ctx.choice(INDEX_TYPES)}

    def input_type(self, ctx, i, ins, a, dtype):
        if ctx.coin(0.5):
            return TensorType(dtype, ins[0].shape)
        return TensorType(dtype, ctx.shape(ctx.rng.randint(0, 3), 256))

    def requires(self, ins, a):
        return [-3 <= a["pos"] < 3]

    def infer(self, ins, a):
        return [ins[a["pos"]], int64_scalar()]

    def value_range(self, a, ranges, ins):
        return [ranges[a["pos"]], (3.0, 3.0)]

    def input_span(self, a, i, span, ins):
        return span if i == a["pos"] % 3 else None

    def backward(self, ctx, out):
        k = ctx.rng.randrange(3)
        ins = [out if i == k or ctx.coin(0.5) else TensorType(out.dtype, ctx.shape(ctx.rng.randint(0, 3), 256))
               for i in range(3)]
        return ins, {"pos": spell_pos(ctx, k, 3), "pos_idx": ctx.choice(INDEX_TYPES)}

    def onnx(self, b, a, xs, ys):
        seq = b.node("SequenceConstruct", xs, 1)[0]
        b.node("SequenceAt", [seq, b.const(np.asarray(a["pos"], dtype=a["pos_idx"]), hint="pos")], ys[:1])
        b.node("SequenceLength", [seq], ys[1:])

    def torch(self, a, *xs):
        return xs[a["pos"]].clone(), torch.tensor(len(xs), dtype=torch.int64)


class SequenceAppendConcat(Sequence):
    """``l = []`` (SequenceEmpty, its ``dtype`` written, or left out for float32),
    ``l.append(x0)`` (SequenceInsert without a position), ``x1`` inserted at position
    ``pos`` (0, 1, -1, or none: the end; -1 counts from the back, so it goes first), then
    ConcatFromSequence: concatenated along an axis or stacked on a new one. (The empty
    sequence is never concatenated: undefined.)"""

    name = "SequenceAppendConcat"
    onnx_op = "SequenceInsert"
    onnx_ops = ("SequenceEmpty", "ConcatFromSequence")
    schema_inputs = (1,)  # the inserted tensor
    arity = 2
    dtypes = TWO_SIG
    keeps_range = True
    preserves_values = True
    gaps = (("ConcatFromSequence of the empty sequence", "ONNX defines no output for it (no element type or shape to concatenate)"),)

    @staticmethod
    def first_second(a) -> bool:
        """Whether x1 ends up before x0."""
        return a["pos"] in (0, -1)

    def sample(self, ctx, ins):
        x = ins[0]
        r = x.rank
        a = {"dtype": x.dtype, "write_dtype": x.dtype != dt.FLOAT32 or ctx.coin(0.5),
             "pos": ctx.choice([None, 0, 1, -1])}
        if r == 0 or (r + 1 <= ctx.limits.max_rank and ctx.coin(0.4)):
            c = ctx.rng.randint(0, r)
            a.update(cat_axis=c - r - 1 if ctx.coin(0.3) else c, new_axis=1)
        else:
            a.update(cat_axis=spell_axis(ctx, ctx.rng.randrange(r), r), new_axis=0)
        return a

    def input_type(self, ctx, i, ins, a, dtype):
        shape = ins[0].shape
        if a["new_axis"]:
            return TensorType(dtype, shape)
        ax = a["cat_axis"] % len(shape)
        room = ctx.limits.max_elems // max(1, int(np.prod(shape)) // shape[ax]) - shape[ax]
        return TensorType(dtype, set_dim(shape, ax, ctx.dim(max(1, min(16, room)))))

    def reference_defect(self, a, ins, opset):
        return INSERT_DEFECT if a["pos"] == 1 else None

    def order(self, a, xs: list) -> list:
        return xs[::-1] if self.first_second(a) else list(xs)

    def requires(self, ins, a):
        return [ins[0].dtype == a["dtype"],
                concat_shape(self.order(a, [x.shape for x in ins]), a["cat_axis"], a["new_axis"]) is not None]

    def infer(self, ins, a):
        return [ins[0].with_shape(concat_shape(self.order(a, [x.shape for x in ins]), a["cat_axis"], a["new_axis"]))]

    def backward(self, ctx, out):
        r = out.rank
        a = {"dtype": out.dtype, "write_dtype": out.dtype != dt.FLOAT32 or ctx.coin(0.5),
             "pos": ctx.choice([None, 0, 1, -1])}
        twos = [c for c in range(r) if out.shape[c] == 2]
        if twos and ctx.coin(0.5):
            c = ctx.choice(twos)
            p = out.with_shape(tuple(out.shape[:c]) + tuple(out.shape[c + 1:]))
            a.update(cat_axis=c - r if ctx.coin(0.3) else c, new_axis=1)
            return [p, p], a
        axes = [c for c in range(r) if out.shape[c] >= 2]
        if not axes:
            return None
        c = ctx.choice(axes)
        parts = composition(ctx, out.shape[c], 2)
        a.update(cat_axis=spell_axis(ctx, c, r), new_axis=0)
        ins = [out.with_shape(set_dim(out.shape, c, q)) for q in parts]
        return self.order(a, ins), a

    def onnx(self, b, a, xs, ys):
        code = helper.np_dtype_to_tensor_dtype(np.dtype(a["dtype"]))
        seq = b.node("SequenceEmpty", [], 1, dtype=code if a["write_dtype"] else None)[0]
        seq = b.node("SequenceInsert", [seq, xs[0]], 1)[0]
        pos = [] if a["pos"] is None else [b.const(np.asarray(a["pos"], dtype=np.int64), hint="pos")]
        seq = b.node("SequenceInsert", [seq, xs[1]] + pos, 1)[0]
        b.node("ConcatFromSequence", [seq], ys, axis=a["cat_axis"], new_axis=b.opt(a["new_axis"], 0))

    def torch(self, a, x0, x1):
        return torch_concat(self.order(a, [x0, x1]), a["cat_axis"], a["new_axis"])


# -- SequenceMap ---------------------------------------------------------------------------

#: Body operators by element type; the unary ones and the binary ones (with the further input).
#: (No float16 or int64 Relu: onnxruntime 1.32 has no kernel for them in a SequenceMap body,
#: where it answers NOT_IMPLEMENTED or, at opset 18, inlining Relu's function body into
#: the Loop, INVALID_GRAPH "Nodes in a graph must be topologically sorted".)
UNARY_BODY = {"float": ("Abs", "Neg", "Relu", "Identity"), "signed": ("Abs", "Neg", "Relu", "Identity"),
              "float16": ("Abs", "Neg", "Identity"), "int64": ("Abs", "Neg", "Identity"),
              "uint8": ("Abs", "Identity"), "bool": ("Not", "Identity")}
_ARITH = ("Add", "Sub", "Mul", "Max", "Min")
BINARY_BODY = {"float": _ARITH, "signed": _ARITH, "float16": _ARITH, "int64": _ARITH, "uint8": _ARITH,
               "bool": ("And", "Or", "Xor")}
TORCH_BODY = {"Abs": torch.abs, "Neg": torch.neg, "Relu": torch.relu, "Identity": torch.clone,
              "Not": torch.logical_not, "Add": torch.add, "Sub": torch.sub, "Mul": torch.mul,
              "Max": torch.maximum, "Min": torch.minimum, "And": torch.logical_and, "Or": torch.logical_or,
              "Xor": torch.logical_xor}


def kind(dtype: str) -> str:
    if dtype in (dt.BOOL, dt.UINT8, dt.INT64, dt.FLOAT16):
        return dtype
    return "float" if dt.is_float(dtype) else "signed"


class SequenceMapUnary(Sequence):
    """``x`` split (sizes, chunks, or an unbind), SequenceMap applying a body graph of one
    element-wise operator (Abs, Neg, Relu, Identity; Not for bool) to every piece, and the
    results put back together (concatenated, or stacked for an unbind) in ``x``'s shape.
    Not generated: sequence-typed further inputs and bodies with several outputs (one
    output and tensor inputs are what exporters write for a per-element map), float16 and
    int64 Relu bodies (onnxruntime 1.32 fails on them inside SequenceMap), ``keepdims`` 0
    with a split input."""

    name = "SequenceMapUnary"
    onnx_op = "SequenceMap"
    onnx_ops = ("SplitToSequence", "ConcatFromSequence")
    schema_inputs = (1,)  # the further inputs' formal parameter V holds tensors
    min_opset = 17
    dtypes = ONE_SIG
    ranks = (1, 2, 3, 4, 5)
    can_overflow = True  # Abs, Neg of the most negative signed integer; Add, Mul
    gaps = (("SequenceMap with sequence-typed further inputs or several outputs",
             "one body output and tensor further inputs cover what exporters write for per-element maps"),
            ("SplitToSequence with keepdims 0 and a split input",
             SplitToSequenceConcat.gaps[0][1]),
            ("a float16 or int64 Relu body", "onnxruntime 1.32 answers NOT_IMPLEMENTED or, at opset 18, INVALID_GRAPH "
             "('Nodes in a graph must be topologically sorted', inlining Relu's function body into SequenceMap's "
             "Loop)"))
    body_ops = UNARY_BODY

    def sample(self, ctx, ins):
        x = ins[0]
        ax = ctx.rng.randrange(x.rank)
        a = draw_split(ctx, x.shape[ax])
        a.update(axis=spell_axis(ctx, ax, x.rank), op=ctx.choice(self.body_ops[kind(x.dtype)]), dtype=x.dtype,
                 swap=ctx.coin(0.3))
        return a

    def requires(self, ins, a):
        return [pieces(ins[0].shape, a) is not None, ins[0].dtype == a["dtype"]]

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if out.rank == 0 or out.dtype not in [s[0] for s in self.dtypes]:
            return None
        a = self.sample(ctx, [out])
        ins = [out] + [self.input_type(ctx, i, [out], a, out.dtype) for i in range(1, self.arity)]
        return ins, a

    def body(self, b, a) -> "helper.GraphProto":
        """The body graph: one element-wise node on the element (and the further input);
        the pieces' shapes may differ, so the body's types leave shapes out."""
        code = helper.np_dtype_to_tensor_dtype(np.dtype(a["dtype"]))
        e, r = b.fresh("elem"), b.fresh("mapped")
        ins = [helper.make_tensor_value_info(e, code, None)]
        operands = [e]
        for _ in range(self.arity - 1):
            w = b.fresh("extra")
            ins.append(helper.make_tensor_value_info(w, code, None))
            operands = [w, e] if a["swap"] else [e, w]
        node = helper.make_node(a["op"], operands, [r], name=b.fresh("body"))
        return helper.make_graph([node], b.fresh("body"), ins, [helper.make_tensor_value_info(r, code, None)])

    def onnx(self, b, a, xs, ys):
        seq = write_split(b, a, xs[0], a["axis"])
        mapped = b.node("SequenceMap", [seq] + list(xs[1:]), 1, body=self.body(b, a))[0]
        b.node("ConcatFromSequence", [mapped], ys, axis=a["axis"], new_axis=b.opt(int(squeezes(a)), 0))

    def apply(self, a, p, extra):
        fn = TORCH_BODY[a["op"]]
        if not extra:
            return fn(p)
        return fn(extra[0], p) if a["swap"] else fn(p, extra[0])

    def torch(self, a, x, *extra):
        ps = [self.apply(a, p, extra) for p in torch_split(a, x)]
        return torch_concat(ps, a["axis"], int(squeezes(a)))


class SequenceMapBinary(SequenceMapUnary):
    """``SequenceMapUnary`` with a further tensor input ``y`` that the body combines with
    every piece (Add, Sub, Mul, Max, Min; And, Or, Xor for bool; the operands sometimes
    swapped): ``y`` broadcasts to each piece without growing it (a suffix of the piece's
    shape, some dims 1; 1 along the split axis where the pieces differ there)."""

    name = "SequenceMapBinary"
    arity = 2
    dtypes = TWO_SIG
    body_ops = BINARY_BODY

    def input_type(self, ctx, i, ins, a, dtype):
        x = ins[0]
        ps = pieces(x.shape, a)
        if ps is None:
            return TensorType(dtype, ())
        p = ps[0]
        ax = a["axis"] % x.rank
        varies = None if squeezes(a) or len(set(ps)) == 1 else ax
        k = ctx.rng.randint(0, len(p))
        return TensorType(dtype, tuple(1 if (j == varies or ctx.coin(0.3)) else p[j] for j in range(len(p) - k, len(p))))

    def requires(self, ins, a):
        ps = pieces(ins[0].shape, a)
        if ps is None or ins[0].dtype != a["dtype"] or ins[1].dtype != a["dtype"]:
            return [False]
        y = ins[1].shape
        return [len(y) <= len(p) and all(y[-j] in (1, p[-j]) for j in range(1, len(y) + 1)) for p in ps]


# -- optionals ----------------------------------------------------------------------------

class OptionalCoalesce(Sequence):
    """``x if x is not None else d``, the way exporters write a ``None``-able tensor: an
    Optional holding ``x`` (its ``type`` attribute sometimes written too) or ``empty``
    (``type`` attribute only, with or without a rank), OptionalHasElement, and an If whose
    then-branch is OptionalGetElement of the optional (an outer-scope value) and whose
    else-branch is ``d``. Outputs: the chosen tensor and the has-element flag. Not generated
    at opset 28 (Optional-28): onnxruntime 1.32 has no kernel for it, and reports float16
    as a type error rather than as not implemented."""

    name = "OptionalCoalesce"
    onnx_op = "Optional"
    onnx_ops = ("OptionalHasElement", "OptionalGetElement", "If")
    min_opset = 15
    max_opset = 27
    arity = 2
    n_outputs = 2
    dtypes = TWO_SIG
    gaps = (("OptionalGetElement of an empty optional where it runs", "undefined (only in the If branch not taken)"),
            ("opset 28 (Optional-28)", "onnxruntime 1.32 implements no Optional-28 kernel (NOT_IMPLEMENTED), and for "
             "float16 fails with 'Type Error: Type (optional(tensor(float16))) of output arg ... does not match "
             "expected type (optional(tensor(float)))'; the operator's meaning is unchanged from opset 15"),
            ("optionals of sequences", "dlgate graphs carry tensors; the optional tensor is what exporters write"))

    def sample(self, ctx, ins):
        empty = ctx.coin(0.5)
        return {"empty": empty, "typed": empty or ctx.coin(0.3), "dtype": ins[0].dtype,
                "rank": ins[0].rank if ctx.coin(0.5) else None}

    def requires(self, ins, a):
        return [ins[0].dtype == a["dtype"], tuple(ins[0].shape) == tuple(ins[1].shape),
                a["rank"] is None or ins[0].rank == a["rank"]]

    def infer(self, ins, a):
        return [ins[0], TensorType(dt.BOOL, ())]

    def value_range(self, a, ranges, ins):
        h = 0.0 if a["empty"] else 1.0
        return [ranges[1 if a["empty"] else 0], (h, h)]

    def input_span(self, a, i, span, ins):
        return span if i == (1 if a["empty"] else 0) else None

    def backward(self, ctx, out):
        return [out, out], self.sample(ctx, [out])

    def reference_defect(self, a, ins, opset):
        return ("onnx.reference's Optional wraps its input in a list that OptionalGetElement returns as it is "
                "(a list, not the tensor), an empty Optional ([None]) has an element for its OptionalHasElement, "
                "and a 'type' attribute raises KeyError (OnnxType)")

    def onnx(self, b, a, xs, ys):
        code = helper.np_dtype_to_tensor_dtype(np.dtype(a["dtype"]))
        tp = None
        if a["typed"]:
            # the element type, and its rank when ``rank`` is given (dims left unknown: they
            # may change with a dynamic input)
            tp = helper.make_tensor_type_proto(code, None if a["rank"] is None else [None] * a["rank"])
        opt = b.node("Optional", [] if a["empty"] else [xs[0]], 1, type=tp)[0]
        b.node("OptionalHasElement", [opt], ys[1:])
        got, kept = b.fresh("got"), b.fresh("default")
        then = helper.make_graph([helper.make_node("OptionalGetElement", [opt], [got], name=b.fresh("then"))],
                                 b.fresh("then"), [], [helper.make_tensor_value_info(got, code, None)])
        other = helper.make_graph([helper.make_node("Identity", [xs[1]], [kept], name=b.fresh("else"))],
                                  b.fresh("else"), [], [helper.make_tensor_value_info(kept, code, None)])
        b.node("If", ys[1:], ys[:1], then_branch=then, else_branch=other)

    def torch(self, a, x, d):
        return (d if a["empty"] else x).clone(), torch.tensor(not a["empty"])


class OptionalGetElementTensor(Sequence):
    """OptionalGetElement and OptionalHasElement on a plain tensor (allowed from opset 18):
    the tensor itself, and true."""

    name = "OptionalGetElementTensor"
    onnx_op = "OptionalGetElement"
    onnx_ops = ("OptionalHasElement",)
    min_opset = 18
    n_outputs = 2
    dtypes = ONE_SIG

    def infer(self, ins, a):
        return [ins[0], TensorType(dt.BOOL, ())]

    def value_range(self, a, ranges, ins):
        return [ranges[0], (1.0, 1.0)]

    def input_span(self, a, i, span, ins):
        return span

    def backward(self, ctx, out):
        return [out], {}

    def onnx(self, b, a, xs, ys):
        b.node("OptionalGetElement", xs, ys[:1])
        b.node("OptionalHasElement", xs, ys[1:])

    def torch(self, a, x):
        return x.clone(), torch.tensor(True)


OPS = [SplitToSequenceConcat, SplitToSequenceAt, SequenceEditConcat, SequenceConstructAt, SequenceAppendConcat,
       SequenceMapUnary, SequenceMapBinary, OptionalCoalesce, OptionalGetElementTensor]
