"""Linear algebra: MatMul (NumPy matmul semantics), Gemm, Einsum and Det.

Contracted dimensions are kept small for float16 (``MAX_K``) so its sums stay accurate.
"""
from __future__ import annotations

import math
from typing import ClassVar

import torch

from dlgate import dtypes as dt
from dlgate.spec import sym
from dlgate.spec.base import INF, OpSpec, TensorType
from dlgate.spec.binary import broadcast_partner, mul0, mul_bounds, reduced_partner, sqrt_span

#: Largest contracted (summed-over) dimension for float16; other dtypes only have the
#: generator's dimension cap.
MAX_K = 16


def _small_k(k, dtype):
    return [k <= MAX_K] if dtype == dt.FLOAT16 else []


# -- value bounds of sums of products (shared with the convolutions) -------------------------
def product_bounds(*rs) -> tuple:
    """Bounds of a product of one value from each of ``rs``: a product is linear in each
    factor, so its extremes lie at the corners."""
    out = (1.0, 1.0)
    for r in rs:
        out = mul_bounds(out, r)
    return out


def sum_bounds(p: tuple, m_min: int, m_max: int) -> tuple:
    """Bounds of a sum of m terms within ``p``, m between ``m_min`` and ``m_max`` (an
    empty sum is 0): m terms lie in [m * p[0], m * p[1]], linear in m."""
    return (min(mul0(m_min, p[0]), mul0(m_max, p[0])), max(mul0(m_min, p[1]), mul0(m_max, p[1])))


def plus_bounds(r: tuple, q: tuple) -> tuple:
    """Bounds of ``x + y`` (a side that would be ``inf - inf`` is left unbounded)."""
    lo, hi = r[0] + q[0], r[1] + q[1]
    return (lo if lo == lo else -INF, hi if hi == hi else INF)


# -- MatMul ---------------------------------------------------------------------------------
def product_span(i: int, span: tuple, k: int) -> tuple:
    """A starting range for factor ``i`` of a sum of ``k`` two-factor products meant to
    land in ``span``: each product within span / k."""
    return sqrt_span((span[0] / k, span[1] / k), i)


class MatMul(OpSpec):
    """``numpy.matmul``: batch broadcasting, 1-D operands promoted and their dim removed."""
    keeps_integers = True

    can_overflow = True
    onnx_op = "MatMul"
    arity = 2
    dtypes = tuple((t, t) for t in dt.FLOATS + dt.COMMON_INTS)
    ranks = (1, 2, 3, 4, 5)

    def input_type(self, ctx, i, ins, a, dtype):
        x = ins[0].shape
        k = x[-1]
        maxr = ctx.limits.max_rank
        if len(x) == 1:
            if ctx.coin(0.3):
                return TensorType(dtype, (k,))
            r = ctx.rng.randint(2, maxr)
            batch = tuple(ctx.dim(4) for _ in range(r - 2))
            return TensorType(dtype, batch + (k, ctx.dim(16)))
        if ctx.coin(0.2):
            return TensorType(dtype, (k,))
        batch = broadcast_partner(ctx, x[:-2])[-(maxr - 2):] if maxr > 2 else ()
        return TensorType(dtype, tuple(batch) + (k, ctx.dim(16)))

    def requires(self, ins, a):
        x, y = ins[0].shape, ins[1].shape
        if len(y) == 0:
            return [False]
        kb = y[0] if len(y) == 1 else y[-2]
        out = [x[-1] == kb] + _small_k(x[-1], ins[0].dtype)
        if len(x) >= 2 and len(y) >= 2:
            out += sym.broadcastable(x[:-2], y[:-2])
        return out

    def infer(self, ins, a):
        x, y = ins[0].shape, ins[1].shape
        if len(x) == 1 and len(y) == 1:
            shape = ()
        elif len(x) == 1:
            shape = tuple(y[:-2]) + (y[-1],)
        elif len(y) == 1:
            shape = tuple(x[:-1])
        else:
            shape = sym.broadcast(x[:-2], y[:-2]) + (x[-2], y[-1])
        return [TensorType(ins[0].dtype, shape)]

    def value_range(self, a, ranges, ins):
        # every output is a sum of exactly K products x * y (K: the contracted dim)
        k = ins[0].shape[-1]
        return [sum_bounds(product_bounds(ranges[0], ranges[1]), k, k)]

    def backward(self, ctx, out):
        if out.dtype not in (s[0] for s in self.dtypes):
            return None
        t, s, r, maxr = out.dtype, out.shape, out.rank, ctx.limits.max_rank
        k = ctx.dim(MAX_K)
        forms = []
        if r == 0:
            forms.append("vv")
        if 1 <= r <= maxr - 1:
            forms += ["vm", "mv"]
        if r >= 2:
            forms += ["mm", "mm", "mm"]
        if not forms:
            return None
        f = ctx.choice(forms)
        if f == "vv":
            return [TensorType(t, (k,)), TensorType(t, (k,))], {}
        if f == "vm":
            return [TensorType(t, (k,)), TensorType(t, tuple(s[:-1]) + (k, s[-1]))], {}
        if f == "mv":
            return [TensorType(t, tuple(s) + (k,)), TensorType(t, (k,))], {}
        batch = tuple(s[:-2])
        full = ctx.coin()
        ba = batch if full else reduced_partner(ctx, batch)
        bb = reduced_partner(ctx, batch) if full else batch
        return [TensorType(t, ba + (s[-2], k)), TensorType(t, bb + (k, s[-1]))], {}

    def torch(self, a, x, y):
        return torch.matmul(x, y)

    def input_span(self, a, i, span, ins):
        return product_span(i, span, ins[0].shape[-1])


