"""Type conversions and value-preserving element-wise ops: Cast, CastLike, Clip, Identity,
inference-mode Dropout, and Constant (a Constant node combined with a graph tensor)."""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.spec import losses as L
from dlgate.spec.base import IEEE, INF_ONLY, OpSpec, TensorType, same_dtype_sigs
from dlgate.spec.binary import add_bounds, const_shape, fits_into, mul_bounds, nested

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


def cast_undefined_elements(x, to: str):
    """The elements of ``x`` whose conversion to ``to`` is undefined (see ``cast_undefined``),
    a boolean NumPy mask."""
    if to not in dt.INTS or not x.is_floating_point():
        return np.zeros(tuple(x.shape), bool)
    info = torch.iinfo(dt.torch_dtype(to))
    v = x.double()
    t = torch.trunc(torch.nan_to_num(v, nan=0.0, posinf=0.0, neginf=0.0))
    return (~torch.isfinite(v) | (t > info.max) | (t < info.min)).numpy()


def cast_nonfinite(src: str, to: str) -> frozenset:
    """The special values whose conversion from ``src`` to ``to`` the ONNX Cast
    specification defines: between float types NaN stays NaN and +/-Inf (or a value out
    of the target's range) is +/-Inf; to bool, everything but +/-0.0 is True. To an
    integer type none is defined."""
    return IEEE if dt.is_float(src) and (dt.is_float(to) or to == dt.BOOL) else frozenset()


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
    exact_values = True
    dtypes = tuple((t,) for t in dt.ALL)
    restricted = True

    def sample(self, ctx, ins):
        others = [t for t in ctx.dtypes if t != ins[0].dtype]
        to = ctx.choice(others) if others and ctx.coin(0.8) else ctx.choice(ctx.dtypes)
        if ins[0].dtype in ctx.dtypes and ctx.degenerate_draw():
            to = ins[0].dtype  # to its own dtype
        return {"to": to}

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

    def undefined_elements(self, a, ins, out_types):
        return [cast_undefined_elements(ins[0], a["to"])]

    def defines_nonfinite(self, a, ins):
        return cast_nonfinite(ins[0].dtype, a["to"])

    def input_span(self, a, i, span, ins):
        return span if dt.is_float(a["to"]) and dt.is_float(ins[0].dtype) else None  # float to float


class CastLike(OpSpec):
    """``y = cast(x, dtype of target)``; the target's values and shape are irrelevant.
    Same semantics and hazard as Cast."""
    keeps_integers = True
    jumps = True  # when the target is an integer or bool type
    value_inputs = (0,)

    onnx_op = "CastLike"
    exact_values = True
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

    def undefined_elements(self, a, ins, out_types):
        return [cast_undefined_elements(ins[0], out_types[0].dtype)]

    def defines_nonfinite(self, a, ins):
        return cast_nonfinite(ins[0].dtype, ins[1].dtype)


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

    nonfinite = INF_ONLY
    onnx_op = "Clip"
    exact_values = True
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

    def defines_nonfinite(self, a, ins):
        # +/-inf with an absent bound: ONNX's text says the bounds default to
        # numeric_limits::lowest() and max() (onnxruntime gives +/-FLT_MAX), while onnx.reference
        # and TVM leave the infinity; with both bounds given, every reading agrees
        return self.nonfinite if "min" in a and "max" in a else frozenset()

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
    nonfinite = IEEE
    onnx_op = "Identity"
    exact_values = True
    dtypes = tuple((t,) for t in dt.ALL)

    def torch(self, a, x):
        return x.clone()


