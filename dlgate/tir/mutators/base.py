"""What every TIR mutator shares: the context it runs in, and a generator of expressions
that satisfy a hole's constraints (dtype, the variables and buffers in scope) without making
the program's behaviour undefined: integer divisors are non-zero constants, every generated
buffer index is reduced modulo the dimension it indexes, and intrinsics whose domain is
limited get arguments inside it (``sqrt(|x|)``, ``log(|x| + 1)``). Tzer's generator wraps
opaque intrinsics in casts to meet a hole's dtype; so does this one."""
from __future__ import annotations

import random
from dataclasses import dataclass

from dlgate.tir.ast import Scope, dtype_of, is_buffer

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
#: The dtypes the intrinsics mutator moves values through (Tzer's "across dtypes").
LOW_PRECISION = ("float16", "bfloat16", "int8")

#: Unary float intrinsics, each with the domain guard its argument gets (None: any value).
FLOAT_INTRINSICS = (("exp", "neg_abs"), ("tanh", None), ("sigmoid", None), ("sin", None), ("cos", None),
                    ("abs", None), ("floor", None), ("ceil", None), ("round", None), ("trunc", None),
                    ("sqrt", "abs"), ("log", "abs_plus_one"), ("erf", None), ("atan", None))
INT_INTRINSICS = ("popcount",)


@dataclass(frozen=True)
class Context:
    """Where a mutation runs: ``target`` ("llvm" or a GPU target such as "cuda"; thread
    bindings are produced only for a GPU) and ``size`` (the node budget of a generated
    subtree, Tzer's size parameter)."""

    target: str = "llvm"
    size: int = 4

    @property
    def gpu(self) -> bool:
        return self.target.split()[0] in ("cuda", "rocm", "vulkan", "metal", "opencl", "webgpu")


def tirx():
    from tvm import tirx as t  # local: optional compiler, imported where it runs

    return t


def is_float(dtype: str) -> bool:
    return dtype in FLOATS


def is_int(dtype: str) -> bool:
    return dtype in INTS


def const(rng: random.Random, dtype: str, *, nonzero: bool = False):
    """A small constant of ``dtype`` (integers in [-8, 8], floats on a coarse grid in
    [-4, 4], exactly representable in float16 and bfloat16)."""
    t = tirx()
    if dtype == "bool":
        return t.const(bool(rng.getrandbits(1)), "bool")
    if is_float(dtype):
        v = rng.randint(-16, 16) / 4.0
        if nonzero and v == 0.0:
            v = 1.0
        return t.FloatImm(dtype, v)
    lo = 0 if dtype.startswith("uint") else -8
    v = rng.randint(1 if nonzero else lo, 8)
    return t.IntImm(dtype, v)


def cast(e, dtype: str):
    return e if dtype_of(e) == dtype else tirx().Cast(dtype, e)


def scalars(scope: Scope, dtype: str | None = None) -> list:
    """The scalar variables in scope (of ``dtype`` where given), innermost last."""
    return [v for v in scope.vars if not is_buffer(v) and (dtype is None or dtype_of(v) == dtype)]


def readable(scope: Scope) -> list:
    """The buffers a load may read: those in scope with a known shape, and not handles."""
    return [b for b in scope.buffers if len(b.shape) > 0 and str(b.dtype) not in ("handle", "")]


def in_bounds_index(rng: random.Random, scope: Scope, buf) -> list:
    """Indices into ``buf`` that are in bounds whatever the variables hold: a combination of
    variables in scope, each dimension's index taken ``floormod`` its extent (non-negative
    for a positive extent). Only for buffers of constant shape (:func:`constant_shape`)."""
    t = tirx()
    out = []
    for dim in buf.shape:
        idt = dtype_of(dim) or "int32"
        ints = [v for v in scalars(scope) if is_int(dtype_of(v))]
        if ints and rng.random() < 0.8:
            v = cast(rng.choice(ints), idt)
            e = v if rng.random() < 0.5 else t.Add(t.Mul(v, t.IntImm(idt, rng.randint(1, 4))),
                                                   t.IntImm(idt, rng.randint(0, 3)))
            out.append(t.FloorMod(e, dim))
        else:
            out.append(t.IntImm(idt, rng.randint(0, int(dim.value) - 1)))
    return out


def constant_shape(buf) -> bool:
    return all(type(d).__name__ == "IntImm" and int(d.value) > 0 for d in buf.shape)


def loadable(scope: Scope) -> list:
    """The buffers a generated load may read: in scope, of constant shape, numeric."""
    return [b for b in readable(scope) if constant_shape(b) and (is_float(str(b.dtype)) or is_int(str(b.dtype)))]


