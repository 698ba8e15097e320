"""Layout operators: data movement without arithmetic (reshape, transpose, concat, split...).

Shape-like operator inputs (Reshape's and Expand's shape, Tile's repeats, Squeeze and
Unsqueeze axes, Split sizes) are attributes of the spec and constants in the model.
"""
from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.spec import sym
from dlgate.spec.base import IEEE, INF, Ctx, OpSpec, TensorType


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

    keeps_range = True  # values are only moved, copied or selected
    nonfinite = IEEE
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)

    def infer(self, ins, a):
        return [ins[0].with_shape(self.out_shape(ins[0].shape, a))]


# -- Reshape / Flatten ----------------------------------------------------------------

class Reshape(Layout):
    """The target ``shape`` is sampled by factoring the element count; ``spec`` is how it
    is written (0 = copy the input dim, -1 = infer). ``allowzero`` is absent or 0."""
    preserves_values = True

    onnx_op = "Reshape"
    ranks = (0, 1, 2, 3, 4, 5)
    symbolic_ok = False

    @staticmethod
    def attrs(ctx, in_shape, shape) -> dict:
        spec = list(shape)
        if ctx.coin(0.4):
            for i in range(min(len(in_shape), len(shape))):
                if shape[i] == in_shape[i] and ctx.coin(0.5):
                    spec[i] = 0
        free = [i for i, v in enumerate(spec) if v != 0]
        if free and ctx.coin(0.4):
            spec[ctx.choice(free)] = -1
        return {"shape": list(shape), "spec": spec}

    @staticmethod
    def new_shape(ctx, n) -> tuple | None:
        for _ in range(3):
            r = 0 if n == 1 and ctx.coin(0.2) else ctx.rng.randint(1, ctx.limits.max_rank)
            shape = factor(ctx, n, r)
            if shape is not None:
                return shape
        return None

    def sample(self, ctx, ins):
        n = sym.prod(ins[0].shape)
        a = self.attrs(ctx, ins[0].shape, self.new_shape(ctx, n) or (n,))
        if ctx.degenerate_draw():  # to the input's own shape
            a = self.attrs(ctx, ins[0].shape, tuple(ins[0].shape))
        return a

    def requires(self, ins, a):
        x = ins[0]
        if any(v == 0 and i >= x.rank for i, v in enumerate(a["spec"])):
            return [False]
        return [sym.prod(x.shape) == sym.prod(a["shape"])] + \
            [x.shape[i] == a["shape"][i] for i, v in enumerate(a["spec"]) if v == 0]

    def out_shape(self, shape, a):
        return tuple(a["shape"])

    def backward(self, ctx, out):
        shape = self.new_shape(ctx, sym.prod(out.shape))
        return None if shape is None else ([out.with_shape(shape)], self.attrs(ctx, shape, out.shape))

    def onnx(self, b, a, xs, ys):
        b.node("Reshape", [xs[0], b.ints(a["spec"])], ys, allowzero=b.opt(0, 0) if b.opset >= 14 else None)

    def torch(self, a, x):
        return x.reshape(a["shape"])


class Flatten(Layout):
    preserves_values = True
    onnx_op = "Flatten"
    exact_values = True

    def sample(self, ctx, ins):
        r = ins[0].rank
        k = ctx.rng.randint(0, r)
        return {"axis": spell_axis(ctx, k, r) if k < r else k}

    def out_shape(self, shape, a):
        k = a["axis"] + len(shape) if a["axis"] < 0 else a["axis"]
        return (sym.prod(shape[:k]), sym.prod(shape[k:]))

    def backward_ranks(self, out):
        return (1, 2, 3, 4)

    def backward(self, ctx, out):
        if out.rank != 2:
            return None
        p, q = out.shape
        r, k = ctx.choice([(r, k) for r in range(1, ctx.limits.max_rank + 1) for k in range(r + 1)
                           if (k > 0 or p == 1) and (k < r or q == 1)])
        left, right = factor(ctx, p, k), factor(ctx, q, r - k)
        if left is None or right is None:
            return None
        return [out.with_shape(left + right)], {"axis": spell_axis(ctx, k, r) if k < r else k}

    def onnx(self, b, a, xs, ys):
        b.node("Flatten", xs, ys, axis=b.opt(a["axis"], 1))

    def torch(self, a, x):
        return x.reshape(self.out_shape(tuple(x.shape), a))


# -- Transpose / Squeeze / Unsqueeze --------------------------------------------------

