from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch
from onnx import TensorProto, helper

from dlgate import dtypes as dt
from dlgate.ops.base import TensorType
from dlgate.ops.control._iterated import Iterated, iterate_ranges
from dlgate.ops.control._shared import BODY_GAPS, MAX_TRIPS, _emit, _partner, run_body


# -- Loop ------------------------------------------------------------------------------------

class Loop(Iterated):
    """``Loop(M, cond, v, [w])`` with a constant trip count ``M`` in 1..5 and no early exit.

    The body maps the loop-carried ``v`` to a new ``v`` of the same type and gives 0..2
    scan outputs (any of its tensors, stacked over the iterations on a new axis 0). The
    second input ``w`` is read by the body from the outer scope (``w="outer"``), carried
    and updated like ``v`` (``"carried"``), or carried unchanged (``"pass"``, an Identity
    in the body: how exporters hand a tensor into a loop). ``iter``: the body also reads
    the iteration number (cast to the data type). ``cond_in``: the condition input is a
    constant True or absent (""); ``cond_out``: the body passes its condition input on
    or outputs a Constant True.

    Not generated: early exit (a condition computed from the data), an absent trip count
    (both make the trip count, and the scan outputs' shapes, depend on values); a zero
    trip count (zero-size tensors are never generated); carried values that change shape
    across iterations; products and exponentials in bodies (geometric growth).
    """

    onnx_op = "Loop"
    onnx_ops = ("Cast", "Identity", "Constant")
    schema_inputs = (2,)  # the data inputs are v_initial
    ranks = (0, 1, 2, 3, 4)

    def sample(self, ctx, ins):
        v = ins[0]
        w = _partner(ctx, v)
        trips = ctx.rng.randint(1, MAX_TRIPS)
        a = {"trips": trips, "w": ctx.choice(("outer", "carried", "pass")),
             "iter": int(v.dtype != dt.BOOL and ctx.coin(0.5)),
             "cond_in": ctx.choice(("const", "empty")), "cond_out": ctx.choice(("pass", "const")),
             "n_scan": ctx.choice((0, 1, 1, 2))}
        in_types = [v, w] + ([TensorType(v.dtype, ())] if a["iter"] else [])
        need = [v] + ([w] if a["w"] == "carried" else []) + [None] * a["n_scan"]
        return self._draw_body(ctx, a, in_types, need, trips, [v, w])

    def input_type(self, ctx, i, ins, a, dtype):
        return ins[0] if a.get("invalid") else self._body(a).input_types()[i]

    def backward(self, ctx, out):
        if out.rank not in self.ranks:
            return None
        a = self.sample(ctx, [out])
        if a.get("invalid"):
            return None
        return self._body(a).input_types()[:2], a

    def requires(self, ins, a):
        if a.get("invalid"):
            return [False]
        if a.get("iter") not in (0, 1) or not isinstance(a.get("trips"), int) or a["trips"] < 1 \
                or a.get("n_scan", -1) < 0:
            return [False]
        g = self._body(a)
        n_car = 2 if a["w"] == "carried" else 1
        types, outs = g.input_types(), g.output_types()
        ok = (list(ins) == types[:2] and len(types) == 2 + a["iter"] and len(outs) == n_car + a["n_scan"]
              and outs[:n_car] == list(ins[:n_car]) and not (a["iter"] and ins[0].dtype == dt.BOOL))
        return [ok]

    def infer(self, ins, a):
        g = self._body(a)
        outs = g.output_types()
        n_car = 2 if a["w"] == "carried" else 1
        scans = [TensorType(t.dtype, (a["trips"],) + tuple(t.shape)) for t in outs[n_car:]]
        return list(ins[:1]) + ([ins[1]] if a["w"] != "outer" else []) + scans

    def onnx(self, b, a, xs, ys):
        # local: a body is lowered by materialize, which sits above the catalogue (it reads the registry)
        from dlgate.materialize.onnx_model import SubBuilder, make_subgraph

        g = self._body(a)
        v, w = g.input_types()[:2]
        prefix = b.fresh("loop")
        sb = SubBuilder(b.opset, b.rng, f"{prefix}_")
        it, c_in = f"{prefix}_iter", f"{prefix}_cond_in"
        formal = [(it, TensorType(dt.INT64, ())), (c_in, TensorType(dt.BOOL, ())), (f"{prefix}_v", v)]
        names = {g.inputs[0]: f"{prefix}_v"}
        if a["w"] == "outer":
            names[g.inputs[1]] = xs[1]
        else:
            formal.append((f"{prefix}_w", w))
            names[g.inputs[1]] = f"{prefix}_w"
        vis = []
        if a["iter"]:
            names[g.inputs[2]] = sb.node("Cast", [it], [f"{prefix}_it"], to=dt.ONNX[v.dtype])[0]
            vis.append((f"{prefix}_it", TensorType(v.dtype, ())))
        outs, more = _emit(sb, g, names)
        if a["w"] == "pass":
            outs.insert(1, (sb.node("Identity", [f"{prefix}_w"], [sb.fresh("w_out")])[0], w))
        if a["cond_out"] == "pass":
            c_out = sb.node("Identity", [c_in], [f"{prefix}_cond_out"])[0]
        else:
            c_out = sb.node("Constant", [], [f"{prefix}_cond_out"],
                            value=helper.make_tensor("value", TensorProto.BOOL, [], [True]))[0]
        body = make_subgraph(sb, f"{prefix}_body", formal, [(c_out, TensorType(dt.BOOL, ()))] + outs, vis + more)
        trips = b.const(np.int64(a["trips"]))
        cond = b.const(np.bool_(True)) if a["cond_in"] == "const" else ""
        b.node("Loop", [trips, cond, xs[0]] + ([xs[1]] if a["w"] != "outer" else []), ys, body=body)

    def _execute(self, a, v, w, check=False):
        g = self._body(a)
        n_car = 2 if a["w"] == "carried" else 1
        why = None
        scans = [[] for _ in g.outputs[n_car:]]
        for i in range(a["trips"]):
            feeds = [v, w]
            if a["iter"]:
                feeds.append(torch.tensor(i, dtype=v.dtype))
            outs, w_ = run_body(g, feeds, check)
            why = why or w_
            v = outs[0]
            if n_car == 2:
                w = outs[1]
            for s, y in zip(scans, outs[n_car:]):
                s.append(y)
        res = [v] + ([w] if a["w"] != "outer" else []) + [torch.stack(s, 0) for s in scans]
        return res, why

    gaps: ClassVar[tuple] = (
        ("early exit (a condition computed from the data) and an absent trip count M", "the trip count, and the "
         "scan outputs' shapes with it, would depend on values; dlgate's types are static"),
        ("M = 0", "zero-size tensors are never generated"),
        ("loop-carried values that change shape across iterations", "dlgate's tensor types are static"),
        ("Mul, Exp and operators with restricted domains or jumps in bodies", "values iterated up to 5 times must "
         "stay bounded and defined"),
    ) + BODY_GAPS

    def value_range(self, a, ranges, ins):
        w0 = ranges[1]
        it = [(0.0, float(a["trips"] - 1))] if a["iter"] else []
        if a["w"] == "carried":
            (v, w), scans = iterate_ranges(self._body(a), a["trips"], list(ranges[:2]), lambda c: c + it)
        else:
            (v,), scans = iterate_ranges(self._body(a), a["trips"], [ranges[0]], lambda c: c + [w0] + it)
            w = w0
        return [v] + ([w] if a["w"] != "outer" else []) + scans

    def _reference_defect_of_iteration(self, a):
        if a["cond_in"] == "empty":
            return "onnx.reference's Loop runs no iteration when the condition input is absent (while None)"
        ranks = [t.rank for t in self._body(a).output_types()[2 if a["w"] == "carried" else 1:]]
        if any(r != 1 for r in ranks):
            return "onnx.reference's Loop stacks scan outputs with np.vstack, wrong unless they are 1-D"
        return None


OPS = [Loop]
