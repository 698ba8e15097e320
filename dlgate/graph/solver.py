"""z3 for what propagation cannot decide: one incremental solver per generator.

Used when a spec has no closed-form inverse for backward insertion (Conv, Pool, Pad,
Resize...) and as a fallback when concrete sampling keeps missing ``requires``. Within a
case each problem is pushed, solved and popped on the same solver; a case that needs the
solver gets a fresh z3 context, so no case depends on the cases generated before it. Attribute binning is applied
as NNSmith does: a bin per variable, dropping a random half of the bin constraints on
unsat. Search effort is bounded by z3's deterministic ``rlimit``, never by wall time, so
the answer does not depend on the machine.
"""
from __future__ import annotations

import random

import z3

from dlgate.ops import sym
from dlgate.ops.base import bin_ranges

RLIMIT = 2_000_000


class Solver:
    def __init__(self, bins: int = 7):
        self.bins = bins
        self.calls = 0
        self.reset()

    def reset(self) -> None:
        """Forget everything (once per generated case). z3's answers depend on the history
        of its context (term ids, learned lemmas), so each case that needs the solver gets
        a fresh context and solver."""
        self._ctx = None
        self._solver = None

    def context(self) -> z3.Context:
        if self._ctx is None:
            self._ctx = z3.Context()
            self._solver = z3.SimpleSolver(ctx=self._ctx)
            self._solver.set("rlimit", RLIMIT)
        return self._ctx

    def _bin_constraint(self, rng: random.Random, v, lo, hi):
        choices = []
        for a, b in bin_ranges(self.bins, lo, hi):
            if (hi is not None and a is not None and a > hi) or (lo is not None and b is not None and b < lo):
                continue
            choices.append((a, b))
        if not choices:
            return None
        a, b = choices[rng.randrange(len(choices))]
        parts = []
        if a is not None:
            parts.append(v >= a)
        if b is not None:
            parts.append(v <= b)
        return z3.And(*parts) if len(parts) > 1 else parts[0]

    def solve(self, cons: list, variables: list, rng: random.Random):
        """A model of ``cons`` with binned values for ``variables`` ((var, lo, hi) triples),
        or None when unsatisfiable within the resource limit."""
        hard = []
        for c in cons:
            if sym.is_sym(c):
                hard.append(c)
            elif not c:
                return None
        self.calls += 1
        self.context()
        s = self._solver
        s.push()
        try:
            s.set("random_seed", rng.randrange(1 << 30))
            s.add(*hard)
            if s.check() != z3.sat:
                return None
            model = s.model()
            soft = [c for c in (self._bin_constraint(rng, v, lo, hi) for v, lo, hi in variables) if c is not None]
            while soft:
                s.push()
                s.add(*soft)
                res = s.check()
                if res == z3.sat:
                    model = s.model()
                    s.pop()
                    break
                s.pop()
                soft = rng.sample(soft, len(soft) // 2)
            return model
        finally:
            s.pop()


def concretize(model, value):
    """Replace z3 terms inside nested lists/tuples/dicts by their integer values."""
    if sym.is_sym(value):
        v = model.eval(value, model_completion=True)
        if z3.is_int_value(v):
            return v.as_long()
        if z3.is_true(v) or z3.is_false(v):
            return bool(z3.is_true(v))
        raise TypeError(f"cannot concretize {value}")
    if isinstance(value, list):
        return [concretize(model, x) for x in value]
    if isinstance(value, tuple):
        return tuple(concretize(model, x) for x in value)
    if isinstance(value, dict):
        return {k: concretize(model, x) for k, x in value.items()}
    return value
