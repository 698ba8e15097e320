"""Quantization: QuantizeLinear, DequantizeLinear (per tensor, per axis, blocked), their
variants with the scale a graph tensor, DynamicQuantizeLinear, MatMulInteger,
ConvInteger, QLinearMatMul, QLinearConv, and the QDQ idioms exporters write around float
operators (QDQConv, QDQMatMul, QDQAdd, QDQRelu, QDQSigmoid, and the Q -> DQ round trip
FakeQuant).

ONNX semantics, followed exactly by each ``torch``:

* Quantization ``y = saturate(round(x / y_scale) + y_zero_point)``: the division in the
  scale's precision from opset 23 (or the ``precision`` attribute's, sometimes written), in
  the common type of ``x`` and the scale before (float32 for an int32 ``x``: see the gaps),
  rounding half to even, saturation to the integer type's range; a missing zero point
  means 0 and a uint8 result unless ``output_dtype`` (opset 21+) says otherwise.
* Dequantization ``y = (x - x_zero_point) * x_scale`` in the output's precision.

Rounding ties are generated on purpose: power-of-two scales make ``x / scale`` exact in
every precision, so float16 inputs (whose steps are coarse), int32 inputs and the values
inside the QDQ idioms (sums of multiples of one scale, requantized to a scale twice as
large) land exactly on .5 boundaries often. Scales that are not powers of two are
generated only where ONNX defines the division's precision (float32 ``x`` with a float32
scale, or any float types from opset 23), so an implementation is never asked for a
result that only the precision of an unspecified intermediate decides.

Scales and zero points are constants the lowering writes (attributes hold their values,
or, where their length depends on a shape sampled later, a short list repeated along it);
``QuantizeLinearScaleInput`` and ``DequantizeLinearScaleInput`` take the scale as a graph
tensor instead. The idioms' weights are int8/uint8 constants drawn from a seed in the
attributes, as exporters store quantized weights.

Requantization (QLinearMatMul, QLinearConv, the QDQ idioms): all scales are powers of two,
so ``acc * a_scale * b_scale / y_scale`` is exact in float32 whenever the result is not
saturated (multipliers are at least 2^-14, so an accumulator beyond 2^24 saturates
anyway); onnxruntime's fused integer kernels and the float graphs then agree bit for bit
with the ONNX formula. QDQSigmoid chooses its scales so that no input the quantized grid
can hold maps within 1/500 of a step of a rounding boundary (Sigmoid's own last-bit
accuracy is left open by ONNX); ``undefined`` reports any element that still does.
"""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.spec import losses as L
from dlgate.spec import sym
from dlgate.spec.base import INF, OpSpec, TensorType
from dlgate.spec.binary import Elementwise, mul_bounds
from dlgate.spec.cast import to_dtype
from dlgate.spec.conv import _ConvBase
from dlgate.spec.linalg import MatMul, product_bounds, sum_bounds

F32, F16, I32, I8, U8 = dt.FLOAT32, dt.FLOAT16, dt.INT32, dt.INT8, dt.UINT8
QTYPES = (I8, U8)
#: Saturation ranges.
QR = {I8: (-128, 127), U8: (0, 255)}
INT_PAIRS = ((U8, U8), (U8, I8), (I8, U8), (I8, I8))
#: Most scale (or zero-point) elements a per-axis or blocked instance writes.
MAX_PARAMS = 256
#: Length of the lists repeated along a dimension sampled later (per-column, per-channel).
CYCLE = 8
#: float32 holds integers exactly up to this; dequantized int32 beyond it is rounded twice.
EXACT_F32 = 2 ** 24
#: QDQSigmoid: the least distance (in output steps) of a value from a rounding boundary.
SIGMOID_MARGIN = 2e-3
#: Sums of products in the QDQ idioms stay below 2^24 units: at most this many terms.
MAX_TERMS = 256

_UNDEFINED_DQ_OPSET = ("onnx.reference implements DequantizeLinear only from opset 19 "
                       "(\"No implementation for operator 'DequantizeLinear' ... version 13\")")


# -- shared helpers ---------------------------------------------------------------------------
def _in(v, dtype: str) -> float:
    """``v`` as a ``dtype`` constant stores it."""
    return float(np.asarray(v, dtype=dt.NUMPY[dtype]))


def _nested(ctx, shape: tuple, fn):
    if not shape:
        return fn()
    return [_nested(ctx, shape[1:], fn) for _ in range(shape[0])]


def _zp(ctx, qt: str) -> int:
    lo, hi = QR[qt]
    if qt == U8:
        return ctx.choice((0, 128, 128, ctx.rng.randint(lo, hi)))
    return ctx.choice((0, 0, ctx.rng.randint(lo, hi), ctx.rng.randint(-16, 16)))


def _cycled(values: list, n: int) -> list:
    return [values[k % len(values)] for k in range(n)]


def _round(t):
    """Round half to even, with a straight-through gradient inside the input search."""
    return L.proxy_round(t) if t.requires_grad else torch.round(t)


def _clamp(t, lo: float, hi: float):
    return L.proxy_clip(t, lo, hi) if t.requires_grad else t.clamp(lo, hi)


def quantize(x, scale, zp, qt: str, prec: str):
    """``saturate(round(x / scale) + zp)`` with the division in ``prec``, as float64
    holding integers (clamped to ``qt``'s range)."""
    p = dt.torch_dtype(prec)
    q = _round(x.to(p) / scale.to(p)).double()
    if zp is not None:
        q = q + zp.double()
    lo, hi = QR[qt]
    return _clamp(q, float(lo), float(hi))


def dequantize(q, scale, zp, out: str):
    """``(q - zp) * scale`` computed exactly (float64), rounded once to ``out``: what a
    multiplication in ``out``'s precision gives whenever its operands convert exactly."""
    d = q.double() if zp is None else q.double() - zp.double()
    return to_dtype(d * scale.double(), out)


def _expand(v, xshape: tuple, mode: str, axis: int, block: int):
    """A scale or zero point (a tensor of its own shape) broadcast against ``xshape``."""
    r = len(xshape)
    if mode == "tensor":
        return v.reshape(())
    ax = axis % r
    if mode == "axis":
        return v.reshape([-1 if i == ax else 1 for i in range(r)])
    return v.repeat_interleave(block, dim=ax).narrow(ax, 0, xshape[ax])


def _seeded(seed: int, shape: tuple, qt: str, center: int, amp: int) -> np.ndarray:
    """Integer weights from ``seed``: uniform within ``center +- amp`` (clipped to ``qt``)."""
    lo, hi = QR[qt]
    rng = np.random.Generator(np.random.PCG64(seed))
    v = rng.integers(max(lo, center - amp), min(hi, center + amp) + 1, size=tuple(int(d) for d in shape))
    return v.astype(dt.NUMPY[qt])


def _shifted(r: tuple, qt: str, zps) -> tuple:
    """Bounds on ``x - zp`` for ``x`` of type ``qt`` within ``r`` and any of ``zps``."""
    lo, hi = QR[qt] if qt in QR else (-INF, INF)
    lo, hi = max(lo, r[0]), min(hi, r[1])
    zs = [0] if zps is None else list(zps)
    return (lo - max(zs), hi - min(zs))


def _flat(v) -> list:
    return [float(x) for x in np.asarray(v, dtype=np.float64).reshape(-1)]


def _qbounds(qt: str, zps, scales) -> tuple:
    """Bounds on dequantized ``qt`` values for the (zero point, scale) pairs."""
    lo, hi = QR[qt]
    vals = [(q - z) * s for z, s in zip(zps, scales) for q in (lo, hi)]
    return (min(vals), max(vals))


def _mult(ctx, terms: int, ax: float, aw: float) -> int:
    """A requantization multiplier's exponent (at least -14, at most 0) that keeps the
    typical accumulator (``terms`` products of magnitudes ``ax`` and ``aw``) near 32."""
    rms = max(1.0, math.sqrt(max(terms, 1)) * max(ax, 1.0) * max(aw, 1.0))
    e = int(round(math.log2(32.0 / rms))) + ctx.rng.randint(-2, 2)
    return max(-14, min(0, e))


