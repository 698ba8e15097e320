"""Coverage-guided generation (HirFuzz's criteria, used as weights).

HirFuzz inserts an operator only when it adds coverage. dlgate keeps every insertion
but biases its choices toward what the campaign has not covered yet, so no draw is
wasted and no operator is ever ruled out:

* **which spec**: ``1 + SIG_UNSEEN * (share of its allowed dtype signatures not yet seen)``,
  plus ``SPEC_UNSEEN`` for an operator never generated; for a motif, plus
  ``INTENT_UNSEEN * (share of its decision sides, fires or one broken condition each, not
  yet drawn)`` and ``MOTIF_UNFIRED`` while no backend of its optimizer has applied its
  rewrite (known from the rewrite kinds in the state);
* **which signature**: ``1 + SIG_UNSEEN`` for one not yet seen with that operator;
* **which tensor to build on** (the connection): the generator's use-count weight times
  ``1 + EDGE_UNSEEN`` when the edge from the tensor's producer to the operator is new,
  ``+ PATH_UNSEEN`` when a three-operator path through it is;
* **which opset**: a motif that exists at a few opsets only (``NARROW_OPSETS`` or fewer of
  the campaign's range, as EmbedLayerNormAttention at opset 13) is rarely drawn where the
  opset is drawn evenly. While such a motif still *wants* coverage (its firing side not yet
  drawn, or no backend of its optimizer has applied its rewrite), a share ``OPSET_FOCUS``
  of the cases draw their opset from one such motif's opsets instead, and insert that
  motif first, on the case's first graph input.

Spec weights are computed once per case from the state (the campaign's starting state and
every case generated before this one) and updated for the chosen spec after each
insertion. Each model is thus a pure function of its seed and the state, and
:class:`dlgate.case.GuidedBatch` makes the state a pure function of the starting state and the cases
before: the batch is generated in index order, the graph features of each case are added
before the next, and a case out of order replays the ones before it (generation is a few
milliseconds a model).
"""
from __future__ import annotations

from dlgate.coverage import features as F
from dlgate.coverage.state import CoverageState
from dlgate.ops.motif import Motif

SPEC_UNSEEN = 6.0
SIG_UNSEEN = 4.0
INTENT_UNSEEN = 4.0
MOTIF_UNFIRED = 6.0
EDGE_UNSEEN = 4.0
PATH_UNSEEN = 2.0
#: Share of cases whose opset is drawn from a narrow motif's opsets while it wants coverage,
#: and the most opsets (of the campaign's range) a motif may exist at to count as narrow.
OPSET_FOCUS = 0.05
NARROW_OPSETS = 3


class Guide:
    """The generator's view of a coverage state: weights for its choices."""

    def __init__(self, state: CoverageState):
        self.state = state
        self.local: set = set()  # features of the graph being built

    # -- per case --------------------------------------------------------------------------
    def begin(self) -> None:
        self.local = set()

    def seen(self, feature: str) -> bool:
        return feature in self.state.features or feature in self.local

    def note(self, feats) -> None:
        self.local.update(feats)

    # -- weights ---------------------------------------------------------------------------
    def _fired_by(self, optimizer: str) -> set | None:
        """Rewrite kinds the optimizer's backends applied, or None when the state has no
        rewrite record of that optimizer (then nothing is known either way)."""
        got = [k for b, k in self.state.rewrites.items() if b.split("[")[0].split("@")[0] == optimizer]
        return set().union(*got) if got else None

    def spec_weight(self, spec, sigs) -> float:
        w = 1.0
        if sigs:
            unseen = sum(1 for s in sigs if not self.seen(F.op_dtype(spec.name, s)))
            w += SIG_UNSEEN * unseen / len(sigs)
            if unseen == len(sigs):
                w += SPEC_UNSEEN
        if isinstance(spec, Motif):
            sides = ["fires"] + [f"declines:{c}" for c in spec.conditions]
            missing = sum(1 for s in sides if not self.seen(F.motif(spec.name, s)))
            w += INTENT_UNSEEN * missing / len(sides)
            if self._unfired(spec):
                w += MOTIF_UNFIRED
        return w

    def wants(self, spec) -> bool:
        """Whether a motif still wants coverage: its firing side never drawn, or no backend
        of its optimizer has applied its rewrite (where the state knows that)."""
        return not self.seen(F.motif(spec.name, "fires")) or self._unfired(spec)

    def _unfired(self, spec) -> bool:
        """Whether the state knows the motif's optimizer and none of its backends applied the
        motif's rewrite (any of its ``expects`` kinds)."""
        fired = self._fired_by(spec.optimizer)
        return fired is not None and bool(spec.expects) and not fired.intersection(spec.expects)

    def focus(self, specs, lo: int, hi: int) -> list:
        """(motif, its opsets) for each narrow motif among ``specs`` that wants coverage (see
        the module docstring), in ``specs``' order."""
        out = []
        for spec in specs:
            if not isinstance(spec, Motif):
                continue
            ops = [o for o in range(lo, hi + 1) if spec.available(o)]
            if ops and len(ops) <= NARROW_OPSETS < hi - lo + 1 and self.wants(spec):
                out.append((spec, ops))
        return out

    def sig_weights(self, op: str, sigs) -> list:
        return [1.0 + (0.0 if self.seen(F.op_dtype(op, s)) else SIG_UNSEEN) for s in sigs]

    def link_weight(self, op: str, producer: str | None, grand: list) -> float:
        """The connection factor for building ``op`` on a tensor made by ``producer``
        (None for a graph input or constant), whose own inputs come from ``grand``."""
        if producer is None:
            return 1.0
        w = 1.0 + (0.0 if self.seen(F.edge(producer, op)) else EDGE_UNSEEN)
        if any(not self.seen(F.path3(g, producer, op)) for g in grand):
            w += PATH_UNSEEN
        return w
