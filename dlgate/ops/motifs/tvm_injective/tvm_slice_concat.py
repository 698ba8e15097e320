from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.tvm_injective._shared import _Injective
from dlgate.ops.registry import get


class TvmSliceConcat(_Injective):
    """Slice (strided, negative steps and clamped bounds included) concatenated with
    another input along one axis: ``strided_slice_concatenate``."""

    onnx_op = "Slice"
    onnx_ops = ("Concat",)
    rewrite = "FuseOps (injective chain: strided_slice + concatenate)"
    expects = ("fused:strided_slice_concatenate",)
    arity = 2
    ranks = (1, 2, 3, 4)
    types = dt.FLOATS + (dt.INT32, dt.INT64)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        for _ in range(4):  # a slice that keeps the whole tensor is dropped by the importer
            sl = get("Slice").sample(ctx, ins[:1])
            out = get("Slice").infer(ins[:1], sl)[0]
            if not _identity(x, out, sl):
                break
        ax = ctx.axis(out.rank)
        return {"slice": sl, "concat": {"axis": ax}, "other": list(set_dim(out.shape, ax, ctx.dim(8)))}

    def input_type(self, ctx, i, ins, a, dtype):
        # input 1 is the Concat's other operand: the slice's shape, its own size on the axis
        return ins[0].with_dtype(dtype).with_shape(a["other"])

    def requires(self, ins, a):
        ok = super().requires(ins, a)
        if not ok[0]:
            return ok
        return [not _identity(ins[0], get("Slice").infer(ins[:1], a["slice"])[0], a["slice"])]

    def chain(self, a):
        return [Step("Slice", a["slice"], (In(0),)), Step("Concat", a["concat"], (Out(0), In(1)))]


def _identity(x, out, sl) -> bool:
    """Whether Slice attributes ``sl`` keep all of ``x`` in order (output ``out``)."""
    if out.shape != x.shape:
        return False
    axes = get("Slice")._axes(sl, x.rank)
    steps = get("Slice")._steps(sl)
    return all(st == 1 or x.shape[ax] == 1 for ax, st in zip(axes, steps))


def set_dim(shape, ax, d) -> tuple:
    s = list(shape)
    s[ax % len(s)] = d
    return tuple(s)


OPS = [TvmSliceConcat]