# -- QuantizeLinear / DequantizeLinear -------------------------------------------------------------
class _QDQParams:
    """Per-tensor, per-axis and blocked scales/zero points for a tensor ``x``."""

    @staticmethod
    def layout(ctx, x: TensorType, block_ok: bool) -> dict:
        """mode, axis (as spelled), block size and the scale's shape."""
        r = x.rank
        modes = ["tensor", "tensor"]
        if r >= 1:
            modes.append("axis")
            if block_ok:
                modes.append("block")
        mode = ctx.choice(modes)
        out = {"mode": mode, "axis": 1, "block": 0, "one": False}
        if mode == "tensor":
            out["one"] = ctx.coin(0.3)
            if r >= 1 and ctx.coin(0.2):
                out["axis"] = ctx.axis(r)  # ignored for per-tensor quantization
            return out
        ax = ctx.rng.randrange(r)
        out["axis"] = ax - r if ctx.coin(0.3) else ax
        d = x.shape[ax]
        other = x.numel // d
        if mode == "axis" and d > MAX_PARAMS:
            out["mode"] = "tensor"
            return out
        if mode == "block":
            # B with ceil(d / B) * other <= MAX_PARAMS
            least = max(1, -(-d * other // MAX_PARAMS))
            if least > d:
                out.update(mode="tensor", axis=1)
                return out
            out["block"] = ctx.rng.randint(least, d) if ctx.coin(0.5) else ctx.rng.randint(least, max(least, min(d, 4)))
            if -(-d // out["block"]) * other == 1:  # one element: onnxruntime takes it for per-tensor
                out.update({"mode": "axis", "block": 0} if d > 1 else {"mode": "tensor", "axis": 1, "block": 0})
        return out

    @staticmethod
    def shape(x: TensorType, a: dict) -> tuple:
        if a["mode"] == "tensor":
            return (1,) if a["one"] else ()
        ax = a["axis"] % x.rank
        if a["mode"] == "axis":
            return (x.shape[ax],)
        s = list(x.shape)
        s[ax] = -(-s[ax] // a["block"])
        return tuple(s)

    @staticmethod
    def valid(x: TensorType, a: dict) -> list:
        """The layout fits ``x``, and the stored values have the scale's shape."""
        if a["mode"] != "tensor" and (x.rank < 1 or not -x.rank <= a["axis"] < x.rank):
            return [False]
        if a["mode"] == "block" and a["block"] < 1:
            return [False]
        want = _QDQParams.shape(x, a)
        ok = tuple(np.shape(a["scale"])) == want
        if a.get("zp") is not None:
            ok = ok and tuple(np.shape(a["zp"])) == want
        return [ok]

    @staticmethod
    def attrs(b, a: dict) -> dict:
        if a["mode"] == "tensor":  # the axis is ignored: written only when drawn (rank >= 1)
            return {"axis": a["axis"] if a["axis"] != 1 else None}
        out = {"axis": b.opt(a["axis"], 1)}
        if a["mode"] == "block":
            out["block_size"] = a["block"]
        return out

    @staticmethod
    def tensors(a: dict, xshape: tuple):
        """(scale, zero point or None), broadcast against ``xshape``."""
        s = torch.tensor(np.asarray(a["scale"], dtype=dt.NUMPY[a["sdt"]]))
        s = _expand(s, xshape, a["mode"], a["axis"], a["block"])
        if a.get("zp") is None:
            return s, None
        z = torch.tensor(np.asarray(a["zp"], dtype=np.int64))
        return s, _expand(z, xshape, a["mode"], a["axis"], a["block"])


def _bad_scale(a: dict) -> str | None:
    """A constant scale of 0, Inf or NaN: generation never draws one, but reduction shrinks
    values towards 0, and x / 0 is then inf or (0 / 0) NaN, which no integer stands for."""
    scale = np.asarray(a["scale"], dtype=np.float64)
    if not np.isfinite(scale).all() or (scale == 0).any():
        return "a scale of 0, Inf or NaN (ONNX defines no quantization for it)"
    return None


def _scale_values(ctx, shape: tuple, sdt: str, pow2: bool, f16_exact: bool = False, lo: int = -6, hi: int = 2):
    """Nested scale values: powers of two (a base exponent and small offsets per element),
    or values in [0.01, 0.5] as ``sdt`` stores them (and float16 holds, if asked)."""
    if pow2:
        e0 = ctx.rng.randint(lo + 1, hi)
        return _nested(ctx, shape, lambda: 2.0 ** max(lo, e0 - ctx.rng.randint(0, 1)))

    def one():
        v = ctx.rng.uniform(0.01, 0.5)
        return _in(_in(v, F16) if f16_exact else v, sdt)

    return _nested(ctx, shape, one)


class QuantizeLinear(OpSpec):
    """``y = saturate(round(x / y_scale) + y_zero_point)``, y int8 or uint8; scale and zero
    point constants (per tensor, spelled as a scalar or a 1-element vector; per axis, the
    axis sometimes negative; blocked from opset 21); the zero point omitted a quarter of
    the time (uint8, or int8 through ``output_dtype`` from opset 21, which is sometimes
    written beside a zero point too). x float32, float16 (opset 19+), int32; the scale
    float32 or float16 as each opset allows (from 23 independent of x's type), and from
    opset 23 sometimes the ``precision`` attribute (float32 or float16) naming the
    division's precision instead of the scale's type.

    Scales that are not powers of two only where ONNX defines the division's precision:
    float32 x with a float32 scale, or float x from opset 23 (the scale's type decides).
    """

    onnx_op = "QuantizeLinear"
    dtypes = ((F32,), (F16,), (I32,))
    jumps = True
    symbolic_ok = False
    gaps: ClassVar[tuple] = (
        ("int4, uint4, int16, uint16 and float8 outputs", "dlgate has no such dtypes"),
        ("bfloat16 inputs and scales", "dlgate has no bfloat16"),
        ("a one-element blocked scale", "onnxruntime takes it for per-tensor quantization and refuses the "
                                        "block_size ('block_size must be 0 for per-tensor quantization')"),
        ("int32 x at opsets 19-22", "the schema binds x and y_scale to one type there, so the scale would be "
                                    "int32: onnx.reference then divides in float64, onnxruntime has no kernel"),
        ("int32 x with a float16 or non-power-of-two scale",
         "the division's precision is unspecified before opset 23 and onnx.reference computes it in float64 "
         "(numpy promotion); onnxruntime implements no int32 x"),
        ("float16 x with a non-power-of-two scale at opsets 19-22",
         "ONNX does not say the division's precision there (onnxruntime divides in float32, onnx.reference in "
         "float16: different roundings at .5 boundaries); from 23 the scale's type decides and it is generated"),
        ("saturate=0", "it only concerns float8 outputs"),
    )

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0], ctx.choice(QTYPES))

    def _attrs(self, ctx, x: TensorType, to: str) -> dict:
        opset, xdt = ctx.opset, x.dtype
        if opset < 19:
            sdt = F32
        elif opset < 23:
            sdt = xdt  # T1 binds both (int32: refused by requires)
        else:
            sdt = F32 if xdt == I32 else ctx.choice((xdt, xdt, F32, F16))
        prec = sdt if opset >= 23 else (F32 if xdt == I32 else xdt)
        pattr = ctx.choice((F32, F16)) if opset >= 23 and xdt != I32 and ctx.coin(0.15) else None
        prec = pattr or prec
        general = xdt != I32 and (opset >= 23 or (xdt == F32 and sdt == F32))
        pow2 = not general or ctx.coin(0.5)
        a = _QDQParams.layout(ctx, x, block_ok=opset >= 21)
        shape = _QDQParams.shape(x, a)
        has_zp = ctx.coin(0.75) or (to == I8 and opset < 21)
        a.update(to=to, sdt=sdt, prec=prec, pattr=pattr, pow2=pow2,
                 scale=_scale_values(ctx, shape, sdt if sdt != I32 else F32, pow2, lo=-2 if xdt == I32 else -6,
                                     hi=3 if xdt == I32 else 2),
                 zp=_nested(ctx, shape, lambda: _zp(ctx, to)) if has_zp else None)
        a["odt"] = opset >= 21 and ((not has_zp and to == I8) or ctx.coin(0.3))
        if ctx.degenerate_draw():  # unit scale, zero point 0 (where one is written): y = saturate(round(x))
            a["scale"] = _nested(ctx, shape, lambda: 1.0)
            a["zp"] = None if a["zp"] is None else _nested(ctx, shape, lambda: 0)
        return a

    def requires(self, ins, a):
        return [a["sdt"] != I32] + _QDQParams.valid(ins[0], a)

    def infer(self, ins, a):
        return [TensorType(a["to"], ins[0].shape)]

    def backward(self, ctx, out):
        if out.dtype not in QTYPES:
            return None
        srcs = [t for (t,) in self.dtypes if t in ctx.dtypes]
        if not srcs:
            return None
        x = TensorType(ctx.choice(srcs), out.shape)
        return [x], self._attrs(ctx, x, out.dtype)

    def _pairs(self, a) -> tuple:
        scales = _flat(a["scale"])
        zps = _flat(a["zp"]) if a.get("zp") is not None else [0.0] * len(scales)
        return scales, zps

    def value_range(self, a, ranges, ins):
        lo, hi = ranges[0]
        qlo, qhi = QR[a["to"]]

        def q(v, s, z):
            if v != v:
                return float(qhi)
            t = v / s if math.isfinite(v) else v
            return float(min(qhi, max(qlo, (round(t) if math.isfinite(t) else t) + z)))

        scales, zps = self._pairs(a)
        return [(min(q(lo, s, z) for s, z in zip(scales, zps)), max(q(hi, s, z) for s, z in zip(scales, zps)))]

    def input_range(self, a, i):
        # the unsaturated inputs, a little wider: some saturate
        scales, zps = self._pairs(a)
        qlo, qhi = QR[a["to"]]
        lo = min((qlo - z) * s for s, z in zip(scales, zps))
        hi = max((qhi - z) * s for s, z in zip(scales, zps))
        pad = 0.1 * (hi - lo)
        return (lo - pad, hi + pad)

    def undefined(self, a, ins, out_types):
        x = ins[0]
        if x.is_floating_point() and bool(torch.isnan(x).any()):
            return "quantizes NaN (ONNX defines no integer for it)"
        return _bad_scale(a)

    def reference_defect(self, a, ins, opset):
        if opset >= 23 and ins[0].dtype == F32 and a["sdt"] == F16 and not a.get("pattr"):
            return ("onnx.reference divides float32 x by a float16 scale in float32 (numpy promotion); ONNX says "
                    "the scale's type decides the division's precision (x rounded to float16 first)")
        return None

    def onnx(self, b, a, xs, ys):
        sdt = a["sdt"]
        ins = [xs[0], b.const(np.asarray(a["scale"], dtype=dt.NUMPY[sdt]))]
        if a["zp"] is not None:
            ins.append(b.const(np.asarray(a["zp"], dtype=dt.NUMPY[a["to"]])))
        attrs = _QDQParams.attrs(b, a)
        if a["odt"]:
            attrs["output_dtype"] = int(dt.ONNX[a["to"]])
        if a.get("pattr"):
            attrs["precision"] = int(dt.ONNX[a["pattr"]])
        b.node("QuantizeLinear", ins, ys, **attrs)

    def torch(self, a, x):
        s, z = _QDQParams.tensors(a, tuple(x.shape))
        return quantize(x, s, z, a["to"], a["prec"]).to(dt.torch_dtype(a["to"]))


class DequantizeLinear(OpSpec):
    """``y = (x - x_zero_point) * x_scale`` for int8, uint8 and int32 x (int32: the zero
    point omitted or 0); scale and zero point constants, per tensor, per axis or blocked
    (opset 21+); scale float32 or float16 (opset 19+), the output the scale's type or,
    from opset 23, ``output_dtype``. Where the output is float16 and the scale float32,
    scales float16 holds exactly, so the product rounds once whatever precision an
    implementation multiplies in."""

    onnx_op = "DequantizeLinear"
    dtypes = ((I8,), (U8,), (I32,))
    symbolic_ok = False
    gaps: ClassVar[tuple] = (
        ("int4, uint4, int16, uint16, float8 inputs; bfloat16 scales", "dlgate has no such dtypes"),
        ("int32 x with a float16 scale or output",
         "(x - zp) then has up to 24 bits: rounded to float32, then to float16 (onnx.reference), or straight "
         "to float16, differ; ONNX does not say"),
        ("a float32 scale float16 cannot hold with a float16 output",
         "the product would round twice (float32, then float16) in onnx.reference, once in a float16 "
         "multiplication; ONNX says only 'the output type determines the precision'"),
    )

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0], None)

    def _attrs(self, ctx, x: TensorType, out: str | None):
        opset, xdt = ctx.opset, x.dtype
        if xdt == I32:
            if out not in (None, F32):
                return None
            sdt = out = F32
        elif opset < 19:
            if out not in (None, F32):
                return None
            sdt = out = F32
        elif opset < 23:
            sdt = out = out or ctx.choice((F32, F16))
        else:
            sdt = ctx.choice((F32, F16))
            out = out or (sdt if ctx.coin(0.6) else ctx.choice((F32, F16)))
        a = _QDQParams.layout(ctx, x, block_ok=opset >= 21)
        shape = _QDQParams.shape(x, a)
        pow2 = ctx.coin(0.5)
        a.update(sdt=sdt, out=out, zdt=xdt, odt=opset >= 23 and (out != sdt or ctx.coin(0.3)),
                 scale=_scale_values(ctx, shape, sdt, pow2, f16_exact=out == F16))
        if xdt == I32:
            a["zp"] = _nested(ctx, shape, lambda: 0) if ctx.coin(0.3) else None
        else:
            a["zp"] = _nested(ctx, shape, lambda: _zp(ctx, xdt)) if ctx.coin(0.7) else None
        return a

    def requires(self, ins, a):
        return [a["zdt"] == ins[0].dtype] + _QDQParams.valid(ins[0], a)

    def infer(self, ins, a):
        return [TensorType(a["out"], ins[0].shape)]

    def backward(self, ctx, out):
        if out.dtype not in (F32, F16):
            return None
        srcs = [t for (t,) in self.dtypes if t in ctx.dtypes]
        if not srcs:
            return None
        x = TensorType(ctx.choice(srcs), out.shape)
        a = self._attrs(ctx, x, out.dtype)
        return None if a is None else ([x], a)

    def value_range(self, a, ranges, ins):
        scales = _flat(a["scale"])
        zps = _flat(a["zp"]) if a.get("zp") is not None else [0.0] * len(scales)
        xdt = ins[0].dtype
        lo, hi = ranges[0]
        if xdt in QR:
            lo, hi = max(lo, QR[xdt][0]), min(hi, QR[xdt][1])
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return None
        vals = [(q - z) * s for s, z in zip(scales, zps) for q in (lo, hi)]
        return [(min(vals), max(vals))]

    def undefined(self, a, ins, out_types):
        x = ins[0]
        if x.dtype == torch.int32 and x.numel() and int(x.abs().max()) >= EXACT_F32:
            return "dequantizes int32 values of 2^24 or more: float32 rounds them before the multiplication or not"
        return None

    def reference_defect(self, a, ins, opset):
        return _UNDEFINED_DQ_OPSET if opset < 19 else None

    def onnx(self, b, a, xs, ys):
        ins = [xs[0], b.const(np.asarray(a["scale"], dtype=dt.NUMPY[a["sdt"]]))]
        if a["zp"] is not None:  # 4-bit x (a motif's constant, ``Const.bits``): a 4-bit zero point
            ins.append(b.const(np.asarray(a["zp"], dtype=dt.NUMPY[a["zdt"]]), bits=a.get("bits", 0)))
        attrs = _QDQParams.attrs(b, a)
        if a["odt"]:
            attrs["output_dtype"] = int(dt.ONNX[a["out"]])
        b.node("DequantizeLinear", ins, ys, **attrs)

    def torch(self, a, x):
        s, z = _QDQParams.tensors(a, tuple(x.shape))
        return dequantize(x, s, z, a["out"])


