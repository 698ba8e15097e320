"""What the pool operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.conv._shared import AUTO_PADS, auto_pads, same_total


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


class _GlobalPool(OpSpec):
    ranks = (3, 4, 5)
    dtypes = tuple((t,) for t in dt.FLOATS)

    def backward(self, ctx, out):
        if out.rank not in self.ranks or any(dd != 1 for dd in out.shape[2:]):
            return None
        if out.dtype not in [s[0] for s in self.dtypes]:
            return None
        cap = max(1, ctx.limits.max_elems // max(1, out.shape[0] * out.shape[1]))
        return [TensorType(out.dtype, tuple(out.shape[:2]) + ctx.shape(out.rank - 2, cap))], {}

    def infer(self, ins, a):
        x = ins[0]
        return [TensorType(x.dtype, tuple(x.shape[:2]) + (1,) * (x.rank - 2))]

    def torch(self, a, x):
        dims = tuple(range(2, x.dim()))
        if self.onnx_op == "GlobalMaxPool":
            return x.amax(dim=dims, keepdim=True)
        return x.to(torch.float64).mean(dim=dims, keepdim=True).to(x.dtype)

    def exact(self, a, exacts, ins):
        # over a single spatial element the output is the input itself
        x = ins[0]
        return exacts[0] if exacts and math.prod(x.shape[2:]) == 1 else None
