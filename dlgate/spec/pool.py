"""Pooling: MaxPool, AveragePool and LpPool (1-D and 2-D, explicit possibly asymmetric
pads or ``auto_pad`` SAME_UPPER / SAME_LOWER / VALID, strides, dilations, ceil_mode),
GlobalAveragePool and GlobalMaxPool.

The windowed pools share one PyTorch implementation: pad explicitly (-inf for max, 0
otherwise), extend the end for ceil_mode, cut windows with ``unfold`` and reduce them,
in float64, cast back. Averages divide by a pooled mask, so count_include_pad and the
ceil_mode overflow (never counted) come out exactly as ONNX defines them.
The output size is symbolic (``sym``), so backward insertion goes through z3.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from dlgate import dtypes as dt
from dlgate.spec import sym
from dlgate.spec.base import OpSpec, TensorType, abs_bounds
from dlgate.spec.binary import mul0
from dlgate.spec.conv import AUTO_PADS, auto_pads, same_total


def _out_size(n, k, s, d, pb, pe, ceil):
    """ONNX's (and PyTorch's) pooled size: with ceil_mode, the last window must start
    inside the input or the left padding."""
    num = n + pb + pe - d * (k - 1) - 1
    if not ceil:
        return sym.div(num, s) + 1
    o = sym.ceildiv(num, s) + 1
    return sym.If((o - 1) * s >= n + pb, o - 1, o)


def _windows(x, k, s, d):
    """(N, C, prod(k), *out) windows of an already padded (N, C, *S) tensor (any number of
    spatial dims): each spatial dim is unfolded into (out, dilated kernel extent), the
    extent then thinned by the dilation."""
    r = x.dim() - 2
    w = x
    for i in range(r):
        w = w.unfold(2 + i, d[i] * (k[i] - 1) + 1, s[i])[..., ::d[i]]
    # (N, C, *out, *k) -> (N, C, prod(k), *out)
    w = w.reshape(tuple(w.shape[:2 + r]) + (-1,))
    return w.movedim(-1, 2)


def _window_counts(n, k, s, d, pb, pe, ceil) -> list:
    """Per output position along one spatial dim: (input elements, elements an average
    with count_include_pad divides by: input and explicit pads, not the ceil_mode overflow)."""
    out = []
    for j in range(_out_size(n, k, s, d, pb, pe, ceil)):
        pos = [j * s - pb + t * d for t in range(k)]
        out.append((sum(0 <= p < n for p in pos), sum(-pb <= p < n + pe for p in pos)))
    return out


class _Pool(OpSpec):
    ranks = (3, 4, 5)
    dtypes = tuple((t,) for t in dt.FLOATS)
    kind = "max"  # max | avg | lp
    #: first opset with ceil_mode / dilations for this operator (None = never).
    ceil_opset: int | None = 13
    dil_opset: int | None = 13

    def sample(self, ctx, ins):
        r = ins[0].rank - 2
        k = [ctx.int(1, 4) for _ in range(r)]
        s = [ctx.int(1, 3) if ctx.coin(0.6) else 1 for _ in range(r)]
        dil_ok = self.dil_opset is not None and ctx.opset >= self.dil_opset
        d = [ctx.int(1, 3) if dil_ok and ctx.coin(0.3) else 1 for _ in range(r)]
        # onnxruntime insists on pads < kernel.
        pads = [0] * (2 * r) if ctx.coin(0.3) else [ctx.int(0, k[i % r] - 1) for i in range(2 * r)]
        if ctx.degenerate_draw():  # zero pads, unit strides and dilations: the defaults, spelled out
            s, d, pads = [1] * r, [1] * r, [0] * (2 * r)
        ceil = self.ceil_opset is not None and ctx.opset >= self.ceil_opset and ctx.coin(0.5)
        a = {"kernel": k, "strides": s, "dilations": d, "pads": pads, "ceil_mode": int(ceil)}
        if self.kind == "avg":
            a["count_include_pad"] = int(ctx.coin(0.5))
        if self.kind == "lp":
            a["p"] = ctx.choice((1, 2, 3))
        a["auto_pad"] = ctx.choice(AUTO_PADS) if ctx.coin(0.3) else "NOTSET"
        if a["auto_pad"] != "NOTSET":
            # the pads follow from the input's shape; ceil_mode stays 0 (implementations
            # disagree on it with auto_pad), and SAME_* keeps unit dilations (onnxruntime
            # sizes SAME pads by the undilated kernel)
            a["pads"], a["ceil_mode"] = [0] * (2 * r), 0
            if a["auto_pad"] != "VALID":
                a["dilations"] = [1] * r
        return a

    def _pads(self, x, a) -> list:
        """The begin/end pads in effect (``auto_pad`` resolved against the input's shape)."""
        return auto_pads(a.get("auto_pad", "NOTSET"), tuple(x.shape[2:]), a["kernel"], a["strides"],
                         a["dilations"], a["pads"])

    def _same_defect(self, a, ins) -> str | None:
        if a.get("auto_pad", "NOTSET").startswith("SAME") and ins[0].rank != 4:
            return "onnx.reference's SAME_* pooling path reads two spatial pads (1-D fails)"
        if self.kind != "max" and a.get("auto_pad") == "VALID" and any(d > 1 for d in a["dilations"]):
            return "onnx.reference's common pooling code sizes VALID windows without their dilation"
        return None

    def _spatial(self, x, a):
        r, pads = x.rank - 2, self._pads(x, a)
        return [(x.shape[2 + i], a["kernel"][i], a["strides"][i], a["dilations"][i],
                 pads[i], pads[i + r]) for i in range(r)]

    def requires(self, ins, a):
        cons = []
        for n, k, s, d, pb, pe in self._spatial(ins[0], a):
            eff = d * (k - 1) + 1
            cons += [k >= 1, s >= 1, d >= 1, pb >= 0, pe >= 0, pb < k, pe < k,
                     n + pb + pe - eff >= 0,
                     # every window holds an input element (a dilated window could
                     # otherwise fall entirely into the padding)
                     sym.Or(pb == 0, n >= d)]
            if a.get("auto_pad", "NOTSET").startswith("SAME"):
                cons.append(same_total(n, k, s, d) >= 0)
            if a["ceil_mode"]:
                o = sym.ceildiv(n + pb + pe - eff, s) + 1
                # ONNX's shape inference lacks the rule that the last window starts
                # inside the input or left padding (onnxruntime, onnx.reference and
                # PyTorch apply it): stay where the rule does not fire.
                cons.append((o - 1) * s < n + pb)
        return cons

    def _counts(self, ins, a) -> list:
        """``_window_counts`` of each spatial dim (a window is one position per dim)."""
        return [_window_counts(*dim, a["ceil_mode"]) for dim in self._spatial(ins[0], a)]

    def _overflows(self, ins, a):
        """Per spatial dim, how far the last window reaches past the padded input."""
        return [(_out_size(n, k, s, d, pb, pe, a["ceil_mode"]) - 1) * s + d * (k - 1) + 1 - (n + pb + pe)
                for n, k, s, d, pb, pe in self._spatial(ins[0], a)]

    def infer(self, ins, a):
        x = ins[0]
        out = [_out_size(n, k, s, d, pb, pe, a["ceil_mode"]) for n, k, s, d, pb, pe in self._spatial(x, a)]
        return [TensorType(x.dtype, tuple(x.shape[:2]) + tuple(out))]

    def onnx_attrs(self, a, b):
        r = len(a["kernel"])
        mode = a.get("auto_pad", "NOTSET")
        attrs = {
            "kernel_shape": a["kernel"],
            "strides": b.opt(a["strides"], [1] * r),
            "pads": b.opt(a["pads"], [0] * (2 * r)) if mode == "NOTSET" else None,
            "auto_pad": b.opt(mode, "NOTSET"),
        }
        if self.ceil_opset is not None and b.opset >= self.ceil_opset:
            attrs["ceil_mode"] = b.opt(a["ceil_mode"], 0)
        if self.dil_opset is not None and b.opset >= self.dil_opset:
            attrs["dilations"] = b.opt(a["dilations"], [1] * r)
        if self.kind == "avg":
            attrs["count_include_pad"] = b.opt(a["count_include_pad"], 0)
        if self.kind == "lp":
            attrs["p"] = b.opt(a["p"], 2)
        return attrs

    def _pad_plan(self, a, x) -> tuple:
        """(explicit begin/end pads, ceil_mode end overflow), both in F.pad order (last
        dim first, (begin, end) each)."""
        r = x.dim() - 2
        k, s, d = a["kernel"], a["strides"], a["dilations"]
        pads = [int(p) for p in auto_pads(a.get("auto_pad", "NOTSET"), tuple(x.shape[2:]), k, s, d, a["pads"])]
        sizes = [_out_size(x.shape[2 + i], k[i], s[i], d[i], pads[i], pads[i + r], a["ceil_mode"])
                 for i in range(r)]
        # end padding: explicit pads plus the ceil_mode overflow
        extra = [max(0, (sizes[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 - (x.shape[2 + i] + pads[i] + pads[i + r]))
                 for i in range(r)]
        ep, fo = [], []
        for i in reversed(range(r)):
            ep += [pads[i], pads[i + r]]
            fo += [0, extra[i]]
        return ep, fo

    def torch(self, a, x):
        k, s, d = a["kernel"], a["strides"], a["dilations"]
        ep, fo = self._pad_plan(a, x)
        fp = [p + e for p, e in zip(ep, fo)]
        xd = x.to(torch.float64)
        if self.kind == "max":
            y = _windows(F.pad(xd, fp, value=float("-inf")), k, s, d).amax(dim=2)
            return y.to(x.dtype)
        if self.kind == "lp":
            y = _windows(F.pad(xd.abs() ** a["p"], fp), k, s, d).sum(dim=2) ** (1.0 / a["p"])
            return y.to(x.dtype)
        total = _windows(F.pad(xd, fp), k, s, d).sum(dim=2)
        ones = torch.ones((1, 1) + tuple(x.shape[2:]), dtype=torch.float64)
        if a["count_include_pad"]:  # pads count, the ceil_mode overflow does not
            mask = F.pad(F.pad(ones, ep, value=1.0), fo)
        else:
            mask = F.pad(ones, fp)
        count = _windows(mask, k, s, d).sum(dim=2)
        return (total / count).to(x.dtype)


class MaxPool(_Pool):
    keeps_range = True
    onnx_op = "MaxPool"
    exact_values = True
    siblings = "pool"
    dtypes = tuple((t,) for t in dt.FLOATS + (dt.INT8, dt.UINT8))

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
    jumps = True  # the indices

    def sample(self, ctx, ins):
        a = super().sample(ctx, ins)
        a["storage_order"] = int(ctx.coin(0.3))
        return a

    def infer(self, ins, a):
        y = super().infer(ins, a)[0]
        return [y, TensorType(dt.INT64, y.shape)]

    def value_range(self, a, ranges, ins):
        return [tuple(ranges[0]), (0.0, float(math.prod(ins[0].shape) - 1))]

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


class AveragePool(_Pool):
    onnx_op = "AveragePool"
    siblings = "pool"
    kind = "avg"
    dil_opset = 19

    def value_range(self, a, ranges, ins):
        # a mean of input values; counted pads add zeros, scaling it by (input elements /
        # counted elements) in [f, 1], f the smallest ratio over windows (a product per dim)
        lo, hi = ranges[0]
        if not a["count_include_pad"]:
            return [(lo, hi)]
        f = 1.0
        for dim in self._counts(ins, a):
            f *= min(r / max(c, 1) for r, c in dim)
        return [(lo * f if lo > 0 else lo, hi * f if hi < 0 else hi)]

    def reference_defect(self, a, ins, opset):
        if self._same_defect(a, ins):
            return self._same_defect(a, ins)
        if any(o >= 2 for o in self._overflows(ins, a)):
            return ("onnx.reference's AveragePool splits a ceil_mode overflow >= 2 between both "
                    "ends, shifting the windows")
        return None


class LpPool(_Pool):
    onnx_op = "LpPool"
    kind = "lp"
    ceil_opset = 18
    dil_opset = 18

    def value_range(self, a, ranges, ins):
        # the p-norm of r window elements (pads add 0) within [r^(1/p) min|x|, r^(1/p) max|x|],
        # r between the fewest and most input elements a window holds (products over dims)
        m, big = abs_bounds(ranges[0])
        rmin = rmax = 1
        for dim in self._counts(ins, a):
            rmin *= min(r for r, _ in dim)
            rmax *= max(r for r, _ in dim)
        p = 1.0 / a["p"]
        return [(mul0(rmin ** p, m), mul0(rmax ** p, big))]

    def reference_defect(self, a, ins, opset):
        if self._same_defect(a, ins):
            return self._same_defect(a, ins)
        if any(o >= 1 for o in self._overflows(ins, a)):
            return ("onnx.reference's LpPool averages over the window without the ceil_mode "
                    "overflow and rescales by the kernel size (and shifts windows for overflow >= 2)")
        return None


class _GlobalPool(OpSpec):
    ranks = (3, 4, 5)
    dtypes = tuple((t,) for t in dt.FLOATS)

    def infer(self, ins, a):
        x = ins[0]
        return [TensorType(x.dtype, tuple(x.shape[:2]) + (1,) * (x.rank - 2))]

    def backward(self, ctx, out):
        if out.rank not in self.ranks or any(dd != 1 for dd in out.shape[2:]):
            return None
        if out.dtype not in [s[0] for s in self.dtypes]:
            return None
        cap = max(1, ctx.limits.max_elems // max(1, out.shape[0] * out.shape[1]))
        return [TensorType(out.dtype, tuple(out.shape[:2]) + ctx.shape(out.rank - 2, cap))], {}

    def exact(self, a, exacts, ins):
        # over a single spatial element the output is the input itself
        x = ins[0]
        return exacts[0] if exacts and math.prod(x.shape[2:]) == 1 else None

    def torch(self, a, x):
        dims = tuple(range(2, x.dim()))
        if self.onnx_op == "GlobalMaxPool":
            return x.amax(dim=dims, keepdim=True)
        return x.to(torch.float64).mean(dim=dims, keepdim=True).to(x.dtype)


class GlobalAveragePool(_GlobalPool):
    keeps_range = True
    onnx_op = "GlobalAveragePool"
    siblings = "global-pool"


class GlobalMaxPool(_GlobalPool):
    keeps_range = True
    onnx_op = "GlobalMaxPool"
    exact_values = True
    siblings = "global-pool"

    def reference_defect(self, a, ins, opset):
        if ins[0].rank != 4:
            return "onnx.reference's GlobalMaxPool reduces axes (r-2, r-1): the spatial axes only at rank 4"
        return None


class GlobalLpPool(_GlobalPool):
    """``(sum |x|^p)^(1/p)`` over the spatial dims, p an integer: 1, 2 (the default) or 3.
    onnx.reference has no GlobalLpPool; onnxruntime implements float and float16 only (and
    sums float16 in float32)."""

    onnx_op = "GlobalLpPool"

    def sample(self, ctx, ins):
        return {"p": ctx.choice((1, 2, 2, 3))}

    def backward(self, ctx, out):
        res = super().backward(ctx, out)
        if res is None:
            return None
        return res[0], self.sample(ctx, res[0])

    def onnx_attrs(self, a, b):
        return {"p": b.opt(a["p"], 2)}

    def torch(self, a, x):
        dims = tuple(range(2, x.dim()))
        y = (x.to(torch.float64).abs() ** a["p"]).sum(dim=dims, keepdim=True) ** (1.0 / a["p"])
        return y.to(x.dtype)

    def value_range(self, a, ranges, ins):
        # the p-norm of n elements lies within [n^(1/p) min|x|, n^(1/p) max|x|]
        m, big = abs_bounds(ranges[0])
        n = math.prod(ins[0].shape[2:]) ** (1.0 / a["p"])
        return [(mul0(n, m), mul0(n, big))]

    def exact(self, a, exacts, ins):
        return None

    def reference_defect(self, a, ins, opset):
        return "onnx.reference has no GlobalLpPool"


OPS = [MaxPool, MaxPoolWithIndices, AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool, GlobalLpPool]