# -- the scale as a graph tensor --------------------------------------------------------------
def _axis_layout(ctx, x: TensorType) -> dict:
    """Per-tensor (scalar or [1]) or per-axis; no blocks (a block layout's scale shape
    would be a second tensor's whole shape)."""
    r = x.rank
    if r >= 1 and ctx.coin(0.4):
        ax = ctx.rng.randrange(r)
        return {"mode": "axis", "axis": ax - r if ctx.coin(0.3) else ax, "block": 0, "one": False}
    return {"mode": "tensor", "axis": 1, "block": 0, "one": ctx.coin(0.3)}


class QuantizeLinearScaleInput(OpSpec):
    """QuantizeLinear whose scale is a graph tensor (float32, or float16 from opset 23),
    per tensor or per axis; the zero point a constant or omitted. The scale's values are
    arbitrary, so the division's precision must be defined: float16 operands only from
    opset 23 (the scale's type decides). A zero scale is outside the domain (0 / 0)."""

    name = "QuantizeLinearScaleInput"
    onnx_op = "QuantizeLinear"
    arity = 2
    dtypes = ((F32, F32), (F16, F16), (F16, F32), (F32, F16))
    restricted = True
    jumps = True
    symbolic_ok = False
    value_inputs = (0,)
    gaps: ClassVar[tuple] = (
        ("float16 x or scale before opset 23", "the division's precision is unspecified there (onnxruntime "
                                                "divides float16 in float32) and the scale's values are arbitrary"),
        ("blocked scales", "covered by QuantizeLinear with constant scales"),
    )

    def sample(self, ctx, ins):
        x = ins[0]
        a = _axis_layout(ctx, x)
        to = ctx.choice(QTYPES)
        shape = _QDQParams.shape(x, a)
        has_zp = ctx.coin(0.75) or (to == I8 and ctx.opset < 21)
        a.update(to=to, v23=ctx.opset >= 23, zp=_nested(ctx, shape, lambda: _zp(ctx, to)) if has_zp else None)
        a["odt"] = ctx.opset >= 21 and ((not has_zp and to == I8) or ctx.coin(0.3))
        return a

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, _QDQParams.shape(ins[0], a))

    def requires(self, ins, a):
        x, s = ins
        f16 = F16 in (x.dtype, s.dtype)
        if a["mode"] != "tensor" and (x.rank < 1 or not -x.rank <= a["axis"] < x.rank):
            return [False]
        want = _QDQParams.shape(x, a)
        ok = tuple(s.shape) == want and (a["zp"] is None or tuple(np.shape(a["zp"])) == want)
        return [ok, not f16 or a["v23"]]

    def infer(self, ins, a):
        return [TensorType(a["to"], ins[0].shape)]

    def value_range(self, a, ranges, ins):
        return [tuple(float(v) for v in QR[a["to"]])]

    def input_range(self, a, i):
        return (0.05, 1.0) if i == 1 else None

    def input_nonzero(self, a, i):
        return i == 1

    def losses(self, a, x, s):
        return [L.gt0(s.abs())]

    def undefined(self, a, ins, out_types):
        x, s = ins
        if bool(torch.isnan(x).any()):
            return "quantizes NaN (ONNX defines no integer for it)"
        if not bool(torch.isfinite(s).all()) or bool((s == 0).any()):
            return "a scale of 0, Inf or NaN"
        return None

    def reference_defect(self, a, ins, opset):
        # ``ins`` are the graph's inputs: the scale may be x itself (a reused tensor)
        if ins[0].dtype == F32 and ins[-1].dtype == F16:
            return ("onnx.reference divides float32 x by a float16 scale in float32 (numpy promotion); ONNX says "
                    "the scale's type decides the division's precision")
        return None

    def onnx(self, b, a, xs, ys):
        ins = list(xs)
        if a["zp"] is not None:
            ins.append(b.const(np.asarray(a["zp"], dtype=dt.NUMPY[a["to"]])))
        attrs = _QDQParams.attrs(b, a)
        if a["odt"]:
            attrs["output_dtype"] = int(dt.ONNX[a["to"]])
        b.node("QuantizeLinear", ins, ys, **attrs)

    def torch(self, a, x, s):
        prec = str(s.dtype).replace("torch.", "") if a["v23"] else str(x.dtype).replace("torch.", "")
        s = _expand(s, tuple(x.shape), a["mode"], a["axis"], 0)
        z = None if a["zp"] is None else _expand(torch.tensor(np.asarray(a["zp"], dtype=np.int64)), tuple(x.shape),
                                                 a["mode"], a["axis"], 0)
        return quantize(x, s, z, a["to"], prec).to(dt.torch_dtype(a["to"]))


