"""Tensor-compiler-specific thread binding (Tzer §3.3), for GPU targets only: an outermost
loop of constant extent bound to ``blockIdx.x``, or split into ``blockIdx.x`` by
``threadIdx.x`` (with ``i = b * f + x``), or a bound loop's extent re-split or moved to a
virtual thread. A CPU target gets no thread binding: the mutator is not applicable there."""
from __future__ import annotations

from dlgate.tir import ast as A
from dlgate.tir.mutators import base as B
from dlgate.tir.mutators.delete import substitute

NAME = "threads"
FAMILY = "specific"
GPU_ONLY = True

TAGS = ("blockIdx.x", "threadIdx.x", "vthread")


def _bound(t, var, extent, tag, body):
    import tvm  # local: optional compiler, imported where it runs

    d = A.dtype_of(var)
    zero = t.IntImm(d, 0)
    iv = t.IterVar(tvm.ir.Range.from_min_extent(zero, extent), var, 1, tag)  # 1: kThreadIndex
    return t.For(var, zero, extent, t.ForKind.THREAD_BINDING, body, iv, {})


def apply(func, rng, ctx: B.Context):
    if not ctx.gpu:
        return None
    t = B.tirx()
    outer = [s for s in A.sites(func) if isinstance(s.node, t.For) and not s.scope.loops
             and type(s.node.extent).__name__ == "IntImm" and s.node.kind != t.ForKind.THREAD_BINDING]
    if not outer:
        return None
    s = rng.choice(outer)
    n = s.node
    ext = int(n.extent.value)
    d = A.dtype_of(n.loop_var)
    factors = [f for f in (2, 4, 8, 16, 32, 64) if ext % f == 0 and f < ext]
    if factors and rng.random() < 0.7:
        f = rng.choice(factors)
        b, x = t.Var("bx", d), t.Var("tx", d)
        body = substitute(n.body, n.loop_var, t.Add(n.min, t.Add(t.Mul(b, t.IntImm(d, f)), x)), s.scope.enter_loop(n))
        inner_tag = rng.choice(("threadIdx.x", "vthread"))
        return A.replace(func, s.path, _bound(t, b, t.IntImm(d, ext // f), "blockIdx.x",
                                             _bound(t, x, t.IntImm(d, f), inner_tag, body)))
    v = t.Var("bx", d)
    body = substitute(n.body, n.loop_var, t.Add(n.min, v), s.scope.enter_loop(n))
    return A.replace(func, s.path, _bound(t, v, n.extent, rng.choice(("blockIdx.x", "threadIdx.x")), body))


def changed(before: dict, after: dict) -> bool:
    """More thread-bound loops than before."""
    return after["loop_kinds"].get("THREAD_BINDING", 0) > before["loop_kinds"].get("THREAD_BINDING", 0)
