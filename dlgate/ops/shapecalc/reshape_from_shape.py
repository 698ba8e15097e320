from __future__ import annotations

from typing import ClassVar

from dlgate.ops import sym
from dlgate.ops.base import TensorType
from dlgate.ops.layout._shared import factor
from dlgate.ops.shapecalc._shared import (FromShape, _pieces_for, _pieces_ok, _resolve, _scalar_pieces, _shape_tensor,
                                          _slice_piece, _spell)


class ReshapeFromShape(FromShape):
    """``Reshape(x, Concat(pieces))``: a target shape assembled from y's dims and constants,
    one entry sometimes -1 (inferred), and 0 (x's dim at that position) only where it
    copies x's dim. Regimes: ``reshape_as`` (``Shape(y)`` whole), keeping a prefix of x's
    own dims (y x-shaped, so ``x`` itself is often reused as ``y``: ``x.view(x.size(0),
    -1)``), dims taken from an unrelated ``y``, and a rank-0 ``y`` whose empty shape is
    sliced and concatenated before constants (Shape of a scalar: the importer must keep
    the empty shape static). Some piece always reads y. Not
    generated: y of another dtype than x (``schema.allowed`` binds y to Reshape's data
    type through ``schema_inputs``), ``allowzero=1`` (it matters only for zero-sized
    shapes, which are not generated)."""

    name = "ReshapeFromShape"
    onnx_op = "Reshape"

    @staticmethod
    def _minus_one(ctx, pieces: list) -> list:
        """Sometimes one entry (a constant or a gathered dim, y still read) is written -1."""
        readers = [i for i, p in enumerate(pieces) if _reads_y(p)]
        idx = [i for i, p in enumerate(pieces) if ("const" in p and p["const"] != 0)
               or ("dim" in p and len(readers) > 1)]
        if idx and ctx.coin(0.4):
            pieces = list(pieces)
            pieces[ctx.choice(idx)] = {"const": -1}
        return pieces

    def _attrs(self, ctx, x_shape, target) -> dict:
        u, r = ctx.rng.random(), len(x_shape)
        if u < 0.2:
            return {"pieces": [{"all": 1}], "y_shape": list(target)}
        if u < 0.28:
            a = _scalar_pieces(ctx, list(target))
            return dict(a, pieces=self._minus_one(ctx, a["pieces"]))
        keep = 0  # how many leading dims target shares with x
        while keep < min(r, len(target)) and target[keep] == x_shape[keep]:
            keep += 1
        if u < 0.6 and keep:
            # y = x-shaped: its leading dims gathered (or sliced, or written 0), the rest constant
            k = ctx.rng.randint(1, keep)
            if ctx.coin(0.35):
                pieces = [_slice_piece(ctx, 0, k, r)]
            else:
                pieces = [{"dim": _spell(ctx, i, r)} if i == 0 or ctx.coin(0.8) else {"const": 0} for i in range(k)]
            pieces += [{"const": v} for v in target[k:]]
            return {"pieces": self._minus_one(ctx, pieces), "y_shape": list(x_shape)}
        pieces, y_shape = _pieces_for(ctx, list(target))
        return {"pieces": self._minus_one(ctx, pieces), "y_shape": list(y_shape)}

    @staticmethod
    def _target(ctx, x_shape) -> tuple:
        """A shape of x's element count, often keeping a prefix of x's dims."""
        r, top = len(x_shape), ctx.limits.max_rank
        for _ in range(3):
            if r and ctx.coin(0.5):
                k = ctx.rng.randint(1, r)
                rest = sym.prod(x_shape[k:])
                m = ctx.rng.randint(0 if rest == 1 else 1, max(1, top - k))
                tail = factor(ctx, rest, m)
                if tail is not None and k + len(tail) <= top:
                    return tuple(x_shape[:k]) + tail
            shape = factor(ctx, sym.prod(x_shape), ctx.rng.randint(1, top))
            if shape is not None:
                return shape
        return (sym.prod(x_shape),)

    def sample(self, ctx, ins):
        x = ins[0]
        return self._attrs(ctx, x.shape, self._target(ctx, x.shape))

    def backward(self, ctx, out):
        if out.rank == 0 or not self.sigs(out.dtype):
            return None
        x_shape = None
        for _ in range(3):
            x_shape = factor(ctx, out.numel, ctx.rng.randint(1, ctx.limits.max_rank))
            if x_shape is not None:
                break
        x_shape = x_shape or (out.numel,)
        if ctx.coin(0.4):  # keep a prefix of the output's dims
            k = ctx.rng.randint(1, out.rank)
            tail = factor(ctx, sym.prod(out.shape[k:]), ctx.rng.randint(0, ctx.limits.max_rank - k))
            if tail is not None:
                x_shape = tuple(out.shape[:k]) + tail
        a = self._attrs(ctx, x_shape, out.shape)
        return [out.with_shape(x_shape), TensorType(out.dtype, tuple(a["y_shape"]))], a

    @staticmethod
    def _dims(x_shape, y_shape, pieces) -> list:
        """The target as written, 0 replaced by x's dim (-1 kept)."""
        dims = _resolve(pieces, y_shape)
        return [x_shape[i] if (isinstance(d, int) and d == 0 and i < len(x_shape)) else d for i, d in enumerate(dims)]

    @staticmethod
    def _free(dims) -> list:
        return [i for i, d in enumerate(dims) if isinstance(d, int) and d == -1]

    def requires(self, ins, a):
        x, y = ins
        ok = _pieces_ok(a["pieces"], y.rank)
        if not all(c is True for c in ok):
            return [False]
        raw = _resolve(a["pieces"], y.shape)
        if any(isinstance(d, int) and d == 0 and i >= x.rank for i, d in enumerate(raw)):
            return [False]  # 0 copies x's dim at that position
        dims = self._dims(x.shape, y.shape, a["pieces"])
        free = self._free(dims)
        if len(free) > 1 or any(isinstance(d, int) and d < -1 for d in dims) or len(dims) > 5:
            return [False]
        n = sym.prod(x.shape)
        if free:
            known = sym.prod(d for i, d in enumerate(dims) if i != free[0])
            return [sym.mod(n, known) == 0]
        return [sym.prod(dims) == n]

    def infer(self, ins, a):
        x, y = ins
        dims = self._dims(x.shape, y.shape, a["pieces"])
        for k in self._free(dims):
            dims[k] = sym.div(sym.prod(x.shape), sym.prod(d for i, d in enumerate(dims) if i != k))
        return [x.with_shape(dims)]

    def onnx(self, b, a, xs, ys):
        shape = _shape_tensor(b, xs[1], a["pieces"])
        b.node("Reshape", [xs[0], shape], ys, allowzero=b.opt(0, 0) if b.opset >= 14 else None)

    def torch(self, a, x, y):
        dims = self._dims(tuple(x.shape), tuple(y.shape), a["pieces"])
        return x.reshape(dims)

    preserves_values = True
    keeps_range = True
    gaps: ClassVar[tuple] = (
        ("y of another dtype than x", "schema.allowed binds y to Reshape's data type (see schema_inputs)"),
        ("allowzero=1 and zero-sized shapes", "zero-sized tensors are not generated"),
    )


def _reads_y(p: dict) -> bool:
    return "const" not in p


OPS = [ReshapeFromShape]
