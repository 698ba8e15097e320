"""Slice and Pad: per-axis windows cut out of, or grown around, a tensor.

Both take their configuration (starts/ends/axes/steps, pads/constant_value/axes) as ONNX
tensor inputs; here they are attributes emitted as constants. ``sample``/``requires``/
``infer`` follow ONNX's clamping and padding rules with :mod:`dlgate.spec.sym`, so they
hold on z3 terms; ``backward`` inverts them directly. The PyTorch side uses plain index
arithmetic (``index_select``): PyTorch slicing rejects negative steps and its reflect/
replicate padding only covers the trailing 1-3 dims.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from dlgate import dtypes as dt
from dlgate.spec import sym
from dlgate.spec.base import IEEE, OpSpec

INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)
STEPS = (1, 1, 1, 2, 3, -1, -1, -2)
#: Negative (cropping) pads in constant mode, where cropping and padding commute. In the
#: other modes they are ambiguous (onnxruntime crops after reflect/edge padding but before
#: wrap padding), so those keep non-negative pads. onnx.reference's Pad hands negative pads
#: to np.pad, which raises: see ``Pad.reference_defect``.
NEGATIVE_PADS = True


def _clamp(v, lo, hi):
    return sym.max_(lo, sym.min_(v, hi))


def slice_bounds(d, s, e, st):
    """ONNX Slice's normalized (start, end) for one axis of size d."""
    s = sym.If(s < 0, s + d, s)
    e = sym.If(e < 0, e + d, e)
    if st > 0:
        return _clamp(s, 0, d), _clamp(e, 0, d)
    return _clamp(s, 0, d - 1), _clamp(e, -1, d - 1)


def slice_len(d, s, e, st):
    s, e = slice_bounds(d, s, e, st)
    if st > 0:
        return sym.If(e > s, sym.div(e - s + st - 1, st), 0)
    return sym.If(s > e, sym.div(s - e - st - 1, -st), 0)


def _spell_range(ctx, d: int, ns: int, ne: int, st: int):
    """Spell the normalized window [ns, ne) of an axis of size d as ONNX starts/ends,
    sometimes negatively, sometimes out of range (clamped)."""
    if st > 0:
        s_opts = [ns, ns - d] + ([-d - ctx.rng.randint(1, 3)] if ns == 0 else [])
        e_opts = [ne] + ([ne - d] if ne < d else [INT64_MAX, d + ctx.rng.randint(1, 3)])
    else:
        s_opts = [ns, ns - d] + ([INT64_MAX, d + ctx.rng.randint(0, 3)] if ns == d - 1 else [])
        e_opts = [ne, ne - d] if ne >= 0 else [INT64_MIN, -d - ctx.rng.randint(1, 3)]
    return ctx.choice(s_opts), ctx.choice(e_opts)


def _spell_axes(ctx, axes: list, rank: int) -> list:
    axes = list(axes)
    if ctx.coin(0.3):
        ctx.rng.shuffle(axes)
    return [ax - rank if ctx.coin(0.3) else ax for ax in axes]


