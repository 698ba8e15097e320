from __future__ import annotations

import numpy as np
import torch
from onnx import helper

from dlgate import dtypes as dt
from dlgate.ops.base import TensorType
from dlgate.ops.layout._shared import spell_axis
from dlgate.ops.sequence._shared import (ONE_SIG, TWO_SIG, Sequence, draw_split, pieces, squeezes, torch_concat,
                                         torch_split, write_split)
from dlgate.ops.sequence.split_to_sequence_concat import SplitToSequenceConcat


# -- SequenceMap ---------------------------------------------------------------------------

#: Body operators by element type; the unary ones and the binary ones (with the further input).
#: (No float16 or int64 Relu: onnxruntime 1.32 has no kernel for them in a SequenceMap body,
#: where it answers NOT_IMPLEMENTED or, at opset 18, inlining Relu's function body into
#: the Loop, INVALID_GRAPH "Nodes in a graph must be topologically sorted".)
UNARY_BODY = {"float": ("Abs", "Neg", "Relu", "Identity"), "signed": ("Abs", "Neg", "Relu", "Identity"),
              "float16": ("Abs", "Neg", "Identity"), "int64": ("Abs", "Neg", "Identity"),
              "uint8": ("Abs", "Identity"), "bool": ("Not", "Identity")}
_ARITH = ("Add", "Sub", "Mul", "Max", "Min")
BINARY_BODY = {"float": _ARITH, "signed": _ARITH, "float16": _ARITH, "int64": _ARITH, "uint8": _ARITH,
               "bool": ("And", "Or", "Xor")}
TORCH_BODY = {"Abs": torch.abs, "Neg": torch.neg, "Relu": torch.relu, "Identity": torch.clone,
              "Not": torch.logical_not, "Add": torch.add, "Sub": torch.sub, "Mul": torch.mul,
              "Max": torch.maximum, "Min": torch.minimum, "And": torch.logical_and, "Or": torch.logical_or,
              "Xor": torch.logical_xor}


