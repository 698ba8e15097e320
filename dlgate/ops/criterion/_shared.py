"""What the criterion operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops import losses as L
from dlgate.ops.base import INF, OpSpec, TensorType


#: Most targets (elements of the target tensor) a spec writes into its attributes.
MAX_TARGETS = 256
REDUCTIONS = ("none", "sum", "mean")


def _targets(ctx, shape: tuple, c: int, ignore, reduction: str):
    """Nested target lists of ``shape`` with classes in [0, c), some set to ``ignore``;
    for ``mean`` at least one target is not ignored."""
    n = math.prod(shape)
    flat = [ctx.rng.randrange(c) for _ in range(n)]
    if ignore is not None:
        p = ctx.choice((0.2, 0.5, 1.0))
        flat = [ignore if ctx.coin(p) else t for t in flat]
        if reduction == "mean" and all(t == ignore for t in flat):
            flat[ctx.rng.randrange(n)] = ctx.choice([k for k in range(c) if k != ignore])
    return np.asarray(flat, dtype=np.int64).reshape(shape).tolist()


class Criterion(OpSpec):
    """Shared by the loss specs: attributes, shapes and the lowering.

    Not generated: targets that are graph tensors (a target outside ``[0, C)`` other than
    ``ignore_index`` is undefined, and integer graph inputs are drawn around 0 with nothing
    to keep them below C); a ``mean`` whose targets are all ignored (``0 / 0``)."""

    ranks = (2, 3, 4, 5)
    symbolic_ok = False
    dtypes = tuple((t,) for t in dt.FLOATS)
    weighted: ClassVar[bool] = False

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.weighted:
            cls.arity = 2
            cls.dtypes = tuple((t, t) for t in dt.FLOATS)
            cls.schema_inputs = (0, 2)  # input and weight; the targets are a constant

    def _attrs(self, ctx, shape: tuple) -> dict | None:
        c, tshape = shape[1], (shape[0],) + tuple(shape[2:])
        if math.prod(tshape) > MAX_TARGETS:
            return None
        reduction = ctx.choice(REDUCTIONS)
        ignore = None
        kind = ctx.choice(("none", "class", "outside"))
        if kind == "class" and not (reduction == "mean" and c == 1):
            ignore = ctx.rng.randrange(c)
        elif kind == "outside":
            ignore = ctx.choice((-1, -100, c))
        a = {"reduction": reduction, "ignore_index": ignore, "targets": _targets(ctx, tshape, c, ignore, reduction),
             "target_dtype": ctx.choice((dt.INT64, dt.INT64, dt.INT32))}
        a.update(self.extra(ctx))
        return a

    def extra(self, ctx) -> dict:
        return {}

    def sample(self, ctx, ins):
        # too many targets: attributes that ``requires`` rejects
        return self._attrs(ctx, ins[0].shape) or {"reduction": "none", "ignore_index": None, "targets": None}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, (ins[0].shape[1],))  # the weight, one per class

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS:
            return None
        if out.rank == 0:
            r = ctx.rng.randint(2, 4)
            shape = ctx.shape(r, numel_cap=MAX_TARGETS * 4)
            if r > 2:
                shape = (shape[0], ctx.dim(16)) + shape[2:]
            want = ("sum", "mean")
        elif out.rank <= ctx.limits.max_rank - 1:
            shape = (out.shape[0], ctx.dim(16)) + tuple(out.shape[1:])
            want = ("none",)
        else:
            return None
        if math.prod(shape) > ctx.limits.max_elems:
            return None
        for _ in range(4):
            a = self._attrs(ctx, shape)
            if a is None:
                return None
            if a["reduction"] in want:
                break
        else:
            return None
        x = TensorType(out.dtype, shape)
        ins = [x] + ([TensorType(out.dtype, (shape[1],))] if self.weighted else [])
        return ins, a

    def requires(self, ins, a):
        x, t = ins[0].shape, a["targets"]
        if t is None or len(x) < 2:
            return [False]
        t = np.asarray(t)
        ok = [t.shape == (x[0],) + tuple(x[2:]), t.size <= MAX_TARGETS]
        kept = t[t != a["ignore_index"]] if a["ignore_index"] is not None else t.reshape(-1)
        ok += [bool(((kept >= 0) & (kept < x[1])).all())]
        if a["reduction"] == "mean":
            ok.append(kept.size > 0)
        if self.weighted:
            ok.append(tuple(ins[1].shape) == (x[1],))
        return ok

    def infer(self, ins, a):
        x = ins[0]
        shape = (x.shape[0],) + tuple(x.shape[2:]) if a["reduction"] == "none" else ()
        return [x.with_shape(shape)]

    def onnx(self, b, a, xs, ys):
        targets = np.asarray(a["targets"], dtype=dt.NUMPY[a.get("target_dtype", dt.INT64)])
        ins = [xs[0], b.const(targets, hint="target")] + xs[1:]
        b.node(self.onnx_op, ins, ys, reduction=b.opt(a["reduction"], "mean"), ignore_index=a["ignore_index"])

    gaps: ClassVar[tuple] = (
        ("targets as graph tensors", "a target outside [0, C) other than ignore_index is undefined; integer graph "
                                     "inputs cannot be kept in range"),
        ("mean over targets all ignored", "the mean divides 0 by 0: the result is undefined"),
    )

    # -- the reference ----------------------------------------------------------------
    @staticmethod
    def reduce(a, logp, w):
        """The loss of log-probabilities ``logp`` (N, C, d...) and weights ``w`` (or None)."""
        t = torch.tensor(a["targets"], dtype=torch.int64)
        ignore = a["ignore_index"]
        keep = t != ignore if ignore is not None else torch.ones_like(t, dtype=torch.bool)
        tc = torch.where(keep, t, torch.zeros_like(t))
        picked = -torch.gather(logp, 1, tc.unsqueeze(1)).squeeze(1)
        applied = w[tc] if w is not None else torch.ones_like(picked)
        applied = torch.where(keep, applied, torch.zeros_like(applied))
        loss = picked * applied
        if a["reduction"] == "none":
            return loss
        if a["reduction"] == "sum":
            return loss.sum()
        return loss.sum() / applied.sum()

    @staticmethod
    def wide(x):
        """float16 is computed in float32 (as onnxruntime does), then rounded."""
        return x.float() if x.dtype == torch.float16 else x

    def picked_range(self, r: tuple) -> tuple:
        """Bounds on one unweighted loss term for input bounds ``r``."""
        raise NotImplementedError

    def value_range(self, a, ranges, ins):
        if self.weighted:  # weights of either sign
            return None
        lo, hi = self.picked_range(ranges[0])
        if a["reduction"] == "mean":
            return [(lo, hi)]  # a mean of terms
        if a["reduction"] == "none":
            return [(min(lo, 0.0), max(hi, 0.0))]  # a term, or 0 where ignored
        return [(0.0 if lo >= 0 else -INF, 0.0 if hi <= 0 else INF)]  # a sum of terms

    #: mean with weights divides by their sum: positive weights keep it away from 0
    safe = {1: (0.25, 2.0)}

    def losses(self, a, x, w=None):
        if w is not None and a["reduction"] == "mean":
            return [L.gt0(w)]
        return []
