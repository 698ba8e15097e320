from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import IEEE, OpSpec
from dlgate.ops.slicing._shared import _spell_axes


#: Negative (cropping) pads in constant mode, where cropping and padding commute. In the
#: other modes they are ambiguous (onnxruntime crops after reflect/edge padding but before
#: wrap padding), so those keep non-negative pads. onnx.reference's Pad hands negative pads
#: to np.pad, which raises: see ``Pad.reference_defect``.
NEGATIVE_PADS = True

# -- Pad ----------------------------------------------------------------------------------

PAD_MODES = ("constant", "constant", "reflect", "edge", "wrap")


class Pad(OpSpec):
    """Modes constant (pads may be negative, i.e. cropping keeping at least one element),
    reflect (0 <= pad < dim), edge, and wrap (opset 19+; pads beyond the dim repeat). ``value`` is
    the optional constant_value input; ``axes`` the optional axes input of opset 18+
    (without it, or below opset 18, the pads of every axis are written)."""

    onnx_op = "Pad"
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)

    def _modes(self, opset):
        return PAD_MODES if opset >= 19 else PAD_MODES[:-1]

    def _value(self, ctx, dtype, mode):
        if mode != "constant" or ctx.coin(0.3):
            return None
        if dtype == dt.BOOL:
            return ctx.coin()
        if dt.is_float(dtype):
            return ctx.choice((0.0, ctx.uniform(-4.0, 4.0)))
        lo = 0 if dtype == dt.UINT8 else -8
        return ctx.rng.randint(lo, 8)

    def _pads(self, ctx, d, mode):
        if mode == "constant":
            lo = -8 if NEGATIVE_PADS else 0
            pb = ctx.int(sym.max_(1 - d, lo), 6)
            pe = ctx.int(sym.max_(1 - d - sym.min_(pb, 0), lo), 6)
        elif mode == "reflect":
            pb, pe = ctx.int(0, sym.min_(d - 1, 8)), ctx.int(0, sym.min_(d - 1, 8))
        else:
            pb, pe = ctx.int(0, 6), ctx.int(0, 6)
        return pb, pe

    def _attrs(self, ctx, mode, dtype, rank, axes, pbs, pes):
        pads = [0] * (2 * rank)
        for ax, pb, pe in zip(axes, pbs, pes):
            pads[ax], pads[rank + ax] = pb, pe
        spelled = _spell_axes(ctx, axes, rank) if ctx.opset >= 18 and ctx.coin(0.5) else None
        v = self._value(ctx, dtype, mode)
        return {"mode": mode, "pads": pads, "value": v, "value_dtype": None if v is None else dtype, "axes": spelled}

    def sample(self, ctx, ins):
        x = ins[0]
        mode = ctx.choice(self._modes(ctx.opset))
        axes = ctx.axes(x.rank)
        pbs, pes = zip(*[self._pads(ctx, x.shape[ax], mode) for ax in axes])
        if ctx.degenerate_draw():  # zero pads: the identity
            pbs = pes = (0,) * len(axes)
        return self._attrs(ctx, mode, x.dtype, x.rank, axes, pbs, pes)

    def backward(self, ctx, out):
        r = out.rank
        if r < 1:
            return None
        mode = ctx.choice(self._modes(ctx.opset))
        axes = ctx.axes(r)
        shape, pbs, pes = list(out.shape), [], []
        for ax in axes:
            o = out.shape[ax]
            if mode == "constant":
                lo = -3 if NEGATIVE_PADS else 0
                pb, pe = ctx.rng.randint(lo, 4), ctx.rng.randint(lo, 4)
            else:
                pb, pe = ctx.rng.randint(0, 4), ctx.rng.randint(0, 4)
            d = o - pb - pe
            if d < 1 or (mode == "reflect" and max(pb, pe) > d - 1) or (mode == "constant" and d + min(pb, 0) + min(pe, 0) < 1):
                pb = pe = 0
                d = o
            shape[ax] = d
            pbs.append(pb)
            pes.append(pe)
        return [out.with_shape(shape)], self._attrs(ctx, mode, out.dtype, r, axes, pbs, pes)

    def requires(self, ins, a):
        shape, r, p, mode = ins[0].shape, ins[0].rank, a["pads"], a["mode"]
        out = []
        for i, d in enumerate(shape):
            pb, pe = p[i], p[r + i]
            if mode == "constant":
                lo = 1 - d if NEGATIVE_PADS else 0
                out += [pb >= lo, pe >= lo, d + sym.min_(pb, 0) + sym.min_(pe, 0) >= 1]
            else:
                hi = d - 1 if mode == "reflect" else 1 << 30
                out += [pb >= 0, pe >= 0, pb <= hi, pe <= hi]
        return out

    def infer(self, ins, a):
        r, p = ins[0].rank, a["pads"]
        return [ins[0].with_shape([d + p[i] + p[r + i] for i, d in enumerate(ins[0].shape)])]

    def onnx(self, b, a, xs, ys):
        p, axes = a["pads"], a["axes"]
        r = len(p) // 2
        if axes is not None and b.opset >= 18:
            pads = [p[ax % r] for ax in axes] + [p[r + ax % r] for ax in axes]
        else:
            pads, axes = p, None
        ins = [xs[0], b.ints(pads)]
        if a["value"] is not None or axes is not None:
            ins.append("" if a["value"] is None else b.const(np.array(a["value"], dtype=a["value_dtype"])))
        if axes is not None:
            ins.append(b.ints(axes))
        b.node("Pad", ins, ys, mode=b.opt(a["mode"], "constant"))

    def torch(self, a, x):
        p, mode = a["pads"], a["mode"]
        r = x.dim()
        if mode == "constant":
            tp = []
            for ax in reversed(range(r)):
                tp += [p[ax], p[r + ax]]
            v = a["value"] if a["value"] is not None else 0
            if x.dtype == torch.bool:
                return F.pad(x.to(torch.uint8), tp, value=int(bool(v))).to(torch.bool)
            return F.pad(x, tp, value=v)
        for ax in range(r):
            if p[ax] or p[r + ax]:
                idx = pad_index(x.shape[ax], p[ax], p[r + ax], mode)
                x = x.index_select(ax, torch.tensor(idx, dtype=torch.int64))
        return x

    nonfinite = IEEE
    exact_values = True

    def fill(self, a, dtype: str) -> float | None:
        """The constant the padding writes (as the tensor's dtype stores it), or None when
        this instance writes none (another mode, or only cropping)."""
        if a["mode"] != "constant" or not any(p > 0 for p in a["pads"]):
            return None
        v = a["value"] if a["value"] is not None else 0
        return float(np.asarray(v, dtype=dt.NUMPY[dtype]))

    def value_range(self, a, ranges, ins):
        # the other modes and cropping copy input values; constant padding adds its value
        lo, hi = ranges[0]
        v = self.fill(a, ins[0].dtype)
        return [(lo, hi) if v is None else (min(lo, v), max(hi, v))]

    def exact(self, a, exacts, ins):
        v = self.fill(a, ins[0].dtype)
        if v is not None:
            return v  # the padded positions
        # no cropping: every input value is in the output
        return exacts[0] if a["mode"] != "constant" or min(a["pads"]) >= 0 else None

    def reference_defect(self, a, ins, opset):
        if any(v < 0 for v in a["pads"]):
            return "onnx.reference's Pad passes negative (cropping) pads to np.pad, which raises"
        return None


def pad_index(d: int, pb: int, pe: int, mode: str) -> list:
    """Source index of each output position along one axis, for the non-constant modes."""
    out = []
    for j in range(-pb, d + pe):
        if mode == "edge":
            out.append(min(max(j, 0), d - 1))
        elif mode == "wrap":
            out.append(j % d)
        else:  # reflect
            m = j % (2 * (d - 1)) if d > 1 else 0
            out.append(m if m < d else 2 * (d - 1) - m)
    return out


OPS = [Pad]
