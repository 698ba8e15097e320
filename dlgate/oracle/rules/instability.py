"""Instability: a case that amplifies rounding-level differences (:mod:`dlgate.oracle.ub`).

Compilers round intermediates differently (fused operations, other summation orders,
float16 computed in float32). The reference is re-run with every floating-point
intermediate perturbed by a few units of rounding; where an output then moves beyond the
tolerance (a value a rounding step from an integer before Floor, a near-tie before ArgMax,
Tan near a pole...), the excuse covers that output's values when the candidate stays
within what the perturbations produced there (twice the largest deviation, plus the
tolerance). Which elements flip is itself random, so the scope is the output's values,
never its shape, and never another output."""
from __future__ import annotations

import numpy as np

from dlgate.oracle import ub
from dlgate.oracle.rules.base import Context, Excuse, Rule


class Instability(Rule):
    name = "instability"

    def excuses(self, ctx: Context) -> list:
        reason, within = ub.instability_outputs(ctx.graph, ctx.inputs, ctx.tolerances, candidate=ctx.candidate)
        if reason is None:
            return []
        ref = ctx.reference
        scope = {k: np.ones(np.shape(ref[k]), bool) for k, ok in enumerate(within) if ok and k < len(ref)}
        return [Excuse(self.name, reason, scope)] if scope else []


RULE = Instability()
