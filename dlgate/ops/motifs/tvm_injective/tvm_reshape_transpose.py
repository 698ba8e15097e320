from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.tvm_injective._shared import _Injective, _moving_perm
from dlgate.ops.registry import get


class TvmReshapeTranspose(_Injective):
    """Reshape (its shape spelled with 0 and -1 as exporters do, which the importer
    resolves statically) then Transpose, or Transpose then Reshape: one injective
    function, ``reshape_transpose`` or ``transpose_reshape``."""

    onnx_op = "Reshape"
    onnx_ops = ("Transpose",)
    rewrite = "FuseOps (injective chain: reshape + transpose)"
    expects = ("fused:reshape_transpose", "fused:transpose_reshape")
    arity = 1
    ranks = (2, 3, 4)
    types = dt.FLOATS + (dt.INT32, dt.INT64)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        first = ctx.choice(("Reshape", "Transpose"))
        if first == "Reshape":
            r = get("Reshape").sample(ctx, [x])
            t = _moving_perm(ctx, len(r["shape"]))
        else:
            r = _moving_perm(ctx, x.rank)
            t = get("Reshape").sample(ctx, [x.with_shape(get("Transpose").out_shape(x.shape, r))])
        return {"first": first, "a1": r, "a2": t}

    def requires(self, ins, a):
        # a transpose that moves nothing, or a rank-1 one, is dropped by the importer
        if a["first"] == "Reshape" and len(a["a1"]["shape"]) < 2:
            return [False]
        return super().requires(ins, a)

    def chain(self, a):
        second = "Transpose" if a["first"] == "Reshape" else "Reshape"
        return [Step(a["first"], a["a1"], (In(0),)), Step(second, a["a2"], (Out(0),))]


OPS = [TvmReshapeTranspose]
