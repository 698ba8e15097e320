"""What the ort_block motifs share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from dlgate.ops.motifs.ort_common import F16, F32, F64, OrtMotif, scalar


FLOATS = (F32, F16, F64)


class _Block(OrtMotif):
    level = "extended"
    fuse_dtypes = (F32,)
    arity = 1
    dtypes = tuple((t,) for t in FLOATS)

    def c(self, a, v, hint="c"):
        return scalar(v, a["dtype"], hint)

    def sample(self, ctx, ins):
        a = super().sample(ctx, ins)
        a["dtype"] = ins[0].dtype
        return a
