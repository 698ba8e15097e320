"""Activations: element-wise non-linearities (some with float attributes), PRelu with a
unidirectionally broadcast slope, and Softmax/LogSoftmax/Hardmax along one axis."""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from dlgate import dtypes as dt
from dlgate.spec import losses as L
from dlgate.spec import sym
from dlgate.spec.base import IEEE, INF, INF_ONLY, OpSpec, TensorType, f32
from dlgate.spec.binary import mul_bounds, reduced_partner

#: Probability a float attribute takes its ONNX default (so the omitted spelling is exercised).
DEFAULT_PROB = 0.3


class Activation(OpSpec):
    """Element-wise ``y = f(x; attrs)``, same type in and out.

    ``params``: ``(name, lo, hi, default)`` per float attribute, sampled uniformly in
    ``[lo, hi]`` (float32-rounded) or set to the (float32) default.
    """

    elementwise = True
    types: tuple = dt.FLOATS
    params: tuple = ()
    fn = None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.dtypes = tuple((t,) for t in cls.types)

    def sample(self, ctx, ins):
        a = {}
        for name, lo, hi, default in self.params:
            v = f32(default) if ctx.coin(DEFAULT_PROB) else ctx.uniform(lo, hi)
            if ins[0].dtype == dt.FLOAT16 and v != f32(default):
                # Representable in float16, so comparing x with it means the same whether a
                # runtime compares in float16 or in float32 (ThresholdedRelu's threshold).
                v = float(np.float16(v))
            a[name] = v
        return a

    def infer(self, ins, a):
        return [TensorType(ins[0].dtype, ins[0].shape)]

    def backward(self, ctx, out):
        if out.dtype not in self.types or out.rank not in self.ranks:
            return None
        return [out], self.sample(ctx, [out])

    def onnx_attrs(self, a, b):
        return {name: b.opt(a[name], f32(default)) for name, _, _, default in self.params}

    def torch(self, a, x):
        return type(self).fn(x)


class Relu(Activation):
    keeps_integers = True
    monotone = 1
    nonfinite = INF_ONLY
    onnx_op = "Relu"
    exact_values = True

    def value_range(self, a, ranges, ins):
        lo, hi = ranges[0]
        return [(max(0.0, lo), max(0.0, hi))]

    types = dt.FLOATS + dt.SIGNED  # the integer types from opset 14
    fn = torch.relu

    def torch(self, a, x):
        return L.proxy_relu(x) if x.requires_grad else torch.relu(x)


class LeakyRelu(Activation):
    monotone = 1
    onnx_op = "LeakyRelu"
    params = (("alpha", 0.0, 1.0, 0.01),)

    def value_range(self, a, ranges, ins):
        # non-decreasing (alpha >= 0); written out so alpha = 0 at -inf gives 0, not NaN
        lo, hi = ranges[0]
        f = lambda x: x if x >= 0 else (0.0 if a["alpha"] == 0 else a["alpha"] * x)  # noqa: E731
        return [(f(lo), f(hi))]

    def torch(self, a, x):
        return torch.where(x >= 0, x, x * a["alpha"])

    def defines_nonfinite(self, a, ins):
        return INF_ONLY if a["alpha"] > 0 else frozenset()  # alpha * -inf with alpha 0: NaN, or 0?


class PRelu(OpSpec):
    """``y = x < 0 ? slope * x : x``; ``slope`` broadcasts unidirectionally to ``x``."""

    can_overflow = True
    onnx_op = "PRelu"
    arity = 2
    dtypes = tuple((t, t) for t in dt.FLOATS + dt.COMMON_INTS)  # int32/int64 from opset 16

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, reduced_partner(ctx, ins[0].shape))

    def requires(self, ins, a):
        x, s = ins[0].shape, ins[1].shape
        if len(s) > len(x):
            return [False]
        return [sym.Or(d == 1, d == e) for d, e in zip(s, x[len(x) - len(s):])]

    def infer(self, ins, a):
        return [TensorType(ins[0].dtype, ins[0].shape)]

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS + dt.COMMON_INTS:
            return None
        return [out, TensorType(out.dtype, reduced_partner(ctx, out.shape))], {}

    def value_range(self, a, ranges, ins):
        # x where x >= 0, x * slope where x < 0: the union of both parts' bounds
        (lo, hi), s = ranges[0], ranges[1]
        parts = []
        if hi >= 0:
            parts.append((max(lo, 0.0), hi))
        if lo < 0:
            parts.append(mul_bounds((lo, min(hi, 0.0)), s))
        return [(min(p[0] for p in parts), max(p[1] for p in parts))]

    def torch(self, a, x, slope):
        return torch.where(x < 0, x * slope, x)


