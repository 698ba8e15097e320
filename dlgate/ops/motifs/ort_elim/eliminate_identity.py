from __future__ import annotations

from dlgate.ops.motif import Step
from dlgate.ops.motifs.ort_elim._shared import _Eliminated


class EliminateIdentity(_Eliminated):
    """``identity_elimination.cc``: an Identity whose output is not a graph output."""

    onnx_op = "Identity"
    rewrite = "EliminateIdentity"
    expects = ("removed:Identity",)

    def node(self, a, src):
        return Step("Identity", {}, (src,))


OPS = [EliminateIdentity]
