"""Tensor-compiler-specific memory operations (Tzer §3.3): a new load from a buffer in scope
where data flows, a copy between buffers in scope, or a scratch allocation of a chosen
shape and layout (row-major, or column-major strides), filled by its own loop nest and read
where the program computes. Every index is in bounds whatever the variables hold
(:func:`dlgate.tir.mutators.base.in_bounds_index`), and a scratch buffer is read only after
every element is written."""
from __future__ import annotations

from dlgate.tir import ast as A
from dlgate.tir.mutators import base as B

NAME = "memory"
FAMILY = "specific"


def apply(func, rng, ctx: B.Context):
    t = B.tirx()
    sites = A.sites(func)
    r = rng.random()
    values = [s for s in B.value_sites(sites) if B.loadable(s.scope)]
    if values and r < 0.35:
        s = rng.choice(values)
        d = A.dtype_of(s.node)
        return A.replace(func, s.path, _combine(t, rng, s.node, B.load(rng, s.scope, d), d))
    stmts = [s for s in B.stmt_sites(sites) if s.path and B.writable(s.scope)
             and not isinstance(s.node, (t.Bind, t.AllocBuffer, t.DeclBuffer))]
    if stmts and (r < 0.6 or func_is_s_tir(func)):
        s = rng.choice(stmts)
        dst = rng.choice(B.writable(s.scope))
        src = B.load(rng, s.scope, str(dst.dtype))
        if src is None:
            return None
        return A.replace(func, s.path, t.SeqStmt([t.BufferStore(dst, src, B.in_bounds_index(rng, s.scope, dst)), s.node]))
    if func_is_s_tir(func):
        return None
    # a scratch buffer before a statement that holds data to combine it with
    holders = [s for s in B.stmt_sites(sites) if s.path and not isinstance(s.node, (t.Bind, t.AllocBuffer, t.DeclBuffer))
               and any(v.path[:len(s.path)] == s.path for v in values)]
    if not holders:
        return None
    s = rng.choice(holders)
    inner = [v for v in values if v.path[:len(s.path)] == s.path]
    v = rng.choice(inner)
    d = rng.choice([A.dtype_of(v.node), "float32", "int32", "float16", "int8"])
    shape = [rng.choice((1, 2, 3, 4, 8))] if rng.random() < 0.5 else [rng.choice((2, 3, 4)), rng.choice((2, 4))]
    strides = None
    if len(shape) == 2 and rng.random() < 0.5:  # column-major
        strides = [t.IntImm("int32", 1), t.IntImm("int32", shape[0])]
    buf = t.decl_buffer(shape, d, name="scratch", strides=strides)
    fill_vars = [t.Var(f"f{k}", "int32") for k in range(len(shape))]
    fill_scope = s.scope.add_vars(*fill_vars)
    fill = t.BufferStore(buf, B.expr(rng, fill_scope, d, rng.randint(1, ctx.size)), fill_vars)
    for fv, ext in reversed(list(zip(fill_vars, shape))):
        fill = t.For(fv, t.IntImm("int32", 0), t.IntImm("int32", ext), t.ForKind.SERIAL, fill)
    used = A.replace(_Holder(s.node), v.path[len(s.path):],
                     _combine(t, rng, v.node, B.cast(t.BufferLoad(buf, B.in_bounds_index(rng, v.scope, buf)),
                                                     A.dtype_of(v.node)), A.dtype_of(v.node)))
    return A.replace(func, s.path, t.SeqStmt([t.AllocBuffer(buf), fill, used.body]))


def _combine(t, rng, old, new, dtype):
    """``old`` and ``new`` combined by an operator of ``dtype`` (the old data still flows)."""
    return getattr(t, rng.choice(("Add", "Sub", "Max", "Min")))(old, new)


def func_is_s_tir(func) -> bool:
    return bool(func.attrs is not None and "s_tir" in func.attrs and func.attrs["s_tir"])


class _Holder:
    """A statement to rewrite as if it were a function body."""

    def __init__(self, body):
        self.body, self.params, self.attrs = body, [], None

    def with_body(self, body):
        return _Holder(body)


def changed(before: dict, after: dict) -> bool:
    """More loads, stores or allocations than before."""
    return (after["loads"], after["stores"], after["allocs"]) != (before["loads"], before["stores"], before["allocs"]) \
        and after["loads"] + after["stores"] + after["allocs"] > before["loads"] + before["stores"] + before["allocs"]