# -- Gemm -----------------------------------------------------------------------------------
#: Forms of C, unidirectionally broadcastable to (M, N).
C_FORMS = ("scalar", "1", "N", "1N", "M1", "MN", "11")


def _c_shape(form, m, n):
    return {"scalar": (), "1": (1,), "N": (n,), "1N": (1, n), "M1": (m, 1), "MN": (m, n), "11": (1, 1)}[form]


class Gemm(OpSpec):
    """``Y = alpha * A' @ B' + beta * C`` with optional transposes; C broadcast to (M, N)."""

    can_overflow = True
    onnx_op = "Gemm"
    arity = 3
    dtypes = tuple((t, t, t) for t in dt.FLOATS)
    ranks = (2,)

    def _scalar(self, ctx):
        return ctx.choice((1.0, 1.0, 0.5, 2.0, -1.0, ctx.uniform(-2.0, 2.0)))

    def sample(self, ctx, ins):
        a = {"transA": int(ctx.coin()), "transB": int(ctx.coin()), "alpha": self._scalar(ctx)}
        if self.arity == 3:
            a["beta"] = self._scalar(ctx)
        return a

    @staticmethod
    def _mk(ins, a):
        s = ins[0].shape
        return (s[1], s[0]) if a["transA"] else (s[0], s[1])

    def input_type(self, ctx, i, ins, a, dtype):
        m, k = self._mk(ins, a)
        if i == 1:
            n = ctx.dim(16)
            return TensorType(dtype, (n, k) if a["transB"] else (k, n))
        return TensorType(dtype, _c_shape(ctx.choice(C_FORMS), m, self._n(ins, a)))

    def _n(self, ins, a):
        if ins[1].rank != 2:  # a reused B of the wrong rank; requires rejects it
            return 1
        return ins[1].shape[0] if a["transB"] else ins[1].shape[1]

    def requires(self, ins, a):
        m, k = self._mk(ins, a)
        if ins[1].rank != 2:
            return [False]
        kb = ins[1].shape[1] if a["transB"] else ins[1].shape[0]
        out = [k == kb] + _small_k(k, ins[0].dtype)
        if self.arity == 3:
            c, n = ins[2].shape, self._n(ins, a)
            if len(c) > 2:
                return [False]
            out += [sym.Or(d == 1, d == e) for d, e in zip(c[::-1], (n, m))]
        return out

    def infer(self, ins, a):
        m, _ = self._mk(ins, a)
        return [TensorType(ins[0].dtype, (m, self._n(ins, a)))]

    def value_range(self, a, ranges, ins):
        # alpha times a sum of exactly K products, plus beta times one element of C
        k = self._mk(ins, a)[1]
        alpha = (a["alpha"], a["alpha"])
        y = product_bounds(alpha, sum_bounds(product_bounds(ranges[0], ranges[1]), k, k))
        if self.arity == 3:
            y = plus_bounds(y, product_bounds((a["beta"], a["beta"]), ranges[2]))
        return [y]

    def backward(self, ctx, out):
        if out.rank != 2 or out.dtype not in dt.FLOATS:
            return None
        (m, n), t, k = out.shape, out.dtype, ctx.dim(MAX_K)
        a = self.sample(ctx, None)
        ins = [TensorType(t, (k, m) if a["transA"] else (m, k)), TensorType(t, (n, k) if a["transB"] else (k, n))]
        if self.arity == 3:
            ins.append(TensorType(t, _c_shape(ctx.choice(C_FORMS), m, n)))
        return ins, a

    def onnx_attrs(self, a, b):
        out = {"transA": b.opt(a["transA"], 0), "transB": b.opt(a["transB"], 0), "alpha": b.opt(a["alpha"], 1.0)}
        if "beta" in a:
            out["beta"] = b.opt(a["beta"], 1.0)
        return out

    def torch(self, a, x, y, c=None):
        if a["transA"]:
            x = x.t()
        if a["transB"]:
            y = y.t()
        out = torch.matmul(x, y) * a["alpha"]
        if c is not None:
            out = out + c * a["beta"]
        return out


