"""Low-precision rounding: the reference's own float16 rounding, told apart from a
compiler's error (:mod:`dlgate.oracle.precision`).

Compilers compute float16 graphs with wider intermediates; where the graph is
ill-conditioned, the reference's rounding dominates its result. The graph is evaluated
again with every float16 tensor in float64; the excuse covers the candidate's elements that
lie between the reference and that evaluation (plus the tolerance), nothing else: an
element further off than rounding explains is still a finding."""
from __future__ import annotations

from dlgate.oracle import precision
from dlgate.oracle.rules.base import Context, Excuse, Rule


class Float16Rounding(Rule):
    name = "rounding"

    def excuses(self, ctx: Context) -> list:
        reason, masks = precision.rounding_elements(ctx.graph, ctx.inputs, ctx.tolerances, ctx.candidate)
        if reason is None or masks is None:
            return []
        scope = {k: m for k, m in enumerate(masks) if m is not None and m.any()}
        return [Excuse(self.name, reason, scope)] if scope else []


RULE = Float16Rounding()
