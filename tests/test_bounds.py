"""Every spec's value knowledge is sound on real runs.

The generator refuses a model when an operator's value bounds (``value_range``), anchors or
exact values (``exact``) say no input can make it valid; an unsound bound would silently
drop valid models (less coverage), so each claim is checked against what PyTorch computes
on generated models: for every node, bounds derived from the inputs' actual minima and
maxima must contain the output's actual values, and an exact value must occur in the output.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from dlgate import dtypes as dt
from dlgate.graph.generator import GenConfig, GenerationError, Generator
from dlgate.inputs.search import search
from dlgate.materialize.torch_model import GraphModule
from dlgate.ops.base import TensorType
from dlgate.ops.registry import all_specs, get
from dlgate.seeds import case_seed

SPECS = all_specs()
FAMILIES = sorted({s.family for s in SPECS.values()})
#: Relative slack for rounding in the tensor's dtype (bounds are real-number bounds).
SLACK = {"float16": 4e-3, "float32": 1e-5, "float64": 1e-12}


def _observed(graph, env):
    """Tensor id -> (lo, hi) of its values, for finite float and integer tensors."""
    seen = {}
    for t, x in env.items():
        if not isinstance(x, torch.Tensor) or x.numel() == 0 or x.dtype == torch.bool:
            continue
        v = x.detach().double()
        if not bool(torch.isfinite(v).all()):
            continue
        seen[t] = (float(v.min()), float(v.max()))
    return seen


def _cases(family: str, count: int):
    """(node, input types, observed input ranges, output tensors) for nodes of a family."""
    ops = tuple(n for n, s in SPECS.items() if s.family == family)
    gen = Generator(GenConfig(min_nodes=3, max_nodes=8, ops=ops + ("Exp", "Sin", "Add", "Relu")))
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(count):
            try:
                g = gen.generate(case_seed("bounds", family, i))
            except GenerationError:
                continue  # a seed whose first tensor fits no operator: nothing to observe
            res = search(g, i)
            for t, v in res.consts.items():
                g.values[t] = v
            mod = GraphModule(g)
            with torch.no_grad():
                env = mod.run([torch.from_numpy(np.array(x)) for x in res.inputs])
            seen = _observed(g, env)
            for n in g.nodes:
                if get(n.op).family != family:
                    continue
                ins = [g.tensors[t] for t in n.inputs]
                if not all(t in seen or g.tensors[t].dtype == "bool" for t in n.inputs):
                    continue
                rs = [seen.get(t, (0.0, 1.0)) for t in n.inputs]
                out.append((n, ins, rs, [env[t] for t in n.outputs], [g.tensors[t].dtype for t in n.outputs]))
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_bounds_and_exact_values_hold_on_real_runs(family):
    bad = []
    cases = _cases(family, 40)
    for n, ins, rs, outs, dtypes in cases:
        spec = get(n.op)
        bounds = spec.out_bounds(n.attrs, rs, ins, [TensorType(d, tuple(y.shape)) for d, y in zip(dtypes, outs)])
        if len(set(n.inputs)) == 1 and len(n.inputs) > 1:
            sr = spec.self_range(n.attrs, rs[0])
            if sr is not None:
                bounds = [sr] + list(bounds or [])[1:]
        for k, y in enumerate(outs):
            if bounds is None or k >= len(bounds) or y.dtype == torch.bool or y.numel() == 0:
                continue
            v = y.detach().double()
            if not bool(torch.isfinite(v).all()):
                continue
            lo, hi = bounds[k]
            slack = SLACK.get(dtypes[k], 0.0)
            ylo, yhi = float(v.min()), float(v.max())
            if ylo < lo - slack * max(1.0, abs(lo)) or yhi > hi + slack * max(1.0, abs(hi)):
                bad.append((n.op, n.attrs, rs, (lo, hi), (ylo, yhi)))
        e = spec.exact(n.attrs, [None] * len(ins), ins)
        y = outs[0]
        if e is not None and y.numel() and y.dtype != torch.bool and dt.is_float(dtypes[0]) \
                and bool(torch.isfinite(y.double()).all()):
            if not bool((y.double() == e).any()):
                bad.append((n.op, n.attrs, "exact", e))
    assert not bad, bad[:5]
    assert cases, f"no {family} node was run"


def test_exact_values_propagate_and_refuse_impossible_consumers():
    from dlgate.graph.generator import Generator as G
    from dlgate.ops.base import INF, TensorType

    x = TensorType("float32", (4, 8))
    # an element-wise map computes the exact value in the tensor's dtype
    assert SPECS["Exp"].exact({}, [0.0], [x]) == 1.0
    assert SPECS["Cos"].exact({}, [0.0], [x]) == 1.0
    assert SPECS["Reshape"].exact({"shape": [32], "spec": [32]}, [0.0], [x]) == 0.0
    assert SPECS["Exp"].exact({}, [None], [x]) is None
    # a 0 in every run: refused by Log (open domain at 0) and by divisors, kept by Sqrt
    admit = G._admit
    assert admit(SPECS["Log"], {}, 0, (-INF, INF), True, False, exact=0.0) is None
    assert admit(SPECS["Sqrt"], {}, 0, (-INF, INF), True, False, exact=0.0) == (0.0, INF)
    assert admit(SPECS["Reciprocal"], {}, 0, (-INF, INF), True, False, exact=0.0) is None
    assert admit(SPECS["Acosh"], {}, 0, (-INF, INF), True, False, exact=1.0) == (1.0, INF)
    assert admit(SPECS["Atanh"], {}, 0, (-INF, INF), True, False, exact=1.0) is None


def test_valley_operators_bound_by_their_ends_or_their_minimum():
    from dlgate.ops.base import TensorType

    x = TensorType("float32", (4,))
    for name in ("Gelu", "Mish", "HardSwish"):
        s = SPECS[name]
        if s.valley is None:
            pytest.skip(f"{name} declares no valley")
    hs = SPECS["HardSwish"]
    lo, hi = hs.value_range({}, [(-1.0, 1.0)], [x])[0]
    assert lo == pytest.approx(-1.0 / 3.0) and hi == pytest.approx(2.0 / 3.0)
    lo, hi = hs.value_range({}, [(-3.0, 1.0)], [x])[0]
    assert lo == hs.valley[2] and hi == pytest.approx(2.0 / 3.0)
    assert math.isfinite(SPECS["Mish"].value_range({}, [(-5.0, -2.0)], [x])[0][0])


def test_carried_starting_ranges_land_inside_the_target():
    """``input_span`` promises: inputs drawn from the returned ranges give outputs inside
    the target span. Checked on the nodes of generated models whose inputs all get a range
    (norms and convolutions promise it for the scale, bias and products only, so they are
    left to their own tests), for target spans of several shapes."""
    rng = np.random.default_rng(0)
    gen = Generator(GenConfig(min_nodes=4, max_nodes=10))
    targets = [(-0.9, 0.9), (0.5, 4.0), (1.1, 4.0), (-4.0, -0.5), (0.01, 0.2)]
    checked, bad = set(), []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(150):
            g = gen.generate(case_seed("spans", "s", i))
            for n in g.nodes:
                spec = get(n.op)
                ins = [g.tensors[t] for t in n.inputs]
                if spec.family in ("norm", "conv") or not all(dt.is_float(t.dtype) for t in ins):
                    continue
                for span in targets:
                    got = [spec.input_span(n.attrs, k, span, ins) for k in range(len(ins))]
                    if any(s is None for s in got):
                        continue
                    # in float64, but a BitCast reads its input's bits: at their own dtype
                    wide = np.float64 if spec.onnx_op != "BitCast" else None
                    xs = [torch.from_numpy(rng.uniform(s[0], s[1], size=t.shape).astype(wide or t.dtype))
                          for s, t in zip(got, ins)]
                    if len(set(n.inputs)) < len(n.inputs):
                        continue  # one tensor in two places takes one range
                    with torch.no_grad():
                        y = spec.torch(n.attrs, *xs)
                    y = (y if isinstance(y, (tuple, list)) else (y,))[0].double()
                    checked.add(n.op)
                    tol = 1e-6 * max(1.0, abs(span[0]), abs(span[1]))
                    if y.numel() and not (float(y.min()) >= span[0] - tol and float(y.max()) <= span[1] + tol):
                        bad.append((n.op, n.attrs, span, got, (float(y.min()), float(y.max()))))
    assert not bad, bad[:3]
    assert {"Add", "Mul", "Exp", "ReduceSum", "Pow", "Cos"} <= checked, checked


def test_preimages_hold_every_input_that_maps_inside():
    """``preimage`` narrows a producer's input from its output's bounds: every x with
    f(x) within the bounds must lie inside it (else valid models would be refused)."""
    rng = np.random.default_rng(1)
    xs = torch.from_numpy(np.concatenate([rng.uniform(-6, 6, 4000), rng.uniform(-0.01, 0.01, 500),
                                          np.linspace(-3, 3, 601)]))
    checked = []
    for name, spec in sorted(SPECS.items()):
        if not spec.elementwise or spec.arity != 1 or name in ("Cast", "IsNaN", "IsInf", "Not"):
            continue
        if not any(s[0] in ("float32", "float64", "float16") for s in spec.dtypes):
            continue  # integer-only (BitwiseNot): no real-valued preimage to check
        attrs = [{}] if not getattr(spec, "params", ()) else [
            {p: v for p, lo, hi, _ in spec.params for v in [float(rng.uniform(lo, hi))]} for _ in range(3)]
        if name == "Clip":
            attrs = [{"dtype": "float64", "min": -1.0, "max": 2.0}, {"dtype": "float64", "min": 0.5}]
        if name == "Gelu":
            attrs = [{"approximate": "none"}, {"approximate": "tanh"}]
        for a in attrs:
            with torch.no_grad():
                ys = spec.torch(a, xs.clone())
            for _ in range(6):
                lo, hi = sorted(rng.uniform(-3, 3, 2))
                pre = spec.preimage(a, (lo, hi))
                if pre is None:
                    continue
                inside = torch.isfinite(ys) & (ys >= lo) & (ys <= hi)
                got = xs[inside]
                assert not len(got) or (float(got.min()) >= pre[0] and float(got.max()) <= pre[1]), \
                    (name, a, (lo, hi), pre, float(got.min()), float(got.max()))
                checked.append(name)
    assert {"Exp", "Asin", "Abs", "ThresholdedRelu", "Relu", "Cosh", "Softplus"} <= set(checked)
