from __future__ import annotations

from dlgate.ops import sym
from dlgate.ops.layout._shared import Layout, factor


# -- Reshape / Flatten ----------------------------------------------------------------

class Reshape(Layout):
    """The target ``shape`` is sampled by factoring the element count; ``spec`` is how it
    is written (0 = copy the input dim, -1 = infer). ``allowzero`` is absent or 0."""
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

    def out_shape(self, shape, a):
        return tuple(a["shape"])

    def backward(self, ctx, out):
        shape = self.new_shape(ctx, sym.prod(out.shape))
        return None if shape is None else ([out.with_shape(shape)], self.attrs(ctx, shape, out.shape))

    def requires(self, ins, a):
        x = ins[0]
        if any(v == 0 and i >= x.rank for i, v in enumerate(a["spec"])):
            return [False]
        return [sym.prod(x.shape) == sym.prod(a["shape"])] + \
            [x.shape[i] == a["shape"][i] for i, v in enumerate(a["spec"]) if v == 0]

    def onnx(self, b, a, xs, ys):
        b.node("Reshape", [xs[0], b.ints(a["spec"])], ys, allowzero=b.opt(0, 0) if b.opset >= 14 else None)

    def torch(self, a, x):
        return x.reshape(a["shape"])

    preserves_values = True


OPS = [Reshape]