class SequenceMapUnary(Sequence):
    """``x`` split (sizes, chunks, or an unbind), SequenceMap applying a body graph of one
    element-wise operator (Abs, Neg, Relu, Identity; Not for bool) to every piece, and the
    results put back together (concatenated, or stacked for an unbind) in ``x``'s shape.
    Not generated: sequence-typed further inputs and bodies with several outputs (one
    output and tensor inputs are what exporters write for a per-element map), float16 and
    int64 Relu bodies (onnxruntime 1.32 fails on them inside SequenceMap), ``keepdims`` 0
    with a split input."""

    name = "SequenceMapUnary"
    onnx_op = "SequenceMap"
    onnx_ops = ("SplitToSequence", "ConcatFromSequence")
    schema_inputs = (1,)  # the further inputs' formal parameter V holds tensors
    min_opset = 17
    dtypes = ONE_SIG
    ranks = (1, 2, 3, 4, 5)
    body_ops = UNARY_BODY

    def sample(self, ctx, ins):
        x = ins[0]
        ax = ctx.rng.randrange(x.rank)
        a = draw_split(ctx, x.shape[ax])
        a.update(axis=spell_axis(ctx, ax, x.rank), op=ctx.choice(self.body_ops[kind(x.dtype)]), dtype=x.dtype,
                 swap=ctx.coin(0.3))
        return a

    def backward(self, ctx, out):
        if out.rank == 0 or out.dtype not in [s[0] for s in self.dtypes]:
            return None
        a = self.sample(ctx, [out])
        ins = [out] + [self.input_type(ctx, i, [out], a, out.dtype) for i in range(1, self.arity)]
        return ins, a

    def requires(self, ins, a):
        return [pieces(ins[0].shape, a) is not None, ins[0].dtype == a["dtype"]]

    def infer(self, ins, a):
        return [ins[0]]

    def body(self, b, a) -> "helper.GraphProto":
        """The body graph: one element-wise node on the element (and the further input);
        the pieces' shapes may differ, so the body's types leave shapes out."""
        code = helper.np_dtype_to_tensor_dtype(np.dtype(a["dtype"]))
        e, r = b.fresh("elem"), b.fresh("mapped")
        ins = [helper.make_tensor_value_info(e, code, None)]
        operands = [e]
        for _ in range(self.arity - 1):
            w = b.fresh("extra")
            ins.append(helper.make_tensor_value_info(w, code, None))
            operands = [w, e] if a["swap"] else [e, w]
        node = helper.make_node(a["op"], operands, [r], name=b.fresh("body"))
        return helper.make_graph([node], b.fresh("body"), ins, [helper.make_tensor_value_info(r, code, None)])

    def onnx(self, b, a, xs, ys):
        seq = write_split(b, a, xs[0], a["axis"])
        mapped = b.node("SequenceMap", [seq] + list(xs[1:]), 1, body=self.body(b, a))[0]
        b.node("ConcatFromSequence", [mapped], ys, axis=a["axis"], new_axis=b.opt(int(squeezes(a)), 0))

    def apply(self, a, p, extra):
        fn = TORCH_BODY[a["op"]]
        if not extra:
            return fn(p)
        return fn(extra[0], p) if a["swap"] else fn(p, extra[0])

    def torch(self, a, x, *extra):
        ps = [self.apply(a, p, extra) for p in torch_split(a, x)]
        return torch_concat(ps, a["axis"], int(squeezes(a)))

    can_overflow = True  # Abs, Neg of the most negative signed integer; Add, Mul
    gaps = (("SequenceMap with sequence-typed further inputs or several outputs",
             "one body output and tensor further inputs cover what exporters write for per-element maps"),
            ("SplitToSequence with keepdims 0 and a split input",
             SplitToSequenceConcat.gaps[0][1]),
            ("a float16 or int64 Relu body", "onnxruntime 1.32 answers NOT_IMPLEMENTED or, at opset 18, INVALID_GRAPH "
             "('Nodes in a graph must be topologically sorted', inlining Relu's function body into SequenceMap's "
             "Loop)"))


class SequenceMapBinary(SequenceMapUnary):
    """``SequenceMapUnary`` with a further tensor input ``y`` that the body combines with
    every piece (Add, Sub, Mul, Max, Min; And, Or, Xor for bool; the operands sometimes
    swapped): ``y`` broadcasts to each piece without growing it (a suffix of the piece's
    shape, some dims 1; 1 along the split axis where the pieces differ there)."""

    name = "SequenceMapBinary"
    arity = 2
    dtypes = TWO_SIG
    body_ops = BINARY_BODY

    def input_type(self, ctx, i, ins, a, dtype):
        x = ins[0]
        ps = pieces(x.shape, a)
        if ps is None:
            return TensorType(dtype, ())
        p = ps[0]
        ax = a["axis"] % x.rank
        varies = None if squeezes(a) or len(set(ps)) == 1 else ax
        k = ctx.rng.randint(0, len(p))
        return TensorType(dtype, tuple(1 if (j == varies or ctx.coin(0.3)) else p[j] for j in range(len(p) - k, len(p))))

    def requires(self, ins, a):
        ps = pieces(ins[0].shape, a)
        if ps is None or ins[0].dtype != a["dtype"] or ins[1].dtype != a["dtype"]:
            return [False]
        y = ins[1].shape
        return [len(y) <= len(p) and all(y[-j] in (1, p[-j]) for j in range(1, len(y) + 1)) for p in ps]


def kind(dtype: str) -> str:
    if dtype in (dt.BOOL, dt.UINT8, dt.INT64, dt.FLOAT16):
        return dtype
    return "float" if dt.is_float(dtype) else "signed"


OPS = [SequenceMapUnary, SequenceMapBinary]