class DequantizeLinearScaleInput(OpSpec):
    """DequantizeLinear whose scale is a graph tensor (float32, or float16 from opset 19),
    per tensor or per axis; the output the scale's type, or float32 for a float16 scale
    through ``output_dtype`` (opset 23+): products that round once in every reading."""

    name = "DequantizeLinearScaleInput"
    onnx_op = "DequantizeLinear"
    arity = 2
    dtypes = ((I8, F32), (U8, F32), (I32, F32), (I8, F16), (U8, F16))
    symbolic_ok = False
    gaps: ClassVar[tuple] = (
        ("a float32 scale with a float16 output_dtype", "the scale's values are arbitrary: the product would "
                                                       "round twice or once depending on the implementation"),
        ("int32 x with a float16 scale", "see DequantizeLinear"),
    )

    def sample(self, ctx, ins):
        x = ins[0]
        a = _axis_layout(ctx, x)
        shape = _QDQParams.shape(x, a)
        if x.dtype == I32:
            zp = _nested(ctx, shape, lambda: 0) if ctx.coin(0.3) else None
        else:
            zp = _nested(ctx, shape, lambda: _zp(ctx, x.dtype)) if ctx.coin(0.7) else None
        a.update(zp=zp, zdt=x.dtype, wide=ctx.opset >= 23 and ctx.coin(0.3))
        return a

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, _QDQParams.shape(ins[0], a))

    def requires(self, ins, a):
        x, s = ins
        if a["mode"] != "tensor" and (x.rank < 1 or not -x.rank <= a["axis"] < x.rank):
            return [False]
        want = _QDQParams.shape(x, a)
        ok = tuple(s.shape) == want and (a["zp"] is None or tuple(np.shape(a["zp"])) == want)
        return [ok, a["zdt"] == x.dtype, not (x.dtype == I32 and s.dtype != F32)]

    def _out(self, a, ins) -> str:
        return F32 if a["wide"] else ins[1].dtype

    def infer(self, ins, a):
        return [TensorType(self._out(a, ins), ins[0].shape)]

    def value_range(self, a, ranges, ins):
        zps = _flat(a["zp"]) if a["zp"] is not None else None
        return [mul_bounds(_shifted(ranges[0], ins[0].dtype, zps), ranges[1])]

    def undefined(self, a, ins, out_types):
        return DequantizeLinear.undefined(self, a, ins, out_types)

    def reference_defect(self, a, ins, opset):
        return _UNDEFINED_DQ_OPSET if opset < 19 else None

    def onnx(self, b, a, xs, ys):
        ins = list(xs)
        if a["zp"] is not None:
            ins.append(b.const(np.asarray(a["zp"], dtype=dt.NUMPY[a["zdt"]])))
        attrs = _QDQParams.attrs(b, a)
        if a["wide"]:
            attrs["output_dtype"] = int(dt.ONNX[F32])
        b.node("DequantizeLinear", ins, ys, **attrs)

    def torch(self, a, x, s):
        out = F32 if a["wide"] else str(s.dtype).replace("torch.", "")
        s = _expand(s, tuple(x.shape), a["mode"], a["axis"], 0)
        z = None if a["zp"] is None else _expand(torch.tensor(np.asarray(a["zp"], dtype=np.int64)), tuple(x.shape),
                                                 a["mode"], a["axis"], 0)
        return dequantize(x, s, z, out)


# -- DynamicQuantizeLinear --------------------------------------------------------------------
class DynamicQuantizeLinear(OpSpec):
    """``y_scale = (max(0, max x) - min(0, min x)) / 255``, ``y_zero_point =
    round(saturate(0 - min(0, min x) / y_scale))``, ``y = saturate(round(x / y_scale) +
    y_zero_point)``, everything in float32 in that order, rounding half to even; outputs
    y (uint8), y_scale (float32 scalar) and y_zero_point (uint8 scalar). An all-zero x
    makes y_scale 0 and the quantization a division by zero: undefined (onnxruntime and
    onnx.reference then use a scale of 1, TVM divides by 0)."""

    onnx_op = "DynamicQuantizeLinear"
    n_outputs = 3
    dtypes = ((F32,),)
    jumps = True
    gaps: ClassVar[tuple] = (("int8 outputs", "ONNX defines uint8 only"),)

    def infer(self, ins, a):
        return [TensorType(U8, ins[0].shape), TensorType(F32, ()), TensorType(U8, ())]

    def backward(self, ctx, out):
        if out.dtype != U8 or dt.FLOAT32 not in ctx.dtypes:
            return None
        return [TensorType(F32, out.shape)], {}

    def value_range(self, a, ranges, ins):
        lo, hi = ranges[0]
        span = max(0.0, hi) - min(0.0, lo)
        return [(0.0, 255.0), (0.0, span / 255.0 if math.isfinite(span) else INF), (0.0, 255.0)]

    @staticmethod
    def params(x):
        """(y_scale, y_zero_point) as float32 tensors, ONNX's order of operations."""
        zero = torch.zeros((), dtype=torch.float32)
        mx = torch.maximum(zero, x.max())
        mn = torch.minimum(zero, x.min())
        scale = (mx - mn) / torch.tensor(255.0, dtype=torch.float32)
        zp = _round(_clamp(zero - mn / scale, 0.0, 255.0))
        return scale, zp

    def torch(self, a, x):
        scale, zp = self.params(x)
        q = _clamp(_round(x / scale) + zp, 0.0, 255.0)
        return q.to(torch.uint8), scale, zp.to(torch.uint8)

    def undefined(self, a, ins, out_types):
        x = ins[0]
        if not bool(torch.isfinite(x).all()):
            return "NaN or Inf in x"
        scale, _ = self.params(x.float())
        if float(scale) == 0.0:
            return "every element is 0: y_scale is 0 and y divides by it"
        if not math.isfinite(float(scale)):
            return "max(x) - min(x) overflows float32: y_scale is Inf"
        return None


# -- integer matrix products and convolutions ------------------------------------------------------
_MATMUL = MatMul()


def _zp_const(b, v, dtype: str, one: bool = False) -> str:
    arr = np.asarray(v, dtype=dt.NUMPY[dtype])
    return b.const(arr.reshape(1) if one and arr.ndim == 0 else arr)


def _matmul_backward(ctx, out: TensorType, sigs) -> tuple | None:
    """Operand types (of one of ``sigs``) whose matrix product has ``out``'s shape."""
    sigs = [s for s in sigs if all(t in ctx.dtypes for t in s)]
    if not sigs:
        return None
    res = MatMul.backward(_MATMUL, ctx, out.with_dtype(I32))
    if res is None:
        return None
    (x, y), _ = res
    ta, tb = ctx.choice(sigs)
    return x.with_dtype(ta), y.with_dtype(tb)


class MatMulInteger(MatMul):
    """``(A - a_zero_point) @ (B - b_zero_point)`` accumulated in int32, NumPy matmul
    shapes; a_zero_point absent or a scalar (spelled as a scalar or a 1-element vector),
    b_zero_point absent, a scalar or per column (a vector of N, for B of rank 2 and more).
    Sums stay far inside int32 (at most 256 products of at most 255 * 255)."""

    onnx_op = "MatMulInteger"
    dtypes = INT_PAIRS
    can_overflow = False
    keeps_integers = False
    gaps: ClassVar[tuple] = (
        ("per-row a_zero_point (a vector of M, or [.., M, 1])",
         "onnxruntime refuses it ('IsScalarOr1ElementVector(a_zero_point) was false') and onnx.reference cannot "
         "broadcast a vector of M against A"),
        ("per-column b_zero_point for a batched B", "onnxruntime refuses a vector of N there ('B zero point is not "
                                                    "valid') and wants [D.., 1, N], which the lowering cannot write "
                                                    "(B's batch dims are drawn after the attributes)"),
    )

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0].dtype, ctx.choice(QTYPES), ctx.dim(16))

    def _attrs(self, ctx, ta: str, tb: str, n: int) -> dict:
        a = {"za": _zp(ctx, ta) if ctx.coin(0.6) else None, "za1": ctx.coin(0.3), "at": ta, "bt": tb,
             "zb": None, "zb1": ctx.coin(0.3), "n": n}
        kind = ctx.choice(("none", "scalar", "scalar", "col"))
        if kind == "scalar":
            a["zb"] = _zp(ctx, tb)
        elif kind == "col":
            a["zb"] = [_zp(ctx, tb) for _ in range(CYCLE)]
        return a

    def input_type(self, ctx, i, ins, a, dtype):
        t = super().input_type(ctx, i, ins, a, dtype)
        return t if t.rank < 2 else t.with_shape(tuple(t.shape[:-1]) + (a["n"],))

    def requires(self, ins, a):
        cons = super().requires(ins, a)
        if isinstance(a["zb"], list) and (ins[1].rank != 2 or ins[1].shape[-1] != a["n"]):
            return [False]
        return cons + [a["at"] == ins[0].dtype, a["bt"] == ins[1].dtype]

    def infer(self, ins, a):
        return [t.with_dtype(I32) for t in super().infer(ins, a)]

    def backward(self, ctx, out):
        if out.dtype != I32:
            return None
        res = _matmul_backward(ctx, out, self.dtypes)
        if res is None:
            return None
        x, y = res
        return [x, y], self._attrs(ctx, x.dtype, y.dtype, y.shape[-1] if y.rank >= 2 else 1)

    def _zb(self, a, n):
        return _cycled(a["zb"], n) if isinstance(a["zb"], list) else a["zb"]

    def value_range(self, a, ranges, ins):
        k = ins[0].shape[-1]
        zb = a["zb"] if isinstance(a["zb"], list) else (None if a["zb"] is None else [a["zb"]])
        ra = _shifted(ranges[0], ins[0].dtype, None if a["za"] is None else [a["za"]])
        rb = _shifted(ranges[1], ins[1].dtype, zb)
        return [sum_bounds(product_bounds(ra, rb), k, k)]

    def input_span(self, a, i, span, ins):
        return None

    def onnx(self, b, a, xs, ys):
        za = "" if a["za"] is None else _zp_const(b, a["za"], a["at"], a["za1"])
        zb = "" if a["zb"] is None else _zp_const(b, self._zb(a, a["n"]), a["bt"], a["zb1"])
        ins = list(xs) + [za, zb]
        while ins[-1] == "":
            ins.pop()
        b.node("MatMulInteger", ins, ys)

    def torch(self, a, x, y):
        xa = x.long() - (a["za"] or 0)
        yb = y.long()
        if a["zb"] is not None:
            yb = yb - torch.tensor(self._zb(a, y.shape[-1]), dtype=torch.int64)
        return torch.matmul(xa, yb).to(torch.int32)