class Dropout(OpSpec):
    """Inference-mode Dropout: ``y = x`` (a copy) and, when asked for, a ``mask`` output of
    all True. ``training_mode`` is absent or a constant False (spelled as an omitted input,
    "" before a later one, or a bool scalar); ``ratio`` is absent or a constant scalar in
    [0, 1) of any float type (T1); ``seed`` is sometimes given. Neither changes the result
    outside training.

    Not generated: ``training_mode`` true, whose output is random (ONNX fixes no generator)."""

    nonfinite = IEEE
    onnx_op = "Dropout"
    exact_values = True
    dtypes = tuple((t,) for t in dt.FLOATS)
    gaps: ClassVar[tuple] = (("training_mode true", "random output: ONNX defines no random generator"),)

    def sample(self, ctx, ins):
        a = {"ratio": ctx.choice((None, 0.0, 0.5, ctx.uniform(0.0, 0.95))), "ratio_dtype": ctx.choice(dt.FLOATS),
             "training_mode": ctx.choice((None, None, False)), "mask": ctx.coin(0.4), "seed": None}
        if ctx.coin(0.3):
            a["seed"] = ctx.rng.randint(0, 2 ** 31 - 1)
        return a

    def infer(self, ins, a):
        return [ins[0]] + ([ins[0].with_dtype(dt.BOOL)] if a["mask"] else [])

    def backward(self, ctx, out):
        if (out.dtype,) not in self.dtypes:
            return None
        return [out], self.sample(ctx, [out])

    def value_range(self, a, ranges, ins):
        return [tuple(ranges[0])] + ([(1.0, 1.0)] if a["mask"] else [])

    def exact(self, a, exacts, ins):
        return exacts[0]

    def input_span(self, a, i, span, ins):
        return span

    def onnx(self, b, a, xs, ys):
        ins = [xs[0]]
        if a["ratio"] is not None:
            ins.append(b.const(np.asarray(a["ratio"], dtype=dt.NUMPY[a["ratio_dtype"]]), hint="ratio"))
        if a["training_mode"] is not None:
            if len(ins) == 1:
                ins.append("")
            ins.append(b.const(np.asarray(False), hint="training_mode"))
        b.node("Dropout", ins, ys, seed=a["seed"])

    def torch(self, a, x):
        y = x.clone()
        return (y, torch.ones(x.shape, dtype=torch.bool)) if a["mask"] else y


#: Constant's spellings for a value of each dtype: ``value`` (a tensor, any dtype and
#: shape) always; the scalar and list attributes only for float32 and int64 (since opset 12).
CONST_SPELLINGS = {dt.FLOAT32: ("value", "value_float", "value_floats"),
                   dt.INT64: ("value", "value_int", "value_ints")}


