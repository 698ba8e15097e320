"""What the ort_elim motifs share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import OrtMotif


class _Eliminated(OrtMotif):
    """Neg, the node the rule drops (reading the Neg), then a Neg of its output."""

    arity = 1
    ranks = (1, 2, 3, 4, 5)
    around = "Neg"

    def draw(self, ctx, ins, violate):
        x = ins[0]
        return self.drawn(ctx, x.with_shape((1,) + tuple(x.shape)) if self.around == "Unsqueeze" else x, violate)

    def drawn(self, ctx, x, violate) -> dict:
        return {}

    def node(self, a, src) -> Step:
        raise NotImplementedError

    def steps(self, a):
        wrap = {"axes": [0]} if self.around == "Unsqueeze" else {}
        return [Step(self.around, wrap, (In(0),)), self.node(a, Out(0)), Step(self.around, wrap, (Out(1),))]