class MatMulIntegerZp(MatMulInteger):
    """MatMulInteger whose a_zero_point is a third tensor input, a scalar of A's type
    computed in the graph (DynamicQuantizeLinear's y_zero_point, as dynamic quantization
    writes it); b_zero_point as MatMulInteger's. Any zero point value is valid."""

    name = "MatMulIntegerZp"
    arity = 3
    dtypes = tuple((ta, tb, ta) for ta, tb in INT_PAIRS)

    def sample(self, ctx, ins):
        return dict(super().sample(ctx, ins), za=None)

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, ()) if i == 2 else super().input_type(ctx, i, ins, a, dtype)

    def requires(self, ins, a):
        return super().requires(ins[:2], a) + [len(ins) == 3 and ins[2].rank == 0 and ins[2].dtype == ins[0].dtype]

    def infer(self, ins, a):
        return super().infer(ins[:2], a)

    def backward(self, ctx, out):
        res = _matmul_backward(ctx, out, INT_PAIRS) if out.dtype == I32 else None
        if res is None:
            return None
        x, y = res
        a = self._attrs(ctx, x.dtype, y.dtype, y.shape[-1] if y.rank >= 2 else 1)
        return [x, y, TensorType(x.dtype, ())], dict(a, za=None)

    def value_range(self, a, ranges, ins):
        k = ins[0].shape[-1]
        zb = a["zb"] if isinstance(a["zb"], list) else (None if a["zb"] is None else [a["zb"]])
        lo, hi = QR[ins[0].dtype]
        za = (max(lo, ranges[2][0]), min(hi, ranges[2][1]))
        ra = _shifted(ranges[0], ins[0].dtype, za)
        rb = _shifted(ranges[1], ins[1].dtype, zb)
        return [sum_bounds(product_bounds(ra, rb), k, k)]

    def onnx(self, b, a, xs, ys):
        zb = "" if a["zb"] is None else _zp_const(b, self._zb(a, a["n"]), a["bt"], a["zb1"])
        b.node("MatMulInteger", list(xs[:3]) + ([zb] if zb else []), ys)

    def torch(self, a, x, y, za):
        return super().torch(a, x.long() - za.long(), y)


class ConvInteger(_ConvBase):
    """``conv(x - x_zero_point, w - w_zero_point)`` accumulated in int32, Conv's attributes
    (groups, strides, dilations, explicit pads or auto_pad; padding holds the zero point,
    i.e. 0 after the shift); zero points absent or scalars."""

    onnx_op = "ConvInteger"
    has_bias = False
    keeps_integers = False
    gaps: ClassVar[tuple] = (
        ("per-output-channel w_zero_point", "onnxruntime refuses it ('Non per-tensor quantization is not "
                                            "supported now') and onnx.reference misbroadcasts it for 1-D convolutions"),
    )

    def sample(self, ctx, ins):
        a = super().sample(ctx, ins)
        a.update(self._zps(ctx, ins[0].dtype, ctx.choice(QTYPES)))
        return a

    @staticmethod
    def _zps(ctx, tx: str, tw: str) -> dict:
        return {"xt": tx, "wt": tw, "zx": _zp(ctx, tx) if ctx.coin(0.6) else None,
                "zw": _zp(ctx, tw) if ctx.coin(0.5) else None}

    def requires(self, ins, a):
        return super().requires(ins, a) + [a["xt"] == ins[0].dtype, a["wt"] == ins[1].dtype]

    def infer(self, ins, a):
        return [t.with_dtype(I32) for t in super().infer(ins, a)]

    def value_range(self, a, ranges, ins):
        m_min, m_max = self._term_counts(a, ins[0])
        rx = _shifted(ranges[0], ins[0].dtype, None if a["zx"] is None else [a["zx"]])
        rw = _shifted(ranges[1], ins[1].dtype, None if a["zw"] is None else [a["zw"]])
        return [sum_bounds(product_bounds(rx, rw), m_min, m_max)]

    def input_span(self, a, i, span, ins):
        return None

    def onnx(self, b, a, xs, ys):
        zx = "" if a["zx"] is None else _zp_const(b, a["zx"], a["xt"])
        zw = "" if a["zw"] is None else _zp_const(b, a["zw"], a["wt"])
        ins = list(xs) + [zx, zw]
        while ins[-1] == "":
            ins.pop()
        b.node("ConvInteger", ins, ys, **self.onnx_attrs(a, b))

    def torch(self, a, x, w):
        xs = x.double() - (a["zx"] or 0)
        ws = w.double() - (a["zw"] or 0)
        return super().torch(a, xs, ws).round().to(torch.int32)


ConvInteger.dtypes = INT_PAIRS


def _requant(acc, mult, zy: int, qt: str):
    """``saturate(round(acc * mult) + zy)`` (exact: power-of-two multipliers)."""
    lo, hi = QR[qt]
    return _clamp(_round(acc.double() * mult) + zy, float(lo), float(hi)).to(dt.torch_dtype(qt))


_Y_TYPE = ("onnxruntime implements only y of the first input's type (NOT_IMPLEMENTED otherwise): support "
           "probing would then drop the whole signature")


def _zp_before_rounding(zy: int, e1: int, e2, ey: int, op: str) -> str | None:
    """onnx.reference's QLinearMatMul and QLinearConv add y_zero_point before rounding:
    an odd zero point moves a tie (possible when a multiplier is below 1) to the other
    even neighbour. ONNX rounds ``x / y_scale``, then adds the zero point (onnxruntime too)."""
    exps = e2 if isinstance(e2, list) else [e2]
    if zy % 2 and any(e1 + e - ey < 0 for e in exps):
        return (f"onnx.reference's {op} adds y_zero_point before rounding, so an odd zero point rounds ties to the "
                f"wrong even neighbour (ONNX: round(x / y_scale), then + y_zero_point)")
    return None


