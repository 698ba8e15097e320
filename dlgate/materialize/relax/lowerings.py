"""One Relax lowering per operator, found by the spec's name (``LOWERINGS``).

A lowering reads one node (its attributes, its inputs' types at the graph's first binding,
its inputs as Relax expressions) and returns the Relax expressions of its outputs, in
ONNX's meaning of the operator: the same meaning the PyTorch reference computes, so the
direct path is judged against the reference like the importer path. Shapes a lowering
computes (Reshape's 0 and -1, Flatten) are written in the input's own shape expressions,
so a symbolic dimension stays symbolic through them.

An operator without a lowering, or an attribute value its Relax counterpart cannot express,
raises :class:`NoRelaxLowering`: the backend declares it unsupported, never a wrong result.
(ArgMax's ``select_last_index=1``, which ``relax.op.argmax`` lacks, is written with a flip.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from tvm.sym import Analyzer
from tvm import relax, tirx, topi

from dlgate import dtypes as dt
from dlgate.ops.registry import get


class NoRelaxLowering(NotImplementedError):
    """The graph holds an operator (or an attribute value) the direct path does not lower;
    the message names it. A ``NotImplementedError``: backends declare such a refusal."""


@dataclass
class Site:
    """What one lowering sees of its node."""

    op: str
    attrs: dict
    ins: list  # TensorType of each input (the first binding's shapes)
    xs: list  # the inputs as Relax expressions (their struct info carries symbolic shapes)
    outs: list  # TensorType of each output


#: spec name -> lowering(site) -> one Relax expression or a list of them (one per output).
LOWERINGS: dict = {}


def lowering(*names: str) -> Callable:
    def register(fn: Callable) -> Callable:
        for n in names:
            if n in LOWERINGS:
                raise ValueError(f"two Relax lowerings for {n}")
            LOWERINGS[n] = fn
        return fn
    return register


def covered() -> tuple:
    """The spec names the direct path lowers, sorted."""
    return tuple(sorted(LOWERINGS))


def lower(site: Site) -> list:
    fn = LOWERINGS.get(site.op)
    if fn is None:
        raise NoRelaxLowering(f"no Relax lowering for operator {site.op}")
    out = fn(site)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def const(value, dtype: str) -> relax.Constant:
    return relax.const(np.asarray(value, dtype=dt.NUMPY[dtype]), dtype)


def dims(x) -> list:
    """``x``'s shape as PrimExprs (symbolic where the struct info says so)."""
    shape = x.ty.shape
    if not isinstance(shape, relax.ShapeExpr):
        raise NoRelaxLowering(f"no Relax lowering for a tensor of unknown shape ({x.ty})")
    return list(shape.values)


# -- elementwise --------------------------------------------------------------------------------
_UNARY = {
    "Abs": relax.op.abs, "Neg": relax.op.negative, "Sign": relax.op.sign, "Exp": relax.op.exp,
    "Log": relax.op.log, "Sqrt": relax.op.sqrt, "Sin": relax.op.sin, "Cos": relax.op.cos,
    "Tan": relax.op.tan, "Asin": relax.op.asin, "Acos": relax.op.acos, "Atan": relax.op.atan,
    "Sinh": relax.op.sinh, "Cosh": relax.op.cosh, "Asinh": relax.op.asinh, "Acosh": relax.op.acosh,
    "Atanh": relax.op.atanh, "Floor": relax.op.floor, "Ceil": relax.op.ceil, "Round": relax.op.round,
    "Erf": relax.op.erf, "IsNaN": relax.op.isnan, "IsInf": relax.op.isinf, "Relu": relax.op.nn.relu,
    "Sigmoid": relax.op.sigmoid, "Tanh": relax.op.tanh, "Not": relax.op.logical_not,
    "BitwiseNot": relax.op.bitwise_not,
}
#: Binary operators, and the variadic ones (Sum, Max, Min...) folded left to right.
_BINARY = {
    "Add": relax.op.add, "Sub": relax.op.subtract, "Mul": relax.op.multiply, "Div": relax.op.divide,
    "Pow": relax.op.power, "Max": relax.op.maximum, "Min": relax.op.minimum, "Max4": relax.op.maximum,
    "Min4": relax.op.minimum, "Sum": relax.op.add, "Sum5": relax.op.add, "Equal": relax.op.equal,
    "Greater": relax.op.greater, "Less": relax.op.less, "GreaterOrEqual": relax.op.greater_equal,
    "LessOrEqual": relax.op.less_equal, "And": relax.op.logical_and, "Or": relax.op.logical_or,
    "Xor": relax.op.logical_xor, "BitwiseAnd": relax.op.bitwise_and, "BitwiseOr": relax.op.bitwise_or,
    "BitwiseXor": relax.op.bitwise_xor,
}


