"""Type conversions and value-preserving element-wise ops: Cast, CastLike, Clip, Identity."""
from __future__ import annotations

import math

import torch

from dlgate import dtypes as dt
from dlgate.spec import losses as L
from dlgate.spec.base import OpSpec, TensorType, same_dtype_sigs

#: Open interval of float values whose truncation toward zero fits each integer type.
INT_RANGE = {dt.INT8: (-129.0, 128.0), dt.UINT8: (-1.0, 256.0),
             dt.INT32: (-2.0 ** 31 - 1, 2.0 ** 31), dt.INT64: (-2.0 ** 63 - 1, 2.0 ** 63)}


def cast_losses(x, to: str) -> list:
    """Float -> integer conversion is defined only when the truncated value fits the target
    (C++ ``static_cast``, which onnxruntime uses, is UB otherwise; PyTorch gives
    platform-dependent results): one loss per bound."""
    src = str(x.dtype).replace("torch.", "")
    if not dt.is_float(src) or to not in INT_RANGE:
        return []
    lo, hi = INT_RANGE[to]
    x = torch.nan_to_num(x.double(), nan=hi + 1.0, posinf=float("inf"), neginf=float("-inf"))  # NaN violates
    return [L.lt0(x - hi), L.lt0(lo - x)]


def cast_undefined(x, to: str) -> str | None:
    """Conversion of ``x`` (a PyTorch tensor) to ``to`` is undefined only from a floating-point
    type to an integer one, for NaN, Inf or a truncated value out of range. The ONNX Cast
    specification defines every other case: an integer narrowed to a smaller integer type
    discards its high bits (int16 200 -> int8 -56), a floating-point value out of a float
    type's range becomes +/-inf, anything becomes a bool by comparison with zero. Excusing
    those would hide wrong answers."""
    if to not in dt.INTS or not x.is_floating_point():
        return None
    info = torch.iinfo(dt.torch_dtype(to))
    v = x.double()
    if not torch.isfinite(v).all():
        return f"converts NaN or Inf to {to}"
    v = torch.trunc(v)
    if v.numel() and (v.max().item() > info.max or v.min().item() < info.min):
        return f"converts values outside [{info.min}, {info.max}] to {to}"
    return None


def to_dtype(x, to):
    """ONNX Cast of ``x`` to ``to`` (a dtype name or a torch dtype). PyTorch's ``.to()``
    matches it (integers wrap, floats overflow to inf, float -> int truncates) except from
    float64 to float16, which it rounds twice, through float32: a value a hair below
    65520 becomes inf instead of 65504, and midpoints between float16 neighbours round the
    wrong way. There the float32 step rounds to odd, which makes the second rounding exact."""
    to = dt.torch_dtype(to) if isinstance(to, str) else to
    if x.dtype == torch.float64 and to == torch.float16:
        return _to_float32_odd(x).to(to)
    return x.to(to)


def _to_float32_odd(x):
    """float64 -> float32 rounded to odd: an inexact result takes, of the two float32
    neighbours of ``x``, the one whose last bit is odd. The correction is added as a
    constant, so the input search keeps the gradient of ``.to()``."""
    xd = x.detach()
    near = xd.to(torch.float32)
    fix = (near.double() != xd) & ((near.view(torch.int32) & 1) == 0) & torch.isfinite(near)
    inf = near.new_tensor(math.inf)
    toward = torch.nextafter(near, torch.where(xd > near.double(), inf, -inf))
    y = x.to(torch.float32)
    return torch.where(fix, y + (toward - near), y)  # where, not + 0: -0.0 keeps its sign


class Cast(OpSpec):
    """``y = cast(x, to)``, ``to`` any allowed dtype (sometimes the input's own).

    Semantics, as the ONNX Cast specification defines them (``to_dtype``): float -> bool is
    ``x != 0`` (NaN -> True), bool -> numbers is 0/1, float -> int truncates toward zero,
    int -> narrower int discards the high bits (wraps modulo 2^bits), and narrowing float
    conversions round to nearest even, overflowing to +/-inf.

    Hazard: float -> integer of NaN, Inf or a value whose truncation is out of the target's
    range is undefined in ONNX (onnxruntime's ``static_cast`` is UB in C++) and differs
    between PyTorch and runtimes, e.g. negative floats -> uint8. The op is therefore
    ``restricted``: ``losses`` asks the input search to keep such inputs in range.
    """
    elementwise = True
    keeps_integers = True

    onnx_op = "Cast"
    dtypes = tuple((t,) for t in dt.ALL)
    restricted = True

    def sample(self, ctx, ins):
        others = [t for t in ctx.dtypes if t != ins[0].dtype]
        if others and ctx.coin(0.8):
            return {"to": ctx.choice(others)}
        return {"to": ctx.choice(ctx.dtypes)}

    def infer(self, ins, a):
        return [TensorType(a["to"], ins[0].shape)]

    def backward(self, ctx, out):
        srcs = [s[0] for s in self.dtypes if s[0] in ctx.dtypes]
        if not srcs:
            return None
        others = [t for t in srcs if t != out.dtype]
        src = ctx.choice(others) if others and ctx.coin(0.8) else ctx.choice(srcs)
        return [TensorType(src, out.shape)], {"to": out.dtype}

    def discontinuous(self, a):
        return a["to"] not in dt.FLOATS  # truncation to an integer or a test against zero

    def onnx_attrs(self, a, b):
        return {"to": int(dt.ONNX[a["to"]])}

    def torch(self, a, x):
        return to_dtype(x, a["to"])

    def input_range(self, a, i):
        return (0.0, 8.0) if a["to"] in dt.INTS else None  # fits every integer type

    def value_range(self, a, ranges, ins):
        # numbers keep their values (rounded to the target); a cast to an integer
        # truncates towards zero, to bool gives 0 or 1
        lo, hi = ranges[0]
        if a["to"] == dt.BOOL:
            return [(0.0, 1.0)]
        if a["to"] in dt.INTS and dt.is_float(ins[0].dtype):
            return [(float(math.trunc(lo)) if math.isfinite(lo) else lo, float(math.trunc(hi)) if math.isfinite(hi) else hi)]
        return [(lo, hi)]

    def losses(self, a, x):
        return cast_losses(x, a["to"])

    def undefined(self, a, ins, out_types):
        return cast_undefined(ins[0], a["to"])

    def input_span(self, a, i, span, ins):
        return span if dt.is_float(a["to"]) and dt.is_float(ins[0].dtype) else None  # float to float


