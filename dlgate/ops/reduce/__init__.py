"""Reductions (ReduceSum, ReduceMax, ...) and ArgMax/ArgMin.

Attributes of the Reduce* operators: ``keepdims`` (0/1) and ``axes``, a list of distinct
axes (some spelled negatively); ``axes`` absent means "reduce over every axis" (ONNX's
behaviour when the axes are omitted and ``noop_with_empty_axes`` is 0). The axes are an
attribute before the opset where they became an input (ReduceSum: 13, the others: 18) and
a constant int64 input from then on; the lowering picks the spelling from ``b.opset``.

Every shape choice depends only on the (concrete) rank, so ``sample``/``infer`` are the
same on concrete and symbolic contexts; ``backward`` inverts them directly (inserting
reduced dims of random size), so z3 is only a fallback.
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_l1", "reduce_l2",
             "reduce_log_sum_exp", "reduce_sum_square", "reduce_log_sum", "arg_max", "arg_min")