class QLinearMatMul(MatMul):
    """``saturate(round((a - a_zp) @ (b - b_zp) * a_scale * b_scale / y_scale) + y_zp)``;
    scales and zero points constants: a per tensor, b per tensor or per column (vectors of
    N, B of rank 2 or more), y per tensor; float16 scales from opset 21. Every scale is a
    power of two (see the module docstring), y of a's type."""

    onnx_op = "QLinearMatMul"
    schema_inputs = (0, 3)
    dtypes = INT_PAIRS
    can_overflow = False
    keeps_integers = False
    jumps = True
    gaps: ClassVar[tuple] = (
        ("per-row a scales and zero points ([.., M, 1])", "onnxruntime refuses them (QLinearMatMul: "
                                                           "'IsScalarOr1ElementVector(a_scale)')"),
        ("per-column b scales and zero points for a batched B", "onnxruntime wants [D.., 1, N] there ('weight zero "
                                                                "point must be a scalar, 1D tensor of size 1, or "
                                                                "last to second dimension is 1'); see MatMulInteger"),
        ("scales that are not powers of two", "the requantization's precision is unspecified; rounding at .5 "
                                              "would depend on it"),
        ("float8 operands, bfloat16 scales", "dlgate has no such dtypes"),
        ("y of another type than a", _Y_TYPE),
    )

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0], ctx.choice(QTYPES), ctx.dim(16))

    def _attrs(self, ctx, x: TensorType, tb: str, n: int) -> dict:
        ta = yt = x.dtype
        za, zb = _zp(ctx, ta), _zp(ctx, tb)
        ea, eb = ctx.rng.randint(-8, -3), ctx.rng.randint(-8, -3)
        k = x.shape[-1] if x.rank else 1
        mag = lambda z, t: abs(z - 8) + 4 if t == U8 else abs(z) + 5  # noqa: E731  (inputs are small)
        m = _mult(ctx, k if not sym.is_sym(k) else 16, mag(za, ta), mag(zb, tb))
        per_col = ctx.coin(0.3)
        ebs = [eb + ctx.rng.randint(-1, 1) for _ in range(CYCLE)] if per_col else None
        return {"at": ta, "bt": tb, "yt": yt, "n": n, "za": za, "zb": [_zp(ctx, tb) for _ in range(CYCLE)]
                if per_col and ctx.coin(0.5) else zb, "ea": ea, "eb": ebs if per_col else eb, "ey": ea + eb - m,
                "zy": _zp(ctx, yt), "f16": ctx.opset >= 21 and ctx.coin(0.3)}

    def input_type(self, ctx, i, ins, a, dtype):
        t = super().input_type(ctx, i, ins, a, dtype)
        return t if t.rank < 2 else t.with_shape(tuple(t.shape[:-1]) + (a["n"],))

    def requires(self, ins, a):
        cons = super().requires(ins, a)
        col = isinstance(a["eb"], list) or isinstance(a["zb"], list)
        if col and (ins[1].rank != 2 or ins[1].shape[-1] != a["n"]):
            return [False]
        return cons + [a["at"] == ins[0].dtype, a["bt"] == ins[1].dtype]

    def infer(self, ins, a):
        return [t.with_dtype(a["yt"]) for t in super().infer(ins, a)]

    def backward(self, ctx, out):
        if out.dtype not in QTYPES:
            return None
        res = _matmul_backward(ctx, out, [s for s in self.dtypes if s[0] == out.dtype])
        if res is None:
            return None
        x, y = res
        return [x, y], self._attrs(ctx, x, y.dtype, y.shape[-1] if y.rank >= 2 else 1)

    def value_range(self, a, ranges, ins):
        return [tuple(float(v) for v in QR[a["yt"]])]

    def input_span(self, a, i, span, ins):
        return None

    def reference_defect(self, a, ins, opset):
        return _zp_before_rounding(a["zy"], a["ea"], a["eb"], a["ey"], "QLinearMatMul")

    def _col(self, a, key, n):
        v = a[key]
        return _cycled(v, n) if isinstance(v, list) else v

    def onnx(self, b, a, xs, ys):
        sdt = dt.NUMPY[F16 if a["f16"] else F32]
        n = a["n"]
        sc = lambda e: b.const(np.asarray(2.0 ** np.asarray(e, dtype=np.float64), dtype=sdt))  # noqa: E731
        eb = self._col(a, "eb", n)
        zb = self._col(a, "zb", n)
        if isinstance(eb, list) != isinstance(zb, list):  # scale and zero point share one shape
            eb = eb if isinstance(eb, list) else [eb] * n
            zb = zb if isinstance(zb, list) else [zb] * n
        ins = [xs[0], sc(a["ea"]), _zp_const(b, a["za"], a["at"]), xs[1], sc(eb), _zp_const(b, zb, a["bt"]),
               sc(a["ey"]), _zp_const(b, a["zy"], a["yt"])]
        b.node("QLinearMatMul", ins, ys)

    def torch(self, a, x, y):
        n = y.shape[-1]
        zb = self._col(a, "zb", n)
        eb = self._col(a, "eb", n)
        xa = x.long() - a["za"]
        yb = y.long() - torch.tensor(zb, dtype=torch.int64)
        acc = torch.matmul(xa, yb)
        eb = torch.tensor(eb, dtype=torch.float64)
        if y.dim() < 2:
            eb = eb.reshape(())
        mult = torch.pow(2.0, a["ea"] + eb - a["ey"])
        return _requant(acc, mult, a["zy"], a["yt"])


class QLinearConv(_ConvBase):
    """``saturate(round((conv(x - x_zp, w - w_zp) + B) * x_scale * w_scale / y_scale) +
    y_zp)`` with Conv's attributes; x and y scales per tensor, w's per tensor or per
    output channel (scale and zero point vectors of M); the optional int32 bias B a
    constant. Power-of-two scales (see the module docstring); y of x's type."""

    onnx_op = "QLinearConv"
    schema_inputs = (0, 3)
    has_bias = False
    keeps_integers = False
    jumps = True
    gaps: ClassVar[tuple] = (
        ("scales that are not powers of two", "the requantization's precision is unspecified"),
        ("y of another type than x", _Y_TYPE),
    )

    def sample(self, ctx, ins):
        a = super().sample(ctx, ins)
        a.update(self._q(ctx, ins[0], ctx.choice(QTYPES)))
        return a

    def _q(self, ctx, x: TensorType, tw: str) -> dict:
        tx = yt = x.dtype
        zx, zw = _zp(ctx, tx), _zp(ctx, tw)
        per = ctx.coin(0.4)
        ex, ew = ctx.rng.randint(-8, -3), ctx.rng.randint(-8, -3)
        mag = lambda z, t: abs(z - 8) + 4 if t == U8 else abs(z) + 5  # noqa: E731
        c = x.shape[1] if x.rank >= 2 else 1
        m = _mult(ctx, c * 9 if not sym.is_sym(c) else 64, mag(zx, tx), mag(zw, tw))
        return {"xt": tx, "wt": tw, "yt": yt, "zx": zx, "zy": _zp(ctx, yt), "ex": ex, "ey": ex + ew - m,
                "ew": [ew + ctx.rng.randint(-1, 1) for _ in range(CYCLE)] if per else ew,
                "zw": [_zp(ctx, tw) for _ in range(CYCLE)] if per and ctx.coin(0.5) else zw,
                "bias": [ctx.rng.randint(-2000, 2000) for _ in range(CYCLE)] if ctx.coin(0.5) else None}

    def requires(self, ins, a):
        return super().requires(ins, a) + [a["xt"] == ins[0].dtype, a["wt"] == ins[1].dtype]

    def infer(self, ins, a):
        return [t.with_dtype(a["yt"]) for t in super().infer(ins, a)]

    def value_range(self, a, ranges, ins):
        return [tuple(float(v) for v in QR[a["yt"]])]

    def exact(self, a, exacts, ins):
        return None

    def input_span(self, a, i, span, ins):
        return None

    def reference_defect(self, a, ins, opset):
        ties = _zp_before_rounding(a["zy"], a["ex"], a["ew"], a["ey"], "QLinearConv")
        if ties:
            return ties
        if ins[0].rank == 3 and (isinstance(a["ew"], list) or isinstance(a["zw"], list)):
            return ("onnx.reference's QLinearConv expands a per-channel w_scale to 4-D (np.expand_dims(w_scale, "
                    "(0, 2, 3))), which misbroadcasts against a 1-D convolution's 3-D output")
        return None

    def _per_channel(self, a):
        m = self._out_channels(a)
        ew, zw = a["ew"], a["zw"]
        if isinstance(ew, list) or isinstance(zw, list):
            ew = _cycled(ew, m) if isinstance(ew, list) else [ew] * m
            zw = _cycled(zw, m) if isinstance(zw, list) else [zw] * m
        return ew, zw

    def onnx(self, b, a, xs, ys):
        ew, zw = self._per_channel(a)
        sc = lambda e: b.const(np.asarray(2.0 ** np.asarray(e, dtype=np.float64), dtype=np.float32))  # noqa: E731
        ins = [xs[0], sc(a["ex"]), _zp_const(b, a["zx"], a["xt"]), xs[1], sc(ew), _zp_const(b, zw, a["wt"]),
               sc(a["ey"]), _zp_const(b, a["zy"], a["yt"])]
        if a["bias"] is not None:
            ins.append(b.const(np.asarray(_cycled(a["bias"], self._out_channels(a)), dtype=np.int32)))
        b.node("QLinearConv", ins, ys, **self.onnx_attrs(a, b))

    def torch(self, a, x, w):
        ew, zw = self._per_channel(a)
        r = x.dim() - 2
        chan = (-1,) + (1,) * (w.dim() - 1)
        zw_t = torch.tensor(zw, dtype=torch.float64)
        ws = w.double() - (zw_t.reshape(chan) if zw_t.dim() else zw_t)
        bias = None
        if a["bias"] is not None:
            bias = torch.tensor(_cycled(a["bias"], self._out_channels(a)), dtype=torch.float64)
        acc = super().torch(a, x.double() - a["zx"], ws, bias)
        e = torch.tensor(ew, dtype=torch.float64)
        if e.dim():
            e = e.reshape((1, -1) + (1,) * r)
        return _requant(acc, torch.pow(2.0, a["ex"] + e - a["ey"]), a["zy"], a["yt"])


QLinearConv.dtypes = INT_PAIRS


