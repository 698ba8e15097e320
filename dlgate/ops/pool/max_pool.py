from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from dlgate import dtypes as dt
from dlgate.ops.base import TensorType
from dlgate.ops.pool._shared import _Pool, _windows


class MaxPool(_Pool):
    onnx_op = "MaxPool"
    dtypes = tuple((t,) for t in dt.FLOATS + (dt.INT8, dt.UINT8))

    keeps_range = True
    exact_values = True
    siblings = "pool"

    def reference_defect(self, a, ins, opset):
        if self._same_defect(a, ins):
            return self._same_defect(a, ins)
        if a.get("auto_pad") == "SAME_LOWER":
            return ("onnx.reference's MaxPool sizes SAME_LOWER as floor(n / s) and splits its "
                    "pads as SAME_UPPER does")
        # With unit strides and dilations onnx.reference's MaxPool takes another code path.
        if any(v != 1 for v in a["strides"] + a["dilations"]):
            return None
        x, p = ins[0], self._pads(ins[0], a)
        # 2-D: it always runs np.pad with NaN, which raises for int8 and casts NaN
        # (invalid, platform-dependent) for uint8.
        if x.rank == 4 and x.dtype == dt.INT8:
            return "onnx.reference's unit-stride 2-D MaxPool pads with NaN, which np.pad refuses for int8"
        if not any(p) or a.get("auto_pad", "NOTSET") != "NOTSET":
            return None  # (its SAME_* path splits the pads it computes itself correctly)
        # 1-D: it never pads, and sizes the output as n - k + 1 (n + pads[0] - k + 1 in
        # ceil_mode); only a single-element input in ceil_mode without end pad comes out right.
        if x.rank == 3 and not (a["ceil_mode"] and p[1] == 0 and x.shape[2] == 1):
            return "onnx.reference's unit-stride MaxPool ignores 1-D pads"
        if x.rank == 4:
            if x.dtype == dt.UINT8:
                return "onnx.reference's unit-stride 2-D MaxPool pads uint8 with NaN cast to an integer"
            if p[1] != p[2] or a["ceil_mode"]:
                return ("onnx.reference's unit-stride 2-D MaxPool reads pads as (top, bottom, left, "
                        "right) and counts them twice in ceil_mode")
        return None


class MaxPoolWithIndices(MaxPool):
    """MaxPool with its second output: the flat index of each maximum in the (N, C, *S)
    input, padding never counted; with ``storage_order`` 1 the spatial dims are flattened
    column-major (the first spatial dim fastest), the batch and channel offset staying
    ``(n * C + c) * prod(S)``. ONNX does not say which index a window whose maximum occurs
    twice gives: the reference takes the first in row-major window order (onnxruntime's and
    PyTorch's choice) and ``undefined`` reports such ties."""

    name = "MaxPoolWithIndices"
    n_outputs = 2

    def sample(self, ctx, ins):
        a = super().sample(ctx, ins)
        a["storage_order"] = int(ctx.coin(0.3))
        return a

    def infer(self, ins, a):
        y = super().infer(ins, a)[0]
        return [y, TensorType(dt.INT64, y.shape)]

    def onnx_attrs(self, a, b):
        attrs = super().onnx_attrs(a, b)
        attrs["storage_order"] = b.opt(a["storage_order"], 0)
        return attrs

    def _windows_and_indices(self, a, x):
        k, s, d = a["kernel"], a["strides"], a["dilations"]
        ep, fo = self._pad_plan(a, x)
        fp = [p + e for p, e in zip(ep, fo)]
        vals = _windows(F.pad(x.to(torch.float64), fp, value=float("-inf")), k, s, d)
        return vals, _windows(F.pad(flat_indices(x.shape, a.get("storage_order", 0)), fp, value=-1.0), k, s, d)

    def torch(self, a, x):
        vals, idx = self._windows_and_indices(a, x)
        am = vals.argmax(dim=2, keepdim=True)  # the first maximum in row-major window order
        return vals.gather(2, am).squeeze(2).to(x.dtype), idx.gather(2, am).squeeze(2).to(torch.int64)

    jumps = True  # the indices

    def value_range(self, a, ranges, ins):
        return [tuple(ranges[0]), (0.0, float(math.prod(ins[0].shape) - 1))]

    def reference_defect(self, a, ins, opset):
        if all(v == 1 for v in a["strides"] + a["dilations"]):
            return "onnx.reference's unit-stride MaxPool path (its common pooling code) computes no indices"
        return super().reference_defect(a, ins, opset)

    def undefined(self, a, ins, out_types):
        vals, _ = self._windows_and_indices(a, ins[0])
        ties = (vals == vals.amax(dim=2, keepdim=True)).sum(dim=2)
        if bool((ties > 1).any()):
            return "a MaxPool window holds its maximum more than once: ONNX leaves the index unspecified"
        return None


def flat_indices(shape, storage_order: int = 0):
    """float64 (N, C, *S) tensor of each element's flat index, as MaxPool's indices
    output counts them (column-major over the spatial dims for ``storage_order`` 1)."""
    n, c, sp = shape[0], shape[1], tuple(shape[2:])
    size = math.prod(sp)
    if storage_order:
        pos = torch.arange(size, dtype=torch.float64).reshape(sp[::-1]).permute(*reversed(range(len(sp))))
    else:
        pos = torch.arange(size, dtype=torch.float64).reshape(sp)
    base = torch.arange(n * c, dtype=torch.float64).reshape((n, c) + (1,) * len(sp)) * size
    return base + pos


OPS = [MaxPool, MaxPoolWithIndices]
