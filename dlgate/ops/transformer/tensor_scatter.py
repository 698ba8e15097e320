from __future__ import annotations

from typing import ClassVar

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.transformer._shared import _dims_ok


# =========================================================================================
# TensorScatter (opset 24): the KV-cache update
# =========================================================================================
class TensorScatter(OpSpec):
    """``present_cache`` = ``past_cache`` with ``update`` written along the sequence ``axis``
    (any axis but the batch axis 0; -2 by default, spelled positively or negatively, or
    left to the default) at ``write_indices[b]`` for each batch entry b (a constant input,
    or omitted: zeros). Mode "linear" keeps ``write_indices[b] + sequence_length <=
    max_sequence_length``; mode "circular" wraps the positions modulo
    ``max_sequence_length`` (write indices up to twice it are drawn). Every dlgate dtype;
    the update's sequence length is 1 (a decode step), the whole cache (a prefill) or
    between.

    Not generated: negative write indices (the text does not define them; C++ ``%`` would
    keep them negative in circular mode)."""

    onnx_op = "TensorScatter"
    arity = 2
    min_opset = 24
    ranks = (2, 3, 4, 5)
    dtypes = tuple((t, t) for t in dt.ALL)
    symbolic_ok = False

    def sample(self, ctx, ins):
        x = ins[0]
        r = x.rank
        if r < 2:
            return {"axis": -2, "mode": "linear", "seq": 1, "write": None}
        ax = ctx.rng.randint(1, r - 1)
        spelled = ax - r if ctx.coin(0.4) else ax
        n = x.shape[ax]
        seq = ctx.choice((1, 1, n, ctx.rng.randint(1, n)))
        mode = ctx.choice(("linear", "circular"))
        write = None
        if ctx.coin(0.75):
            hi = n - seq if mode == "linear" else 2 * n - 1
            write = [ctx.rng.randint(0, hi) for _ in range(x.shape[0])]
        return {"axis": spelled, "mode": mode, "seq": seq, "write": write}

    def _update_shape(self, shape, a):
        ax = a["axis"] % len(shape)
        return tuple(a["seq"] if k == ax else d for k, d in enumerate(shape))

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self._update_shape(ins[0].shape, a))

    def backward(self, ctx, out):
        if out.rank not in self.ranks or not self.sigs(out.dtype):
            return None
        a = self.sample(ctx, [out])
        return [out, TensorType(out.dtype, self._update_shape(out.shape, a))], a

    def requires(self, ins, a):
        x, u = ins
        r = x.rank
        if r < 2 or not (-r <= a["axis"] < r) or a["axis"] % r == 0:
            return [False]
        n, seq = x.shape[a["axis"] % r], a["seq"]
        ok = [1 <= seq, seq <= n] + _dims_ok(u.shape, self._update_shape(x.shape, a))
        if a["write"] is not None:
            w = a["write"]
            ok += [len(w) == x.shape[0], min(w) >= 0]
            ok += [max(w) + seq <= n] if a["mode"] == "linear" else []
        return ok

    def infer(self, ins, a):
        return [ins[0]]

    def onnx(self, b, a, xs, ys):
        ins = list(xs)
        if a["write"] is not None:
            ins.append(b.ints(a["write"], hint="write_indices"))
        b.node(self.onnx_op, ins, ys, mode=b.opt(a["mode"], "linear"), axis=b.opt(a["axis"], -2))

    def torch(self, a, past, update):
        ax = a["axis"] % past.dim()
        n, seq = past.shape[ax], update.shape[ax]
        write = a["write"] if a["write"] is not None else [0] * past.shape[0]
        rows = []
        for bi, w in enumerate(write):
            pos = [w + j for j in range(seq)]
            if a["mode"] == "circular":
                pos = [p % n for p in pos]
            rows.append(past[bi].index_copy(ax - 1, torch.tensor(pos, dtype=torch.int64), update[bi]))
        return torch.stack(rows)

    keeps_range = True  # every output value is a past or an update value
    keeps_integers = True
    gaps: ClassVar[tuple] = (
        ("negative write_indices", "undefined by the text (linear mode requires write_indices + sequence_length "
                                   "<= max_sequence_length; a negative index has no wrap-around rule in C++)"),
        ("linear mode writing past the cache's end", "the text forbids it (onnxruntime fails, onnx.reference "
                                                     "raises IndexError)"),
    )


OPS = [TensorScatter]
