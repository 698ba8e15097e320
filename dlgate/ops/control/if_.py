from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch
from onnx import TensorProto

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec
from dlgate.ops.control._shared import (_BAD, BODY_GAPS, body_ranges, decode, _emit, encode, make_body, _numel,
                                        _partner, _reference_defect, run_body, _start, _union)


class If(OpSpec):
    """``If(cond)`` whose branches read the two inputs ``x`` and ``y`` from the outer scope
    (as exporters write them) and give one or two outputs of the types of ``x`` (and
    ``y``); both branches are generated bodies with the same output types.

    The condition is computed from ``x`` by the lowering: ``ReduceSum(x) > thr``,
    ``ReduceMax(x) > thr`` (``keepdims`` 0, or 1: a single-element condition of ``x``'s
    rank), the first element ``> thr`` (a scalar from Reshape and Gather, or a
    one-element tensor from Slice), or for bool ``x`` the first element itself or "any"
    (Cast to int32, ReduceMax, Cast back). Thresholds are picked so that either branch is
    about as likely on the generator's starting values; the branch taken jumps, so the
    spec is discontinuous, and a float sum within rounding of its threshold is reported
    as ill-conditioned (``undefined``).

    Not generated: a data input of another dtype than ``x``'s (``sample`` sees only the
    first input, and both branches must be generated there); branch outputs whose shapes
    differ (legal from opset 11 on, but dlgate's types are static); If as a body operator.
    """

    onnx_op = "If"
    onnx_ops = ("ReduceSum", "ReduceMax", "Greater", "Reshape", "Gather", "Slice", "Cast", "Identity")
    #: The inputs are none of If's formal inputs: the branches read them from the outer scope.
    schema_inputs = ()
    arity = 2
    n_outputs = 2
    dtypes = tuple((t, t) for t in dt.ALL)
    ranks = (0, 1, 2, 3, 4)
    symbolic_ok = False

    def _cond_modes(self, dtype: str) -> tuple:
        if dtype == dt.BOOL:
            return ("any", "first", "first1")
        if dtype in (dt.INT8, dt.UINT8):
            return ("max", "first", "first1")
        return ("sum", "max", "first", "first1")

    def _threshold(self, ctx, mode: str, dtype: str, n: int) -> float | int | None:
        if dtype == dt.BOOL:
            return None
        lo, hi = _start(dtype)
        if mode == "sum":
            return _eighths(ctx.choice((0.0, 0.0, 0.5, -0.5))) if dt.is_float(dtype) else 0
        if mode == "max":  # the median of the maximum of n uniform values
            m = lo + (hi - lo) * 0.5 ** (1.0 / max(1, n))
        else:
            m = (lo + hi) / 2
        return _eighths(m) if dt.is_float(dtype) else int(math.floor(m))

    def sample(self, ctx, ins):
        x = ins[0]
        y = _partner(ctx, x)
        mode = ctx.choice(self._cond_modes(x.dtype))
        a = {"cond": mode, "keep": int(mode in ("sum", "max") and ctx.coin(0.25)),
             "thr": self._threshold(ctx, mode, x.dtype, _numel(x.shape)), "n_out": ctx.choice((1, 2))}
        need = [x, y][:a["n_out"]]
        for key in ("then", "else"):
            g = make_body(ctx, [x, y], need, once=True)
            if g is None:
                return dict(_BAD)
            a[key] = encode(g)
        return a

    def _types(self, a) -> list:
        return decode(a["then"]).input_types()

    def input_type(self, ctx, i, ins, a, dtype):
        return ins[0] if a.get("invalid") else self._types(a)[i]

    def backward(self, ctx, out):
        if out.rank not in self.ranks:
            return None
        a = self.sample(ctx, [out])
        if a.get("invalid"):
            return None
        return self._types(a), a

    def requires(self, ins, a):
        # every attribute checked against the bodies: the reducer tries other values
        if a.get("invalid") or a.get("n_out") not in (1, 2) or a.get("keep") not in (0, 1):
            return [False]
        t, e = decode(a["then"]), decode(a["else"])
        x = ins[0]
        ok = (list(ins) == t.input_types() == e.input_types()
              and t.output_types() == e.output_types() == list(ins[:a["n_out"]])
              and a["cond"] in self._cond_modes(x.dtype) and (a["thr"] is None) == (x.dtype == dt.BOOL))
        return [ok]

    def infer(self, ins, a):
        return list(ins[:a["n_out"]])

    def _cond_onnx(self, b, a, x: str) -> str:
        mode, t = a["cond"], self._types(a)[0].dtype
        if mode == "any":
            i = b.node("Cast", [x], 1, to=TensorProto.INT32)[0]
            m = self._reduce(b, "ReduceMax", i, 0)
            return b.node("Cast", [m], 1, to=TensorProto.BOOL)[0]
        if mode in ("first", "first1"):
            flat = b.node("Reshape", [x, b.ints([-1])], 1)[0]
            if mode == "first":
                v = b.node("Gather", [flat, b.const(np.int64(0))], 1, axis=b.opt(0, 0))[0]
            else:
                v = b.node("Slice", [flat, b.ints([0]), b.ints([1])], 1)[0]
        else:
            v = self._reduce(b, "ReduceSum" if mode == "sum" else "ReduceMax", x, a["keep"])
        if t == dt.BOOL:
            return v
        return b.node("Greater", [v, b.const(a["thr"], t)], 1)[0]

    @staticmethod
    def _reduce(b, op: str, x: str, keep: int) -> str:
        # axes omitted: every axis (an input from opset 13 for ReduceSum, 18 for ReduceMax)
        return b.node(op, [x], 1, keepdims=keep)[0]

    def onnx(self, b, a, xs, ys):
        # local: a body is lowered by materialize, which sits above the catalogue (it reads the registry)
        from dlgate.materialize.onnx_model import SubBuilder, make_subgraph

        cond = self._cond_onnx(b, a, xs[0])
        prefix = b.fresh("if")
        branches = {}
        for key in ("then", "else"):
            g = decode(a[key])
            sb = SubBuilder(b.opset, b.rng, f"{prefix}_{key}_")
            outs, vis = _emit(sb, g, {g.inputs[0]: xs[0], g.inputs[1]: xs[1]})
            branches[f"{key}_branch"] = make_subgraph(sb, f"{prefix}_{key}", [], outs, vis)
        b.node("If", [cond], ys, **branches)

    # -- the condition --
    def _cond(self, a, x) -> bool:
        mode, thr = a["cond"], a["thr"]
        if mode == "any":
            return bool(x.any())
        if mode in ("first", "first1"):
            v = x.reshape(-1)[0]
            return bool(v) if x.dtype == torch.bool else bool(v.double() > thr)
        if mode == "max":
            return bool(x.max().double() > thr)
        return bool(x.double().sum() > thr)

    def torch(self, a, x, y):
        g = decode(a["then"] if self._cond(a, x) else a["else"])
        outs = run_body(g, [x, y])[0]
        return tuple(outs) if len(outs) > 1 else outs[0]

    jumps = True
    gaps: ClassVar[tuple] = (
        ("a data input of another dtype than the condition's source", "sample() sees only the first input, and "
         "both branches (over every input) are generated there"),
        ("branch outputs whose shapes differ (opset 11+ allows it)", "dlgate's tensor types are static"),
        ("Exp and operators with restricted domains or jumps inside branches", "keeps every branch's values "
         "bounded and defined whatever the inputs"),
    ) + BODY_GAPS

    def value_range(self, a, ranges, ins):
        t = body_ranges(decode(a["then"]), ranges)
        e = body_ranges(decode(a["else"]), ranges)
        return [_union(p, q) for p, q in zip(t, e)]

    def discontinuous(self, a):
        return True

    def reference_defect(self, a, ins, opset):
        return _reference_defect(a["then"], a["else"])

    def undefined(self, a, ins, out_types):
        x, y = ins
        if a["cond"] == "sum" and x.is_floating_point():
            xd = x.detach().double()
            s, mag = float(xd.sum()), float(xd.abs().sum())
            eps = torch.finfo(dt.torch_dtype(self._types(a)[0].dtype)).eps
            if abs(s - a["thr"]) <= 2 * xd.numel() * eps * mag:
                return (f"ill-conditioned: the condition ReduceSum(x) = {s:.6g} is within rounding of its "
                        f"threshold {a['thr']}, so the branch taken depends on the summation order")
        g = decode(a["then"] if self._cond(a, x) else a["else"])
        return run_body(g, [x, y], check=True)[1]


# -- If --------------------------------------------------------------------------------------

def _eighths(v: float) -> float:
    """``v`` to the nearest multiple of 1/8: a threshold every float type holds exactly."""
    return round(v * 8) / 8


OPS = [If]
