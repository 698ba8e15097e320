"""From targets to what the generator draws: each target becomes an :class:`Aim` (the
specs that exercise it, with the opsets, dtypes and attribute regime it concerns), or a
gap saying why no model can reach it.

An operator target is exercised by the specs that emit its operator type (``onnx_op``, or
``onnx_ops`` for an idiom written as several nodes), motifs aside when a plain spec exists;
a rewrite target by the motif specs aimed at that rewrite (``OpSpec.optimizer`` is the
compiler and ``OpSpec.rewrite`` is the name, or starts with it: ``FuseOps`` takes every
``FuseOps (...)`` motif). A model *exercises* a target when one of its nodes is of one of
those specs, at an opset and with an input dtype the target allows; that is what the
coverage table counts, aimed or not.
"""
from __future__ import annotations

from dataclasses import dataclass

from dlgate.change.targets import REWRITE, TIR, Target


@dataclass(frozen=True)
class Aim:
    target: Target
    specs: tuple  # spec names, registry order
    #: The target's opsets within those dlgate generates (None: any).
    span: tuple | None = None

    @property
    def opsets(self):
        return self.span

    @property
    def dtypes(self) -> tuple:
        return self.target.dtypes

    @property
    def degenerate(self) -> bool:
        return "degenerate" in self.target.regimes

    def sig_ok(self, sig: tuple) -> bool:
        """Whether an input signature concerns the target's dtypes: its first input's
        dtype (the type a kernel is registered for) is one of them; any when none is said."""
        return not self.dtypes or (bool(sig) and sig[0] in self.dtypes)

    def opset_ok(self, opset: int) -> bool:
        return self.opsets is None or self.opsets[0] <= opset <= self.opsets[1]


def _rewrite_matches(spec, compiler: str, name: str) -> bool:
    rw = getattr(spec, "rewrite", None)
    if not rw or getattr(spec, "optimizer", None) != compiler:
        return False
    return rw == name or rw.startswith(name + " ") or rw.startswith(name + "_")


def specs_for(target: Target, compiler: str, specs: dict) -> tuple:
    """The spec names that exercise ``target``, in registry order."""
    if target.kind == REWRITE:
        return tuple(n for n, s in specs.items() if _rewrite_matches(s, compiler, target.name))
    plain = [n for n, s in specs.items() if not getattr(s, "rewrite", None)
             and (s.onnx_op == target.name or target.name in s.onnx_ops)]
    if plain:
        return tuple(plain)
    return tuple(n for n, s in specs.items() if s.onnx_op == target.name or target.name in s.onnx_ops)


def resolve(targets, compiler: str, specs: dict | None = None) -> tuple:
    """(aims, gaps): an :class:`Aim` per target some spec exercises, and ``{target key:
    why}`` for the others; TIR targets are neither (the TIR mode aims at them)."""
    if specs is None:
        from dlgate.ops.registry import all_specs  # local: imports torch; off the CLI start-up

        specs = all_specs()
    from dlgate.graph.generator import NEWEST_OPSET, OLDEST_OPSET  # local: imports torch; off the CLI start-up

    aims, gaps = [], {}
    for t in targets:
        if t.kind == TIR:  # the TIR mode's, not the generator's (dlgate.gate.run.tir)
            continue
        span = None
        if t.opsets is not None:
            lo, hi = t.opsets
            if hi < OLDEST_OPSET or lo > NEWEST_OPSET:
                gaps[t.key] = (f"registered for opsets {lo}-{hi} only; dlgate generates opsets {OLDEST_OPSET} to "
                               f"{NEWEST_OPSET}")
                continue
            span = (max(lo, OLDEST_OPSET), min(hi, NEWEST_OPSET))
        names = specs_for(t, compiler, specs)
        if not names:
            gaps[t.key] = ("no motif aims at this rewrite" if t.kind == REWRITE
                           else "no spec generates this operator (dlgate ops --gaps)")
            continue
        if t.dtypes and not any(d in {x for n in names for sig in specs[n].sigs() for x in sig[:1]} for d in t.dtypes):
            gaps[t.key] = f"no spec draws it with {', '.join(t.dtypes)} (dlgate ops --gaps)"
            continue
        if span is not None and not any(specs[n].available(o) for n in names for o in range(span[0], span[1] + 1)):
            gaps[t.key] = f"no spec for it exists at opsets {span[0]}-{span[1]}"
            continue
        aims.append(Aim(t, names, span))
    return aims, gaps


def exercised(aims, graph) -> list:
    """The keys of the aims a graph exercises (a node of one of its specs, at an opset and
    with a first-input dtype the target allows)."""
    out = []
    for a in aims:
        if not a.opset_ok(graph.opset):
            continue
        names = set(a.specs)
        for n in graph.nodes:
            if n.op in names:
                dtype = graph.tensors[n.inputs[0]].dtype if n.inputs else None
                if not a.dtypes or dtype in a.dtypes:
                    out.append(a.target.key)
                    break
    return out
