"""Loss operators: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

The input is ``(N, C, d1, ..., dk)`` (k >= 0); the targets, ``(N, d1, ..., dk)`` class
indices in ``[0, C)`` or ``ignore_index``, are an int64 (sometimes int32) constant chosen in
``sample`` (at most ``MAX_TARGETS`` of them) and written by the lowering. The optional per-class weight is
a graph tensor of shape ``(C,)``: each operator has a spec with it (``...Weighted``) and one
without. Semantics (ONNX text, onnx.reference, onnxruntime and PyTorch agree):

* ``loss[n, d...] = -input[n, c, d...] * weight[c]`` (weight 1 when absent), 0 where the
  target equals ``ignore_index``;
* ``none``: that tensor; ``sum``: its sum; ``mean``: its sum divided by the sum of the
  weights applied (``weight[target]``, 0 for ignored targets; without weights, the number
  of targets not ignored).

SoftmaxCrossEntropyLoss computes the same on ``log(softmax(scores, axis=1))`` and may also
return that tensor (output ``log_prob``).

A mean over targets that are all ignored is ``0 / 0``; ``sample`` keeps at least one target
that is not ignored for ``mean``. ``ignore_index`` is absent, a class (then hit by the
targets naturally and on purpose), or a value outside ``[0, C)`` (-1, -100, C) that some
targets take.
"""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.spec import losses as L
from dlgate.spec.base import INF, OpSpec, TensorType

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
    gaps: ClassVar[tuple] = (
        ("targets as graph tensors", "a target outside [0, C) other than ignore_index is undefined; integer graph "
                                     "inputs cannot be kept in range"),
        ("mean over targets all ignored", "the mean divides 0 by 0: the result is undefined"),
    )
    weighted: ClassVar[bool] = False
    dtypes = tuple((t,) for t in dt.FLOATS)

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

    def onnx(self, b, a, xs, ys):
        targets = np.asarray(a["targets"], dtype=dt.NUMPY[a.get("target_dtype", dt.INT64)])
        ins = [xs[0], b.const(targets, hint="target")] + xs[1:]
        b.node(self.onnx_op, ins, ys, reduction=b.opt(a["reduction"], "mean"), ignore_index=a["ignore_index"])

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

    def input_range(self, a, i):
        # mean with weights divides by their sum: positive weights keep it away from 0
        return (0.25, 2.0) if i == 1 else None

    def losses(self, a, x, w=None):
        if w is not None and a["reduction"] == "mean":
            return [L.gt0(w)]
        return []


class NegativeLogLikelihoodLoss(Criterion):
    """``-input[n, target[n, d...], d...]`` (times the target's weight), reduced; the
    input need not hold log-probabilities."""

    onnx_op = "NegativeLogLikelihoodLoss"

    def picked_range(self, r):
        return (-r[1], -r[0])

    def torch(self, a, x, w=None):
        y = self.reduce(a, self.wide(x), None if w is None else self.wide(w))
        return y.to(x.dtype)

    def reference_defect(self, a, ins, opset):
        t = np.asarray(a["targets"])
        if not self.weighted and a["ignore_index"] == -1 and a["reduction"] == "mean" and (t == -1).any():
            return ("onnx.reference's NegativeLogLikelihoodLoss takes ignore_index -1 for 'absent' when no weight is "
                    "given: its mean divides by every target, ignored ones included (onnxruntime does not)")
        return None


class NegativeLogLikelihoodLossWeighted(NegativeLogLikelihoodLoss):
    """With the optional per-class weight (a graph tensor of shape (C,))."""

    name = "NegativeLogLikelihoodLossWeighted"
    weighted = True


class SoftmaxCrossEntropyLoss(Criterion):
    """The negative log-likelihood of ``log(softmax(scores, axis=1))``; with ``log_prob``
    that tensor is a second output."""

    onnx_op = "SoftmaxCrossEntropyLoss"

    def extra(self, ctx):
        return {"log_prob": ctx.coin(0.4)}

    def infer(self, ins, a):
        out = super().infer(ins, a)
        return out + [ins[0]] if a.get("log_prob") else out

    def torch(self, a, x, w=None):
        logp = torch.log_softmax(self.wide(x), dim=1)
        y = self.reduce(a, logp, None if w is None else self.wide(w)).to(x.dtype)
        return (y, logp.to(x.dtype)) if a.get("log_prob") else y

    def picked_range(self, r):
        return (0.0, INF)  # log-probabilities are <= 0

    def value_range(self, a, ranges, ins):
        out = super().value_range(a, ranges, ins) or [(-INF, INF)]
        return out + [(-INF, 0.0)] if a.get("log_prob") else out


class SoftmaxCrossEntropyLossWeighted(SoftmaxCrossEntropyLoss):
    """With the optional per-class weights (a graph tensor of shape (C,))."""

    name = "SoftmaxCrossEntropyLossWeighted"
    weighted = True


OPS = [NegativeLogLikelihoodLoss, NegativeLogLikelihoodLossWeighted, SoftmaxCrossEntropyLoss,
       SoftmaxCrossEntropyLossWeighted]