class Transpose(Layout):
    """``omit``: the perm attribute is left out, which means reversing the dims."""
    preserves_values = True

    onnx_op = "Transpose"

    @staticmethod
    def attrs(ctx, r):
        if ctx.coin(0.2):
            return {"perm": list(range(r - 1, -1, -1)), "omit": True}
        return {"perm": ctx.perm(r), "omit": False}

    def sample(self, ctx, ins):
        return self.attrs(ctx, ins[0].rank)

    def out_shape(self, shape, a):
        return tuple(shape[p] for p in a["perm"])

    def backward(self, ctx, out):
        if out.rank == 0:
            return None
        a = self.attrs(ctx, out.rank)
        shape = [None] * out.rank
        for i, p in enumerate(a["perm"]):
            shape[p] = out.shape[i]
        return [out.with_shape(shape)], a

    def onnx(self, b, a, xs, ys):
        b.node("Transpose", xs, ys, perm=None if a["omit"] else a["perm"])

    def torch(self, a, x):
        return x.permute(a["perm"])


class Squeeze(Layout):
    """``axes`` are size-1 dims; ``omit``: the axes input is left out (squeeze every 1-dim),
    only when ``axes`` are exactly the size-1 dims."""
    preserves_values = True

    onnx_op = "Squeeze"
    exact_values = True

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

    def requires(self, ins, a):
        shape, r = ins[0].shape, ins[0].rank
        axes = {ax % r for ax in a["axes"]}
        if len(axes) != len(a["axes"]):
            return [False]
        return [shape[i] == 1 if i in axes else shape[i] != 1 for i in range(r) if i in axes or a["omit"]]

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

    def onnx(self, b, a, xs, ys):
        if a["omit"]:
            b.node("Squeeze", xs, ys)
        else:
            axes_node(b, "Squeeze", xs, ys, a["axes"])

    def torch(self, a, x):
        return x.squeeze(tuple(sorted(ax % x.dim() for ax in a["axes"])))


class Unsqueeze(Layout):
    """``axes`` index the output; written in any order, some negative."""
    preserves_values = True

    onnx_op = "Unsqueeze"
    exact_values = True
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

    def requires(self, ins, a):
        r_out = ins[0].rank + len(a["axes"])
        return [len({ax % r_out for ax in a["axes"]}) == len(a["axes"])]

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

    def onnx(self, b, a, xs, ys):
        axes_node(b, "Unsqueeze", xs, ys, a["axes"])

    def torch(self, a, x):
        r_out = x.dim() + len(a["axes"])
        for ax in sorted(ax % r_out for ax in a["axes"]):
            x = x.unsqueeze(ax)
        return x


# -- Expand / Tile --------------------------------------------------------------------

class Expand(Layout):
    """Bidirectional broadcasting with the constant ``shape``: it may be shorter than the
    input and hold 1s where the input's dim is kept."""
    preserves_values = True

    onnx_op = "Expand"
    exact_values = True
    ranks = (0, 1, 2, 3, 4, 5)

    def sample(self, ctx, ins):
        shape, r = ins[0].shape, ins[0].rank
        if not _concrete(shape):
            return {"shape": [ctx.dim() for _ in range(r)]}
        out = []
        for k in range(ctx.rng.randint(max(0, r - 2), min(r + 2, ctx.limits.max_rank)), 0, -1):
            if k > r:
                out.append(ctx.choice((1, 2, 3)))
            elif shape[-k] == 1 and ctx.coin(0.6):
                out.append(ctx.dim(8))
            else:
                out.append(1 if ctx.coin(0.3) else shape[-k])
        if ctx.degenerate_draw():  # to the input's own shape
            out = list(shape)
        return {"shape": out}

    def requires(self, ins, a):
        return sym.broadcastable(ins[0].shape, tuple(a["shape"]))

    def out_shape(self, shape, a):
        return sym.broadcast(shape, tuple(a["shape"]))

    def backward(self, ctx, out):
        r = out.rank
        rx = ctx.rng.randint(max(0, r - 2), r) if ctx.coin(0.5) else r
        xs = (None,) * (r - rx) + tuple(1 if ctx.coin(0.4) else d for d in out.shape[r - rx:])
        # Where the input already has the output's dim, the shape may say 1 ...
        shape = [1 if x == d and ctx.coin(0.3) else d for x, d in zip(xs, out.shape)]
        # ... or, for leading dims, nothing at all.
        while shape and xs[r - len(shape)] == out.shape[r - len(shape)] and ctx.coin(0.2):
            shape = shape[1:]
        return [out.with_shape(xs[r - rx:])], {"shape": shape}

    def onnx(self, b, a, xs, ys):
        b.node("Expand", [xs[0], b.ints(a["shape"])], ys)

    def torch(self, a, x):
        return x.expand(torch.broadcast_shapes(tuple(x.shape), tuple(a["shape"]))).contiguous()