# -- QDQ idioms: float tensors quantized and dequantized around a float operator ----------------------
class _Q:
    """One activation quantization (type, power-of-two scale, zero point) in an idiom's
    attributes, under a prefix: ``{p}t``, ``{p}e`` (the scale's exponent), ``{p}z``."""

    @staticmethod
    def draw(ctx, p: str, qt: str | None = None, lo: int = -6, hi: int = -2) -> dict:
        qt = qt or ctx.choice(QTYPES)
        return {f"{p}t": qt, f"{p}e": ctx.rng.randint(lo, hi), f"{p}z": _zp(ctx, qt)}

    @staticmethod
    def nodes(b, a: dict, p: str, x: str, out: str | None = None, dq: bool = True) -> str:
        """Q(x) then, with ``dq``, DQ of it; returns the last tensor's name."""
        s = b.const(np.asarray(2.0 ** a[f"{p}e"], dtype=np.float32))
        z = b.const(np.asarray(a[f"{p}z"], dtype=dt.NUMPY[a[f"{p}t"]]))
        (q,) = b.node("QuantizeLinear", [x, s, z], 1 if (dq or out is None) else [out])
        if not dq:
            return q
        (y,) = b.node("DequantizeLinear", [q, s, z], [out] if out is not None else 1)
        return y

    @staticmethod
    def fake(a: dict, p: str, x):
        """DQ(Q(x)) in float64 (exact: a power-of-two scale)."""
        s = torch.tensor(2.0 ** a[f"{p}e"], dtype=torch.float64)
        z = torch.tensor(a[f"{p}z"], dtype=torch.float64)
        return (quantize(x, s.to(x.dtype) if x.dtype != torch.float64 else s, z, a[f"{p}t"],
                         str(x.dtype).replace("torch.", "")) - z) * s

    @staticmethod
    def bounds(a: dict, p: str) -> tuple:
        return _qbounds(a[f"{p}t"], [a[f"{p}z"]], [2.0 ** a[f"{p}e"]])


class _Idiom(OpSpec):
    """QDQ idioms: a float32 result, DequantizeLinear's, so onnx.reference runs them only
    from opset 19 (see ``reference_defect``)."""

    onnx_ops = ("QuantizeLinear", "DequantizeLinear")
    jumps = True
    symbolic_ok = False
    gaps: ClassVar[tuple] = (
        ("float16 activations", "exporters quantize float32 graphs; float16 Q/DQ is FakeQuant's and "
                                "QuantizeLinear's"),
        ("scales that are not powers of two", "the float operator's result would be rounded before the "
                                              "requantization, and onnxruntime's fused integer kernels round "
                                              "differently: ONNX would not decide ties and near-ties"),
        ("per-channel activation scales", "exporters quantize activations per tensor"),
    )

    def reference_defect(self, a, ins, opset):
        return _UNDEFINED_DQ_OPSET if opset < 19 else None

    def value_range(self, a, ranges, ins):
        return [_Q.bounds(a, "y")]


class FakeQuant(_Idiom):
    """``DequantizeLinear(QuantizeLinear(x))`` on a float tensor (fake quantization of an
    activation): per tensor, per axis or blocked (opset 21+), one scale and zero point
    shared by the pair; float32, or float16 from opset 19 (the scale float16, or float32
    from opset 23 with ``output_dtype`` giving float16 back). Non-power-of-two scales only
    for float32 x and scale (the division's precision is then defined)."""

    name = "FakeQuant"
    onnx_op = "QuantizeLinear"
    onnx_ops = ("DequantizeLinear",)
    dtypes = ((F32,), (F16,))
    gaps: ClassVar[tuple] = (("a float16 scale on float32 x", "onnx.reference divides in float32 there, against "
                                                              "the spec (see QuantizeLinear)"),)

    def sample(self, ctx, ins):
        x = ins[0]
        xdt, opset = x.dtype, ctx.opset
        sdt = F32 if xdt == F32 or (opset >= 23 and ctx.coin(0.3)) else F16
        pow2 = sdt == F16 or xdt == F16 or ctx.coin(0.5)
        a = _QDQParams.layout(ctx, x, block_ok=opset >= 21)
        shape = _QDQParams.shape(x, a)
        to = ctx.choice(QTYPES)
        has_zp = ctx.coin(0.75) or (to == I8 and opset < 21)
        a.update(to=to, sdt=sdt, xdt=xdt, pow2=pow2, scale=_scale_values(ctx, shape, sdt, pow2, lo=-8, hi=-2),
                 zp=_nested(ctx, shape, lambda: _zp(ctx, to)) if has_zp else None)
        a["odt"] = opset >= 21 and ((not has_zp and to == I8) or ctx.coin(0.3))
        return a

    def requires(self, ins, a):
        return [a["xdt"] == ins[0].dtype] + _QDQParams.valid(ins[0], a)

    def undefined(self, a, ins, out_types):
        if bool(torch.isnan(ins[0]).any()):
            return "quantizes NaN (ONNX defines no integer for it)"
        return _bad_scale(a)

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if out.dtype not in (F32, F16):
            return None
        return [out], self.sample(ctx, [out])

    def value_range(self, a, ranges, ins):
        scales = _flat(a["scale"])
        zps = _flat(a["zp"]) if a["zp"] is not None else [0.0] * len(scales)
        return [_qbounds(a["to"], zps, scales)]

    def onnx(self, b, a, xs, ys):
        sdt = dt.NUMPY[a["sdt"]]
        s = b.const(np.asarray(a["scale"], dtype=sdt))
        z = None if a["zp"] is None else b.const(np.asarray(a["zp"], dtype=dt.NUMPY[a["to"]]))
        attrs = _QDQParams.attrs(b, a)
        qattrs = dict(attrs)
        if a["odt"]:
            qattrs["output_dtype"] = int(dt.ONNX[a["to"]])
        (q,) = b.node("QuantizeLinear", [xs[0], s] + ([z] if z else []), 1, **qattrs)
        if a["sdt"] != a["xdt"]:
            attrs["output_dtype"] = int(dt.ONNX[a["xdt"]])
        b.node("DequantizeLinear", [q, s] + ([z] if z else []), ys, **attrs)

    def torch(self, a, x):
        s, z = _QDQParams.tensors(a, tuple(x.shape))
        q = quantize(x, s, z, a["to"], a["sdt"])  # the scale's type is x's before opset 23
        return dequantize(q, s, z, a["xdt"])


class _QDQUnary(_Idiom):
    """``DQ(Q(f(DQ(Q(x)))))``: a float operator between quantized activations, as
    exporters write it (onnxruntime fuses it, or drops a Relu whose output zero point is
    the type's minimum)."""

    dtypes = ((F32,),)
    fn = None

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if out.dtype != F32:
            return None
        return [out], self.sample(ctx, [out])

    def onnx(self, b, a, xs, ys):
        d = _Q.nodes(b, a, "x", xs[0])
        (f,) = b.node(self.onnx_op, [d], 1)
        _Q.nodes(b, a, "y", f, out=ys[0])

    def _f(self, a, d):
        raise NotImplementedError

    def torch(self, a, x):
        d = _Q.fake(a, "x", x)
        y = _Q.fake(a, "y", self._f(a, d))
        return y.to(torch.float32)


class QDQRelu(_QDQUnary):
    """The output scale equals the input's, or doubles it (a requantization whose ties
    round half to even)."""

    name = "QDQRelu"
    onnx_op = "Relu"

    def sample(self, ctx, ins):
        a = _Q.draw(ctx, "x")
        yt = a["xt"] if ctx.coin(0.8) else ctx.choice(QTYPES)
        a.update(yt=yt, ye=a["xe"] + ctx.choice((0, 0, 1)),
                 yz=ctx.choice((QR[yt][0], QR[yt][0], _zp(ctx, yt))))
        return a

    def _f(self, a, d):
        return L.proxy_relu(d) if d.requires_grad else torch.relu(d)


class QDQSigmoid(_QDQUnary):
    """Scales chosen so that Sigmoid of every value the quantized input can hold lies at
    least ``SIGMOID_MARGIN`` of an output step away from a rounding boundary."""

    name = "QDQSigmoid"
    onnx_op = "Sigmoid"

    @staticmethod
    def _clear(a) -> bool:
        lo, hi = QR[a["xt"]]
        q = np.arange(lo, hi + 1, dtype=np.float64)
        v = 1.0 / (1.0 + np.exp(-(q - a["xz"]) * 2.0 ** a["xe"]))
        t = v / 2.0 ** a["ye"]
        return bool(np.all(np.abs(t - np.floor(t) - 0.5) >= SIGMOID_MARGIN))

    def sample(self, ctx, ins):
        for _ in range(40):
            a = _Q.draw(ctx, "x", lo=-6, hi=-1)
            yt = a["xt"] if ctx.coin(0.8) else ctx.choice(QTYPES)
            a.update(yt=yt, ye=ctx.choice((-8, -8, -7, -9)), yz=ctx.choice((QR[yt][0], QR[yt][0], _zp(ctx, yt))))
            if self._clear(a):
                break
        return a

    def _f(self, a, d):
        return torch.sigmoid(d)

    def undefined(self, a, ins, out_types):
        with torch.no_grad():
            d = _Q.fake(a, "x", ins[0].double())
            t = torch.sigmoid(d) / 2.0 ** a["ye"]
        if bool((torch.abs(t - torch.floor(t) - 0.5) < SIGMOID_MARGIN).any()):
            return "Sigmoid of a quantized value lies within rounding error of an output rounding boundary"
        return None


class QDQAdd(_Idiom, Elementwise):
    """``DQ(Q(DQ(Q(a)) + DQ(Q(b))))`` with broadcasting: each input quantized with its own
    scale and zero point; the output scale as large as the inputs' or up to four times
    larger (ties: sums of multiples of the smaller scale)."""

    name = "QDQAdd"
    onnx_op = "Add"
    types = (F32,)

    def sample(self, ctx, ins):
        qt = ctx.choice(QTYPES)
        same = ctx.coin(0.75)
        a = _Q.draw(ctx, "a", qt)
        a.update(_Q.draw(ctx, "b", qt if same else None))
        a.update(_Q.draw(ctx, "y", qt if same else None))
        a["ye"] = max(a["ae"], a["be"]) + ctx.choice((0, 1, 1, 2))
        return a

    def backward(self, ctx, out):
        res = Elementwise.backward(self, ctx, out)
        return None if res is None else (res[0], self.sample(ctx, res[0]))

    def value_range(self, a, ranges, ins):
        return [_Q.bounds(a, "y")]

    def onnx(self, b, a, xs, ys):
        da = _Q.nodes(b, a, "a", xs[0])
        db = _Q.nodes(b, a, "b", xs[1])
        (s,) = b.node("Add", [da, db], 1)
        _Q.nodes(b, a, "y", s, out=ys[0])

    def torch(self, a, x, y):
        s = _Q.fake(a, "a", x) + _Q.fake(a, "b", y)
        return _Q.fake(a, "y", s).to(torch.float32)

    def input_span(self, a, i, span, ins):
        return None


