"""General-purpose insertion (Tzer §3.2): a hole gets a fresh subtree that meets its
constraints. An expression of data gets a generated expression of its dtype; or a new store
of a generated value goes before a statement, into a buffer in scope at an in-bounds index."""
from __future__ import annotations

from dlgate.tir import ast as A
from dlgate.tir.mutators import base as B

NAME = "insert"
FAMILY = "general"


def apply(func, rng, ctx: B.Context):
    sites = A.sites(func)
    t = B.tirx()
    if rng.random() < 0.5:
        vs = B.value_sites(sites)
        if vs:
            s = rng.choice(vs)
            return A.replace(func, s.path, B.expr(rng, s.scope, A.dtype_of(s.node), rng.randint(2, ctx.size + 2)))
    ss = [s for s in B.stmt_sites(sites) if s.path and B.writable(s.scope)]
    if not ss:
        return None
    s = rng.choice(ss)
    buf = rng.choice(B.writable(s.scope))
    dtype = str(buf.dtype)
    store = t.BufferStore(buf, B.expr(rng, s.scope, dtype, rng.randint(1, ctx.size + 1)),
                          B.in_bounds_index(rng, s.scope, buf))
    return A.replace(func, s.path, t.SeqStmt([store, s.node]))


def changed(before: dict, after: dict) -> bool:
    """A different program: a subtree replaced by a fresh one (any size: Tzer's insertion
    ignores what the hole held) or a store added."""
    return after["text"] != before["text"] and (after["nodes"] != before["nodes"] or after["stores"] > before["stores"]
                                                or after["loads"] != before["loads"])
