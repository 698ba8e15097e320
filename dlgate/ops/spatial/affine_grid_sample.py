from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.base import TensorType
from dlgate.ops.spatial.affine_grid import AffineGrid
from dlgate.ops.spatial.grid_sample import GridSample


class AffineGridSample(GridSample):
    """The spatial-transformer idiom exporters write for ``F.grid_sample(x,
    F.affine_grid(theta, size))``: AffineGrid (``size`` = (N, C, *out), a constant) feeding
    GridSample. X (N, C, *S) comes first (so any 4-D tensor can start an instance), theta
    (N, r, r + 1) second, drawn within [-0.4, 0.4] so the positions stay within [-1.2, 1.2].
    Both operators take the same ``align_corners`` (PyTorch's STN code passes one), except
    that AffineGrid's is 0 where an output dim is 1 (see AffineGrid). The grid is rounded to
    theta's type between the two, as the model computes it. No float16 (see ``gaps``)."""

    name = "AffineGridSample"
    onnx_op = "GridSample"
    onnx_ops = ("AffineGrid",)
    min_opset = 20
    dtypes = tuple((t, t) for t in (dt.FLOAT32, dt.FLOAT64))

    def sample(self, ctx, ins):
        a = super().sample(ctx, ins)
        x = ins[0]
        a["size"] = [x.shape[0], x.shape[1]] + list(a["out"])
        a["grid_align"] = a["align_corners"] if all(d > 1 for d in a["out"]) else 0
        return a

    def input_type(self, ctx, i, ins, a, dtype):
        r = ins[0].rank - 2
        return TensorType(dtype, (ins[0].shape[0], r, r + 1))

    def backward(self, ctx, out):
        res = super().backward(ctx, out)
        if res is None:
            return None
        (x, _), a = res
        r = x.rank - 2
        a["size"] = [x.shape[0], x.shape[1]] + list(out.shape[2:])
        a["grid_align"] = a["align_corners"] if all(d > 1 for d in out.shape[2:]) else 0
        return [x, TensorType(x.dtype, (x.shape[0], r, r + 1))], a

    def requires(self, ins, a):
        x, theta = ins
        r = x.rank - 2
        if theta.rank != 3 or r not in (2, 3) or len(a["size"]) != r + 2:
            return [False]
        cons = [theta.shape[0] == x.shape[0], theta.shape[1] == r, theta.shape[2] == r + 1,
                a["size"][:2] == list(x.shape[:2]), r == 2 or a["mode"] != "cubic"]
        if a["padding_mode"] == "reflection" and a["align_corners"]:
            cons += [d > 1 for d in x.shape[2:]]
        if a["grid_align"]:
            cons += [d > 1 for d in a["size"][2:]]
        return cons

    def infer(self, ins, a):
        return [ins[0].with_shape(tuple(ins[0].shape[:2]) + tuple(a["size"][2:]))]

    def onnx(self, b, a, xs, ys):
        grid = b.node("AffineGrid", [xs[1], b.ints(a["size"], hint="size")], 1,
                      align_corners=b.opt(a["grid_align"], 0))[0]
        b.node("GridSample", [xs[0], grid], ys, **self.onnx_attrs(a, b))

    def torch(self, a, x, theta):
        grid = AffineGrid().torch({"size": a["size"], "align_corners": a["grid_align"]}, theta)
        return super().torch(a, x, grid)

    gaps = GridSample.gaps + (
        ("float16", "AffineGrid's positions computed in float16 (ONNX's function body) move the samples by "
                    "rounding amounts the interpolation amplifies beyond the float16 tolerance"),)
    safe = {1: (-0.4, 0.4)}  # theta

    def reference_defect(self, a, ins, opset):
        if ins[0].dtype != dt.FLOAT32:
            return "onnx.reference's AffineGrid always returns float32"
        return super().reference_defect(a, ins, opset)


OPS = [AffineGridSample]
