"""What the quant operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops import losses as L
from dlgate.ops.base import INF, OpSpec, TensorType
from dlgate.ops.cast._shared import to_dtype
from dlgate.ops.linalg.matmul import MatMul


F32, F16, I32, I8, U8 = dt.FLOAT32, dt.FLOAT16, dt.INT32, dt.INT8, dt.UINT8
QTYPES = (I8, U8)
#: Saturation ranges.
QR = {I8: (-128, 127), U8: (0, 255)}
INT_PAIRS = ((U8, U8), (U8, I8), (I8, U8), (I8, I8))
#: Most scale (or zero-point) elements a per-axis or blocked instance writes.
MAX_PARAMS = 256
#: Length of the lists repeated along a dimension sampled later (per-column, per-channel).
CYCLE = 8

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


# -- the scale as a graph tensor --------------------------------------------------------------
def _axis_layout(ctx, x: TensorType) -> dict:
    """Per-tensor (scalar or [1]) or per-axis; no blocks (a block layout's scale shape
    would be a second tensor's whole shape)."""
    r = x.rank
    if r >= 1 and ctx.coin(0.4):
        ax = ctx.rng.randrange(r)
        return {"mode": "axis", "axis": ax - r if ctx.coin(0.3) else ax, "block": 0, "one": False}
    return {"mode": "tensor", "axis": 1, "block": 0, "one": ctx.coin(0.3)}


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
    symbolic_ok = False

    jumps = True
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


class _QDQUnary(_Idiom):
    """``DQ(Q(f(DQ(Q(x)))))``: a float operator between quantized activations, as
    exporters write it (onnxruntime fuses it, or drops a Relu whose output zero point is
    the type's minimum)."""

    dtypes = ((F32,),)
    fn = None

    def backward(self, ctx, out):
        if out.dtype != F32:
            return None
        return [out], self.sample(ctx, [out])

    def infer(self, ins, a):
        return [ins[0]]

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
