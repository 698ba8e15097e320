from __future__ import annotations

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.linalg._shared import MAX_K, product_bounds, product_span, _small_k, sum_bounds


# -- Einsum ---------------------------------------------------------------------------------
BINARY_EQS = ("ij,jk->ik", "bij,bjk->bik", "bij,bkj->bik", "i,j->ij", "i,i->", "ij,ij->i",
              "ij,jk", "ij,j->i", "bij,jk->bik")
#: One operand: transposes, reductions, and (``ijk->ki``, ``ijk->kj``) a reduction whose kept
#: labels come out permuted, which onnxruntime's lone-operand path once finalized with the
#: unreduced operand's axis map (``ort-einsum-reduce-transpose`` in the replay set).
UNARY_EQS = ("ij->ji", "ij->i", "ij->j", "bij->bji", "ijk->kji", "ij->", "ij", "i->i", "ijk->ki", "ijk->kj")
#: A graph operand and a constant whose one label of its own (the last) has size 0 and is
#: summed out: every output element is an empty sum, 0.
EMPTY_EQS = ("ij,jz->ij", "ij,z->ij", "ij,jz->ji", "ij,iz->i", "ij,jz->j", "i,iz->i", "bij,jz->bij",
             "bij,bz->bji")
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _parse(eq: str):
    lhs, _, rhs = eq.partition("->")
    ops = lhs.split(",")
    if "->" not in eq:  # implicit mode: letters seen once, in alphabetical order
        rhs = "".join(sorted(c for c in set(lhs) if c.isalpha() and lhs.count(c) == 1))
    return ops, rhs


def _first_ranks(eqs) -> tuple:
    return tuple(sorted({len(_parse(e)[0][0]) for e in eqs}))


class Einsum(OpSpec):
    """Two-operand Einsum over a fixed set of equation templates (letters renamed)."""
    onnx_op = "Einsum"
    arity = 2
    dtypes = tuple((t, t) for t in dt.FLOATS)
    ranks = _first_ranks(BINARY_EQS)
    eqs = BINARY_EQS

    def sample(self, ctx, ins):
        cands = [e for e in self.eqs if len(_parse(e)[0][0]) == ins[0].rank]
        return {"equation": _rename(ctx, ctx.choice(cands))}

    def _bind(self, ins, a):
        ops, _ = _parse(a["equation"])
        env = {}
        for op, t in zip(ops, ins):
            for c, d in zip(op, t.shape):
                env.setdefault(c, d)
        return env

    def input_type(self, ctx, i, ins, a, dtype):
        ops, _ = _parse(a["equation"])
        env = self._bind(ins, a)
        for c in ops[i]:
            if c not in env:
                env[c] = ctx.dim(16)
        return TensorType(dtype, tuple(env[c] for c in ops[i]))

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS:
            return None
        cands = [e for e in self.eqs if len(_parse(e)[1]) == out.rank]
        if not cands:
            return None
        eq = _rename(ctx, ctx.choice(cands))
        ops, rhs = _parse(eq)
        env = dict(zip(rhs, out.shape))
        for op in ops:
            for c in op:
                if c not in env:
                    env[c] = ctx.dim(MAX_K)
        return [TensorType(out.dtype, tuple(env[c] for c in op)) for op in ops], {"equation": eq}

    def requires(self, ins, a):
        ops, rhs = _parse(a["equation"])
        env, out = self._bind(ins, a), []
        for op, t in zip(ops, ins):
            if len(op) != t.rank:
                return [False]
            out += [d == env[c] for c, d in zip(op, t.shape)]
        out += [q for c in env if c not in rhs for q in _small_k(env[c], ins[0].dtype)]
        return out

    def infer(self, ins, a):
        _, rhs = _parse(a["equation"])
        env = self._bind(ins, a)
        return [TensorType(ins[0].dtype, tuple(env[c] for c in rhs))]

    def onnx_attrs(self, a, b):
        return {"equation": a["equation"]}

    def torch(self, a, *xs):
        return torch.einsum(a["equation"], *xs)

    keeps_integers = True

    can_overflow = True

    def _terms(self, a, ins) -> int:
        """How many products each output sums: the product of the summed labels' sizes."""
        _, rhs = _parse(a["equation"])
        return sym.prod(d for c, d in self._bind(ins, a).items() if c not in rhs)

    def value_range(self, a, ranges, ins):
        # every output sums exactly K products of one element per operand (K = 1, a plain
        # product or a copy, when no label is summed)
        k = self._terms(a, ins)
        return [sum_bounds(product_bounds(*ranges[:self.arity]), k, k)]

    def exact(self, a, exacts, ins):
        # a one-operand Einsum that sums nothing, with distinct labels, permutes its input
        ops, _ = _parse(a["equation"])
        if self.arity == 1 and exacts[0] is not None and len(set(ops[0])) == len(ops[0]) \
                and self._terms(a, ins) == 1:
            return exacts[0]
        return None

    def input_span(self, a, i, span, ins):
        k = self._terms(a, ins)
        if self.arity == 1:
            return (span[0] / k, span[1] / k)  # a sum of k elements (or a copy, k = 1)
        return product_span(i, span, k)


