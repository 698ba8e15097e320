from __future__ import annotations

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import IEEE
from dlgate.ops.index._shared import Same


class ReverseSequence(Same):
    """Reverses the first ``sequence_lens[b]`` steps along ``time_axis`` of each batch entry
    ``b`` along ``batch_axis`` ((0, 1) or (1, 0)); lengths are an int64 constant in
    [1, time steps]."""

    onnx_op = "ReverseSequence"
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (2, 3, 4, 5)
    symbolic_ok = False

    def sample(self, ctx, ins):
        x = ins[0]
        ba = ctx.choice((0, 1))
        ta = 1 - ba
        nb, nt = x.shape[ba], x.shape[ta]
        lens = [ctx.choice((1, nt, ctx.rng.randint(1, nt))) for _ in range(nb)]
        return {"batch_axis": ba, "time_axis": ta, "lens": lens}

    def requires(self, ins, a):
        x = ins[0]
        nb, nt = x.shape[a["batch_axis"]], x.shape[a["time_axis"]]
        return [len(a["lens"]) == nb, all(1 <= v <= nt for v in a["lens"])]

    def onnx(self, b, a, xs, ys):
        b.node("ReverseSequence", [xs[0], b.const(np.asarray(a["lens"], dtype=np.int64))], ys,
               batch_axis=b.opt(a["batch_axis"], 1), time_axis=b.opt(a["time_axis"], 0))

    def torch(self, a, x):
        ba, ta = a["batch_axis"], a["time_axis"]
        nt = x.shape[ta]
        src = torch.arange(nt).unsqueeze(0).repeat(len(a["lens"]), 1)  # (batch, time)
        for bi, L in enumerate(a["lens"]):
            src[bi, :L] = torch.arange(L - 1, -1, -1)
        xt = x.movedim((ba, ta), (0, 1))
        bi = torch.arange(len(a["lens"])).unsqueeze(1).expand_as(src)
        return xt[bi, src].movedim((0, 1), (ba, ta))

    keeps_range = True
    preserves_values = True
    nonfinite = IEEE
    exact_values = True


OPS = [ReverseSequence]
