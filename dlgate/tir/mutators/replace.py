"""General-purpose replacement (Tzer §3.2): a primitive gets another value of its type (a
constant a new value, a variable another in scope of its dtype), a constructor another of
its family with the same children (``Add`` to ``Max``, ``LT`` to ``GE``, ``And`` to ``Or``, one
unary intrinsic for another). A loop bound may only shrink the loop's range, a divisor stays
a non-zero constant."""
from __future__ import annotations

from dlgate.tir import ast as A
from dlgate.tir.mutators import base as B

NAME = "replace"
FAMILY = "general"

#: Constructor families a replacement stays within (no division: its divisor is unchecked).
FAMILIES = (("Add", "Sub", "Mul", "Min", "Max"), A.COMPARE, A.LOGIC)
UNARY = ("tirx.exp", "tirx.tanh", "tirx.sigmoid", "tirx.sin", "tirx.cos", "tirx.fabs", "tirx.floor",
         "tirx.ceil", "tirx.round", "tirx.trunc", "tirx.erf", "tirx.atan")


def apply(func, rng, ctx: B.Context):
    t = B.tirx()
    options = []
    for s in A.sites(func):
        n, name, d = s.node, type(s.node).__name__, A.dtype_of(s.node)
        if s.kind != "expr":
            continue
        if s.role == "value":
            if name in ("IntImm", "FloatImm"):
                options.append((s, lambda s=s, d=d: B.const(rng, d)))
            elif name == "Var" and len(B.scalars(s.scope, d)) > 1:
                options.append((s, lambda s=s, d=d: rng.choice([v for v in B.scalars(s.scope, d)
                                                                  if not v.same_as(s.node)])))
            elif any(name in fam for fam in FAMILIES):
                fam = next(f for f in FAMILIES if name in f)
                options.append((s, lambda s=s, fam=fam, name=name: getattr(t, rng.choice(
                    [c for c in fam if c != name]))(s.node.a, s.node.b)))
            elif name == "Call" and getattr(n.op, "name", "") in UNARY and B.is_float(d):
                options.append((s, lambda s=s: getattr(t, _function(rng.choice(
                    [u for u in UNARY if u != s.node.op.name])))(s.node.args[0])))
        elif s.role == "divisor" and name == "IntImm":
            options.append((s, lambda s=s, d=d: t.IntImm(d, rng.randint(1, 9))))
        elif s.role == "bound" and name == "IntImm" and s.path[-1] == 1 and int(n.value) > 1:
            options.append((s, lambda s=s, d=d: t.IntImm(d, rng.randint(1, int(s.node.value) - 1))))
    if not options:
        return None
    s, make = rng.choice(options)
    return A.replace(func, s.path, make())


def _function(op: str) -> str:
    """The ``tvm.tirx`` function that makes a call to intrinsic ``op``."""
    name = op.split(".", 1)[1]
    return "abs" if name == "fabs" else name


def changed(before: dict, after: dict) -> bool:
    """The same node count, a different program."""
    return after["nodes"] == before["nodes"] and after["text"] != before["text"]