class GemmNoC(Gemm):
    """Gemm with the optional C input omitted."""

    name = "GemmNoC"
    arity = 2
    dtypes = tuple((t, t) for t in dt.FLOATS)


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


def _rename(ctx, eq: str) -> str:
    letters = sorted({c for c in eq if c.isalpha()})
    pick = ctx.rng.sample(LETTERS, len(letters))
    table = dict(zip(letters, pick))
    return "".join(table.get(c, c) for c in eq)


class Einsum(OpSpec):
    """Two-operand Einsum over a fixed set of equation templates (letters renamed)."""
    keeps_integers = True

    can_overflow = True
    onnx_op = "Einsum"
    arity = 2
    dtypes = tuple((t, t) for t in dt.FLOATS)
    eqs = BINARY_EQS
    ranks = _first_ranks(BINARY_EQS)

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

    def onnx_attrs(self, a, b):
        return {"equation": a["equation"]}

    def torch(self, a, *xs):
        return torch.einsum(a["equation"], *xs)

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
    eqs = UNARY_EQS
    ranks = _first_ranks(UNARY_EQS)


# -- Det ------------------------------------------------------------------------------------
#: Largest matrix Det is given, per dtype (see Det).
DET_MAX = {dt.FLOAT32: 4, dt.FLOAT64: 4, dt.FLOAT16: 3}


class Det(OpSpec):
    """Determinants of the square matrices in the last two axes, ``(*, M, M) -> (*)``.

    The reference is computed in float64 and rounded to the input's dtype. Matrices are
    kept small (``DET_MAX``): a determinant computed by LU (or by cofactors) sums M!
    products of M factors, and an M x M matrix with entries of a few units has an absolute
    error of about ``eps * |a|^M``; up to 4 (3 in float16) it stays within the comparison's
    tolerance even for the nearly singular matrices graphs make (Expand, Tile and
    broadcasting repeat rows; Relu zeroes them), and the oracle's perturbation test
    excuses the remaining ill-conditioned ones, which are computed from other operators.
    float16 is generated (onnxruntime computes it; onnx.reference cannot, see
    ``reference_defect``) but only up to 3 x 3, where it stays as accurate as a float16 dot
    product of a few terms."""

    onnx_op = "Det"
    dtypes = tuple((t,) for t in dt.FLOATS)
    ranks = (2, 3, 4, 5)
    gaps: ClassVar[tuple] = (
        ("matrices larger than 4 x 4 (3 x 3 in float16)", "the error of a determinant grows like eps * |a|^M: "
                                                           "beyond the comparison's tolerance"),
    )

    def requires(self, ins, a):
        s = ins[0].shape
        return [s[-1] == s[-2], s[-1] <= DET_MAX[ins[0].dtype]]

    def infer(self, ins, a):
        return [ins[0].with_shape(tuple(ins[0].shape[:-2]))]

    def backward(self, ctx, out):
        if (out.dtype,) not in self.dtypes or out.rank + 2 > ctx.limits.max_rank:
            return None
        m = ctx.rng.randint(1, DET_MAX[out.dtype])
        return [out.with_shape(tuple(out.shape) + (m, m))], {}

    def backward_ranks(self, out):
        return (out.rank + 2,)

    def value_range(self, a, ranges, ins):
        # Hadamard: |det| <= product of the row norms <= (sqrt(M) max|a|)^M
        m = ins[0].shape[-1]
        if sym.is_sym(m):
            return None
        top = max(abs(ranges[0][0]), abs(ranges[0][1]))
        try:
            bound = (math.sqrt(m) * top) ** m if math.isfinite(top) else INF
        except OverflowError:  # beyond float64: no bound
            bound = INF
        return [(-bound, bound)]

    def reference_defect(self, a, ins, opset):
        if ins[0].dtype == dt.FLOAT16:
            return "onnx.reference's Det uses numpy.linalg.det, which refuses float16 (array type float16 is unsupported)"
        return None

    def torch(self, a, x):
        return torch.linalg.det(x.double()).to(x.dtype)


OPS = [MatMul, Gemm, GemmNoC, Einsum, EinsumUnary, Det]
