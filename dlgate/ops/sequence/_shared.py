"""What the sequence operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.layout._shared import composition, set_dim


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


INSERT_DEFECT = ("onnx.reference's SequenceInsert takes the position modulo the length, so a position equal to "
                 "the length (the end) inserts at the front, and into an empty sequence divides by zero")


def int64_scalar() -> TensorType:
    return TensorType(dt.INT64, ())


class Sequence(OpSpec):
    """Common ground: every spec here is concrete-only (no z3) and states its gaps."""

    symbolic_ok = False
    #: What is deliberately not generated, and why.
    gaps: ClassVar[tuple] = ()
