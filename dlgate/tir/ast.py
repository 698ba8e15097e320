"""A TIR PrimFunc as a tree of addressable sites, and its rebuilding with one site replaced.

TVM 0.27 has no Python statement/expression mutator for ``tvm.tirx``, so this module walks
the node classes the mutators handle (statements, arithmetic, comparisons, calls, loads,
blocks) and rebuilds them with their constructors; any other node is a leaf kept as it is.
Each site carries the scope its position sees (the scalar variables bound around it and the
buffers declared before it), which is what keeps a mutation's variables bound and its
buffers declared. The walk is pre-order in field order, so site ``k`` is the same in every
process."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Scope:
    """What a site may use: ``vars`` (scalar Vars in scope, innermost last), ``buffers``
    (buffer Vars declared before it), ``loops`` (the enclosing For nodes, innermost last),
    ``in_block`` (inside an s_tir block: its iteration variables replace the loop
    variables), ``s_tir`` (the function holds schedulable blocks; outside them no store)."""

    vars: tuple = ()
    buffers: tuple = ()
    loops: tuple = ()
    in_block: bool = False
    s_tir: bool = False

    def add_vars(self, *vs) -> "Scope":
        return Scope(self.vars + tuple(vs), self.buffers, self.loops, self.in_block, self.s_tir)

    def add_buffers(self, *bs) -> "Scope":
        return Scope(self.vars, self.buffers + tuple(bs), self.loops, self.in_block, self.s_tir)

    def enter_loop(self, loop) -> "Scope":
        return Scope(self.vars + (loop.loop_var,), self.buffers, self.loops + (loop,), self.in_block, self.s_tir)


@dataclass(frozen=True)
class Site:
    """One node: ``path`` (child positions from the body), ``node``, ``kind`` ("stmt" or
    "expr"), ``scope``, ``parent`` (the enclosing node, None at the body) and ``role``: what
    the value decides, which is what a mutation may do to it without making the program's
    behaviour undefined. ``value``: data only (free to change); ``index``: a buffer index or
    a variable that may become one (changing it could read or write out of bounds);
    ``bound``: a loop's min or extent (only shrinking the range is safe: every index stays
    where the original range took it); ``guard``: a condition, a shift amount or a bitwise
    operand (a guard may be all that keeps an access in bounds or a while loop finite);
    ``divisor``: an integer divisor (must stay non-zero); ``stmt``: a statement."""

    path: tuple
    node: object
    kind: str
    scope: Scope
    parent: object = field(default=None, compare=False)
    role: str = "stmt"


def dtype_of(e) -> str:
    """An expression's dtype ("float32", "int64", "bool"...), "" where it has none."""
    ty = getattr(e, "ty", None)
    if ty is None or type(ty).__name__ != "PrimType":
        return ""
    return str(ty)


def is_buffer(v) -> bool:
    ty = getattr(v, "ty", None)
    return ty is not None and type(ty).__name__ == "BufferType"


def func_scope(func) -> Scope:
    scalars = tuple(p for p in func.params if not is_buffer(p) and dtype_of(p) not in ("", "handle"))
    buffers = tuple(p for p in func.params if is_buffer(p))
    s_tir = bool(func.attrs is not None and "s_tir" in func.attrs and func.attrs["s_tir"])
    return Scope(scalars, buffers, (), False, s_tir)


def _classes():
    import tvm  # local: optional compiler, imported where it runs
    from tvm import ir, s_tir, tirx  # local: optional compiler, imported where it runs

    return tvm, ir, s_tir, tirx


