"""The generator's z3 path (GenCoG's concolic split): where concrete sampling finds no
instance of an operator whose shapes follow arithmetic without a closed-form inverse, its
integer choices become z3 variables and a solver finds values that satisfy its constraints,
forward (from an existing input) or backward (to a placeholder's type)."""
from __future__ import annotations

import random

import z3

from dlgate.graph.solver import concretize
from dlgate.ops.base import OpSpec, SymCtx, TensorType


class SymbolicInsertion:
    """The z3 insertion methods of ``Generator``; they use its ``cfg``, ``solver``, ``opset``,
    ``stats``, ``_sigs``, ``_valid``, ``_domains_ok`` and ``_commit``."""

    @staticmethod
    def _solvable(spec: OpSpec) -> bool:
        """z3 is for specs whose shapes follow arithmetic that has no closed-form inverse
        (they do not define ``backward``); where a spec's own ``backward`` or sampling says
        no, the instance is impossible or unlikely, and a solver would only cost time."""
        return spec.symbolic_ok and type(spec).backward is OpSpec.backward

    def _forward_z3(self, st, spec, rng, x0, first, sig) -> bool:
        sctx = SymCtx(rng, self.cfg.limits, self.cfg.dtypes, self.opset, prefix="f", z3ctx=self.solver.context())
        inst = self._symbolic_instance(spec, sctx, first, sig)
        if inst is None:
            return False
        a, ins, outs = inst
        cons = sctx.cons + list(spec.requires(ins, a)) + self._dim_cons(outs)
        model = self.solver.solve(cons, sctx.vars, rng)
        if model is None:
            return False
        a = concretize(model, a)
        ins = [TensorType(t.dtype, tuple(concretize(model, list(t.shape)))) for t in ins]
        outs = self._valid(spec, ins, a)
        ids = [x0] + [None] * (spec.arity - 1)
        if outs is None or not self._domains_ok(st, spec, a, ids):
            return False
        self._commit(st, spec, a, ids, ins, outs)
        self.stats["z3_forward"] += 1
        return True

    @staticmethod
    def _symbolic_instance(spec: OpSpec, sctx: SymCtx, first: TensorType, sig: tuple):
        """(attrs, inputs, outputs) with z3 variables for the integer choices, or None when
        the spec cannot run symbolically."""
        try:
            a = spec.sample(sctx, [first])
            ins = [first]
            for i in range(1, spec.arity):
                ins.append(spec.input_type(sctx, i, ins, a, sig[i]))
            return a, ins, spec.infer(ins, a)
        except (TypeError, z3.Z3Exception):
            return None

    def _dim_cons(self, types) -> list:
        return [d >= 1 for t in types for d in t.shape] + [d <= self.cfg.limits.max_dim * 4 for t in types for d in t.shape]

    def _backward_z3(self, spec: OpSpec, target: TensorType, rng: random.Random):
        sigs = list(self._sigs(spec))  # a copy: the cached list is shared
        rng.shuffle(sigs)
        for sig in sigs[:3]:
            for rank in spec.backward_ranks(target):
                if rank not in spec.ranks or rank > self.cfg.limits.max_rank:
                    continue
                sctx = SymCtx(rng, self.cfg.limits, self.cfg.dtypes, self.opset, prefix="b", z3ctx=self.solver.context())
                inst = self._symbolic_instance(spec, sctx, TensorType(sig[0], sctx.shape(rank)), sig)
                if inst is None:
                    return None
                a, ins, outs = inst
                if outs[0].dtype != target.dtype or outs[0].rank != target.rank:
                    continue
                cons = sctx.cons + list(spec.requires(ins, a)) + self._dim_cons(ins + outs)
                cons += [d == e for d, e in zip(outs[0].shape, target.shape)]
                model = self.solver.solve(cons, sctx.vars, rng)
                if model is None:
                    continue
                ins = [TensorType(t.dtype, tuple(concretize(model, list(t.shape)))) for t in ins]
                return ins, concretize(model, a)
        return None
