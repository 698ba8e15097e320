from __future__ import annotations

from typing import ClassVar

import torch

from dlgate.ops.base import TensorType
from dlgate.ops.control._iterated import Iterated, iterate_ranges
from dlgate.ops.control._shared import BODY_GAPS, MAX_TRIPS, _emit, run_body


# -- Scan ------------------------------------------------------------------------------------

class Scan(Iterated):
    """``Scan(s, x)`` (the opset 9+ form) over one scan input ``x`` of sequence length 1..5
    along ``scan_input_axes`` (sometimes spelled negatively), forward or reversed
    (``scan_input_directions``), with ``n_state`` (0 or 1) state variables (``s``) and
    0..2 scan outputs (1..2 without a state), each stacked along its own
    ``scan_output_axes`` entry, appended or prepended (``scan_output_directions``). The
    body may also read ``s`` from the outer scope (``outer``; always without a state).
    Each scanned element is ``x``'s shape without the scan axis: the state's shape half of
    the time, so the body combines them element-wise.

    Not generated: more than one scan input (the spec's arity is fixed); zero-length
    sequences (zero-size tensors are never generated); the opset 8 form (batch axis).
    """

    onnx_op = "Scan"
    onnx_ops = ("Identity",)
    ranks = (0, 1, 2, 3)

    def sample(self, ctx, ins):
        s = ins[0]
        length = ctx.rng.randint(1, MAX_TRIPS)
        cap = max(1, ctx.limits.max_elems // length)
        elem = s if ctx.coin(0.5) and s.numel <= cap and s.rank < ctx.limits.max_rank else \
            TensorType(s.dtype, ctx.shape(ctx.rng.randint(0, min(2, ctx.limits.max_rank - 1)), min(cap, 256)))
        ax = ctx.rng.randint(0, elem.rank)
        xr = elem.rank + 1
        n_state = int(ctx.coin(0.8))
        a = {"length": length, "n_state": n_state, "outer": int(n_state == 0 or ctx.coin(0.3)),
             "in_axis": ax - xr if ctx.coin(0.3) else ax, "in_dir": int(ctx.coin(0.5)),
             "x": list(elem.shape[:ax]) + [length] + list(elem.shape[ax:])}
        in_types = [s] * n_state + [elem] + [s] * a["outer"]
        k = ctx.choice((1, 1, 2) if n_state == 0 else (0, 1, 1, 2))
        need = [s] * n_state + [None] * k
        return self._draw_body(ctx, a, in_types, need, length, [s, self._x(a, s.dtype)])

    def _drawn(self, ctx, a, g):
        # each scan output's axis and direction, once its rank is known
        ranks = [t.rank + 1 for t in g.output_types()[a["n_state"]:]]
        axes = [ctx.rng.randrange(r) for r in ranks]
        a["out_axes"] = [x - r if ctx.coin(0.3) else x for x, r in zip(axes, ranks)]
        a["out_dirs"] = [int(ctx.coin(0.5)) for _ in ranks]

    @staticmethod
    def _x(a, dtype) -> TensorType:
        return TensorType(dtype, tuple(a["x"]))

    def input_type(self, ctx, i, ins, a, dtype):
        return ins[0] if a.get("invalid") else self._x(a, ins[0].dtype)

    def backward(self, ctx, out):
        if out.rank not in self.ranks:
            return None
        for _ in range(2):
            a = self.sample(ctx, [out])
            if not a.get("invalid") and a["n_state"] == 1:
                return [out, self._x(a, out.dtype)], a
        return None

    def requires(self, ins, a):
        if a.get("invalid"):
            return [False]
        n, xr = a.get("n_state"), len(a["x"])
        if n not in (0, 1) or a.get("outer") not in (0, 1) or not (n or a["outer"]) \
                or a.get("in_dir") not in (0, 1) or not -xr <= a["in_axis"] < xr:
            return [False]
        g = self._body(a)
        types, outs = g.input_types(), g.output_types()
        if len(types) != n + 1 + a["outer"] or len(outs) != n + len(a["out_axes"]) \
                or len(a["out_dirs"]) != len(a["out_axes"]):
            return [False]
        ax = a["in_axis"] % xr
        elem = tuple(a["x"][:ax] + a["x"][ax + 1:])
        ok = (ins[0] == types[0] == types[-1] if n and a["outer"] else ins[0] == types[0] if n else ins[0] == types[-1])
        ok = (ok and ins[1] == self._x(a, ins[0].dtype) and types[n].shape == elem and a["length"] == a["x"][ax]
              and outs[:n] == list(ins[:n]) and all(d in (0, 1) for d in a["out_dirs"])
              and all(-(t.rank + 1) <= x <= t.rank for x, t in zip(a["out_axes"], outs[n:])))
        return [ok]

    def infer(self, ins, a):
        g = self._body(a)
        outs = g.output_types()
        n = a["n_state"]
        scans = []
        for t, ax in zip(outs[n:], a["out_axes"]):
            ax %= t.rank + 1
            scans.append(TensorType(t.dtype, tuple(t.shape[:ax]) + (a["length"],) + tuple(t.shape[ax:])))
        return list(outs[:n]) + scans

    def onnx(self, b, a, xs, ys):
        # local: a body is lowered by materialize, which sits above the catalogue (it reads the registry)
        from dlgate.materialize.onnx_model import SubBuilder, make_subgraph

        g = self._body(a)
        types = g.input_types()
        n = a["n_state"]
        prefix = b.fresh("scan")
        sb = SubBuilder(b.opset, b.rng, f"{prefix}_")
        formal, names = [], {}
        if n:
            formal.append((f"{prefix}_s", types[0]))
            names[g.inputs[0]] = f"{prefix}_s"
        formal.append((f"{prefix}_e", types[n]))
        names[g.inputs[n]] = f"{prefix}_e"
        if a["outer"]:
            names[g.inputs[n + 1]] = xs[0]
        outs, vis = _emit(sb, g, names)
        body = make_subgraph(sb, f"{prefix}_body", formal, outs, vis)
        k = len(a["out_axes"])
        attrs = {"body": body, "num_scan_inputs": 1,
                 "scan_input_axes": b.opt([a["in_axis"]], [0]),
                 "scan_input_directions": b.opt([a["in_dir"]], [0])}
        if k:
            attrs["scan_output_axes"] = b.opt(list(a["out_axes"]), [0] * k)
            attrs["scan_output_directions"] = b.opt(list(a["out_dirs"]), [0] * k)
        b.node("Scan", ([xs[0]] if n else []) + [xs[1]], ys, **attrs)

    def _execute(self, a, s0, x, check=False):
        g = self._body(a)
        n = a["n_state"]
        ax = a["in_axis"] % x.dim()
        steps = range(a["length"])
        if a["in_dir"]:
            steps = reversed(steps)
        s, why = s0, None
        scans = [[] for _ in g.outputs[n:]]
        for j in steps:
            outs, w = run_body(g, [s] * n + [x.select(ax, j)] + [s0] * a["outer"], check)
            why = why or w
            if n:
                s = outs[0]
            for acc, y in zip(scans, outs[n:]):
                acc.append(y)
        res = [s] * n
        for acc, oax, d in zip(scans, a["out_axes"], a["out_dirs"]):
            if d:
                acc = acc[::-1]
            res.append(torch.stack(acc, oax % (acc[0].dim() + 1)))
        return res, why

    gaps: ClassVar[tuple] = (
        ("more than one scan input", "a spec's arity is fixed; one scan input covers the axis and direction "
         "attributes"),
        ("zero-length sequences", "zero-size tensors are never generated"),
        ("Mul, Exp and operators with restricted domains or jumps in bodies", "values carried through the "
         "sequence must stay bounded and defined"),
    ) + BODY_GAPS

    def value_range(self, a, ranges, ins):
        s0, x = ranges[0], ranges[1]
        feeds = (lambda c: c + [x] + [s0] * a["outer"])
        state, scans = iterate_ranges(self._body(a), a["length"], [s0] * a["n_state"], feeds)
        return state + scans

    def _reference_defect_of_iteration(self, a):
        if a["in_axis"] != 0 or a["in_dir"] or any(a["out_axes"]) or any(a["out_dirs"]):
            return ("onnx.reference's Scan implements only axis 0 and forward directions (RuntimeError "
                    "'Scan is not implemented for other ...')")
        return None


OPS = [Scan]
