from __future__ import annotations

import numpy as np

from dlgate.ops.criterion._shared import Criterion


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


OPS = [NegativeLogLikelihoodLoss, NegativeLogLikelihoodLossWeighted]