def _unary(s: Site):
    return _UNARY[s.op](s.xs[0])


def _binary(s: Site):
    out = s.xs[0]
    for x in s.xs[1:]:
        out = _BINARY[s.op](out, x)
    return out


lowering(*_UNARY)(_unary)
lowering(*_BINARY)(_binary)


@lowering("Mean", "Mean5")
def _mean(s: Site):
    total = s.xs[0]
    for x in s.xs[1:]:
        total = relax.op.add(total, x)
    return relax.op.divide(total, const(len(s.xs), s.outs[0].dtype))


@lowering("Reciprocal")
def _reciprocal(s: Site):
    return relax.op.divide(const(1, s.ins[0].dtype), s.xs[0])


@lowering("Identity")
def _identity(s: Site):
    return s.xs[0]


@lowering("Mod")
def _mod(s: Site):
    # fmod=1 (every opset): C's fmod, the dividend's sign; fmod=0 (opset 28): the divisor's
    return (relax.op.mod if s.attrs.get("fmod", 1) else relax.op.floor_mod)(s.xs[0], s.xs[1])


def _operand(s: Site) -> relax.Constant:
    spec = get(s.op)
    return relax.const(spec.operand(s.attrs), s.attrs["dtype"])


@lowering("DivInt")
def _div_int(s: Site):
    # Relax's integer divide is C's, truncating toward zero, as ONNX's integer Div
    return relax.op.divide(s.xs[0], _operand(s))


@lowering("ModInt")
def _mod_int(s: Site):
    return (relax.op.mod if s.attrs["fmod"] else relax.op.floor_mod)(s.xs[0], _operand(s))


@lowering("Where")
def _where(s: Site):
    return relax.op.where(s.xs[0], s.xs[1], s.xs[2])


@lowering("MatMul")
def _matmul(s: Site):
    return relax.op.matmul(s.xs[0], s.xs[1])


@lowering("Cast")
def _cast(s: Site):
    return relax.op.astype(s.xs[0], s.attrs["to"])


@lowering("Softmax")
def _softmax(s: Site):
    return relax.op.nn.softmax(s.xs[0], axis=s.attrs["axis"])


@lowering("LogSoftmax")
def _log_softmax(s: Site):
    return relax.op.nn.log_softmax(s.xs[0], axis=s.attrs["axis"])


#: Operators that may also be written as a TE computation, which ``BlockBuilder.emit_te``
#: turns into a PrimFunc of the module called by ``R.call_tir``: the TOPI function each
#: Relax operator above legalizes to (``tvm/relax/transform/legalize_ops``), so the meaning
#: is the same; what differs is that the Relax passes meet a ``call_tir`` where the importer
#: writes an operator call. Not Erf: its legalization computes float16 in float32 (TOPI's
#: ``erf`` has no float16 LLVM lowering), which a TE form would have to copy.
TE_LOWERINGS = {
    "Abs": topi.abs, "Neg": topi.negative, "Exp": topi.exp, "Log": topi.log, "Sqrt": topi.sqrt,
    "Sigmoid": topi.sigmoid, "Tanh": topi.tanh, "Floor": topi.floor, "Ceil": topi.ceil,
    "Add": topi.add, "Sub": topi.subtract, "Mul": topi.multiply, "Div": topi.divide,
    "Max": topi.maximum, "Min": topi.minimum,
}


# -- reductions ---------------------------------------------------------------------------------
def _square(x):
    return relax.op.multiply(x, x)


#: spec name -> (applied before, the reduction, applied after)
_REDUCE = {
    "ReduceSum": (None, relax.op.sum, None),
    "ReduceMean": (None, relax.op.mean, None),
    "ReduceMax": (None, relax.op.max, None),
    "ReduceMin": (None, relax.op.min, None),
    "ReduceProd": (None, relax.op.prod, None),
    "ReduceL1": (relax.op.abs, relax.op.sum, None),
    "ReduceL2": (_square, relax.op.sum, relax.op.sqrt),
    "ReduceSumSquare": (_square, relax.op.sum, None),
    "ReduceLogSum": (None, relax.op.sum, relax.op.log),
}


@lowering(*_REDUCE)
def _reduce(s: Site):
    pre, red, post = _REDUCE[s.op]
    x = s.xs[0]
    axes = get(s.op)._red(s.attrs, s.ins[0].rank)
    if pre is not None:
        x = pre(x)
    if axes:  # no axes (a scalar, or noop_with_empty_axes): nothing to reduce
        x = red(x, axis=axes, keepdims=bool(s.attrs["keepdims"]))
    return post(x) if post is not None else x