class Elu(Activation):
    monotone = 1
    nonfinite = INF_ONLY
    onnx_op = "Elu"
    params = (("alpha", 0.1, 3.0, 1.0),)

    def torch(self, a, x):
        return F.elu(x, alpha=a["alpha"])


class Selu(Activation):
    monotone = 1
    nonfinite = INF_ONLY
    onnx_op = "Selu"
    params = (("alpha", 0.5, 3.0, 1.67326319217681884765625),
              ("gamma", 0.5, 2.0, 1.05070102214813232421875))

    def torch(self, a, x):
        return a["gamma"] * torch.where(x > 0, x, a["alpha"] * torch.expm1(x))


class Celu(Activation):
    monotone = 1
    nonfinite = INF_ONLY
    onnx_op = "Celu"
    #: float16 and float64 from opset 28 on (the schema's widening; earlier ones allow float32 only)
    types = (dt.FLOAT32, dt.FLOAT64, dt.FLOAT16)
    params = (("alpha", 0.1, 3.0, 1.0),)

    def torch(self, a, x):
        return F.celu(x, alpha=a["alpha"])


class Sigmoid(Activation):
    monotone = 1
    out_range = (0.0, 1.0)
    nonfinite = IEEE
    onnx_op = "Sigmoid"
    fn = torch.sigmoid


class HardSigmoid(Activation):
    monotone = 1
    out_range = (0.0, 1.0)
    nonfinite = INF_ONLY
    onnx_op = "HardSigmoid"
    params = (("alpha", 0.05, 1.0, 0.2), ("beta", 0.0, 1.0, 0.5))

    def torch(self, a, x):
        y = a["alpha"] * x + a["beta"]
        if y.requires_grad:  # the input search: slope 0.1 on the flat sides
            return L.proxy_clip(y, 0.0, 1.0)
        return torch.clamp(y, 0.0, 1.0)


class HardSwish(Activation):
    valley = (-1.55, -1.45, -0.375)  # x * (x/6 + 1/2) is smallest at -1.5: -0.375
    out_range = (-0.375, INF)
    onnx_op = "HardSwish"
    min_opset = 14

    def torch(self, a, x):
        # ONNX defines it as x * HardSigmoid(x; alpha=1/6 as a float32 attribute, beta=0.5)
        return x * torch.clamp(f32(1 / 6) * x + 0.5, 0.0, 1.0)


class Gelu(Activation):
    # smallest at about -0.7518 (-0.16997) exactly, -0.7525 (-0.17004) with tanh
    valley = (-0.8, -0.7, -0.1701)
    out_range = (-0.1701, INF)
    onnx_op = "Gelu"
    min_opset = 20

    def sample(self, ctx, ins):
        return {"approximate": ctx.choice(("none", "tanh"))}

    def onnx_attrs(self, a, b):
        return {"approximate": b.opt(a["approximate"], "none")}

    def torch(self, a, x):
        return F.gelu(x, approximate=a["approximate"])

    def reference_defect(self, a, ins, opset):
        if ins and ins[0].dtype == dt.FLOAT64:
            # its function body's Erf is np.vectorize(math.erf, otypes=["f"]): float32 values,
            # which 1 + erf(x / sqrt(2)) turns into relative errors of 1e-5 at x = -3
            return "onnx.reference computes float64 Gelu's Erf in float32 (1e-5 relative error below x = -3)"
        return None


class Softplus(Activation):
    monotone = 1
    out_range = (0.0, INF)
    onnx_op = "Softplus"
    fn = F.softplus  # log(1 + exp(x)), linear past 20 like a stable log-add-exp

    def undefined(self, a, ins, out_types):
        x = ins[0]
        if x.numel() and float(x.detach().double().max()) > math.log(float(torch.finfo(x.dtype).max)):
            return (f"exp(x) overflows {out_types[0].dtype}: the function body log(exp(x) + 1) gives inf where "
                    "the exact value is finite (about x)")
        return None


class Softsign(Activation):
    monotone = 1
    out_range = (-1.0, 1.0)
    onnx_op = "Softsign"
    fn = F.softsign


class Tanh(Activation):
    monotone = 1
    out_range = (-1.0, 1.0)
    nonfinite = IEEE
    onnx_op = "Tanh"
    fn = torch.tanh


