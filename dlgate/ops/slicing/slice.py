from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import IEEE, OpSpec
from dlgate.ops.slicing._shared import _spell_axes


INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)
STEPS = (1, 1, 1, 2, 3, -1, -1, -2)


class Slice(OpSpec):
    """``starts``/``ends`` are clamped ONNX-style; ``axes`` None means the leading axes
    ``0..len(starts)-1``, ``steps`` None means all ones. Empty outputs are not generated."""

    onnx_op = "Slice"
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)

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

    @staticmethod
    def _axes(a, rank):
        axes = a["axes"] if a["axes"] is not None else list(range(len(a["starts"])))
        return [ax % rank for ax in axes]

    @staticmethod
    def _steps(a):
        return a["steps"] if a["steps"] is not None else [1] * len(a["starts"])

    def _out_shape(self, ins, a):
        shape = list(ins[0].shape)
        for ax, s, e, st in zip(self._axes(a, ins[0].rank), a["starts"], a["ends"], self._steps(a)):
            shape[ax] = slice_len(shape[ax], s, e, st)
        return shape

    def requires(self, ins, a):
        return [d >= 1 for d in self._out_shape(ins, a)]

    def infer(self, ins, a):
        return [ins[0].with_shape(self._out_shape(ins, a))]

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

    keeps_range = True
    nonfinite = IEEE
    exact_values = True


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


OPS = [Slice]
