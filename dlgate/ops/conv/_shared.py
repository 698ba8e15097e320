"""What the conv operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

import torch.nn.functional as F

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.linalg._shared import product_bounds, product_span, sum_bounds
from dlgate.ops.linalg.gemm import plus_bounds


_CONV = {1: (F.conv1d, F.conv_transpose1d), 2: (F.conv2d, F.conv_transpose2d), 3: (F.conv3d, F.conv_transpose3d)}
AUTO_PADS = ("SAME_UPPER", "SAME_LOWER", "VALID")


def same_total(n, k, s, d):
    """ONNX's SAME_* total padding along one axis: the output keeps ceil(n / s) positions,
    ``(ceil(n/s) - 1) * s + d * (k - 1) + 1 - n`` (implementations clamp it at 0 or not,
    so ``requires`` keeps it non-negative)."""
    return (sym.ceildiv(n, s) - 1) * s + d * (k - 1) + 1 - n


def auto_pads(mode: str, shape, k, s, d, pads) -> list:
    """The begin/end pads ``auto_pad`` ``mode`` means for spatial dims ``shape``: the explicit
    ``pads`` for NOTSET, none for VALID, and for SAME_* the total split in two, the odd
    one at the end (SAME_UPPER) or at the beginning (SAME_LOWER)."""
    r = len(shape)
    if mode == "NOTSET":
        return list(pads)
    if mode == "VALID":
        return [0] * (2 * r)
    head, tail = [], []
    for i in range(r):
        t = same_total(shape[i], k[i], s[i], d[i])
        h = sym.div(t, 2) if mode == "SAME_UPPER" else t - sym.div(t, 2)
        head.append(h)
        tail.append(t - h)
    return head + tail


def _spatial_attrs(ctx, r: int, kmax: int = 5) -> dict:
    """Kernel, strides, dilations and begin/end pads for ``r`` spatial dims."""
    k = [ctx.int(1, kmax) for _ in range(r)]
    s = [ctx.int(1, 3) if ctx.coin(0.6) else 1 for _ in range(r)]
    d = [ctx.int(1, 3) if ctx.coin(0.4) else 1 for _ in range(r)]
    if ctx.coin(0.3):
        pads = [0] * (2 * r)
    elif ctx.coin(0.5):  # symmetric
        half = [ctx.int(0, 3) for _ in range(r)]
        pads = half + half
    else:
        pads = [ctx.int(0, 3) for _ in range(2 * r)]
    if ctx.degenerate_draw():  # zero pads, unit strides and dilations: the defaults, spelled out
        s, d, pads = [1] * r, [1] * r, [0] * (2 * r)
    return {"kernel": k, "strides": s, "dilations": d, "pads": pads}


def _taps(o: int, n: int, k: int, s: int, d: int, pb: int, transpose: bool) -> int:
    """How many kernel taps of output index ``o`` along one axis (of input size ``n``)
    meet a real input element: Conv reads input ``o*s + t*d - pb``; ConvTranspose adds
    input ``i`` with tap ``t`` into full index ``i*s + t*d``, which is output ``o + pb``."""
    if transpose:
        return sum(1 for t in range(k) if (o + pb - t * d) % s == 0 and 0 <= (o + pb - t * d) // s < n)
    return sum(1 for t in range(k) if 0 <= o * s + t * d - pb < n)


class _ConvBase(OpSpec):
    ranks = (3, 4, 5)
    types = dt.FLOATS
    has_bias = True
    transpose = False

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.arity = 3 if cls.has_bias else 2
        cls.dtypes = tuple((t,) * cls.arity for t in cls.types)

    # -- generation --------------------------------------------------------------------
    def sample(self, ctx, ins):
        x = ins[0]
        r = x.rank - 2
        c = x.shape[1]
        a = _spatial_attrs(ctx, r)
        if ctx.symbolic:
            a["group"] = ctx.divisor(c)  # the solver (with binning) decides
        else:
            a["group"] = 1 if ctx.coin(0.5) else ctx.divisor(c)
        # output channels per group: small when sampling forward (weights must fit),
        # any width the solver needs when inverting
        a["m_per_group"] = ctx.int(1, ctx.limits.max_dim if ctx.symbolic else 16)
        if self.transpose:
            # ONNX says output_padding must be "less than the corresponding stride/dilation",
            # which PyTorch reads as < max(stride, dilation), but onnxruntime rejects
            # output_padding >= stride (INVALID_ARGUMENT "output_padding may be too large
            # for stride"), so stay below the stride, which every reading allows.
            a["output_padding"] = [0] * r if ctx.coin(0.5) else [
                ctx.int(0, s - 1) for s in a["strides"]]
            if ctx.coin(0.25):
                # output_shape instead of pads: an even total padding per axis, split evenly
                half = [ctx.int(0, 2) for _ in range(r)]
                a["pads"] = half + half
                a["output_shape"] = self._spatial_out(ins[0], a)
        a["spell_kernel"] = ctx.coin(0.5)
        a["auto_pad"] = ctx.choice(AUTO_PADS) if not self.transpose and ctx.coin(0.3) else "NOTSET"
        if a["auto_pad"] != "NOTSET":
            a["pads"] = [0] * (2 * r)  # unused: the pads follow from the input's shape
        if a["auto_pad"].startswith("SAME"):
            # ONNX allows dilations with SAME_*, but onnxruntime refuses them ("Dilation not
            # supported for AutoPadType::SAME_UPPER or AutoPadType::SAME_LOWER")
            a["dilations"] = [1] * r
        return a

    def _pads(self, x, a) -> list:
        """The begin/end pads in effect (``auto_pad`` resolved against the input's shape)."""
        return auto_pads(a.get("auto_pad", "NOTSET"), tuple(x.shape[2:]), a["kernel"], a["strides"],
                         a["dilations"], a["pads"])

    def _out_channels(self, a):
        return a["group"] * a["m_per_group"]

    def _weight_shape(self, ins, a):
        c = ins[0].shape[1]
        if self.transpose:
            return (c, a["m_per_group"]) + tuple(a["kernel"])
        return (self._out_channels(a), sym.div(c, a["group"])) + tuple(a["kernel"])

    def input_type(self, ctx, i, ins, a, dtype):
        if i == 1:
            return TensorType(dtype, self._weight_shape(ins, a))
        return TensorType(dtype, (self._out_channels(a),))

    def _spatial_out(self, x, a):
        r = x.rank - 2
        out, pads = [], self._pads(x, a)
        for i in range(r):
            n = x.shape[2 + i]
            k, s, d = a["kernel"][i], a["strides"][i], a["dilations"][i]
            pb, pe = pads[i], pads[i + r]
            if self.transpose:
                out.append(s * (n - 1) + a["output_padding"][i] + d * (k - 1) + 1 - pb - pe)
            else:
                out.append(sym.div(n + pb + pe - d * (k - 1) - 1, s) + 1)
        return out

    def requires(self, ins, a):
        x, w = ins[0], ins[1]
        r = x.rank - 2
        g = a["group"]
        cons = [g >= 1, a["m_per_group"] >= 1, sym.mod(x.shape[1], g) == 0, w.rank == r + 2]
        if w.rank != r + 2:
            return [False]
        want = self._weight_shape(ins, a)
        cons += [p == q for p, q in zip(w.shape, want)]
        if self.has_bias:
            b = ins[2]
            if b.rank != 1:
                return [False]
            cons.append(b.shape[0] == self._out_channels(a))
        pads = self._pads(x, a)
        for i in range(r):
            k, s, d = a["kernel"][i], a["strides"][i], a["dilations"][i]
            pb, pe = pads[i], pads[i + r]
            cons += [k >= 1, s >= 1, d >= 1, pb >= 0, pe >= 0]
            if a.get("auto_pad", "NOTSET").startswith("SAME"):
                cons.append(same_total(x.shape[2 + i], k, s, d) >= 0)
            if self.transpose:
                op = a["output_padding"][i]
                cons += [op >= 0, op < s]
                if a.get("output_shape") is not None:
                    # ONNX's shape inference gives up (a rank-2 shape, which the full checker
                    # refuses) when an output_shape entry is below the input's size
                    cons += [pb == pe, a["output_shape"][i] == self._spatial_out(x, a)[i],
                             a["output_shape"][i] >= x.shape[2 + i]]
            else:
                cons.append(x.shape[2 + i] + pb + pe - d * (k - 1) - 1 >= 0)
        cons += [o >= 1 for o in self._spatial_out(x, a)]
        return cons

    def infer(self, ins, a):
        x = ins[0]
        shape = (x.shape[0], self._out_channels(a)) + tuple(self._spatial_out(x, a))
        return [TensorType(x.dtype, shape)]

    # -- materialization ---------------------------------------------------------------
    def onnx_attrs(self, a, b):
        r = len(a["kernel"])
        mode = a.get("auto_pad", "NOTSET")
        attrs = {
            "group": b.opt(a["group"], 1),
            "strides": b.opt(a["strides"], [1] * r),
            "dilations": b.opt(a["dilations"], [1] * r),
            "pads": b.opt(a["pads"], [0] * (2 * r)) if mode == "NOTSET" else None,
            "auto_pad": b.opt(mode, "NOTSET"),
            "kernel_shape": a["kernel"] if a["spell_kernel"] else None,
        }
        if self.transpose:
            attrs["output_padding"] = b.opt(a["output_padding"], [0] * r)
            if a.get("output_shape") is not None:
                attrs["output_shape"], attrs["pads"] = list(a["output_shape"]), None
        return attrs

    def torch(self, a, x, w, bias=None):
        r = x.dim() - 2
        pads = [int(p) for p in auto_pads(a.get("auto_pad", "NOTSET"), tuple(x.shape[2:]), a["kernel"],
                                          a["strides"], a["dilations"], a["pads"])]
        conv, convt = _CONV[r]
        if not self.transpose:
            # F.pad takes (last dim begin, last dim end, previous dim begin, ...).
            fp = []
            for i in reversed(range(r)):
                fp += [pads[i], pads[i + r]]
            xp = F.pad(x, fp) if any(fp) else x
            return conv(xp, w, bias, stride=a["strides"], dilation=a["dilations"], groups=a["group"])
        y = convt(x, w, None, stride=a["strides"], dilation=a["dilations"], groups=a["group"])
        # Full output, then output_padding (zeros at the end), then crop the pads.
        fp = []
        for i in reversed(range(r)):
            fp += [0, a["output_padding"][i]]
        if any(fp):
            y = F.pad(y, fp)
        idx = [slice(None), slice(None)]
        for i in range(r):
            idx.append(slice(pads[i], y.shape[2 + i] - pads[i + r]))
        y = y[tuple(idx)]
        if bias is not None:
            y = y + bias.reshape((1, -1) + (1,) * r)
        return y

    keeps_integers = True

    # -- value knowledge -----------------------------------------------------------------
    def _term_counts(self, a, x) -> tuple:
        """The fewest and most products ``x * w`` summed into one output element: input
        channels per group times, per spatial axis, the fewest / most taps that meet a real
        input element (padding and stride gaps contribute nothing)."""
        r, outs, pads = x.rank - 2, self._spatial_out(x, a), self._pads(x, a)
        lo = hi = x.shape[1] // a["group"]
        for i in range(r):
            counts = [_taps(o, x.shape[2 + i], a["kernel"][i], a["strides"][i], a["dilations"][i],
                            pads[i], self.transpose) for o in range(outs[i])]
            lo, hi = lo * min(counts), hi * max(counts)
        return lo, hi

    def value_range(self, a, ranges, ins):
        # each output sums between m_min and m_max products x * w, plus one bias element
        m_min, m_max = self._term_counts(a, ins[0])
        y = sum_bounds(product_bounds(ranges[0], ranges[1]), m_min, m_max)
        return [plus_bounds(y, ranges[2]) if self.has_bias else y]

    def exact(self, a, exacts, ins):
        # an output index (along some axis) that no tap feeds sums nothing: exactly 0, or
        # the bias of its channel (so a bias value held exactly is held there too)
        if self._term_counts(a, ins[0])[0] != 0:
            return None
        return exacts[2] if self.has_bias else 0.0

    def reference_defect(self, a, ins, opset):
        if not self.transpose:
            return None
        if a.get("output_shape") is not None and any(a["pads"]):
            return "onnx.reference's ConvTranspose ignores the pads output_shape implies (it keeps 0)"
        g = a["group"]
        # Its group > 1 path slices W by output channels, writes one output channel per
        # group and adds B[0] to every group: right only for a bias-free depthwise
        # transpose (C == group, one output channel per group).
        if g > 1 and not (ins[0].shape[1] == g and a["m_per_group"] == 1 and not self.has_bias):
            return ("onnx.reference's grouped ConvTranspose slices W by output channels, writes one "
                    "output channel per group and adds B[0] to every group")
        return None

    def input_span(self, a, i, span, ins):
        # an output sums up to m_max products (fewer near padding): with a bias, the bias
        # within the middle half of the span and the sum within a quarter of its width
        # either way; without one, the span must hold 0 and the sum stays within it
        lo, hi = span
        m = max(self._term_counts(a, ins[0])[1], 1)
        if self.has_bias:
            c, q = (lo + hi) / 2, (hi - lo) / 4
            return (c - q, c + q) if i == 2 else product_span(i, (-q, q), m)
        return product_span(i, span, m) if lo <= 0 <= hi else None
