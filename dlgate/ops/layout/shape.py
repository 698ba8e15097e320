from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import IEEE, INF, OpSpec, TensorType


# -- Shape / Size -------------------------------------------------------------------------

class Shape(OpSpec):
    """The input's dims as a 1-D int64 tensor; from opset 15 sometimes a slice of them
    (``start``/``end``, either spelled negatively or left out, clamped as ONNX defines).
    The slice is never empty: zero-sized tensors are not generated. The input's values do
    not reach the output."""

    onnx_op = "Shape"
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)

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

    def onnx_attrs(self, a, b):
        if b.opset < 15:
            return {}
        return {"start": a["start"], "end": a["end"]}

    def torch(self, a, x):
        return torch.tensor(list(x.shape)[a["lo"]:a["hi"]], dtype=torch.int64)

    nonfinite = IEEE
    integral_out = True
    value_inputs = ()

    def value_range(self, a, ranges, ins):
        dims = ins[0].shape[a["lo"]:a["hi"]]
        if any(sym.is_sym(d) for d in dims):
            return [(1.0, INF)]
        return [(float(min(dims)), float(max(dims)))]

    def exact(self, a, exacts, ins):
        d = ins[0].shape[a["lo"]]
        return None if sym.is_sym(d) else float(d)


OPS = [Shape]
