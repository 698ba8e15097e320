"""What the layout operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import IEEE, Ctx, OpSpec


def _concrete(shape) -> bool:
    return not any(sym.is_sym(d) for d in shape)


def factor(ctx: Ctx, n: int, rank: int, tries: int = 4) -> tuple | None:
    """A random shape of ``rank`` dims with product ``n``, dims within the limits if possible."""
    if rank == 0:
        return () if n == 1 else None
    hi, best = ctx.limits.max_dim, None
    for _ in range(tries):
        dims, rem = [], n
        for _ in range(rank - 1):
            dims.append(ctx.divisor(rem, hi))
            rem //= dims[-1]
        dims.append(rem)
        ctx.rng.shuffle(dims)
        if max(dims) <= hi:
            return tuple(dims)
        best = best or tuple(dims)
    return best if max(best) <= 4 * hi else None


def composition(ctx: Ctx, d: int, n: int) -> list:
    """``d`` as a sum of ``n`` positive parts (requires d >= n)."""
    cuts = sorted(ctx.rng.sample(range(1, d), n - 1))
    return [q - p for p, q in zip([0] + cuts, cuts + [d])]


def spell_axis(ctx: Ctx, ax: int, rank: int) -> int:
    return ax - rank if ctx.coin(0.3) else ax


def set_dim(shape, ax: int, d) -> tuple:
    return tuple(shape[:ax]) + (d,) + tuple(shape[ax + 1:])


def insert_ones(shape, axes) -> tuple:
    """``shape`` with 1-dims inserted so that they sit at output positions ``axes``."""
    it = iter(shape)
    return tuple(1 if i in axes else next(it) for i in range(len(shape) + len(axes)))


def axes_node(b, op: str, xs, ys, axes) -> None:
    """Squeeze/Unsqueeze axes: an attribute before opset 13, a constant input from 13."""
    if b.opset < 13:
        b.node(op, xs, ys, axes=axes)
    else:
        b.node(op, [xs[0], b.ints(axes)], ys)


class Layout(OpSpec):
    """One input of any dtype; subclasses give ``out_shape`` (or override ``infer``)."""

    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)

    def infer(self, ins, a):
        return [ins[0].with_shape(self.out_shape(ins[0].shape, a))]

    keeps_range = True  # values are only moved, copied or selected
    nonfinite = IEEE


# -- DepthToSpace / SpaceToDepth ------------------------------------------------------

class BlockOp(Layout):
    """Rank 4 NCHW with a ``blocksize`` in 1..4 (mostly > 1)."""
    ranks = (4,)
    to_space: bool = True  # DepthToSpace: C -> C/b^2, H, W -> H*b, W*b

    def attrs(self, ctx, bs):
        return {"blocksize": bs}

    @staticmethod
    def deep(s, bs):
        return s[1] % (bs * bs) == 0

    @staticmethod
    def wide(s, bs):
        return s[2] % bs == 0 and s[3] % bs == 0

    def pick(self, ctx, ok):
        ok = [bs for bs in (2, 3, 4) if ok(bs)]
        return self.attrs(ctx, ctx.choice(ok) if ok and ctx.coin(0.9) else 1)

    def sample(self, ctx, ins):
        s = ins[0].shape
        if not _concrete(s):
            return self.attrs(ctx, ctx.choice((1, 2, 2, 3, 4)))
        return self.pick(ctx, lambda bs: (self.deep if self.to_space else self.wide)(s, bs))

    def backward(self, ctx, out):
        s = out.shape
        if out.rank != 4:
            return None
        a = self.pick(ctx, lambda bs: (self.wide if self.to_space else self.deep)(s, bs))
        return [out.with_shape(self.shape(s, a["blocksize"], not self.to_space))], a

    @staticmethod
    def shape(s, bs, to_space):
        if to_space:
            return (s[0], sym.div(s[1], bs * bs), s[2] * bs, s[3] * bs)
        return (s[0], s[1] * bs * bs, sym.div(s[2], bs), sym.div(s[3], bs))

    def requires(self, ins, a):
        s, bs = ins[0].shape, a["blocksize"]
        if self.to_space:
            return [sym.mod(s[1], bs * bs) == 0]
        return [sym.mod(s[2], bs) == 0, sym.mod(s[3], bs) == 0]

    preserves_values = True

    def out_shape(self, s, a):
        return self.shape(s, a["blocksize"], self.to_space)