class CastLike(OpSpec):
    """``y = cast(x, dtype of target)``; the target's values and shape are irrelevant.
    Same semantics and hazard as Cast."""
    keeps_integers = True
    jumps = True  # when the target is an integer or bool type
    value_inputs = (0,)

    onnx_op = "CastLike"
    arity = 2
    min_opset = 15
    dtypes = tuple((s, t) for s in dt.ALL for t in dt.ALL)
    restricted = True

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, ctx.shape(ctx.rng.randint(0, 2), numel_cap=16))

    def infer(self, ins, a):
        return [TensorType(ins[1].dtype, ins[0].shape)]

    def backward(self, ctx, out):
        sigs = [s for s in self.dtypes if s[1] == out.dtype and s[0] in ctx.dtypes]
        if not sigs:
            return None
        sig = ctx.choice(sigs)
        like = TensorType(sig[1], ctx.shape(ctx.rng.randint(0, 2), numel_cap=16))
        return [TensorType(sig[0], out.shape), like], {}

    def torch(self, a, x, like):
        return to_dtype(x, like.dtype)

    def losses(self, a, x, like):
        return cast_losses(x, str(like.dtype).replace("torch.", ""))

    def undefined(self, a, ins, out_types):
        return cast_undefined(ins[0], out_types[0].dtype)


class SameType(OpSpec):
    """One input, output of the same type; the sampled attributes do not depend on dims."""

    def infer(self, ins, a):
        return [TensorType(ins[0].dtype, ins[0].shape)]

    def backward(self, ctx, out):
        if (out.dtype,) not in self.dtypes:
            return None
        return [out], self.sample(ctx, [out])


class Clip(SameType):
    """``y = min(max(x, min), max)``; ``min``/``max`` each present or absent (attrs keys).

    From opset 11 they are optional scalar inputs of the input's dtype (emitted as
    constants, an absent one as the empty name ""), before that float attributes. We keep
    ``min <= max``: torch.clamp and ONNX both give ``max`` otherwise, but runtimes that
    implement Clip as ``std::clamp`` are undefined there.
    """
    monotone = 1
    elementwise = True

    onnx_op = "Clip"
    dtypes = same_dtype_sigs(dt.NUMERIC, 1)

    def sample(self, ctx, ins):
        t = ins[0].dtype
        if dt.is_float(t):
            lo, hi = sorted((ctx.uniform(-4.0, 4.0), ctx.uniform(-4.0, 4.0)))
        else:
            vals = list(range(0, 17) if t == dt.UINT8 else range(-8, 9))
            lo, hi = sorted((ctx.choice(vals), ctx.choice(vals)))
        which = ctx.choice(("none", "min", "max", "both", "both"))
        a = {"dtype": t}  # the bounds' constants take the input's dtype
        if which in ("min", "both"):
            a["min"] = lo
        if which in ("max", "both"):
            a["max"] = hi
        return a

    def onnx(self, b, a, xs, ys):
        if b.opset < 11:
            b.node("Clip", xs, ys, min=a.get("min"), max=a.get("max"))
            return
        t = a["dtype"]
        ins = [xs[0],
               b.const(a["min"], t) if "min" in a else "",
               b.const(a["max"], t) if "max" in a else ""]
        # Trailing absent inputs: sometimes omitted, sometimes spelled "".
        if ins[2] == "" and b.rng.random() < 0.5:
            ins.pop()
            if ins[1] == "" and b.rng.random() < 0.5:
                ins.pop()
        b.node("Clip", ins, ys)

    def torch(self, a, x):
        if x.requires_grad:
            return L.proxy_clip(x, a.get("min"), a.get("max"))
        y = x
        if "min" in a:
            y = torch.maximum(y, torch.tensor(a["min"], dtype=x.dtype))
        if "max" in a:
            y = torch.minimum(y, torch.tensor(a["max"], dtype=x.dtype))
        return y if y is not x else x.clone()


class Identity(SameType):
    preserves_values = True
    keeps_range = True
    onnx_op = "Identity"
    dtypes = tuple((t,) for t in dt.ALL)

    def torch(self, a, x):
        return x.clone()


OPS = [Cast, CastLike, Clip, Identity]