class Slice(OpSpec):
    """``starts``/``ends`` are clamped ONNX-style; ``axes`` None means the leading axes
    ``0..len(starts)-1``, ``steps`` None means all ones. Empty outputs are not generated."""

    keeps_range = True
    nonfinite = IEEE
    onnx_op = "Slice"
    exact_values = True
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)

    @staticmethod
    def _axes(a, rank):
        axes = a["axes"] if a["axes"] is not None else list(range(len(a["starts"])))
        return [ax % rank for ax in axes]

    @staticmethod
    def _steps(a):
        return a["steps"] if a["steps"] is not None else [1] * len(a["starts"])

    def sample(self, ctx, ins):
        shape, rank = ins[0].shape, ins[0].rank
        lead = ctx.coin(0.3)
        axes = list(range(ctx.rng.randint(1, rank))) if lead else ctx.axes(rank)
        steps = [ctx.choice(STEPS) for _ in axes]
        starts, ends = [], []
        for ax, st in zip(axes, steps):
            d = shape[ax]
            if ctx.symbolic:
                s, e = ctx.int(-2 * ctx.limits.max_dim, 2 * ctx.limits.max_dim), ctx.int(-2 * ctx.limits.max_dim, 2 * ctx.limits.max_dim)
            else:
                ns = ctx.rng.randint(0, d - 1)
                ne = ctx.rng.randint(ns + 1, d) if st > 0 else ctx.rng.randint(-1, ns - 1)
                if st < 0 and ns == 0:
                    st = steps[len(starts)] = -st  # a window needs ns > ne for negative steps
                    ne = ctx.rng.randint(1, d)
                s, e = _spell_range(ctx, d, ns, ne, st)
            starts.append(s)
            ends.append(e)
        if not ctx.symbolic and ctx.degenerate_draw():
            # the full range with step 1 (spelled exactly, or clamped from beyond the ends)
            steps = [1] * len(axes)
            starts, ends = [list(x) for x in zip(*[_spell_range(ctx, shape[ax], 0, shape[ax], 1) for ax in axes])]
        return self._attrs(ctx, axes, starts, ends, steps, rank, lead)

    @staticmethod
    def _attrs(ctx, axes, starts, ends, steps, rank, lead):
        if lead and ctx.coin(0.6):
            spelled = None
        else:
            order = list(range(len(axes)))
            spelled = _spell_axes(ctx, axes, rank)
            # keep starts/ends/steps aligned with a shuffled axes list
            pos = {ax: i for i, ax in enumerate(axes)}
            order = [pos[ax % rank] for ax in spelled]
            starts, ends, steps = [starts[i] for i in order], [ends[i] for i in order], [steps[i] for i in order]
        if all(st == 1 for st in steps) and ctx.coin(0.5):
            steps = None
        return {"starts": starts, "ends": ends, "axes": spelled, "steps": steps}

    def _out_shape(self, ins, a):
        shape = list(ins[0].shape)
        for ax, s, e, st in zip(self._axes(a, ins[0].rank), a["starts"], a["ends"], self._steps(a)):
            shape[ax] = slice_len(shape[ax], s, e, st)
        return shape

    def requires(self, ins, a):
        return [d >= 1 for d in self._out_shape(ins, a)]

    def infer(self, ins, a):
        return [ins[0].with_shape(self._out_shape(ins, a))]

    def backward(self, ctx, out):
        rank = out.rank
        if rank < 1:
            return None
        lead = ctx.coin(0.3)
        axes = list(range(ctx.rng.randint(1, rank))) if lead else ctx.axes(rank)
        budget = ctx.limits.max_elems // max(1, out.numel)
        steps, starts, ends, shape = [], [], [], list(out.shape)
        for ax in axes:
            n = out.shape[ax]
            st = ctx.choice(STEPS)
            grow = ctx.rng.randint(0, 3)
            if ((n - 1) * abs(st) + 1 + grow) > budget * n:
                st, grow = (1 if st > 0 else -1), 0
            d = (n - 1) * abs(st) + 1 + grow
            budget = max(1, budget * n // d)
            if st > 0:
                ns = ctx.rng.randint(0, d - ((n - 1) * st + 1))
                ne = ctx.rng.randint(ns + (n - 1) * st + 1, min(d, ns + n * st))
            else:
                k = -st
                ns = ctx.rng.randint((n - 1) * k, d - 1)
                ne = ctx.rng.randint(max(-1, ns - n * k), ns - (n - 1) * k - 1)
            s, e = _spell_range(ctx, d, ns, ne, st)
            steps.append(st)
            starts.append(s)
            ends.append(e)
            shape[ax] = d
        return [out.with_shape(shape)], self._attrs(ctx, axes, starts, ends, steps, rank, lead)

    def onnx(self, b, a, xs, ys):
        ins = [xs[0], b.ints(a["starts"]), b.ints(a["ends"])]
        if a["axes"] is not None or a["steps"] is not None:
            ins.append(b.ints(a["axes"]) if a["axes"] is not None else "")
        if a["steps"] is not None:
            ins.append(b.ints(a["steps"]))
        b.node("Slice", ins, ys)

    def torch(self, a, x):
        for ax, s, e, st in zip(self._axes(a, x.dim()), a["starts"], a["ends"], self._steps(a)):
            s, e = slice_bounds(x.shape[ax], s, e, st)
            idx = torch.arange(s, e, st, dtype=torch.int64)
            x = x.index_select(ax, idx)
        return x


# -- Pad ----------------------------------------------------------------------------------

PAD_MODES = ("constant", "constant", "reflect", "edge", "wrap")


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


class Pad(OpSpec):
    """Modes constant (pads may be negative, i.e. cropping keeping at least one element),
    reflect (0 <= pad < dim), edge, and wrap (opset 19+; pads beyond the dim repeat). ``value`` is
    the optional constant_value input; ``axes`` the optional axes input of opset 18+
    (without it, or below opset 18, the pads of every axis are written)."""

    nonfinite = IEEE
    onnx_op = "Pad"
    exact_values = True
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


OPS = [Slice, Pad]
