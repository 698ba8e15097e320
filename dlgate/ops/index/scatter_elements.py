from __future__ import annotations

import numpy as np
import torch

from dlgate.ops.index._shared import MAX_INDICES, Scatter, _reduce_into, _reduction, _spell


class ScatterElements(Scatter):
    """``indices`` of the data's rank, each dim at most the data's; along ``axis`` values in
    [-s, s-1], distinct within each line for reduction "none"; updates of the indices'
    shape."""

    onnx_op = "ScatterElements"

    @staticmethod
    def updates_shape(shape, a):
        return tuple(np.shape(a["indices"]))

    def sample(self, ctx, ins):
        x = ins[0]
        red = _reduction(ctx, x.dtype)
        ax = ctx.rng.randrange(x.rank)
        n = x.shape[ax]
        dup = red != "none" and ctx.coin(0.7)
        ishape = [ctx.rng.randint(1, d) if ctx.coin(0.5) else d for d in x.shape]
        ishape[ax] = ctx.rng.randint(1, min(n, 8))
        while int(np.prod(ishape)) > MAX_INDICES:
            i = max(range(len(ishape)), key=lambda j: ishape[j])
            ishape[i] = max(1, ishape[i] // 2)
        lines = int(np.prod(ishape)) // ishape[ax]
        vals = []
        for _ in range(lines):
            if dup:
                pool = ctx.rng.sample(range(n), ctx.rng.randint(1, min(n, 3)))
                line = [ctx.choice(pool) for _ in range(ishape[ax])]
            else:
                line = ctx.rng.sample(range(n), ishape[ax])
            vals.append([v - n if ctx.coin(0.3) else v for v in line])
        # lines run along the last axis of the moved array: put ``ax`` back in place
        arr = np.asarray(vals, dtype=np.int64).reshape([d for j, d in enumerate(ishape) if j != ax] + [ishape[ax]])
        arr = np.moveaxis(arr, -1, ax)
        return {"reduction": red, "axis": _spell(ctx, ax, x.rank), "indices": arr.tolist()}

    def requires(self, ins, a):
        x, u = ins
        idx = np.asarray(a["indices"], dtype=np.int64)
        r = x.rank
        if idx.ndim != r or not -r <= a["axis"] < r:
            return [False]
        ax = a["axis"] % r
        n = x.shape[ax]
        ok = [tuple(u.shape) == idx.shape, idx.size <= MAX_INDICES,
              all(idx.shape[j] <= x.shape[j] for j in range(r)),
              int(idx.min()) >= -n, int(idx.max()) <= n - 1]
        if a["reduction"] == "none":
            norm = np.moveaxis(np.where(idx < 0, idx + n, idx), ax, -1).reshape(-1, idx.shape[ax])
            ok.append(all(len(set(line)) == len(line) for line in norm.tolist()))
        return ok

    def extra_attrs(self, a, b):
        return {"axis": b.opt(a["axis"], 0)}

    def torch(self, a, x, u):
        ax = a["axis"] % x.dim()
        n = x.shape[ax]
        idx = torch.tensor(a["indices"], dtype=torch.int64).reshape(u.shape)
        idx = torch.where(idx < 0, idx + n, idx)
        if a["reduction"] == "none":
            return torch.scatter(x, ax, idx, u)
        # element by element, in ONNX's order (row-major over the indices)
        out = x.clone()
        pos = torch.stack(torch.meshgrid(*[torch.arange(d) for d in idx.shape], indexing="ij"), -1).reshape(-1, x.dim())
        tgt = pos.clone()
        tgt[:, ax] = idx.reshape(-1)
        strides = torch.tensor([int(np.prod(x.shape[j + 1:])) for j in range(x.dim())], dtype=torch.int64)
        lin = (tgt * strides).sum(-1).tolist()
        flat = out.reshape(-1)
        return _reduce_into(flat, lin, u.reshape(-1), a["reduction"]).reshape(x.shape)


OPS = [ScatterElements]
