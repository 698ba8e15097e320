from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.spatial._shared import _hull0


# -- CenterCropPad ----------------------------------------------------------------------------
class CenterCropPad(OpSpec):
    """Crop (the window starting at floor((in - out) / 2)) or zero-pad (floor((out - in) / 2)
    before, the rest after) each axis of ``axes`` (all when absent; possibly negative) to
    the constant ``shape`` (int64).

    No int32 ``shape``: ONNX's function body for CenterCropPad (which onnxruntime expands)
    takes ``Max(Shape(input), shape)``, int64 against int32, and fails type checking."""

    onnx_op = "CenterCropPad"
    min_opset = 18
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)
    symbolic_ok = False

    def _attrs(self, ctx, x: TensorType, targets=None) -> dict:
        """Attributes for input ``x``: random targets, or the given output shape (the
        axes then cover every dim that changes)."""
        r = x.rank
        must = [] if targets is None else [ax for ax in range(r) if targets[ax] != x.shape[ax]]
        axes = list(range(r)) if ctx.coin(0.3) else sorted(set(must) | set(ctx.axes(r, 1)))
        if targets is None:
            shape = []
            for ax in axes:
                n = x.shape[ax]
                shape.append(ctx.choice((n, max(1, n - ctx.int(1, 4)), n + ctx.int(1, 4))))
        else:
            shape = [targets[ax] for ax in axes]
        spelled = None if axes == list(range(r)) and ctx.coin(0.5) else [
            ax - r if ctx.coin(0.3) else ax for ax in axes]
        return {"shape": shape, "axes": spelled}

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0])

    def backward(self, ctx, out):
        if out.rank not in self.ranks:
            return None
        shape = [max(1, n + ctx.rng.randint(-3, 3)) if ctx.coin(0.6) else n for n in out.shape]
        x = out.with_shape(shape)
        if x.numel > ctx.limits.max_elems:
            return None
        return [x], self._attrs(ctx, x, list(out.shape))

    def _axes(self, a, r: int) -> list:
        return list(range(r)) if a["axes"] is None else [ax % r for ax in a["axes"]]

    def requires(self, ins, a):
        r = ins[0].rank
        axes = self._axes(a, r)
        if a["axes"] is not None and not all(-r <= ax < r for ax in a["axes"]):
            return [False]
        return [len(set(axes)) == len(axes), len(axes) == len(a["shape"])] + [s >= 1 for s in a["shape"]]

    def infer(self, ins, a):
        x = ins[0]
        shape = list(x.shape)
        for ax, s in zip(self._axes(a, x.rank), a["shape"]):
            shape[ax] = s
        return [x.with_shape(shape)]

    def onnx(self, b, a, xs, ys):
        shape = b.ints(a["shape"], hint="shape")
        b.node(self.onnx_op, [xs[0], shape], ys, axes=a["axes"])

    def torch(self, a, x):
        y = x
        for ax, s in zip(self._axes(a, x.dim()), a["shape"]):
            n = y.shape[ax]
            if s < n:
                y = y.narrow(ax, (n - s) // 2, s)
            elif s > n:
                before = (s - n) // 2
                parts = []
                for width in (before, s - n - before):
                    shape = list(y.shape)
                    shape[ax] = width
                    parts.append(torch.zeros(shape, dtype=y.dtype))
                y = torch.cat([parts[0], y, parts[1]], dim=ax)
        return y

    keeps_integers = True
    gaps = (("an int32 shape input", "ONNX's function body mixes it with int64 in Max: onnxruntime refuses the model"),)

    def value_range(self, a, ranges, ins):
        x = ins[0]
        pads = any(s > x.shape[ax] for ax, s in zip(self._axes(a, x.rank), a["shape"]))
        return [_hull0(ranges[0]) if pads else tuple(ranges[0])]


OPS = [CenterCropPad]
