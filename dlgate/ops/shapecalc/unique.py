from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.layout._shared import factor
from dlgate.ops.shapecalc._shared import _argmax, _argmax_attrs, _argmax_ok


#: Unique's input dtypes: those onnxruntime's Unique implements.
UNIQUE_DTYPES = (dt.INT64, dt.FLOAT32, dt.FLOAT64, dt.FLOAT16, dt.INT8)
LAYOUTS = ("flat", "rows", "cols")


class Unique(OpSpec):
    """Unique of labels whose set of distinct values is fixed by construction: the arg-max
    positions along ``axis`` (of size n) of a float input, flattened and concatenated with
    0..n-1, so exactly n labels are distinct while which come first, where each occurs and
    how often depend on the data. ``layout`` "flat": Unique of the labels (no ``axis``;
    Cast to ``udtype`` when not int64); "rows"/"cols": Unique along ``uaxis`` of their one-hot
    rows (m, n) / columns (n, m) (``Equal`` with 0..n-1, Cast to ``udtype``), exactly the n
    one-hot slices. Both ``sorted`` values; all four outputs. Not generated: Unique of data
    whose number of distinct values depends on the data (shapes must be known), integer
    inputs (arg-max ties), int32/uint8/bool labels (onnxruntime's Unique lacks them), fewer
    outputs (a spec's outputs are fixed)."""

    onnx_op = "Unique"
    onnx_ops = ("ArgMax", "Reshape", "Concat", "Cast", "Unsqueeze", "Equal")
    n_outputs = 4
    symbolic_ok = False
    dtypes = tuple((t,) for t in dt.FLOATS)
    ranks = (1, 2, 3, 4, 5)

    @staticmethod
    def _attrs(ctx, shape, ax: int, layout: str | None = None) -> dict:
        a = _argmax_attrs(ctx, shape, ax)
        layout = layout or ctx.choice(LAYOUTS)
        udtypes = [t for t in UNIQUE_DTYPES if t in ctx.dtypes] or [dt.INT64]
        a.update(layout=layout, sorted=int(ctx.coin(0.6)), udtype=ctx.choice(udtypes),
                 uaxis={"flat": None, "rows": ctx.choice((0, -2)), "cols": ctx.choice((1, -1))}[layout])
        return a

    def sample(self, ctx, ins):
        shape = ins[0].shape
        n = sym.prod(shape)
        # inverse_indices has numel / n + n entries: prefer axes that keep it within limits
        fit = [i for i in range(len(shape)) if n // shape[i] + shape[i] <= 4 * ctx.limits.max_dim]
        return self._attrs(ctx, shape, ctx.choice(fit) if fit else ctx.rng.randrange(len(shape)))

    def backward(self, ctx, out):
        if out.dtype not in UNIQUE_DTYPES or out.rank not in (1, 2) or (out.rank == 2 and out.shape[0] != out.shape[1]):
            return None
        types = [t for t in self.dtypes if t[0] in ctx.dtypes]
        n = out.shape[0]
        if not types or n > 64:
            return None
        rest = factor(ctx, ctx.rng.randint(1, max(1, min(64, ctx.limits.max_elems // n))), ctx.rng.randint(0, 3))
        if rest is None:
            return None
        ax = ctx.rng.randint(0, len(rest))
        shape = tuple(rest[:ax]) + (n,) + tuple(rest[ax:])
        layout = "flat" if out.rank == 1 else ctx.choice(("rows", "cols"))
        a = self._attrs(ctx, shape, ax, layout)
        a["udtype"] = out.dtype
        return [TensorType(ctx.choice(types)[0], shape)], a

    def requires(self, ins, a):
        ok = _argmax_ok(ins[0], a)
        return ok + [a["udtype"] in UNIQUE_DTYPES, a["n"] <= 64]

    def infer(self, ins, a):
        n = a["n"]
        m = sym.div(sym.prod(ins[0].shape), n) + n
        y = (n,) if a["layout"] == "flat" else (n, n)
        return [TensorType(a["udtype"], y), TensorType(dt.INT64, (n,)), TensorType(dt.INT64, (m,)),
                TensorType(dt.INT64, (n,))]

    def onnx(self, b, a, xs, ys):
        n = a["n"]
        am = _argmax(b, xs[0], a, 0)
        flat = b.node("Reshape", [am, b.ints([-1])], 1)[0]
        lab = b.node("Concat", [flat, b.ints(range(n))], 1, axis=0)[0]
        if a["layout"] == "flat":
            u = lab
        else:
            rows = a["layout"] == "rows"
            col = b.node("Unsqueeze", [lab, b.ints([1 if rows else 0])], 1)[0]
            pos = b.const(np.arange(n, dtype=np.int64).reshape((1, n) if rows else (n, 1)))
            u = b.node("Equal", [col, pos], 1)[0]
        if a["udtype"] != dt.INT64 or a["layout"] != "flat":
            u = b.node("Cast", [u], 1, to=dt.ONNX[a["udtype"]])[0]
        b.node("Unique", [u], ys, axis=a["uaxis"], sorted=b.opt(a["sorted"], 1))

    def labels(self, a, x):
        ax = a["axis"] % x.dim()
        lab = torch.cat([torch.argmax(x, dim=ax).reshape(-1), torch.arange(a["n"])])
        if a["layout"] == "rows":
            lab = lab.unsqueeze(1) == torch.arange(a["n"]).unsqueeze(0)
        elif a["layout"] == "cols":
            lab = lab.unsqueeze(0) == torch.arange(a["n"]).unsqueeze(1)
        return lab.to(dt.torch_dtype(a["udtype"]))

    def torch(self, a, x):
        return unique(self.labels(a, x), a["uaxis"], bool(a["sorted"]))

    jumps = True
    gaps: ClassVar[tuple] = (
        ("Unique of data with a data-dependent number of distinct values",
         "shapes must be known at generation"),
        ("integer inputs", "their arg-max ties are frequent; see ArgMax"),
        ("labels of dtypes int32, uint8, bool", "onnxruntime's Unique does not implement them"),
        ("fewer than four outputs", "a spec's outputs are fixed"),
    )

    def value_range(self, a, ranges, ins):
        n = a["n"]
        m = sym.prod(ins[0].shape) // n + n
        y = (0.0, float(n - 1)) if a["layout"] == "flat" else (0.0, 1.0)
        return [y, (0.0, float(m - 1)), (0.0, float(n - 1)), (1.0, float(m - n + 1))]

    def reference_defect(self, a, ins, opset):
        if not a["sorted"] and a["layout"] == "cols":
            return "onnx.reference's Unique with sorted=0 takes the unique slices along axis 0 whatever the axis"
        return None


def unique(t, axis, sorted_: bool) -> tuple:
    """ONNX's Unique: (Y, indices, inverse_indices, counts); slices along ``axis`` (None:
    the flattened elements) compared lexicographically when sorted, else in order of first
    occurrence."""
    if axis is None:
        rows, ax = t.reshape(-1, 1), 0
    else:
        ax = axis % t.dim()
        rows = t.movedim(ax, 0).reshape(t.shape[ax], -1)
    u, inv, cnt = torch.unique(rows.to(torch.float64), dim=0, sorted=True, return_inverse=True, return_counts=True)
    m, k = rows.shape[0], u.shape[0]
    first = torch.full((k,), m, dtype=torch.int64).scatter_reduce(0, inv, torch.arange(m), "amin")
    if not sorted_:
        order = torch.argsort(first, stable=True)
        remap = torch.empty(k, dtype=torch.int64)
        remap[order] = torch.arange(k)
        first, cnt, inv = first[order], cnt[order], remap[inv]
    if axis is None:
        y = t.reshape(-1).index_select(0, first)
    else:
        y = t.index_select(ax, first)
    return y, first, inv.to(torch.int64), cnt.to(torch.int64)


OPS = [Unique]