def children(node, scope: Scope) -> list:
    """``[(child, kind, scope)]`` in field order; [] for a leaf."""
    tvm, ir, s_tir, tirx = _classes()
    S, E = "stmt", "expr"
    if isinstance(node, tirx.SeqStmt):
        out, sc = [], scope
        for s in node.seq:
            out.append((s, S, sc))
            if isinstance(s, tirx.Bind):
                sc = sc.add_vars(s.var)
            elif isinstance(s, (tirx.AllocBuffer, tirx.DeclBuffer)):
                sc = sc.add_buffers(s.buffer)
        return out
    if isinstance(node, tirx.For):
        return [(node.min, E, scope), (node.extent, E, scope), (node.body, S, scope.enter_loop(node))]
    if isinstance(node, tirx.While):
        return [(node.condition, E, scope), (node.body, S, scope)]
    if isinstance(node, tirx.IfThenElse):
        out = [(node.condition, E, scope), (node.then_case, S, scope)]
        return out + ([(node.else_case, S, scope)] if node.else_case is not None else [])
    if isinstance(node, tirx.BufferStore):
        return [(node.value, E, scope)] + [(i, E, scope) for i in node.indices]
    if isinstance(node, tirx.Bind):
        return [(node.value, E, scope)]
    if isinstance(node, tirx.Evaluate):
        return [(node.value, E, scope)]
    if isinstance(node, tirx.AttrStmt):
        return [(node.body, S, scope)]
    if isinstance(node, s_tir.SBlockRealize):
        return [(v, E, scope) for v in node.iter_values] + [(node.predicate, E, scope), (node.block, S, scope)]
    if isinstance(node, s_tir.SBlock):
        inner = Scope(_root_vars(scope) + tuple(iv.var for iv in node.iter_vars),
                      scope.buffers + tuple(node.alloc_buffers), (), True, scope.s_tir)
        out = [(node.body, S, inner)]
        return out + ([(node.init, S, inner)] if node.init is not None else [])
    if _is_binary(node):
        return [(node.a, E, scope), (node.b, E, scope)]
    if isinstance(node, (tirx.Not, tirx.BitwiseNot)):
        return [(node.a, E, scope)]
    if isinstance(node, tirx.Cast):
        return [(node.value, E, scope)]
    if isinstance(node, tirx.Select):
        return [(node.condition, E, scope), (node.true_value, E, scope), (node.false_value, E, scope)]
    if isinstance(node, tirx.Let):
        return [(node.value, E, scope), (node.body, E, scope.add_vars(node.var))]
    if isinstance(node, ir.Call) and _is_plain_call(node):
        return [(a, E, scope) for a in node.args]
    if type(node).__name__ == "TensorLoad":
        return [(i, E, scope) for i in node.indices]
    return []


def rebuild(node, kids: list):
    """``node`` with its children (as :func:`children` lists them) replaced by ``kids``."""
    tvm, ir, s_tir, tirx = _classes()
    if isinstance(node, tirx.SeqStmt):
        flat = []
        for k in kids:  # a deleted element arrives as None; a nested SeqStmt is spliced in
            if k is None:
                continue
            flat.extend(k.seq if isinstance(k, tirx.SeqStmt) else [k])
        return flat[0] if len(flat) == 1 else tirx.SeqStmt(flat)
    if isinstance(node, tirx.For):
        return tirx.For(node.loop_var, kids[0], kids[1], node.kind, kids[2], node.thread_binding,
                        node.annotations, node.step)
    if isinstance(node, tirx.While):
        return tirx.While(kids[0], kids[1])
    if isinstance(node, tirx.IfThenElse):
        return tirx.IfThenElse(kids[0], kids[1], kids[2] if len(kids) > 2 else None)
    if isinstance(node, tirx.BufferStore):
        return tirx.BufferStore(node.buffer, kids[0], list(kids[1:]))
    if isinstance(node, tirx.Bind):
        return tirx.Bind(node.var, kids[0])
    if isinstance(node, tirx.Evaluate):
        return tirx.Evaluate(kids[0])
    if isinstance(node, tirx.AttrStmt):
        return tirx.AttrStmt(node.node, node.attr_key, node.value, kids[0])
    if isinstance(node, s_tir.SBlockRealize):
        return s_tir.SBlockRealize(list(kids[:-2]), kids[-2], kids[-1])
    if isinstance(node, s_tir.SBlock):
        return s_tir.SBlock(list(node.iter_vars), list(node.reads), list(node.writes), node.name_hint, kids[0],
                            kids[1] if len(kids) > 1 else None, list(node.alloc_buffers), list(node.match_buffers),
                            node.annotations)
    if _is_binary(node):
        return type(node)(kids[0], kids[1])
    if isinstance(node, (tirx.Not, tirx.BitwiseNot)):
        return type(node)(kids[0])
    if isinstance(node, tirx.Cast):
        return tirx.Cast(dtype_of(node), kids[0])
    if isinstance(node, tirx.Select):
        return tirx.Select(kids[0], kids[1], kids[2])
    if isinstance(node, tirx.Let):
        return tirx.Let(node.var, kids[0], kids[1])
    if isinstance(node, ir.Call):
        return ir.Call(node.op, list(kids), node.attrs, list(node.ty_args) if node.ty_args is not None else None,
                       None, node.ty)
    if type(node).__name__ == "TensorLoad":
        return tirx.BufferLoad(node.source, list(kids))
    if kids:
        raise TypeError(f"cannot rebuild {type(node).__name__}")
    return node


