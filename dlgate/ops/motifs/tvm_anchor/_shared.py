"""What the tvm_anchor motifs share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from dlgate.ops.motif import Out, Step
from dlgate.ops.motifs.tvm_common import ACTIVATIONS, TvmMotif, activation, second_consumer


class _AnchorEpilogue(TvmMotif):
    """Anchor steps, then an activation of the anchor's output (the last anchor step)."""

    conditions = ("elementwise_consumers",)

    def head(self, a) -> list:
        raise NotImplementedError

    def steps(self, a):
        s = self.head(a)
        k = len(s) - 1
        s.append(Step(a["act"], a["act_attrs"], (Out(k),)))
        if a["violate"] == "elementwise_consumers":
            s += second_consumer(s, k, len(s) - 1, a["out_rank"])
        return s

    def epilogue(self, ctx, a, out, names=tuple(ACTIVATIONS)) -> dict:
        a["act"], a["act_attrs"] = activation(ctx, out, names)
        a["out_rank"] = out.rank
        return a