class Constant(OpSpec):
    """A ``Constant`` node combined with a graph tensor: ``y = x <op> c`` or ``c <op> x``
    (``op`` Add, Sub or Mul), ``c`` a Constant of x's dtype broadcasting to x, spelled as
    the attribute ``value`` (a tensor), or for float32 ``value_float`` (a scalar) or
    ``value_floats`` (a 1-D list), for int64 ``value_int`` or ``value_ints``. dlgate's
    generator builds operators on at least one graph tensor, hence the second node; and it
    checks a spec's dtypes against the schema of its ``onnx_op``, which for Constant (no
    inputs) would refuse every signature: ``onnx_op`` is therefore the combining Add (Sub
    and Mul have the same type constraints at every opset) and Constant is listed in
    ``onnx_ops``. Integer Add, Sub and Mul wrap; a signed overflow is undefined.

    Not generated: bool, string and the sparse spellings (``sparse_value``): Add, Sub and Mul
    take no bool; strings and sparse tensors are outside dlgate's tensor types."""

    name = "Constant"
    nonfinite = IEEE
    onnx_op = "Add"
    onnx_ops = ("Constant", "Sub", "Mul")
    dtypes = tuple((t,) for t in dt.NUMERIC)
    symbolic_ok = False
    can_overflow = True
    keeps_integers = True
    gaps: ClassVar[tuple] = (
        ("bool constants", "the combining Add/Sub/Mul take no bool"),
        ("value_string(s), sparse_value", "string and sparse tensors are outside dlgate's tensor types"),
    )

    def sample(self, ctx, ins):
        x = ins[0]
        t = x.dtype
        spelling = ctx.choice(CONST_SPELLINGS.get(t, ("value",)))
        if spelling in ("value_float", "value_int"):
            shape = ()
        elif spelling in ("value_floats", "value_ints"):
            if x.rank == 0:
                return {"spelling": spelling, "value": None}  # a list would widen x: rejected
            shape = (ctx.choice((1, x.shape[-1])),)
        else:
            shape = const_shape(ctx, x.shape)
        if dt.is_float(t):
            draw = lambda: ctx.choice((0.0, 1.0, -1.0, 0.5, ctx.uniform(-2.0, 2.0)))  # noqa: E731
        else:
            draw = lambda: ctx.rng.randint(0, 8) if t == dt.UINT8 else ctx.rng.randint(-4, 4)  # noqa: E731
        return {"spelling": spelling, "dtype": t, "value": nested(shape, draw),
                "op": ctx.choice(("Add", "Sub", "Mul")), "first": ctx.coin(0.3)}

    def requires(self, ins, a):
        if a["value"] is None or a["dtype"] != ins[0].dtype:
            return [False]
        return fits_into(np.shape(a["value"]), ins[0].shape)

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if (out.dtype,) not in self.dtypes:
            return None
        return [out], self.sample(ctx, [out])

    def value_range(self, a, ranges, ins):
        v = np.asarray(a["value"], dtype=np.float64)
        c, r = (float(v.min()), float(v.max())), tuple(ranges[0])
        if a["op"] == "Sub":  # c - x or x - c
            return [add_bounds([c, (-r[1], -r[0])]) if a["first"] else add_bounds([r, (-c[1], -c[0])])]
        return [add_bounds([c, r])] if a["op"] == "Add" else [mul_bounds(c, r)]

    def onnx(self, b, a, xs, ys):
        from onnx import numpy_helper

        arr = np.asarray(a["value"], dtype=dt.NUMPY[a["dtype"]])
        sp = a["spelling"]
        if sp == "value":
            val = numpy_helper.from_array(arr, b.fresh("value"))
        elif sp in ("value_float", "value_int"):
            val = arr.item()
        else:
            val = arr.reshape(-1).tolist()
        c = b.node("Constant", [], 1, **{sp: val})[0]
        b.node(a["op"], [c, xs[0]] if a["first"] else [xs[0], c], ys)

    def torch(self, a, x):
        c = torch.from_numpy(np.asarray(a["value"], dtype=dt.NUMPY[a["dtype"]])).to(x.dtype)
        p, q = (c, x) if a["first"] else (x, c)
        return {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul}[a["op"]](p, q)


#: Bytes per element of each dtype (ONNX stores bool in one byte).
WIDTH = {dt.INT8: 1, dt.UINT8: 1, dt.BOOL: 1, dt.FLOAT16: 2, dt.INT32: 4, dt.FLOAT32: 4, dt.INT64: 8,
         dt.FLOAT64: 8}


def bitcast_targets(src: str, allowed=dt.ALL) -> list:
    """The types the plain BitCast spec reinterprets ``src`` as (``src`` itself included):
    the same width, never bool from another type, never integer to float, nothing for
    float16 (see BitCast)."""
    if src == dt.FLOAT16:
        return []
    return [t for t in allowed if WIDTH[t] == WIDTH[src] and
            (t == src or (t != dt.BOOL and not (dt.is_int(src) and dt.is_float(t))))]


def bitcast(x, to: str):
    """ONNX BitCast of ``x`` (a PyTorch tensor) to ``to``: the same bytes (little endian
    on every machine dlgate runs on) read as the other type; a copy when the types agree."""
    t = dt.torch_dtype(to)
    return x.clone() if x.dtype == t else x.view(t)