class Tile(Layout):
    """A scalar too (rank 0, empty ``repeats``: the scalar itself), which kernels have
    special-cased (onnxruntime's CPU Tile refused it before 1.24)."""
    preserves_values = True
    onnx_op = "Tile"
    ranks = (0, 1, 2, 3, 4, 5)

    def sample(self, ctx, ins):
        reps = [1 if ctx.coin(0.5) else ctx.int(1, 3) for _ in ins[0].shape]
        return {"repeats": [1] * len(reps) if ctx.degenerate_draw() else reps}

    def requires(self, ins, a):
        return [len(a["repeats"]) == ins[0].rank]

    def out_shape(self, shape, a):
        return tuple(d * t for d, t in zip(shape, a["repeats"]))

    def backward(self, ctx, out):
        if out.rank == 0:
            return [out], {"repeats": []}
        reps = [1 if ctx.coin(0.4) else ctx.divisor(d, 4) for d in out.shape]
        return [out.with_shape([d // t for d, t in zip(out.shape, reps)])], {"repeats": reps}

    def onnx(self, b, a, xs, ys):
        b.node("Tile", [xs[0], b.ints(a["repeats"])], ys)

    def torch(self, a, x):
        return x.repeat(tuple(a["repeats"]))


# -- Concat / Split -------------------------------------------------------------------

class Concat(Layout):
    """Two inputs (``Concat3``: three, ``Concat4``: four, ``Concat5``: five) that differ only
    along ``axis``."""
    preserves_values = True

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

    def requires(self, ins, a):
        r = ins[0].rank
        if any(x.rank != r for x in ins):
            return [False]
        ax = a["axis"] % r
        return [x.shape[j] == ins[0].shape[j] for x in ins[1:] for j in range(r) if j != ax]

    def infer(self, ins, a):
        ax = a["axis"] % ins[0].rank
        return [ins[0].with_shape(set_dim(ins[0].shape, ax, sym.sum_(x.shape[ax] for x in ins)))]

    def backward(self, ctx, out):
        axes = [j for j, d in enumerate(out.shape) if d >= self.arity]
        if not axes:
            return None
        ax = ctx.choice(axes)
        parts = composition(ctx, out.shape[ax], self.arity)
        return [out.with_shape(set_dim(out.shape, ax, p)) for p in parts], {"axis": spell_axis(ctx, ax, out.rank)}

    def onnx(self, b, a, xs, ys):
        b.node("Concat", xs, ys, axis=a["axis"])

    def torch(self, a, *xs):
        return torch.cat(xs, dim=a["axis"])


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


class Split(Layout):
    """Two outputs (``Split3``: three, ``Split5``: five) of sizes ``split``. The lowering writes the sizes as
    an attribute (< 13) or an input (>= 13), or leaves them implied where that means the
    same: equal parts (13..17), or ``num_outputs`` (>= 18: parts of ceil(d/n), the last
    one smaller, never empty)."""

    onnx_op = "Split"
    exact_values = True
    n_outputs = 2

    @staticmethod
    def chunks(d, n) -> list:
        c = -(-d // n)
        return [c] * (n - 1) + [d - c * (n - 1)]

    def sample(self, ctx, ins):
        shape, r, n = ins[0].shape, ins[0].rank, self.n_outputs
        if not _concrete(shape):
            return {"axis": ctx.axis(r), "split": [ctx.dim() for _ in range(n)]}
        axes = [j for j, d in enumerate(shape) if d >= n]
        if not axes:
            return {"axis": 0, "split": [1] * n}  # fails ``requires``
        ax = ctx.choice(axes)
        d, u = shape[ax], ctx.rng.random()
        if u < 0.3 and d % n == 0:
            sizes = [d // n] * n
        elif u < 0.6 and self.chunks(d, n)[-1] >= 1:
            sizes = self.chunks(d, n)
        else:
            sizes = composition(ctx, d, n)
        return {"axis": spell_axis(ctx, ax, r), "split": sizes}

    def requires(self, ins, a):
        d = ins[0].shape[a["axis"] % ins[0].rank]
        return [sym.sum_(a["split"]) == d] + [s >= 1 for s in a["split"]]

    def infer(self, ins, a):
        ax = a["axis"] % ins[0].rank
        return [ins[0].with_shape(set_dim(ins[0].shape, ax, s)) for s in a["split"]]

    def backward(self, ctx, out):
        if out.rank == 0:
            return None
        n, ax = self.n_outputs, ctx.rng.randrange(out.rank)
        d0, u = out.shape[ax], ctx.rng.random()
        if u < 0.3:
            sizes = [d0] * n
        elif u < 0.5 and d0 > 1:
            sizes = [d0] * (n - 1) + [ctx.int(1, d0 - 1)]
        else:
            sizes = [d0] + [ctx.dim(8) for _ in range(n - 1)]
        a = {"axis": spell_axis(ctx, ax, out.rank), "split": sizes}
        return [out.with_shape(set_dim(out.shape, ax, sum(sizes)))], a

    def onnx(self, b, a, xs, ys):
        sizes, n, axis = a["split"], self.n_outputs, b.opt(a["axis"], 0)
        ways = ["explicit"]
        if b.opset < 18 and len(set(sizes)) == 1:
            ways.append("omit")
        if b.opset >= 18 and sizes == self.chunks(sum(sizes), n):
            ways.append("num_outputs")
        way = ways[b.rng.randrange(len(ways))]
        if way != "explicit":
            b.node("Split", xs, ys, axis=axis, num_outputs=n if way == "num_outputs" else None)
        elif b.opset < 13:
            b.node("Split", xs, ys, axis=axis, split=sizes)
        else:
            b.node("Split", [xs[0], b.ints(sizes)], ys, axis=axis)

    def torch(self, a, x):
        return tuple(torch.split(x, a["split"], dim=a["axis"]))


class Split3(Split):
    name = "Split3"
    n_outputs = 3


class Split5(Split):
    name = "Split5"
    n_outputs = 5


# -- DepthToSpace / SpaceToDepth ------------------------------------------------------

class BlockOp(Layout):
    """Rank 4 NCHW with a ``blocksize`` in 1..4 (mostly > 1)."""
    preserves_values = True

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

    def requires(self, ins, a):
        s, bs = ins[0].shape, a["blocksize"]
        if self.to_space:
            return [sym.mod(s[1], bs * bs) == 0]
        return [sym.mod(s[2], bs) == 0, sym.mod(s[3], bs) == 0]

    @staticmethod
    def shape(s, bs, to_space):
        if to_space:
            return (s[0], sym.div(s[1], bs * bs), s[2] * bs, s[3] * bs)
        return (s[0], s[1] * bs * bs, sym.div(s[2], bs), sym.div(s[3], bs))

    def out_shape(self, s, a):
        return self.shape(s, a["blocksize"], self.to_space)


class DepthToSpace(BlockOp):
    """Modes DCR (the default, sometimes left out) and CRD."""

    onnx_op = "DepthToSpace"
    exact_values = True

    def attrs(self, ctx, bs):
        return {"blocksize": bs, "mode": ctx.choice(("DCR", "CRD"))}

    def onnx(self, b, a, xs, ys):
        b.node("DepthToSpace", xs, ys, blocksize=a["blocksize"], mode=b.opt(a["mode"], "DCR"))

    def torch(self, a, x):
        (n, c, h, w), bs = x.shape, a["blocksize"]
        c2 = c // (bs * bs)
        if a["mode"] == "DCR":
            y = x.reshape(n, bs, bs, c2, h, w).permute(0, 3, 4, 1, 5, 2)
        else:
            y = x.reshape(n, c2, bs, bs, h, w).permute(0, 1, 4, 2, 5, 3)
        return y.reshape(n, c2, h * bs, w * bs)


class SpaceToDepth(BlockOp):
    onnx_op = "SpaceToDepth"
    exact_values = True
    to_space = False

    def onnx(self, b, a, xs, ys):
        b.node("SpaceToDepth", xs, ys, blocksize=a["blocksize"])

    def torch(self, a, x):
        (n, c, h, w), bs = x.shape, a["blocksize"]
        y = x.reshape(n, c, h // bs, bs, w // bs, bs).permute(0, 3, 5, 1, 2, 4)
        return y.reshape(n, c * bs * bs, h // bs, w // bs)



# -- Shape / Size -------------------------------------------------------------------------

class Shape(OpSpec):
    """The input's dims as a 1-D int64 tensor; from opset 15 sometimes a slice of them
    (``start``/``end``, either spelled negatively or left out, clamped as ONNX defines).
    The slice is never empty: zero-sized tensors are not generated. The input's values do
    not reach the output."""

    nonfinite = IEEE
    onnx_op = "Shape"
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)
    integral_out = True
    value_inputs = ()

    @staticmethod
    def _attrs(ctx, r: int, lo: int, hi: int) -> dict:
        if ctx.opset < 15 or (lo == 0 and hi == r and ctx.coin(0.4)):
            return {"start": None, "end": None, "lo": lo, "hi": hi}
        start = lo - r if lo < r and ctx.coin(0.3) else lo
        if hi == r:
            end = ctx.choice((None, r, r + ctx.rng.randint(1, 3)))  # past the end clamps to r
        else:
            end = hi - r if ctx.coin(0.3) else hi
        if start == 0 and ctx.coin(0.5):
            start = None
        return {"start": start, "end": end, "lo": lo, "hi": hi}

    def sample(self, ctx, ins):
        r = ins[0].rank
        if ctx.opset < 15:
            return self._attrs(ctx, r, 0, r)
        lo = ctx.rng.randrange(r)
        return self._attrs(ctx, r, lo, ctx.rng.randint(lo + 1, r))

    @staticmethod
    def _range(a, r: int) -> tuple:
        """(lo, hi) from the attributes as ONNX reads them: negatives add r, then clamp."""
        def norm(v, default):
            v = default if v is None else v
            v = v + r if v < 0 else v
            return min(max(v, 0), r)
        return norm(a["start"], 0), norm(a["end"], r)

    def requires(self, ins, a):
        lo, hi = self._range(a, ins[0].rank)
        return [(lo, hi) == (a["lo"], a["hi"]), hi > lo]

    def infer(self, ins, a):
        return [TensorType(dt.INT64, (a["hi"] - a["lo"],))]

    def backward(self, ctx, out):
        if out.dtype != dt.INT64 or out.rank != 1 or out.shape[0] > ctx.limits.max_rank:
            return None
        k = out.shape[0]
        types = [s[0] for s in self.dtypes if s[0] in ctx.dtypes]
        if not types:
            return None
        r = k if ctx.opset < 15 else ctx.rng.randint(k, ctx.limits.max_rank)
        lo = ctx.rng.randint(0, r - k)
        return [TensorType(ctx.choice(types), ctx.shape(r))], self._attrs(ctx, r, lo, lo + k)

    def backward_ranks(self, out):
        return tuple(range(1, 6))

    def value_range(self, a, ranges, ins):
        dims = ins[0].shape[a["lo"]:a["hi"]]
        if any(sym.is_sym(d) for d in dims):
            return [(1.0, INF)]
        return [(float(min(dims)), float(max(dims)))]

    def exact(self, a, exacts, ins):
        d = ins[0].shape[a["lo"]]
        return None if sym.is_sym(d) else float(d)

    def onnx_attrs(self, a, b):
        if b.opset < 15:
            return {}
        return {"start": a["start"], "end": a["end"]}

    def torch(self, a, x):
        return torch.tensor(list(x.shape)[a["lo"]:a["hi"]], dtype=torch.int64)


class Size(OpSpec):
    """The input's element count as an int64 scalar; its values do not reach the output."""

    nonfinite = IEEE
    onnx_op = "Size"
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (0, 1, 2, 3, 4, 5)
    integral_out = True
    value_inputs = ()

    def infer(self, ins, a):
        return [TensorType(dt.INT64, ())]

    def backward(self, ctx, out):
        if out.dtype != dt.INT64 or out.rank != 0:
            return None
        types = [s[0] for s in self.dtypes if s[0] in ctx.dtypes]
        if not types:
            return None
        return [TensorType(ctx.choice(types), ctx.shape(ctx.rng.randint(0, ctx.limits.max_rank)))], {}

    def backward_ranks(self, out):
        return self.ranks

    def value_range(self, a, ranges, ins):
        n = ins[0].numel
        return [(1.0, INF)] if sym.is_sym(n) else [(float(n), float(n))]

    def exact(self, a, exacts, ins):
        n = ins[0].numel
        return None if sym.is_sym(n) else float(n)

    def torch(self, a, x):
        return torch.tensor(x.numel(), dtype=torch.int64)


OPS = [Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Expand, Tile, Concat, Concat3, Concat4, Concat5,
       Split, Split3, Split5, DepthToSpace, SpaceToDepth, Shape, Size]
