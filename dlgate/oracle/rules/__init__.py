"""The oracle's rules: every reason a disagreement may not be a compiler's bug, one per file.

A rule (``base.Rule``) looks at a case (``base.Context``: graph, inputs, tolerances, the
candidate's and the reference's outputs, the reference's node-by-node trace) and returns
excuses (``base.Excuse``), each naming what it explains: the outputs and, where it can,
their elements. :func:`settle` runs the rules in order (``RULES``) until the excuses cover
everything that differs; whatever is left is a finding, and the rules that covered the rest
are recorded with the verdict (``Verdict.rule``, ``Verdict.excused``).

The order: the rules that name values the specification leaves open (``scoping``:
undefined values, then special values it does not define) come first and run on every
extreme-value case, a passing one too; then the float16 rounding of the reference; then
instability, the costliest. Rules about an outcome rather than its values (a refusal, a
model with symbolic dimensions the compiler does not take, a refusal only an optimization
makes) are in :mod:`.refusal` and :mod:`.symbolic`; which ONNX reference answers may
blame the reference, in :mod:`.reference_defect`.

Adding a rule: a file here with a ``Rule`` subclass and ``RULE = TheRule()``, its place in
``RULES``, and two tests in ``tests/test_rules.py``: it stays silent on a correct compiler,
and an injected fault outside its scope is still caught.
"""
from __future__ import annotations

from dlgate.graph.ir import Graph
from dlgate.oracle.compare import compare_each
from dlgate.oracle.rules import instability, nonfinite, rounding, undefined
from dlgate.oracle.rules.base import Context, Excuse, Rule, union

__all__ = ["RULES", "SCOPING", "Context", "Excuse", "Rule", "Settled", "explain", "settle"]

#: In the order they are asked.
RULES = (undefined.RULE, nonfinite.RULE, rounding.RULE, instability.RULE)


class Settled:
    """What the rules made of one disagreement: ``remaining``, the comparisons of what no
    excuse covers (empty: all of it is explained), and ``excuses``, those that cover part
    of it, in rule order."""

    def __init__(self, remaining: list, excuses: list, differed: bool):
        self.remaining, self.excuses, self.differed = remaining, excuses, differed

    @property
    def explained(self) -> bool:
        return self.differed and not self.remaining

    @property
    def rule(self) -> str | None:
        return self.excuses[0].rule if self.excuses else None

    def reason(self) -> str:
        return "; ".join(e.reason for e in self.excuses)


def settle(ctx: Context, reference: list, candidate: list, tolerances: dict | None = None,
           rules: tuple = RULES, recheck: bool = False) -> Settled:
    """Run ``rules`` in order on a candidate's outputs until their excuses cover every
    difference from ``reference``. ``recheck``: run the scoping rules even when nothing
    differs (an extreme-value case), and compare again without what they cover: a value
    left open far from the others widens the tolerance of the whole output."""
    failed = compare_each(reference, candidate, tolerances)
    if not failed and not recheck:
        return Settled([], [], False)
    ignore: dict = {}
    found: list = []
    remaining = failed
    for rule in rules:
        if not remaining and not (recheck and rule.scoping):
            break
        for e in rule.excuses(ctx):
            found.append(e)
            for k, m in e.scope.items():
                ignore[k] = union(ignore.get(k), m)
        if ignore:
            remaining = compare_each(reference, candidate, tolerances, ignore)
    differed = bool(failed or remaining)
    touched = {c.output for c in failed + remaining}
    used = [e for e in found if None in touched or touched.intersection(e.scope)]
    return Settled(remaining, used, differed)


#: The rules that name values the specification leaves open (cheap: one trace).
SCOPING = tuple(r for r in RULES if r.scoping)


def explain(graph: Graph, inputs: list, tolerances: dict | None = None, candidate: list | None = None,
            reference: list | None = None, recheck: bool = False, rules: tuple = RULES):
    """A callable for ``verdict.judge``: settles the candidate's outputs on this case."""
    ctx = Context(graph, inputs, tolerances, candidate, reference)

    def run(ref: list, got: list, tol: dict | None) -> Settled:
        return settle(ctx, ref, got, tol, rules=rules, recheck=recheck)

    return run


def why(graph: Graph, inputs: list, tolerances: dict | None = None, candidate: list | None = None) -> str | None:
    """The reasons that explain every difference of ``candidate`` from the reference on this
    case, or None when something differs that no rule explains (or nothing differs)."""
    ctx = Context(graph, inputs, tolerances, candidate)
    s = settle(ctx, ctx.reference, candidate, tolerances, recheck=graph.extreme is not None)
    return s.reason() if s.explained else None
