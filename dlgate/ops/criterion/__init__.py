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

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("negative_log_likelihood_loss", "softmax_cross_entropy_loss")