class BitCast(OpSpec):
    """``y`` = the bits of ``x`` read as type ``to`` (opset 26), between dlgate's types of one
    width: float32 -> int32 and float64 -> int64, int8 <-> uint8, bool -> int8/uint8, and
    every type but float16 to itself.

    float -> integer: every float's bits are a defined integer, compared exactly, so a
    one-ulp difference upstream is an integer difference of one (the output ``jumps``: the
    instability check perturbs the float input and excuses it). Undefined (``undefined``):
    a NaN input (IEEE 754 fixes neither the sign nor the payload of a computed NaN) and a
    zero input (its sign bit: -0.0 and +0.0 are equal in every float comparison dlgate
    makes, so backends need not keep it, and they are 2^31 apart as int32).

    Not generated: int32 -> float32 and int64 -> float64 of arbitrary integers (see
    ``gaps``; ``BitCastExp2Idiom`` covers those conversions), integer -> bool, float16."""

    onnx_op = "BitCast"
    min_opset = 26
    dtypes = tuple((t,) for t in dt.ALL if t != dt.FLOAT16)
    jumps = True
    gaps: ClassVar[tuple] = (
        ("int32 -> float32 and int64 -> float64 of arbitrary integers",
         "dlgate's integers are small (|x| <= 16), whose bits are subnormal floats (a backend that flushes "
         "subnormals, FTZ/DAZ, reads them as 0) or NaN (negative ones); BitCastExp2Idiom reinterprets "
         "exponent-field integers instead"),
        ("int8/uint8 -> bool", "a byte other than 0 or 1 is not a valid bool (undefined); dlgate's integers "
                               "are not kept to 0/1"),
        ("float16 (to or from anything)",
         "int16, uint16 and bfloat16 are outside dlgate's dtypes, which leaves float16 -> float16, and "
         "onnxruntime 1.32 fails to load that between two float16 nodes it runs in float32 ('BitCast requires "
         "input and output types to have the same bit-width, but input type has 32 bits and output type has "
         "16 bits'): a known runtime bug that a degenerate identity would report in every such model"),
    )

    def sample(self, ctx, ins):
        src = ins[0].dtype
        others = [t for t in bitcast_targets(src, ctx.dtypes) if t != src]
        to = ctx.choice(others) if others and ctx.coin(0.85) else src
        return {"to": to}

    def requires(self, ins, a):
        return [a["to"] in bitcast_targets(ins[0].dtype)]

    def infer(self, ins, a):
        return [TensorType(a["to"], ins[0].shape)]

    def backward(self, ctx, out):
        srcs = [s[0] for s in self.dtypes if s[0] in ctx.dtypes and out.dtype in bitcast_targets(s[0])]
        if not srcs:
            return None
        others = [t for t in srcs if t != out.dtype]
        src = ctx.choice(others) if others and ctx.coin(0.85) else ctx.choice(srcs)
        return [TensorType(src, out.shape)], {"to": out.dtype}

    def discontinuous(self, a):
        return a["to"] in dt.INTS  # from a float: the bits of a rounded value, compared exactly

    def onnx_attrs(self, a, b):
        return {"to": int(dt.ONNX[a["to"]])}

    def torch(self, a, x):
        return bitcast(x, a["to"])

    def value_range(self, a, ranges, ins):
        src, to = ins[0].dtype, a["to"]
        lo, hi = ranges[0]
        if src == to:
            return [(lo, hi)]
        if src == dt.BOOL:
            return [(0.0, 1.0)]
        if (src, to) == (dt.INT8, dt.UINT8) and lo >= 0 or (src, to) == (dt.UINT8, dt.INT8) and hi <= 127:
            return [(lo, hi)]  # the common non-negative values keep their bits' meaning
        return None

    def input_span(self, a, i, span, ins):
        return span if a["to"] == ins[0].dtype else None

    def undefined(self, a, ins, out_types):
        x = ins[0]
        if not x.is_floating_point() or dt.is_float(a["to"]):
            return None
        if bool(torch.isnan(x).any()):
            return f"reinterprets a NaN as {a['to']}: IEEE 754 fixes neither the sign nor the payload of a computed NaN"
        if bool((x == 0).any()):
            return (f"reinterprets a zero as {a['to']}: its sign bit (-0.0 vs +0.0) is invisible to float "
                    "comparisons, so backends need not keep it")
        return None


#: For the integer types BitCastExp2Idiom reads: (float type, exponent bias, mantissa bits).
EXP2 = {dt.INT32: (dt.FLOAT32, 127, 23), dt.INT64: (dt.FLOAT64, 1023, 52)}


