from __future__ import annotations

import torch

from dlgate.ops import sym
from dlgate.ops.layout._shared import Layout, composition, _concrete, set_dim, spell_axis


class Split(Layout):
    """Two outputs (``Split1``: one, degenerate-only; ``Split3``: three, ``Split5``: five) of sizes ``split``. The lowering writes the sizes as
    an attribute (< 13) or an input (>= 13), or leaves them implied where that means the
    same: equal parts (13..17), or ``num_outputs`` (>= 18: parts of ceil(d/n), the last
    one smaller, never empty)."""

    onnx_op = "Split"
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

    def requires(self, ins, a):
        d = ins[0].shape[a["axis"] % ins[0].rank]
        return [sym.sum_(a["split"]) == d] + [s >= 1 for s in a["split"]]

    def infer(self, ins, a):
        ax = a["axis"] % ins[0].rank
        return [ins[0].with_shape(set_dim(ins[0].shape, ax, s)) for s in a["split"]]

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

    exact_values = True


class Split1(Split):
    """Split into a single output (the whole axis): the identity, which kernels and converters
    special-case (one output is a tensor where several are a tuple). Drawn only in the
    degenerate regime."""
    name = "Split1"
    n_outputs = 1
    degenerate_only = True


class Split3(Split):
    name = "Split3"
    n_outputs = 3


class Split5(Split):
    name = "Split5"
    n_outputs = 5


OPS = [Split, Split1, Split3, Split5]
