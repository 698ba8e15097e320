"""What the ort_block motifs share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from dlgate.ops.base import TensorType
from dlgate.ops.motifs.ort_common import F32, OrtMotif, scalar


class _Block(OrtMotif):
    """A transformer-block fusion: level 2, float32 only (the contrib kernels'), on
    inputs of every float type; ``c`` is a scalar constant of the input's type."""

    level = "extended"
    fuse_dtypes = (F32,)

    def c(self, a, v, hint="c"):
        return scalar(v, a["dtype"], hint)

    def sample(self, ctx, ins):
        a = super().sample(ctx, ins)
        a["dtype"] = ins[0].dtype
        return a


class _RowNorm(_Block):
    """A normalization over the last axis spelled node by node (LayerNormFusion,
    SimplifiedLayerNormFusion), then scaled (and shifted) by constant vectors of the row's
    length; the violation ``last_axis`` normalizes over the axis before it instead, which
    the fusions leave alone."""

    ranks = (2, 3, 4)
    conditions = ("last_axis", "dtype")

    def draw(self, ctx, ins, violate):
        x = ins[0]
        axis = x.rank - 2 if violate == "last_axis" else x.rank - 1
        return {"axis": axis, "eps": ctx.choice((1e-5, 1e-6)), "n": x.shape[-1]}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, (a["n"],))

    def constant_input(self, a, i):
        return True