class BitCastExp2Idiom(OpSpec):
    """The bit trick that builds ``2^x`` (times ``1 + m / 2^M``) from an integer ``x``:
    ``BitCast(Add(Mul(Add(x, bias), 2^M), m), to=float)`` with bias 127 and M = 23 for
    int32 -> float32, 1023 and 52 for int64 -> float64, and ``m`` a constant mantissa in
    [0, 2^M) (the last Add omitted when it is 0): integer -> float BitCast on integers
    whose bits are normal floats, so the exponent and mantissa fields both show in the
    float comparison. Integer Add and Mul wrap; a signed overflow (``x + bias`` outside
    [-2^(31 - M), 2^(31 - M)) for int32) is undefined, and so, in practice, is a biased
    exponent of 0 with a nonzero mantissa, a subnormal float that backends flushing
    subnormals (FTZ/DAZ) read as 0: both reported by ``undefined`` (dlgate's own integers,
    |x| <= 16, reach neither)."""

    name = "BitCastExp2Idiom"
    onnx_op = "BitCast"
    onnx_ops: ClassVar[tuple] = ("Add", "Mul")
    min_opset = 26
    dtypes = ((dt.INT32,), (dt.INT64,))

    def sample(self, ctx, ins):
        src = ins[0].dtype if ins[0].dtype in EXP2 else dt.INT32
        top = (1 << EXP2[src][2]) - 1
        return {"src": src, "mantissa": ctx.choice((0, 0, (top + 1) // 2, top, ctx.rng.randint(1, top)))}

    def requires(self, ins, a):
        src = ins[0].dtype
        return [src in EXP2, a["src"] == src, 0 <= a["mantissa"] < (1 << EXP2.get(src, EXP2[dt.INT32])[2])]

    def infer(self, ins, a):
        return [TensorType(EXP2[ins[0].dtype][0], ins[0].shape)]

    def backward(self, ctx, out):
        src = {dt.FLOAT32: dt.INT32, dt.FLOAT64: dt.INT64}.get(out.dtype)
        if src is None or src not in ctx.dtypes:
            return None
        x = TensorType(src, out.shape)
        return [x], self.sample(ctx, [x])

    def onnx(self, b, a, xs, ys):
        src = a["src"]
        ft, bias, mbits = EXP2[src]
        y = b.node("Add", [xs[0], b.const(bias, src, hint="bias")], 1)
        y = b.node("Mul", [y[0], b.const(1 << mbits, src, hint="scale")], 1)
        if a["mantissa"]:
            y = b.node("Add", [y[0], b.const(a["mantissa"], src, hint="mantissa")], 1)
        b.node("BitCast", y, ys, to=int(dt.ONNX[ft]))

    def _bits(self, a, x):
        """The integer the BitCast reads (wrapping as the integer nodes do)."""
        _, bias, mbits = EXP2[a["src"]]
        return (x + bias) * (1 << mbits) + a["mantissa"]

    def torch(self, a, x):
        return self._bits(a, x).view(dt.torch_dtype(EXP2[a["src"]][0]))

    def value_range(self, a, ranges, ins):
        # normal powers of two while the biased exponent stays in [1, 2 * bias]
        _, bias, mbits = EXP2[a["src"]]
        lo, hi = ranges[0]
        if not (1 - bias <= lo and hi <= bias):
            return None
        f = 1 + a["mantissa"] / (1 << mbits)
        return [(2.0 ** lo * f, 2.0 ** hi * f)]

    def undefined(self, a, ins, out_types):
        _, bias, mbits = EXP2[a["src"]]
        x = ins[0].to(torch.float64)  # exact for |x| < 2^53; beyond that the Add overflows anyway
        width = 8 * WIDTH[a["src"]]
        top = 2.0 ** (width - 1)  # the type holds [-top, top)
        prod = (x + bias) * float(1 << mbits)
        if bool(((x + bias >= top) | (prod >= top) | (prod < -top) | (prod + a["mantissa"] >= top)).any()):
            return f"signed integer overflow: (x + {bias}) * 2^{mbits} + {a['mantissa']} beyond {a['src']}"
        bits = self._bits(a, ins[0])
        field = (bits >> mbits) & ((1 << (width - 1 - mbits)) - 1)
        if bool(((field == 0) & ((bits & ((1 << mbits) - 1)) != 0)).any()):
            return "a subnormal float (biased exponent 0): backends flushing subnormals (FTZ/DAZ) read it as 0"
        return None


OPS = [Cast, CastLike, Clip, Identity, Dropout, Constant, BitCast, BitCastExp2Idiom]
