"""Arithmetic that works on plain ints and on z3 integer terms alike.

Operator specs write their constraints and shape inference once, with these helpers and
the ordinary ``+ - * == <`` operators. Given concrete shapes they evaluate to Python
ints and bools (the fast path); given z3 terms they build z3 expressions (the solver
path). Never branch in Python on a value that may be symbolic: use ``If``/``And``/``Or``.
"""
from __future__ import annotations

from functools import reduce
from typing import Iterable

import z3


def is_sym(x) -> bool:
    return isinstance(x, z3.ExprRef)


def And(*cs):
    syms = []
    for c in _flat(cs):
        if is_sym(c):
            syms.append(c)
        elif not c:
            return False
    if not syms:
        return True
    return syms[0] if len(syms) == 1 else z3.And(*syms)


def Or(*cs):
    syms = []
    for c in _flat(cs):
        if is_sym(c):
            syms.append(c)
        elif c:
            return True
    if not syms:
        return False
    return syms[0] if len(syms) == 1 else z3.Or(*syms)


def Not(c):
    return z3.Not(c) if is_sym(c) else not c


def Implies(a, b):
    return Or(Not(a), b)


def If(c, a, b):
    if is_sym(c):
        return z3.If(c, a, b)
    return a if c else b


def div(a, b):
    """Floor division for non-negative a and positive b (z3's integer division agrees there)."""
    if is_sym(a) or is_sym(b):
        return a / b
    return a // b


def ceildiv(a, b):
    return div(a + b - 1, b)


def mod(a, b):
    if is_sym(a) or is_sym(b):
        return a % b
    return a % b


def max_(a, b):
    return If(a >= b, a, b) if (is_sym(a) or is_sym(b)) else max(a, b)


def min_(a, b):
    return If(a <= b, a, b) if (is_sym(a) or is_sym(b)) else min(a, b)


def prod(xs: Iterable):
    return reduce(lambda p, q: p * q, xs, 1)


def sum_(xs: Iterable):
    return reduce(lambda p, q: p + q, xs, 0)


def broadcastable(*shapes) -> list:
    """Constraints for NumPy-style multidirectional broadcasting of the shapes."""
    out = []
    rank = max(len(s) for s in shapes)
    for k in range(1, rank + 1):
        dims = [s[-k] for s in shapes if len(s) >= k]
        for i in range(len(dims)):
            for j in range(i + 1, len(dims)):
                out.append(Or(dims[i] == dims[j], dims[i] == 1, dims[j] == 1))
    return out


def broadcast(*shapes) -> tuple:
    """The broadcast shape (assuming ``broadcastable`` holds)."""
    rank = max(len(s) for s in shapes)
    res = []
    for k in range(rank, 0, -1):
        dims = [s[-k] for s in shapes if len(s) >= k]
        d = dims[0]
        for e in dims[1:]:
            d = If(d == 1, e, d)
        res.append(d)
    return tuple(res)


def _flat(cs):
    for c in cs:
        if isinstance(c, (list, tuple)):
            yield from _flat(c)
        else:
            yield c