class ThresholdedRelu(Activation):
    nonfinite = INF_ONLY
    onnx_op = "ThresholdedRelu"
    jumps = True
    params = (("alpha", -1.0, 3.0, 1.0),)

    def value_range(self, a, ranges, ins):
        # x where x > alpha, else exactly 0
        lo, hi, alpha = ranges[0][0], ranges[0][1], a["alpha"]
        if lo > alpha:
            return [(lo, hi)]
        if hi <= alpha:
            return [(0.0, 0.0)]
        return [(min(0.0, alpha), max(0.0, hi))]

    def input_span(self, a, i, span, ins):
        # x itself above the threshold, else 0: the part of the span above alpha, or
        # values just below alpha when the span holds 0
        lo, hi, alpha = span[0], span[1], a["alpha"]
        if hi > max(lo, alpha):
            return (max(lo, alpha) + 1e-3 * (hi - max(lo, alpha)), hi)
        return (alpha - 1.0, alpha) if lo <= 0 <= hi else None

    def torch(self, a, x):
        y = torch.where(x > a["alpha"], x, torch.zeros_like(x))
        if x.requires_grad:  # inside the input search: a slope below the threshold too
            y = y + L.PROXY_SLOPE * (x - x.detach()) * (x <= a["alpha"])
        return y

    def preimage(self, a, r):
        # outputs x above alpha, 0 at or below it
        lo, hi, alpha = r[0], r[1], a["alpha"]
        if lo <= 0 <= hi:
            return (-INF, max(alpha, hi))
        return (max(lo, alpha), hi) if hi > alpha else (INF, -INF)  # (INF, -INF): none


class Mish(Activation):
    valley = (-1.25, -1.15, -0.3089)  # smallest at about -1.1924: -0.30884
    out_range = (-0.3089, INF)
    onnx_op = "Mish"
    min_opset = 18
    fn = F.mish


class AxisActivation(Activation):
    """Normalization along one axis (opset 13 semantics); ``axis`` defaults to -1."""

    elementwise = False
    ranks = (1, 2, 3, 4, 5)

    def sample(self, ctx, ins):
        return {"axis": ctx.axis(ins[0].rank)}

    def onnx_attrs(self, a, b):
        return {"axis": b.opt(a["axis"], -1)}


class Softmax(AxisActivation):
    out_range = (0.0, 1.0)
    onnx_op = "Softmax"

    def value_range(self, a, ranges, ins):
        # along an axis of size 1 every output is exactly 1
        return [(1.0, 1.0)] if ins[0].shape[a["axis"]] == 1 else [self.out_range]

    def anchor(self, a, anchors, ins):
        return 1.0 / ins[0].shape[a["axis"]]  # n probabilities summing to 1 straddle 1/n

    def exact(self, a, exacts, ins):
        return 1.0 if ins[0].shape[a["axis"]] == 1 else None  # exp(x - x) / exp(x - x)

    def torch(self, a, x):
        return torch.softmax(x, dim=a["axis"])


class LogSoftmax(AxisActivation):
    onnx_op = "LogSoftmax"

    def value_range(self, a, ranges, ins):
        return [(0.0, 0.0)] if ins[0].shape[a["axis"]] == 1 else [(-INF, 0.0)]

    def anchor(self, a, anchors, ins):
        return -float(np.log(ins[0].shape[a["axis"]]))  # log of probabilities straddling 1/n

    def exact(self, a, exacts, ins):
        return 0.0 if ins[0].shape[a["axis"]] == 1 else None  # x - x - log(1)

    def torch(self, a, x):
        return torch.log_softmax(x, dim=a["axis"])


class Hardmax(AxisActivation):
    """One-hot of the *first* maximum along ``axis`` (ONNX's tie-breaking, and NumPy's
    argmax, which treats the first NaN as the maximum), computed without relying on
    PyTorch's own argmax tie-breaking."""
    integral_out = True
    out_range = (0.0, 1.0)
    jumps = True
    steerable = False

    onnx_op = "Hardmax"

    def value_range(self, a, ranges, ins):
        return [(1.0, 1.0)] if ins[0].shape[a["axis"]] == 1 else [self.out_range]

    def exact(self, a, exacts, ins):
        # each slice along the axis holds one 1, and 0s beside it when it is longer
        return 0.0 if ins[0].shape[a["axis"]] > 1 else 1.0

    def torch(self, a, x):
        ax = a["axis"] % x.dim()
        m = x.amax(dim=ax, keepdim=True)
        hit = torch.where(torch.isnan(m), torch.isnan(x), x == m)
        first = hit & (torch.cumsum(hit.to(torch.int64), dim=ax) == 1)
        return first.to(x.dtype)


