from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import TensorType
from dlgate.ops.layout._shared import Layout, composition, set_dim, spell_axis


# -- Concat / Split -------------------------------------------------------------------

class Concat(Layout):
    """Two inputs (``Concat1``: one, degenerate-only; ``Concat3``: three, ``Concat4``: four, ``Concat5``: five) that differ only
    along ``axis``."""
    onnx_op = "Concat"
    arity = 2
    dtypes = tuple((t,) * 2 for t in dt.ALL)

    def sample(self, ctx, ins):
        return {"axis": ctx.axis(ins[0].rank)}

    def input_type(self, ctx, i, ins, a, dtype):
        shape = ins[0].shape
        ax = a["axis"] % len(shape)
        if ctx.symbolic:
            return TensorType(dtype, set_dim(shape, ax, ctx.dim(16)))
        used = sum(x.shape[ax] for x in ins if x.rank == len(shape))
        room = (ctx.limits.max_elems // (sym.prod(shape) // shape[ax]) - used) // (self.arity - i)
        return TensorType(dtype, set_dim(shape, ax, ctx.dim(max(1, min(16, room)))))

    def backward(self, ctx, out):
        axes = [j for j, d in enumerate(out.shape) if d >= self.arity]
        if not axes:
            return None
        ax = ctx.choice(axes)
        parts = composition(ctx, out.shape[ax], self.arity)
        return [out.with_shape(set_dim(out.shape, ax, p)) for p in parts], {"axis": spell_axis(ctx, ax, out.rank)}

    def requires(self, ins, a):
        r = ins[0].rank
        if any(x.rank != r for x in ins):
            return [False]
        ax = a["axis"] % r
        return [x.shape[j] == ins[0].shape[j] for x in ins[1:] for j in range(r) if j != ax]

    def infer(self, ins, a):
        ax = a["axis"] % ins[0].rank
        return [ins[0].with_shape(set_dim(ins[0].shape, ax, sym.sum_(x.shape[ax] for x in ins)))]

    def onnx(self, b, a, xs, ys):
        b.node("Concat", xs, ys, axis=a["axis"])

    def torch(self, a, *xs):
        return torch.cat(xs, dim=a["axis"])

    preserves_values = True


class Concat1(Concat):
    """Concat of a single input: the identity, which kernels and converters special-case (a
    copy, or no node at all). Drawn only in the degenerate regime."""
    name = "Concat1"
    arity = 1
    dtypes = tuple((t,) for t in dt.ALL)
    degenerate_only = True

    def backward(self, ctx, out):
        if out.rank == 0:
            return None
        return [out], {"axis": spell_axis(ctx, ctx.rng.randrange(out.rank), out.rank)}


class Concat3(Concat):
    name = "Concat3"
    arity = 3
    dtypes = tuple((t,) * 3 for t in dt.ALL)


class Concat4(Concat):
    name = "Concat4"
    arity = 4
    dtypes = tuple((t,) * 4 for t in dt.ALL)


class Concat5(Concat):
    name = "Concat5"
    arity = 5
    dtypes = tuple((t,) * 5 for t in dt.ALL)


OPS = [Concat, Concat1, Concat3, Concat4, Concat5]