def load(rng: random.Random, scope: Scope, dtype: str):
    """A load from a :func:`loadable` buffer at an in-bounds index, cast to ``dtype``;
    None where no buffer qualifies."""
    bufs = loadable(scope)
    if not bufs:
        return None
    b = rng.choice(bufs)
    return cast(tirx().BufferLoad(b, in_bounds_index(rng, scope, b)), dtype)


def leaf(rng: random.Random, scope: Scope, dtype: str):
    """A constant, a variable in scope cast to ``dtype``, or a load."""
    r = rng.random()
    if r < 0.35:
        ld = load(rng, scope, dtype)
        if ld is not None:
            return ld
    if r < 0.7 and dtype != "bool":
        vs = [v for v in scalars(scope) if is_int(dtype_of(v)) or is_float(dtype_of(v))]
        if vs and (is_int(dtype) or is_float(dtype)):
            v = rng.choice(vs)
            # an integer variable moved into a narrow type keeps few bits: mask it first
            if is_int(dtype) and is_int(dtype_of(v)):
                v = tirx().FloorMod(v, tirx().IntImm(dtype_of(v), 16))
            return cast(v, dtype)
    return const(rng, dtype)


def unary_intrinsic(rng: random.Random, e, dtype: str):
    """``e`` through a random intrinsic computed in ``dtype``'s family, result in ``dtype``."""
    t = tirx()
    if is_float(dtype):
        name, guard = rng.choice(FLOAT_INTRINSICS)
        x = cast(e, dtype)
        if guard == "neg_abs":
            x = t.Sub(t.FloatImm(dtype, 0.0), t.abs(x))
        elif guard == "abs":
            x = t.abs(x)
        elif guard == "abs_plus_one":
            x = t.Add(t.abs(x), t.FloatImm(dtype, 1.0))
        return getattr(t, name)(x)
    if is_int(dtype):
        return getattr(t, rng.choice(INT_INTRINSICS))(cast(e, dtype))
    return e


def expr(rng: random.Random, scope: Scope, dtype: str, size: int):
    """A generated expression of ``dtype`` with about ``size`` nodes, from the variables and
    buffers in ``scope`` (Tzer's insertion generator)."""
    t = tirx()
    if size <= 1:
        return leaf(rng, scope, dtype)
    if dtype == "bool":
        d = rng.choice(("int32", "float32"))
        a, b = expr(rng, scope, d, size // 2), expr(rng, scope, d, size - 1 - size // 2)
        return getattr(t, rng.choice(("LT", "LE", "GT", "GE", "EQ", "NE")))(a, b)
    r = rng.random()
    if r < 0.2:
        return unary_intrinsic(rng, expr(rng, scope, dtype, size - 1), dtype)
    if r < 0.3:
        c = expr(rng, scope, "bool", max(3, size // 2))
        return t.Select(c, expr(rng, scope, dtype, size // 3 or 1), expr(rng, scope, dtype, size // 3 or 1))
    a = expr(rng, scope, dtype, size // 2)
    b = expr(rng, scope, dtype, size - 1 - size // 2)
    ops = ["Add", "Sub", "Mul", "Min", "Max"]
    if is_int(dtype):
        ops += ["FloorDiv", "FloorMod"]
    else:
        ops += ["Div"]
    op = rng.choice(ops)
    if op in ("FloorDiv", "FloorMod", "Div"):
        b = const(rng, dtype, nonzero=True)
        if is_int(dtype) and dtype.startswith("int"):
            b = t.IntImm(dtype, abs(int(b.value)) or 1)
    return getattr(t, op)(a, b)


def stmt_sites(all_sites: list) -> list:
    """The statement sites a new statement may go before: statements other than blocks and
    the function body's own sequence wrapper."""
    from tvm import s_tir  # local: optional compiler, imported where it runs

    return [s for s in all_sites if s.kind == "stmt" and not isinstance(s.node, (s_tir.SBlock, s_tir.SBlockRealize))
            and not (s.scope.s_tir and not s.scope.in_block)]


def value_sites(all_sites: list, dtypes=None) -> list:
    """The expression sites whose value is data (role ``value``) of a numeric dtype."""
    out = []
    for s in all_sites:
        if s.kind != "expr" or s.role != "value":
            continue
        d = dtype_of(s.node)
        if (is_int(d) or is_float(d)) and (dtypes is None or d in dtypes):
            out.append(s)
    return out


def writable(scope: Scope) -> list:
    """Buffers a new store may write: declared, of constant shape and a numeric dtype."""
    return loadable(scope)
