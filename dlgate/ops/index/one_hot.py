from __future__ import annotations

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType


class OneHot(OpSpec):
    """Integer indices from the graph (out-of-range ones give an all-off row, negative ones
    count from the end, both defined by ONNX); depth and [off, on] values are constants.
    Output/depth dtypes are drawn from combinations onnxruntime implements."""

    onnx_op = "OneHot"
    dtypes = ((dt.INT64,), (dt.INT32,))
    ranks = (1, 2, 3)  # ONNX shape inference rejects rank-0 indices
    COMBOS = {dt.INT64: ((dt.INT64, dt.INT64), (dt.FLOAT32, dt.INT64), (dt.INT32, dt.FLOAT32),
                         (dt.FLOAT32, dt.FLOAT32), (dt.FLOAT32, dt.INT32)),
              dt.INT32: ((dt.FLOAT32, dt.INT32), (dt.FLOAT32, dt.FLOAT32))}

    def _attrs(self, ctx, idx_dtype, r, axis, depth, out_dtype=None):
        combos = [c for c in self.COMBOS[idx_dtype] if out_dtype is None or c[0] == out_dtype]
        if not combos:
            return None
        out_dtype, depth_dtype = ctx.choice(combos)
        if dt.is_float(out_dtype):
            vals = [ctx.choice((0.0, ctx.uniform(-4, 4))), ctx.choice((1.0, ctx.uniform(-4, 4)))]
        else:
            vals = [ctx.choice((0, ctx.rng.randint(-8, 8))), ctx.choice((1, ctx.rng.randint(-8, 8)))]
        return {"axis": axis - (r + 1) if ctx.coin(0.3) else axis, "depth": depth, "values": vals,
                "dtype": out_dtype, "depth_dtype": depth_dtype}

    def sample(self, ctx, ins):
        r = ins[0].rank
        return self._attrs(ctx, ins[0].dtype, r, ctx.rng.randint(0, r), ctx.int(1, 16))

    def backward(self, ctx, out):
        if not 2 <= out.rank <= 4:
            return None
        idx_dtype = ctx.choice(self.dtypes)[0]
        ax = ctx.rng.randrange(out.rank)
        a = self._attrs(ctx, idx_dtype, out.rank - 1, ax, out.shape[ax], out.dtype)
        if a is None:
            return None
        return [TensorType(idx_dtype, out.shape[:ax] + out.shape[ax + 1:])], a

    def backward_ranks(self, out):
        return (out.rank - 1,)

    def requires(self, ins, a):
        return [a["depth"] >= 1, 1 <= ins[0].rank <= 3]

    def infer(self, ins, a):
        s, r = list(ins[0].shape), ins[0].rank
        s.insert(a["axis"] % (r + 1), a["depth"])
        return [TensorType(a["dtype"], tuple(s))]

    def onnx(self, b, a, xs, ys):
        depth = b.const(np.array(a["depth"], dtype=a["depth_dtype"]))
        vals = b.const(np.array(a["values"], dtype=a["dtype"]))
        b.node("OneHot", [xs[0], depth, vals], ys, axis=b.opt(a["axis"], -1))

    def torch(self, a, x):
        n, r = a["depth"], x.dim()
        idx = x.to(torch.int64)
        valid = (idx >= -n) & (idx < n)
        idx = torch.where(idx < 0, idx + n, idx)
        hot = torch.nn.functional.one_hot(torch.where(valid, idx, 0), n).bool() & valid.unsqueeze(-1)
        tdt = dt.torch_dtype(a["dtype"])
        off, on = (torch.tensor(v, dtype=tdt) for v in a["values"])
        return torch.where(hot, on, off).movedim(-1, a["axis"] % (r + 1))

    def value_range(self, a, ranges, ins):
        off, on = (_in_dtype(v, a["dtype"]) for v in a["values"])
        return [(min(off, on), max(off, on))]  # every element is the off or the on value

    def exact(self, a, exacts, ins):
        # at most one of a row's ``depth`` positions is on
        return _in_dtype(a["values"][0], a["dtype"]) if a["depth"] > 1 else None


def _in_dtype(v, dtype: str) -> float:
    """``v`` as the tensor of ``dtype`` stores it (float16 rounds, bool is 0/1)."""
    return float(np.asarray(v, dtype=dt.NUMPY[dtype]))


OPS = [OneHot]