class EinsumUnary(Einsum):
    """One-operand Einsum: transposes and reductions."""

    name = "EinsumUnary"
    arity = 1
    dtypes = tuple((t,) for t in dt.FLOATS)
    ranks = _first_ranks(UNARY_EQS)
    eqs = UNARY_EQS


class EinsumEmpty(Einsum):
    """Einsum of a graph tensor and a constant operand with a zero-size axis the equation
    sums out (``ij,jz->ij`` with z = 0): the result is zeros of the graph operand's kept
    labels. Kernels special-case empty operands (onnxruntime's CPU Einsum once ran its
    MatMul and ReduceSum helpers on the empty buffers and crashed, ``ort-einsum-empty`` in
    the replay set), so it is a degenerate value of Einsum: drawn in the degenerate regime,
    never in the ordinary stream. The constant's shape and type are attributes (the
    lowering writes it), checked against the graph operand."""

    name = "EinsumEmpty"
    arity = 1
    dtypes = tuple((t,) for t in dt.FLOATS)
    ranks = _first_ranks(EMPTY_EQS)
    eqs = EMPTY_EQS
    degenerate_only = True
    symbolic_ok = False
    value_inputs = ()  # the graph operand's values never reach the output
    can_overflow = False

    def sample(self, ctx, ins):
        cands = [e for e in self.eqs if len(_parse(e)[0][0]) == ins[0].rank]
        eq = _rename(ctx, ctx.choice(cands))
        return {"equation": eq, "dtype": ins[0].dtype, "empty": _empty_shape(eq, ins[0].shape)}

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS:
            return None
        cands = [e for e in self.eqs if len(_parse(e)[1]) == out.rank]
        if not cands:
            return None
        eq = _rename(ctx, ctx.choice(cands))
        ops, rhs = _parse(eq)
        env = dict(zip(rhs, out.shape))
        shape = tuple(env[c] if c in env else ctx.dim(MAX_K) for c in ops[0])
        return [TensorType(out.dtype, shape)], {"equation": eq, "dtype": out.dtype, "empty": _empty_shape(eq, shape)}

    def requires(self, ins, a):
        ops, _ = _parse(a["equation"])
        if len(ops) != 2 or len(ops[0]) != ins[0].rank or a["dtype"] != ins[0].dtype:
            return [False]
        return [tuple(a["empty"]) == _empty_shape(a["equation"], ins[0].shape)]

    def onnx(self, b, a, xs, ys):
        e = b.const(np.zeros(tuple(a["empty"]), dtype=dt.NUMPY[a["dtype"]]), hint="empty")
        b.node("Einsum", [xs[0], e], ys, equation=a["equation"])

    def torch(self, a, x):
        return torch.einsum(a["equation"], x, torch.zeros(tuple(a["empty"]), dtype=x.dtype))

    def value_range(self, a, ranges, ins):
        return [(0.0, 0.0)]

    def exact(self, a, exacts, ins):
        return 0.0

    def input_span(self, a, i, span, ins):
        return None


def _empty_shape(eq: str, xshape: tuple) -> tuple:
    """The constant operand's shape: the graph operand's size for a label they share, 0 for
    the label of its own."""
    ops, _ = _parse(eq)
    env = dict(zip(ops[0], xshape))
    return tuple(env.get(c, 0) for c in ops[1])


def _rename(ctx, eq: str) -> str:
    letters = sorted({c for c in eq if c.isalpha()})
    pick = ctx.rng.sample(LETTERS, len(letters))
    table = dict(zip(letters, pick))
    return "".join(table.get(c, c) for c in eq)


OPS = [Einsum, EinsumUnary, EinsumEmpty]
