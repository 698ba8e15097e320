from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.linalg._shared import MAX_K, product_bounds, product_span, _small_k, sum_bounds


# -- Einsum ---------------------------------------------------------------------------------
BINARY_EQS = ("ij,jk->ik", "bij,bjk->bik", "bij,bkj->bik", "i,j->ij", "i,i->", "ij,ij->i",
              "ij,jk", "ij,j->i", "bij,jk->bik")
UNARY_EQS = ("ij->ji", "ij->i", "ij->j", "bij->bji", "ijk->kji", "ij->", "ij", "i->i")
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


def _rename(ctx, eq: str) -> str:
    letters = sorted({c for c in eq if c.isalpha()})
    pick = ctx.rng.sample(LETTERS, len(letters))
    table = dict(zip(letters, pick))
    return "".join(table.get(c, c) for c in eq)


OPS = [Einsum, EinsumUnary]