class Shrink(Activation):
    """``x < -lambd: x + bias; x > lambd: x - bias; else 0``, for floats and integers.
    ``lambd`` >= 0 (a negative one makes both conditions hold at once, which the text
    leaves open: onnx.reference takes the first, TVM adds both). Integer inputs get an
    integer-valued bias (the text does not say how ``x - 0.5`` becomes an integer), and
    uint8 a bias at most floor(lambd) + 1, so ``x - bias`` stays >= 0; signed overflow is
    reported as undefined. float16 inputs get float16-representable attributes; float64
    ones bias 0 (onnxruntime rounds float64 Shrink to float32, see ``gaps``)."""

    nonfinite = INF_ONLY
    onnx_op = "Shrink"
    jumps = True
    can_overflow = True
    keeps_integers = True
    types = dt.FLOATS + dt.INTS
    gaps = (("lambd < 0", "x < -lambd and x > lambd overlap; the text does not say which wins"),
            ("a non-integer bias for integer inputs", "the text does not say how x - bias is rounded"),
            ("a nonzero bias for float64 inputs", "onnxruntime 1.32 computes float64 Shrink in float32 "
                                                  "(3.141592653589793 -> 3.14159274): x - bias then cancels "
                                                  "beyond float64 tolerance"),
            ("integer inputs beyond 2**24 in magnitude", "bias is a float attribute and the text does not say in "
                                                         "which precision x - bias is computed: onnxruntime 1.32 "
                                                         "computes it in float32 (2**62 + 1 -> 2**62, bias 0); "
                                                         "reported as undefined"))

    def sample(self, ctx, ins):
        t = ins[0].dtype
        lambd = 0.5 if ctx.coin(DEFAULT_PROB) else ctx.choice((0.0, 1.0, ctx.uniform(0.0, 3.0)))
        if dt.is_int(t):
            hi = int(np.floor(lambd)) + 1 if t == dt.UINT8 else 3
            bias = 0.0 if ctx.coin(DEFAULT_PROB) else float(ctx.rng.randint(0 if t == dt.UINT8 else -3, hi))
        elif t == dt.FLOAT64:
            bias = 0.0  # see gaps: onnxruntime's float64 Shrink
        else:
            bias = 0.0 if ctx.coin(DEFAULT_PROB) else ctx.choice((lambd, ctx.uniform(-2.0, 2.0)))
        if t == dt.FLOAT16:
            lambd, bias = float(np.float16(lambd)), float(np.float16(bias))
        return {"lambd": f32(lambd), "bias": f32(bias)}

    def onnx_attrs(self, a, b):
        return {"lambd": b.opt(a["lambd"], 0.5), "bias": b.opt(a["bias"], 0.0)}

    def value_range(self, a, ranges, ins):
        (lo, hi), lam, bias = ranges[0], a.get("lambd", 0.5), a.get("bias", 0.0)
        parts = []
        if lo < -lam:
            parts.append((lo + bias, min(hi, -lam) + bias))
        if hi > lam:
            parts.append((max(lo, lam) - bias, hi - bias))
        if lo <= lam and hi >= -lam:
            parts.append((0.0, 0.0))
        return [(min(p[0] for p in parts), max(p[1] for p in parts))]

    def undefined(self, a, ins, out_types):
        x = ins[0]
        if not x.is_floating_point() and x.numel():
            lam = a.get("lambd", 0.5)
            # not x.abs(): the most negative integer is its own absolute value (it wraps)
            big = ((x > 2**24) | (x < -2**24)) & ((x < -lam) | (x > lam))  # the values x -/+ bias is taken of
            if bool(big.any()):
                return "integer Shrink of a value beyond 2**24: the precision of x - bias (a float) is not defined"
        return super().undefined(a, ins, out_types)

    def torch(self, a, x):
        lam, bias = a.get("lambd", 0.5), a.get("bias", 0.0)
        bias = bias if x.is_floating_point() else int(bias)
        zero = torch.zeros_like(x)
        return torch.where(x < -lam, x + bias, torch.where(x > lam, x - bias, zero))


OPS = [Relu, LeakyRelu, PRelu, Elu, Selu, Celu, Sigmoid, HardSigmoid, HardSwish, Gelu,
       Softplus, Softsign, Tanh, ThresholdedRelu, Mish, Softmax, LogSoftmax, Hardmax, Shrink]
