from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec
from dlgate.ops.pool._shared import _out_size
from dlgate.ops.pool.max_pool import MaxPoolWithIndices
from dlgate.ops.spatial._shared import _hull0


# -- MaxPool -> MaxUnpool ---------------------------------------------------------------------
class MaxUnpool(OpSpec):
    """MaxUnpool as exporters write it (``F.max_unpool`` after ``F.max_pool(...,
    return_indices=True)``): MaxPool with its indices output, then MaxUnpool of its values
    at those indices, with ``output_shape`` the pooled input's shape (or without it where
    the default size, ``(out - 1) * stride - pads + kernel``, is that shape already). The
    result is the input at each window's maximum and 0 elsewhere. A window whose (nonzero)
    maximum occurs twice leaves the position unspecified: ``undefined``. Unit dilations and
    no ceil_mode (MaxUnpool has neither)."""

    onnx_op = "MaxUnpool"
    onnx_ops = ("MaxPool",)
    dtypes = tuple((t,) for t in dt.FLOATS)
    ranks = (3, 4, 5)
    symbolic_ok = False
    _pool = MaxPoolWithIndices()

    def _default_size(self, x, a) -> list:
        r = x.rank - 2
        out = [_out_size(x.shape[2 + i], a["kernel"][i], a["strides"][i], 1, a["pads"][i], a["pads"][i + r], 0)
               for i in range(r)]
        return [(o - 1) * a["strides"][i] - a["pads"][i] - a["pads"][i + r] + a["kernel"][i] for i, o in enumerate(out)]

    def sample(self, ctx, ins):
        r = ins[0].rank - 2
        k = [ctx.int(1, 4) for _ in range(r)]
        s = [ctx.int(1, 3) if ctx.coin(0.7) else k[i] for i in range(r)]
        pads = [0] * (2 * r) if ctx.coin(0.5) else [ctx.int(0, k[i % r] - 1) for i in range(2 * r)]
        a = {"kernel": k, "strides": s, "pads": pads}
        explicit = ctx.coin(0.6) or self._default_size(ins[0], a) != list(ins[0].shape[2:])
        a["output_shape"] = list(ins[0].shape) if explicit else None
        return a

    def backward(self, ctx, out):
        if out.rank not in self.ranks or out.dtype not in dt.FLOATS:
            return None
        a = self.sample(ctx, [out])
        return [out], a

    def _pool_attrs(self, a) -> dict:
        r = len(a["kernel"])
        return {"kernel": a["kernel"], "strides": a["strides"], "dilations": [1] * r, "pads": a["pads"],
                "ceil_mode": 0, "auto_pad": "NOTSET", "storage_order": 0}

    def requires(self, ins, a):
        x = ins[0]
        if x.rank - 2 != len(a["kernel"]):
            return [False]
        cons = list(self._pool.requires(ins, self._pool_attrs(a)))
        # onnxruntime computes the default size even when output_shape is given, and
        # refuses one below 1
        cons += [d >= 1 for d in self._default_size(x, a)]
        if a["output_shape"] is None:
            cons.append(self._default_size(x, a) == list(x.shape[2:]))
        else:
            cons.append(list(a["output_shape"]) == list(x.shape))
        return cons

    def infer(self, ins, a):
        return [ins[0]]

    def onnx(self, b, a, xs, ys):
        r = len(a["kernel"])
        common = {"kernel_shape": a["kernel"], "strides": b.opt(a["strides"], [1] * r),
                  "pads": b.opt(a["pads"], [0] * (2 * r))}
        y, idx = b.node("MaxPool", [xs[0]], 2, **common)
        ins = [y, idx]
        if a["output_shape"] is not None:
            ins.append(b.ints(a["output_shape"], hint="output_shape"))
        b.node(self.onnx_op, ins, ys, **common)

    def _pooled(self, a, x):
        return self._pool.torch(self._pool_attrs(a), x)

    def torch(self, a, x):
        vals, idx = self._pooled(a, x)
        y = torch.zeros(x.numel(), dtype=x.dtype)
        y[idx.reshape(-1)] = vals.reshape(-1)
        return y.reshape(x.shape)

    gaps = (("pads that make the default unpooled size below 1 (with output_shape given)",
             "onnxruntime computes and refuses that size even though output_shape replaces it"),
            ("storage_order 1", "MaxUnpool reads the indices row-major"))
    keeps_integers = True
    jumps = True

    def value_range(self, a, ranges, ins):
        return [_hull0(ranges[0])]

    def undefined(self, a, ins, out_types):
        vals, _ = self._pool._windows_and_indices(self._pool_attrs(a), ins[0])
        top = vals.amax(dim=2, keepdim=True)
        ties = ((vals == top).sum(dim=2) > 1) & (top.squeeze(2) != 0)
        if bool(ties.any()):
            return "a MaxPool window holds its (nonzero) maximum more than once: ONNX leaves the index unspecified"
        return None

    def reference_defect(self, a, ins, opset):
        why = self._pool.reference_defect(self._pool_attrs(a), ins, opset)
        if why:
            return why
        if a["output_shape"] is not None and self._default_size(ins[0], a) != list(ins[0].shape[2:]):
            return ("onnx.reference's MaxUnpool scatters into the default-size output and pads that to "
                    "output_shape, instead of indexing output_shape's tensor")
        return None


OPS = [MaxUnpool]
