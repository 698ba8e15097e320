from __future__ import annotations

import numpy as np
import torch

from dlgate.ops import sym
from dlgate.ops.index._shared import MAX_INDICES, Scatter, _reduce_into, _reduction


class ScatterND(Scatter):
    """``indices`` of shape Q + (k,) with non-negative in-range values (negative ones are
    not accepted by every runtime); updates of shape Q + data.shape[k:]."""

    onnx_op = "ScatterND"

    def sample(self, ctx, ins):
        x = ins[0]
        red = _reduction(ctx, x.dtype)
        k = ctx.rng.randint(1, x.rank)
        space = tuple(x.shape[:k])
        total = sym.prod(space)
        dup = red != "none" and ctx.coin(0.7)
        cap = 8 if dup else min(total, 8)
        nq = ctx.rng.randint(1, 2)
        q = [ctx.rng.randint(1, 4) for _ in range(nq)]
        tail = sym.prod(tuple(x.shape[k:]))  # updates hold prod(q) * tail <= the cap's elements
        while int(np.prod(q)) > 1 and (int(np.prod(q)) > cap or int(np.prod(q)) * k > MAX_INDICES
                                       or int(np.prod(q)) * tail > ctx.limits.max_elems):
            q = [max(1, d - 1) for d in q]
        rows = _rows(ctx, space, int(np.prod(q)), dup=dup)
        return {"reduction": red, "indices": np.asarray(rows, dtype=np.int64).reshape(tuple(q) + (k,)).tolist()}

    @staticmethod
    def updates_shape(shape, a):
        ishape = np.shape(a["indices"])
        return tuple(ishape[:-1]) + tuple(shape[ishape[-1]:])

    def requires(self, ins, a):
        x, u = ins
        idx = np.asarray(a["indices"], dtype=np.int64)
        k = idx.shape[-1]
        if not 1 <= k <= x.rank:
            return [False]
        rows = idx.reshape(-1, k)
        ok = [tuple(u.shape) == self.updates_shape(x.shape, a), idx.size <= MAX_INDICES]
        ok += [int(rows[:, j].min()) >= 0 and int(rows[:, j].max()) <= x.shape[j] - 1 for j in range(k)]
        if a["reduction"] == "none":
            ok.append(len({tuple(r) for r in rows.tolist()}) == len(rows))
        return ok

    def torch(self, a, x, u):
        idx = torch.tensor(a["indices"], dtype=torch.int64)
        k = idx.shape[-1]
        space = tuple(x.shape[:k])
        rows = idx.reshape(-1, k)
        lin = torch.zeros(rows.shape[0], dtype=torch.int64)
        for j in range(k):
            lin = lin * space[j] + rows[:, j]
        out = x.clone().reshape((int(np.prod(space)),) + tuple(x.shape[k:]))
        upd = u.reshape((rows.shape[0],) + tuple(x.shape[k:]))
        return _reduce_into(out, lin.tolist(), upd, a["reduction"]).reshape(x.shape)


# -- GatherND / ScatterND / ScatterElements / ReverseSequence -----------------------------

def _unique_rows(ctx, space: tuple, count: int) -> list:
    """``count`` distinct index tuples into a grid of shape ``space`` (count <= its size)."""
    total = int(np.prod(space)) if space else 1
    flat = ctx.rng.sample(range(total), count)
    return [list(np.unravel_index(f, space)) if space else [] for f in flat]


def _rows(ctx, space: tuple, count: int, dup: bool) -> list:
    """``count`` index tuples into ``space``: distinct unless ``dup``, then drawn from a few
    positions so that some repeat."""
    total = int(np.prod(space)) if space else 1
    if not dup:
        return [[int(v) for v in r] for r in _unique_rows(ctx, space, count)]
    pool = ctx.rng.sample(range(total), ctx.rng.randint(1, min(total, max(1, count))))
    return [[int(v) for v in np.unravel_index(ctx.choice(pool), space)] for _ in range(count)]


OPS = [ScatterND]