@lowering("ReduceLogSumExp")
def _reduce_log_sum_exp(s: Site):
    # log(sum(exp(x - m))) + m with m the (finite) maximum: exp never overflows, as in the
    # reference's logsumexp; an infinite maximum shifts by 0 (exp gives 0 or inf as it should)
    x = s.xs[0]
    axes = get(s.op)._red(s.attrs, s.ins[0].rank)
    if not axes:
        return x
    keep = bool(s.attrs["keepdims"])
    m = relax.op.max(x, axis=axes, keepdims=True)
    m = relax.op.where(relax.op.isfinite(m), m, relax.op.zeros_like(m))
    total = relax.op.log(relax.op.sum(relax.op.exp(relax.op.subtract(x, m)), axis=axes, keepdims=keep))
    return relax.op.add(total, m if keep else relax.op.squeeze(m, axis=axes))


@lowering("ArgMax", "ArgMin")
def _arg(s: Site):
    fn = relax.op.argmax if s.op == "ArgMax" else relax.op.argmin
    axis, keep, x = s.attrs["axis"] % s.ins[0].rank, bool(s.attrs["keepdims"]), s.xs[0]
    if not s.attrs["select_last_index"]:
        return fn(x, axis=axis, keepdims=keep)
    # the last extremum (relax.op.argmax/argmin take the first): the first one along the
    # reversed axis, counted back from the axis's end, n - 1 - j
    j = fn(relax.op.flip(x, axis=axis), axis=axis, keepdims=keep)
    n = dims(x)[axis]
    if isinstance(n, tirx.IntImm):
        return relax.op.subtract(relax.const(int(n) - 1, "int64"), j)
    last = relax.op.reshape(relax.op.shape_to_tensor(relax.ShapeExpr([n - 1])), [])
    return relax.op.subtract(last, j)


# -- layout -------------------------------------------------------------------------------------
@lowering("Reshape")
def _reshape(s: Site):
    x = s.xs[0]
    src = dims(x)
    # allowzero is 0 (dlgate writes no other): a 0 copies the input's size on that axis
    out = [src[i] if v == 0 else (None if v == -1 else tirx.IntImm("int64", v)) for i, v in enumerate(s.attrs["spec"])]
    holes = [k for k, d in enumerate(out) if d is None]
    if holes:  # -1: what the other sizes leave of the element count
        out[holes[0]] = _simplify(tirx.floordiv(_prod(src), _prod([d for d in out if d is not None])))
    return relax.op.reshape(x, out)


def _prod(xs):
    out = tirx.IntImm("int64", 1)
    for d in xs:
        out = out * d
    return _simplify(out)


def _simplify(e):
    return Analyzer().simplify(e)


@lowering("Flatten")
def _flatten(s: Site):
    x = s.xs[0]
    src = dims(x)
    k = s.attrs["axis"] + len(src) if s.attrs["axis"] < 0 else s.attrs["axis"]
    return relax.op.reshape(x, [_prod(src[:k]), _prod(src[k:])])


@lowering("Transpose")
def _transpose(s: Site):
    return relax.op.permute_dims(s.xs[0], list(s.attrs["perm"]))


@lowering("Squeeze")
def _squeeze(s: Site):
    shape = s.ins[0].shape
    if s.attrs["omit"]:  # every size-1 axis; the spec keeps the others above 1 at every binding
        axes = [i for i, d in enumerate(shape) if d == 1]
    else:
        axes = sorted({ax % len(shape) for ax in s.attrs["axes"]})
    return relax.op.squeeze(s.xs[0], axis=axes) if axes else s.xs[0]


@lowering("Unsqueeze")
def _unsqueeze(s: Site):
    r_out = s.ins[0].rank + len(s.attrs["axes"])
    return relax.op.expand_dims(s.xs[0], axis=sorted(ax % r_out for ax in s.attrs["axes"]))


@lowering("Concat", "Concat3", "Concat4", "Concat5")
def _concat(s: Site):
    return relax.op.concat(list(s.xs), axis=s.attrs["axis"])


@lowering("Slice")
def _slice(s: Site):
    a = s.attrs
    axes = a["axes"] if a["axes"] is not None else list(range(len(a["starts"])))
    steps = a["steps"] if a["steps"] is not None else [1] * len(a["starts"])
    rank = s.ins[0].rank
    # ONNX clamps starts and ends to the axis (assume_inbound=False does the same)
    return relax.op.strided_slice(s.xs[0], [ax % rank for ax in axes], [_clamp64(v) for v in a["starts"]],
                                  [_clamp64(v) for v in a["ends"]], [int(v) for v in steps], assume_inbound=False)


def _clamp64(v) -> int:
    """A start or end within int64 (ONNX spells "to the end" as INT64_MAX or beyond)."""
    return int(max(-(2**63), min(2**63 - 1, int(v))))
