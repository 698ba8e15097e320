from __future__ import annotations

import numpy as np
import torch
from onnx import helper

from dlgate import dtypes as dt
from dlgate.ops.base import TensorType
from dlgate.ops.sequence._shared import TWO_SIG, Sequence


# -- optionals ----------------------------------------------------------------------------

class OptionalCoalesce(Sequence):
    """``x if x is not None else d``, the way exporters write a ``None``-able tensor: an
    Optional holding ``x`` (its ``type`` attribute sometimes written too) or ``empty``
    (``type`` attribute only, with or without a rank), OptionalHasElement, and an If whose
    then-branch is OptionalGetElement of the optional (an outer-scope value) and whose
    else-branch is ``d``. Outputs: the chosen tensor and the has-element flag. Not generated
    at opset 28 (Optional-28): onnxruntime 1.32 has no kernel for it, and reports float16
    as a type error rather than as not implemented."""

    name = "OptionalCoalesce"
    onnx_op = "Optional"
    onnx_ops = ("OptionalHasElement", "OptionalGetElement", "If")
    min_opset = 15
    max_opset = 27
    arity = 2
    n_outputs = 2
    dtypes = TWO_SIG

    def sample(self, ctx, ins):
        empty = ctx.coin(0.5)
        return {"empty": empty, "typed": empty or ctx.coin(0.3), "dtype": ins[0].dtype,
                "rank": ins[0].rank if ctx.coin(0.5) else None}

    def backward(self, ctx, out):
        return [out, out], self.sample(ctx, [out])

    def requires(self, ins, a):
        return [ins[0].dtype == a["dtype"], tuple(ins[0].shape) == tuple(ins[1].shape),
                a["rank"] is None or ins[0].rank == a["rank"]]

    def infer(self, ins, a):
        return [ins[0], TensorType(dt.BOOL, ())]

    def onnx(self, b, a, xs, ys):
        code = helper.np_dtype_to_tensor_dtype(np.dtype(a["dtype"]))
        tp = None
        if a["typed"]:
            # the element type, and its rank when ``rank`` is given (dims left unknown: they
            # may change with a dynamic input)
            tp = helper.make_tensor_type_proto(code, None if a["rank"] is None else [None] * a["rank"])
        opt = b.node("Optional", [] if a["empty"] else [xs[0]], 1, type=tp)[0]
        b.node("OptionalHasElement", [opt], ys[1:])
        got, kept = b.fresh("got"), b.fresh("default")
        then = helper.make_graph([helper.make_node("OptionalGetElement", [opt], [got], name=b.fresh("then"))],
                                 b.fresh("then"), [], [helper.make_tensor_value_info(got, code, None)])
        other = helper.make_graph([helper.make_node("Identity", [xs[1]], [kept], name=b.fresh("else"))],
                                  b.fresh("else"), [], [helper.make_tensor_value_info(kept, code, None)])
        b.node("If", ys[1:], ys[:1], then_branch=then, else_branch=other)

    def torch(self, a, x, d):
        return (d if a["empty"] else x).clone(), torch.tensor(not a["empty"])

    gaps = (("OptionalGetElement of an empty optional where it runs", "undefined (only in the If branch not taken)"),
            ("opset 28 (Optional-28)", "onnxruntime 1.32 implements no Optional-28 kernel (NOT_IMPLEMENTED), and for "
             "float16 fails with 'Type Error: Type (optional(tensor(float16))) of output arg ... does not match "
             "expected type (optional(tensor(float)))'; the operator's meaning is unchanged from opset 15"),
            ("optionals of sequences", "dlgate graphs carry tensors; the optional tensor is what exporters write"))

    def value_range(self, a, ranges, ins):
        h = 0.0 if a["empty"] else 1.0
        return [ranges[1 if a["empty"] else 0], (h, h)]

    def input_span(self, a, i, span, ins):
        return span if i == (1 if a["empty"] else 0) else None

    def reference_defect(self, a, ins, opset):
        return ("onnx.reference's Optional wraps its input in a list that OptionalGetElement returns as it is "
                "(a list, not the tensor), an empty Optional ([None]) has an element for its OptionalHasElement, "
                "and a 'type' attribute raises KeyError (OnnxType)")


OPS = [OptionalCoalesce]
