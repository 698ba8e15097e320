from __future__ import annotations

import torch

from dlgate.ops.base import INF
from dlgate.ops.criterion._shared import Criterion


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


OPS = [SoftmaxCrossEntropyLoss, SoftmaxCrossEntropyLossWeighted]