def _is_binary(node) -> bool:
    return type(node).__name__ in BINARY


def _is_plain_call(node) -> bool:
    """A call whose arguments are ordinary values (intrinsics such as ``tirx.exp``), not the
    builtins whose arguments are handles or strings."""
    name = getattr(node.op, "name", "")
    return name.startswith("tirx.") and all(dtype_of(a) not in ("", "handle") for a in node.args)


def _root_vars(scope: Scope) -> tuple:
    """The variables a block may read besides its own: those no enclosing loop binds."""
    return tuple(v for v in scope.vars if not any(v.same_as(lp.loop_var) for lp in scope.loops))


#: The arithmetic, comparison and logical node classes, by the families a replacement keeps.
ARITH = ("Add", "Sub", "Mul", "Div", "FloorDiv", "FloorMod", "Mod", "Min", "Max")
COMPARE = ("EQ", "NE", "LT", "LE", "GT", "GE")
LOGIC = ("And", "Or")
#: Bitwise operators: their operands are guards (a shift past the width is undefined).
BITWISE = ("LShift", "RShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor")
BINARY = ARITH + COMPARE + LOGIC + BITWISE


#: Calls whose integer arguments act as guards (a shift past the width is undefined).
GUARDED_CALLS = ("tirx.shift_left", "tirx.shift_right", "tirx.bitwise_and", "tirx.bitwise_or",
                 "tirx.bitwise_xor", "tirx.if_then_else", "tirx.likely")


def child_roles(node, n: int, role: str) -> list:
    """The :class:`Site` role of each of ``node``'s ``n`` children, given its own."""
    tvm, ir, s_tir, tirx = _classes()
    if role in ("index", "bound", "guard", "divisor"):
        return [role if role != "divisor" else "guard"] * n
    name = type(node).__name__
    if isinstance(node, tirx.For):
        return ["bound", "bound", "stmt"]
    if isinstance(node, (tirx.While, tirx.IfThenElse)):
        return ["guard"] + ["stmt"] * (n - 1)
    if isinstance(node, s_tir.SBlockRealize):
        return ["index"] * (n - 2) + ["guard", "stmt"]
    if isinstance(node, tirx.BufferStore):
        return ["value"] + ["index"] * (n - 1)
    if name == "TensorLoad":
        return ["index"] * n
    if isinstance(node, tirx.Bind):
        return ["index" if dtype_of(node.value).startswith(("int", "uint")) else "value"]
    if isinstance(node, tirx.Let):
        return ["index" if dtype_of(node.value).startswith(("int", "uint")) else "value", "value"]
    if isinstance(node, tirx.Select):
        return ["guard", "value", "value"]
    if name in ("Div", "Mod", "FloorDiv", "FloorMod"):
        return ["value", "divisor" if dtype_of(node).startswith(("int", "uint")) else "value"]
    if name in BITWISE or name == "BitwiseNot" or (isinstance(node, ir.Call) and getattr(node.op, "name", "") in GUARDED_CALLS):
        return ["guard"] * n
    if isinstance(node, tirx.Stmt) or isinstance(node, s_tir.SBlock):
        return ["stmt"] * n
    return ["value"] * n


def sites(func) -> list:
    """Every site of ``func``'s body, pre-order."""
    out: list = []

    def go(node, kind, scope, path, parent, role):
        out.append(Site(path, node, kind, scope, parent, role))
        kids = children(node, scope)
        roles = child_roles(node, len(kids), role)
        for k, (c, ck, cs) in enumerate(kids):
            go(c, ck, cs, path + (k,), node, roles[k])

    go(func.body, "stmt", func_scope(func), (), None, "stmt")
    return out


def replace(func, path: tuple, new):
    """``func`` with the node at ``path`` replaced by ``new`` (None deletes a statement from
    its sequence)."""

    def go(node, scope, depth):
        if depth == len(path):
            return new
        kids = children(node, scope)
        k = path[depth]
        vals = [c for c, _, _ in kids]
        vals[k] = go(kids[k][0], kids[k][2], depth + 1)
        return rebuild(node, vals)

    body = go(func.body, func_scope(func), 0)
    if body is None:
        raise ValueError("cannot delete the whole body")
    return func.with_body(body)
