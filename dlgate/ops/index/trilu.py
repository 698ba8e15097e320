from __future__ import annotations

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import IEEE
from dlgate.ops.index._shared import Same


class Trilu(Same):
    """Keeps ``x[..., i, j]`` where ``j - i >= k`` (upper) or ``j - i <= k`` (lower), writes
    0 elsewhere: the same positions in every matrix."""
    onnx_op = "Trilu"
    min_opset = 14
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (2, 3, 4, 5)

    def sample(self, ctx, ins):
        return {"upper": int(ctx.coin()), "k": ctx.choice((0, 0, ctx.rng.randint(-6, 6)))}

    def onnx(self, b, a, xs, ys):
        ins = [xs[0]]
        if a["k"] != 0 or b.rng.random() < 0.5:
            ins.append(b.const(np.array(a["k"], dtype=np.int64)))
        b.node("Trilu", ins, ys, upper=b.opt(a["upper"], 1))

    def torch(self, a, x):
        fn = torch.triu if a["upper"] else torch.tril
        if x.dtype == torch.bool:
            return fn(x.to(torch.uint8), a["k"]).to(torch.bool)
        return fn(x, a["k"])

    keeps_integers = True

    nonfinite = IEEE
    exact_values = True

    def zeroed(self, a, ins):
        """("none" | "some" | "all") elements of each matrix written 0, or None if unknown."""
        rows, cols = ins[0].shape[-2:]
        if sym.is_sym(rows) or sym.is_sym(cols):
            return None
        k, dmin, dmax = a["k"], 1 - rows, cols - 1  # j - i spans [1 - rows, cols - 1]
        if a["upper"]:
            return "all" if dmax < k else "some" if dmin < k else "none"
        return "all" if dmin > k else "some" if dmax > k else "none"

    def value_range(self, a, ranges, ins):
        z = self.zeroed(a, ins)
        if z is None:
            return [_join(ranges[0], 0.0)]
        return [{"none": tuple(ranges[0]), "some": _join(ranges[0], 0.0), "all": (0.0, 0.0)}[z]]

    def exact(self, a, exacts, ins):
        z = self.zeroed(a, ins)
        if z in ("some", "all"):
            return 0.0
        return exacts[0] if z == "none" else None  # "none": the output is the input


def _join(r: tuple, v: float) -> tuple:
    """Bounds ``r`` widened to hold the value ``v``."""
    return (min(r[0], v), max(r[1], v))


OPS = [Trilu]
