from __future__ import annotations

from typing import ClassVar

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.transformer._shared import _dims_ok, rotary_bounds, _w


class RotaryIdiom(OpSpec):
    """Rotary embeddings as exporters write them: Hugging Face's ``x * cos + rotate_half(x)
    * sin`` with rotate_half = ``Concat(Neg(Slice(x, half:)), Slice(x, :half))``, or GPT-J's
    interleaved pairs (strided Slices, Neg, Unsqueeze, Concat, Reshape); optionally on the
    first ``rot`` values of the head only (Slice, then Concat with the rest). cos and sin
    are graph tensors broadcast to the rotated part: (seq, rot), (batch, 1, seq, rot) /
    (batch, seq, rot), or with leading 1s."""

    name = "RotaryIdiom"
    onnx_op = "Neg"
    onnx_ops: ClassVar[tuple] = ("Slice", "Concat", "Mul", "Add", "Unsqueeze", "Reshape")
    arity = 3
    ranks = (3, 4)
    symbolic_ok = False
    dtypes = tuple((t,) * 3 for t in dt.FLOATS)

    def _attrs(self, ctx, x: TensorType):
        head = x.shape[-1]
        rot = head if ctx.coin(0.6) or head < 4 else 2 * ctx.int(1, head // 2)
        return {"rot": rot, "form": ctx.choice(("half", "interleaved")), "cache": ctx.choice(("sd", "full", "ones")),
                "head": head, "shape": list(x.shape)}

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0])

    def _cshape(self, x: tuple, a) -> tuple:
        r, s, rot = len(x), x[-2], a["rot"]
        if a["cache"] == "sd":
            return (s, rot)
        if a["cache"] == "ones":
            return (1,) * (r - 2) + (s, rot)
        return (x[0],) + (1,) * (r - 3) + (s, rot)

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self._cshape(ins[0].shape, a))

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks or out.shape[-1] % 2:
            return None
        a = self._attrs(ctx, out)
        return [out] + [TensorType(out.dtype, self._cshape(out.shape, a))] * 2, a

    def requires(self, ins, a):
        x = ins[0]
        if x.rank not in (3, 4):
            return [False]
        out = [x.shape[-1] % 2 == 0, a["rot"] % 2 == 0, a["rot"] <= x.shape[-1]] + _dims_ok(x.shape, a["shape"])
        for t in ins[1:]:
            out += _dims_ok(t.shape, self._cshape(x.shape, a))
        return out

    def infer(self, ins, a):
        return [ins[0]]

    def onnx(self, b, a, xs, ys):
        x, cos, sin = xs
        rot, head = a["rot"], a["head"]

        def sl(v, start, end, step=None):
            ins = [v, b.ints([start]), b.ints([end]), b.ints([-1])] + ([b.ints([step])] if step else [])
            return b.node("Slice", ins, 1)[0]

        xr, xp = x, None
        if rot < head:
            xr, xp = sl(x, 0, rot), sl(x, rot, head)
        if a["form"] == "half":
            x1, x2 = sl(xr, 0, rot // 2), sl(xr, rot // 2, rot)
            rh = b.node("Concat", [b.node("Neg", [x2], 1)[0], x1], 1, axis=-1)[0]
        else:
            x1, x2 = sl(xr, 0, rot, 2), sl(xr, 1, rot, 2)
            n2 = b.node("Neg", [x2], 1)[0]
            u1 = b.node("Unsqueeze", [n2, b.ints([-1])], 1)[0]
            u2 = b.node("Unsqueeze", [x1, b.ints([-1])], 1)[0]
            st = b.node("Concat", [u1, u2], 1, axis=-1)[0]
            rh = b.node("Reshape", [st, b.ints(list(a["shape"][:-1]) + [rot])], 1)[0]
        m1 = b.node("Mul", [xr, cos], 1)[0]
        m2 = b.node("Mul", [rh, sin], 1)[0]
        if xp is None:
            b.node("Add", [m1, m2], ys)
        else:
            yr = b.node("Add", [m1, m2], 1)[0]
            b.node("Concat", [yr, xp], ys, axis=-1)

    def torch(self, a, x, cos, sin):
        t, rot = x.dtype, a["rot"]
        xr, xp = x[..., :rot], x[..., rot:]
        if a["form"] == "half":
            rh = torch.cat([-xr[..., rot // 2:], xr[..., :rot // 2]], dim=-1)
        else:
            rh = torch.stack([-xr[..., 1::2], xr[..., 0::2]], dim=-1).reshape(xr.shape)
        y = (_w((_w(xr) * _w(cos)).to(t)) + _w((_w(rh) * _w(sin)).to(t))).to(t)
        return y if rot == x.shape[-1] else torch.cat([y, xp], dim=-1)

    def value_range(self, a, ranges, ins):
        # rotate_half(x) holds -x2 as well as x1: each rotated value is x * cos -+ x' * sin
        return [rotary_bounds(*ranges)]


OPS = [RotaryIdiom]