class QDQMatMul(_Idiom):
    """``DQ(Q(DQ(Q(x)) @ DQ(W)))``: W a (K, N) int8/uint8 constant (seeded), its scale per
    tensor or per column (DequantizeLinear axis 1); x float32 of any rank (NumPy matmul)."""

    name = "QDQMatMul"
    onnx_op = "MatMul"
    dtypes = ((F32,),)
    ranks = (1, 2, 3, 4)

    def sample(self, ctx, ins):
        k = ins[0].shape[-1]
        return self._attrs(ctx, k, ctx.dim(16))

    def _attrs(self, ctx, k: int, n: int) -> dict:
        a = _Q.draw(ctx, "x", lo=-6, hi=-2)
        wt = ctx.choice(QTYPES)
        wz = ctx.choice((0, 0, ctx.rng.randint(-4, 4))) if wt == I8 else ctx.choice((128, 128, ctx.rng.randint(100, 150)))
        amp = ctx.choice((8, 32, 127))
        per = ctx.coin(0.4)
        we = ctx.rng.randint(-8, -4)
        a.update(k=k, n=n, wt=wt, wz=wz, wamp=amp, wseed=ctx.rng.randrange(2 ** 31),
                 we=[we + ctx.rng.randint(-1, 1) for _ in range(CYCLE)] if per else we)
        xs = (QR[a["xt"]][1] - QR[a["xt"]][0]) / 4
        m = _mult(ctx, k, xs, amp / 2)
        yt = a["xt"] if ctx.coin(0.8) else ctx.choice(QTYPES)
        a.update(yt=yt, ye=a["xe"] + we - m, yz=_zp(ctx, yt))
        return a

    def requires(self, ins, a):
        x = ins[0]
        return [x.rank >= 1, x.shape[-1] == a["k"], a["k"] <= MAX_TERMS]

    def infer(self, ins, a):
        return [TensorType(F32, tuple(ins[0].shape[:-1]) + (a["n"],))]

    def backward(self, ctx, out):
        if out.dtype != F32 or out.rank < 1 or out.rank > 4:
            return None
        k = ctx.dim(16)
        return [TensorType(F32, tuple(out.shape[:-1]) + (k,))], self._attrs(ctx, k, out.shape[-1])

    def _w(self, a):
        """(integer weights, per-column scale exponents or one) as NumPy arrays."""
        w = _seeded(a["wseed"], (a["k"], a["n"]), a["wt"], a["wz"], a["wamp"])
        e = np.asarray(_cycled(a["we"], a["n"]) if isinstance(a["we"], list) else a["we"], dtype=np.float64)
        return w, e

    def onnx(self, b, a, xs, ys):
        d = _Q.nodes(b, a, "x", xs[0])
        w, e = self._w(a)
        zw = np.full(e.shape, a["wz"], dtype=dt.NUMPY[a["wt"]])
        attrs = {"axis": _col_axis(b)} if e.ndim else {}
        (wd,) = b.node("DequantizeLinear", [b.const(w), b.const((2.0 ** e).astype(np.float32)), b.const(zw)], 1,
                       **attrs)
        (m,) = b.node("MatMul", [d, wd], 1)
        _Q.nodes(b, a, "y", m, out=ys[0])

    def torch(self, a, x):
        d = _Q.fake(a, "x", x)
        w, e = self._w(a)
        wd = (torch.from_numpy(w.astype(np.float64)) - a["wz"]) * torch.pow(2.0, torch.from_numpy(e))
        return _Q.fake(a, "y", torch.matmul(d, wd)).to(torch.float32)


def _col_axis(b):
    """The per-column DequantizeLinear axis of a (K, N) weight: 1, -1, or left to its
    default (1)."""
    return b.rng.choice((1, -1, None))


class QDQConv(_Idiom, _ConvBase):
    """``DQ(Q(Conv(DQ(Q(x)), DQ(W), DQ(B))))``: W an int8/uint8 constant (seeded), its
    scale per tensor or per output channel (DequantizeLinear axis 0); the optional bias an
    int32 constant dequantized with scale ``x_scale * w_scale`` (zero point 0), as
    exporters write it; Conv's attributes. At most 256 products per output
    (``MAX_TERMS``), so float32 sums stay exact."""

    name = "QDQConv"
    onnx_op = "Conv"
    has_bias = False
    symbolic_ok = True  # no backward of its own: the generator inverts it with z3, like Conv

    def sample(self, ctx, ins):
        x = ins[0]
        a = _ConvBase.sample(self, ctx, ins)
        a.update(_Q.draw(ctx, "x", lo=-6, hi=-2))
        wt = ctx.choice(QTYPES)
        wz = ctx.choice((0, 0, ctx.rng.randint(-4, 4))) if wt == I8 else ctx.choice((128, 128, ctx.rng.randint(100, 150)))
        amp = ctx.choice((8, 32, 127))
        per = ctx.coin(0.4)
        we = ctx.rng.randint(-8, -4)
        c = x.shape[1]
        terms = 64 if ctx.symbolic else max(1, (c // max(1, a["group"])) * math.prod(a["kernel"]))
        m = _mult(ctx, terms, (QR[a["xt"]][1] - QR[a["xt"]][0]) / 4, amp / 2)
        yt = a["xt"] if ctx.coin(0.8) else ctx.choice(QTYPES)
        a.update(c=c, wt=wt, wz=wz, wamp=amp, wseed=ctx.rng.randrange(2 ** 31),
                 we=[we + ctx.rng.randint(-1, 1) for _ in range(CYCLE)] if per else we,
                 bias=[ctx.rng.randint(-3000, 3000) for _ in range(CYCLE)] if ctx.coin(0.6) else None,
                 yt=yt, ye=a["xe"] + we - m, yz=_zp(ctx, yt))
        return a

    def requires(self, ins, a):
        x = ins[0]
        w = TensorType(F32, self._weight_shape(ins, a))
        terms = sym.div(x.shape[1], a["group"]) * sym.prod(a["kernel"])
        return _ConvBase.requires(self, [x, w], a) + [a["c"] == x.shape[1], terms <= MAX_TERMS]

    def exact(self, a, exacts, ins):
        return None

    def input_span(self, a, i, span, ins):
        return None

    def value_range(self, a, ranges, ins):
        return [_Q.bounds(a, "y")]

    def reference_defect(self, a, ins, opset):
        return _Idiom.reference_defect(self, a, ins, opset)

    def _w(self, a):
        m = self._out_channels(a)
        shape = (m, a["c"] // a["group"]) + tuple(a["kernel"])
        w = _seeded(a["wseed"], shape, a["wt"], a["wz"], a["wamp"])
        e = np.asarray(_cycled(a["we"], m) if isinstance(a["we"], list) else a["we"], dtype=np.float64)
        bias = None if a["bias"] is None else np.asarray(_cycled(a["bias"], m), dtype=np.int32)
        return w, e, bias

    def onnx(self, b, a, xs, ys):
        d = _Q.nodes(b, a, "x", xs[0])
        w, e, bias = self._w(a)
        ax = {"axis": 0} if e.ndim else {}
        zw = np.full(e.shape, a["wz"], dtype=dt.NUMPY[a["wt"]])
        (wd,) = b.node("DequantizeLinear", [b.const(w), b.const((2.0 ** e).astype(np.float32)), b.const(zw)], 1, **ax)
        ins = [d, wd]
        if bias is not None:
            bs = (2.0 ** (e + a["xe"])).astype(np.float32)
            (bd,) = b.node("DequantizeLinear", [b.const(bias), b.const(bs)], 1, **ax)
            ins.append(bd)
        (y,) = b.node("Conv", ins, 1, **self.onnx_attrs(a, b))
        _Q.nodes(b, a, "y", y, out=ys[0])

    def torch(self, a, x):
        d = _Q.fake(a, "x", x)
        w, e, bias = self._w(a)
        r = len(a["kernel"])
        scale = torch.pow(2.0, torch.from_numpy(e))
        wd = (torch.from_numpy(w.astype(np.float64)) - a["wz"]) * (scale.reshape((-1,) + (1,) * (r + 1))
                                                                   if e.ndim else scale)
        bd = None if bias is None else torch.from_numpy(bias.astype(np.float64)) * scale * 2.0 ** a["xe"]
        acc = _ConvBase.torch(self, a, d, wd, bd)
        return _Q.fake(a, "y", acc).to(torch.float32)


QDQConv.arity = 1
QDQConv.dtypes = ((F32,),)


OPS = [QuantizeLinear, DequantizeLinear, QuantizeLinearScaleInput, DequantizeLinearScaleInput,
       DynamicQuantizeLinear, MatMulInteger, MatMulIntegerZp, ConvInteger, QLinearMatMul, QLinearConv,
       FakeQuant, QDQConv, QDQMatMul, QDQAdd, QDQRelu, QDQSigmoid]
