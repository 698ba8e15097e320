"""Tensor-compiler-specific loop nesting (Tzer §3.3): a loop's kind (serial, parallel,
vectorized, unrolled) and its annotations (``pragma_auto_unroll_max_step``,
``pragma_unroll_explicit``, ``pragma_loop_partition_hint``), a constant-extent loop split into
two nested loops whose variables rebuild the old index (``i = o * f + k``), or a statement
wrapped in a new loop of constant or variable extent. Kinds that TVM rejects outright
(parallel inside or around parallel, vectorizing a symbolic extent) are not drawn."""
from __future__ import annotations

from dlgate.tir import ast as A
from dlgate.tir.mutators import base as B
from dlgate.tir.mutators.delete import substitute

NAME = "loop"
FAMILY = "specific"

ANNOTATIONS = (("pragma_auto_unroll_max_step", (0, 4, 16, 64)), ("pragma_unroll_explicit", (0, 1)),
               ("pragma_loop_partition_hint", (0, 1)))


def _kinds(t, s, n) -> list:
    outer = {int(lp.kind) for lp in s.scope.loops}
    const = type(n.extent).__name__ == "IntImm"
    kinds = [t.ForKind.SERIAL, t.ForKind.UNROLLED]
    if int(t.ForKind.PARALLEL) not in outer and int(t.ForKind.VECTORIZED) not in outer \
            and not _has_loop(n.body, t.ForKind.PARALLEL):
        # TVM's CPU code generation refuses a parallel loop in a parallel loop ("Nested
        # parallel loop is not supported by threadpool"), whichever of the two was made so
        kinds.append(t.ForKind.PARALLEL)
    if const and 1 < int(n.extent.value) <= 64:
        kinds.append(t.ForKind.VECTORIZED)
    return [k for k in kinds if int(k) != int(n.kind)]


def _new_for(t, var, extent, kind, body, annotations=None):
    return t.For(var, B.cast(t.IntImm("int32", 0), A.dtype_of(var)), extent, kind, body, None, annotations or {})


def apply(func, rng, ctx: B.Context):
    t = B.tirx()
    sites = A.sites(func)
    loops = [s for s in sites if isinstance(s.node, t.For) and s.node.kind != t.ForKind.THREAD_BINDING]
    r = rng.random()
    if loops and r < 0.35:
        s = rng.choice(loops)
        n = s.node
        kinds = _kinds(t, s, n)
        if kinds:
            return A.replace(func, s.path, t.For(n.loop_var, n.min, n.extent, rng.choice(kinds), n.body,
                                                 None, n.annotations, n.step))
    if loops and r < 0.55:
        s = rng.choice(loops)
        n = s.node
        key, values = rng.choice(ANNOTATIONS)
        ann = {k: v for k, v in n.annotations.items()}
        ann[key] = rng.choice(values)
        return A.replace(func, s.path, t.For(n.loop_var, n.min, n.extent, n.kind, n.body, None, ann, n.step))
    splittable = [s for s in loops if type(s.node.extent).__name__ == "IntImm"
                  and _factors(int(s.node.extent.value)) and s.node.step is None]
    if splittable and r < 0.8:
        s = rng.choice(splittable)
        n = s.node
        ext = int(n.extent.value)
        f = rng.choice(_factors(ext))
        d = A.dtype_of(n.loop_var)
        o, k = t.Var(f"{n.loop_var.name}_o", d), t.Var(f"{n.loop_var.name}_i", d)
        index = t.Add(n.min, t.Add(t.Mul(o, t.IntImm(d, f)), k))
        body = substitute(n.body, n.loop_var, index, s.scope.enter_loop(n))
        inner_kind = rng.choice([t.ForKind.SERIAL, t.ForKind.UNROLLED] + (
            [t.ForKind.VECTORIZED] if f <= 64 and not _has_loop(body) else []))
        inner = _new_for(t, k, t.IntImm(d, f), inner_kind, body)
        return A.replace(func, s.path, _new_for(t, o, t.IntImm(d, ext // f), n.kind, inner, dict(n.annotations.items())))
    stmts = [s for s in B.stmt_sites(sites) if s.path and not isinstance(s.node, (t.Bind, t.AllocBuffer, t.DeclBuffer))]
    if not stmts:
        return None
    s = rng.choice(stmts)
    w = t.Var("w", "int32")
    params = [v for v in B.scalars(s.scope, "int32")]
    if params and rng.random() < 0.5:  # a variable extent: TVM cannot unroll or vectorize it
        extent = t.Add(t.FloorMod(rng.choice(params), t.IntImm("int32", 3)), t.IntImm("int32", 1))
        kind = t.ForKind.SERIAL
    else:
        extent = t.IntImm("int32", rng.randint(1, 4))
        kind = rng.choice([t.ForKind.SERIAL, t.ForKind.UNROLLED])
    return A.replace(func, s.path, _new_for(t, w, extent, kind, s.node))


def _factors(n: int) -> list:
    return [f for f in (2, 3, 4, 8, 16) if n % f == 0 and f < n]


def _has_loop(stmt, kind=None) -> bool:
    """Whether ``stmt`` holds a loop (of ``kind``, where given)."""
    t = B.tirx()
    return any(isinstance(s.node, t.For) and (kind is None or int(s.node.kind) == int(kind))
               for s in A.sites(_Holder(stmt)))


class _Holder:
    """A body to walk as if it were a function's: no parameters."""

    def __init__(self, body):
        self.body, self.params, self.attrs = body, [], None


def changed(before: dict, after: dict) -> bool:
    """The loops differ: their number, kinds or annotations."""
    return (after["loops"], after["loop_kinds"], after["annotations"]) != \
        (before["loops"], before["loop_kinds"], before["annotations"])
