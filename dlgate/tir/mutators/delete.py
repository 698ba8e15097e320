"""General-purpose deletion (Tzer §3.2): a node is replaced by one of its children that meets
the same constraints: an operator by an operand of its dtype, a conditional by its branch,
a loop by its body at the loop's first iteration, a statement of a sequence by nothing."""
from __future__ import annotations

from dlgate.tir import ast as A
from dlgate.tir.mutators import base as B

NAME = "delete"
FAMILY = "general"


def substitute(node, var, value, scope):
    """``node`` with every use of ``var`` replaced by ``value``."""
    sites = [s for s in _sites_of(node, scope) if s.kind == "expr" and type(s.node).__name__ == "Var"
             and s.node.same_as(var)]
    for s in sorted(sites, key=lambda s: s.path, reverse=True):
        node = _replace_in(node, scope, s.path, value)
    return node


def _sites_of(node, scope):
    out = []

    def go(n, sc, path):
        out.append(A.Site(path, n, "expr" if not _is_stmt(n) else "stmt", sc))
        for k, (c, _, cs) in enumerate(A.children(n, sc)):
            go(c, cs, path + (k,))

    go(node, scope, ())
    return out


def _replace_in(node, scope, path, new):
    if not path:
        return new
    kids = A.children(node, scope)
    vals = [c for c, _, _ in kids]
    vals[path[0]] = _replace_in(kids[path[0]][0], kids[path[0]][2], path[1:], new)
    return A.rebuild(node, vals)


def _is_stmt(n) -> bool:
    from tvm import s_tir, tirx  # local: optional compiler, imported where it runs

    return isinstance(n, (tirx.Stmt, s_tir.SBlock))


def apply(func, rng, ctx: B.Context):
    from tvm import s_tir, tirx  # local: optional compiler, imported where it runs

    options = []
    for s in A.sites(func):
        n, d = s.node, A.dtype_of(s.node)
        if s.kind == "expr" and s.role == "value":
            kids = [c for c, _, _ in A.children(n, s.scope) if A.dtype_of(c) == d]
            if kids:
                options.append((s, kids))
        elif isinstance(n, tirx.IfThenElse) and not s.scope.s_tir:
            options.append((s, [n.then_case] + ([n.else_case] if n.else_case is not None else [])))
        elif isinstance(n, tirx.For) and not s.scope.s_tir and n.kind != tirx.ForKind.THREAD_BINDING:
            options.append((s, [substitute(n.body, n.loop_var, n.min, s.scope.enter_loop(n))]))
        elif isinstance(s.parent, tirx.SeqStmt) and not isinstance(n, (tirx.Bind, tirx.AllocBuffer, tirx.DeclBuffer)) \
                and not isinstance(n, s_tir.SBlockRealize) and len(s.parent.seq) > 1:
            options.append((s, [None]))
    if not options:
        return None
    s, kids = rng.choice(options)
    return A.replace(func, s.path, rng.choice(kids))


def changed(before: dict, after: dict) -> bool:
    """Fewer nodes than before."""
    return after["nodes"] < before["nodes"]
