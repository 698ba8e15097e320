from __future__ import annotations

from dlgate.ops import sym
from dlgate.ops.layout._shared import Layout, factor, spell_axis


class Flatten(Layout):
    onnx_op = "Flatten"

    def sample(self, ctx, ins):
        r = ins[0].rank
        k = ctx.rng.randint(0, r)
        return {"axis": spell_axis(ctx, k, r) if k < r else k}

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

    def out_shape(self, shape, a):
        k = a["axis"] + len(shape) if a["axis"] < 0 else a["axis"]
        return (sym.prod(shape[:k]), sym.prod(shape[k:]))

    def torch(self, a, x):
        return x.reshape(self.out_shape(tuple(x.shape), a))

    preserves_values = True
    exact_values = True


OPS = [Flatten]
