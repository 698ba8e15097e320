"""Targeted checks of the control-flow specs (If, Loop, Scan) whose bodies are generated
graphs: every condition form, loop-carried / pass-through / outer-scope inputs, the
iteration number, scan axes and directions, against onnx.reference (where it is right),
onnxruntime and each spec's PyTorch implementation through its own lowering; value bounds,
undefined bodies, byte-identical regeneration, mixed generated models; TVM's verdicts
end to end (it converts If, not Loop or Scan) and an injected miscompilation of an
operator inside a converted If branch."""
from __future__ import annotations

import json
import os
import random

import numpy as np
import onnx
import pytest
import torch
from onnx import helper
from onnx.reference import ReferenceEvaluator

from dlgate import dtypes as dt
from dlgate.graph.generator import body_graph
from dlgate.graph.ir import Graph, Node, random_values
from dlgate.materialize.onnx_model import to_onnx
from dlgate.materialize.torch_model import GraphModule
from dlgate.ops import schema
from dlgate.ops.base import Ctx, Limits, TensorType, all_true
from dlgate.ops.control import _shared as control
from dlgate.ops.registry import get
from tests.helpers import check_against_reference, finite, mismatch, one_node_model, ort_run

SMALL = Limits(max_rank=4, max_dim=8, max_elems=512)


@pytest.fixture(autouse=True)
def _if_schema(monkeypatch):
    """If's inputs are none of its formal inputs (its branches read them from the outer
    scope: ``schema_inputs = ()``); until ``schema.allowed`` accepts any signature for such
    a spec, accept it here."""
    if schema.allowed("If", ("float32", "float32"), 21):
        return
    orig = schema.allowed

    def allowed(op, sig, opset):
        if op == "If":
            return schema._schema(op, opset) is not None
        return orig(op, sig, opset)

    monkeypatch.setattr(schema, "allowed", allowed)


def _sample(name, dtype, opset, want=lambda a: True, rank=None, seed=0, tries=400):
    """Attributes (and input types) the spec itself draws, the first that ``want`` accepts."""
    spec = get(name)
    for i in range(tries):
        ctx = Ctx(random.Random(f"{name}/{dtype}/{opset}/{seed}/{i}"), SMALL, opset=opset, body_graph=body_graph)
        r = rank if rank is not None else ctx.choice([r for r in spec.ranks if r <= 3])
        x = TensorType(dtype, ctx.shape(r, 64))
        a = spec.sample(ctx, [x])
        if a.get("invalid") or not want(a):
            continue
        ins = [x, spec.input_type(ctx, 1, [x], a, dtype)]
        assert all_true(spec.requires(ins, a)), (name, a)
        return a, ins
    raise AssertionError(f"no {name} instance as wanted")


def _model(name, a, ins, opset, seed=0):
    m = one_node_model(name, a, ins, opset, seed=seed, requires=False)
    return m.model, m.xs, m.outs


def _feeds(ins, seed):
    rng = np.random.default_rng(seed)
    return [random_values(rng, t) for t in ins]


def _check(name, a, ins, opset, feeds=None, seed=0):
    """The spec's lowering through ONNX's checker, onnxruntime and onnx.reference (unless
    the spec names a defect of it), each against the spec's torch. Returns torch's outputs."""
    return check_against_reference(name, a, ins, opset, seed=seed, feeds=feeds, draw=random_values, level=None,
                                   skip_nonfinite=True, requires=False).ours


def _body_ops(a):
    return {n.op for key in ("then", "else", "body") if key in a for n in control.decode(a[key]).nodes}


# -- If ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("opset", [13, 18, 21])
@pytest.mark.parametrize("dtype,mode", [(d, m) for d in ("float32", "float16", "float64", "int32", "int64")
                                        for m in ("sum", "max", "first", "first1")]
                         + [(d, m) for d in ("int8", "uint8") for m in ("max", "first", "first1")]
                         + [("bool", m) for m in ("any", "first", "first1")])
def test_if_conditions_take_both_branches(dtype, mode, opset):
    a, ins = _sample("If", dtype, opset, lambda a: a["cond"] == mode)
    spec = get("If")
    x, y = _feeds(ins, 1)
    lo, hi = (0, 15) if dtype == "uint8" else (0, 1) if dtype == "bool" else (-8, 8)
    taken = set()
    for v in (lo, hi):  # every element at one end: the condition is false, then true
        fx = np.full(x.shape, v).astype(x.dtype)
        out = _check("If", a, ins, opset, [fx, y])
        cond = spec._cond(a, torch.from_numpy(fx))
        taken.add(cond)
        want = control.run_body(control.decode(a["then" if cond else "else"]),
                                [torch.from_numpy(fx), torch.from_numpy(y)])[0]
        assert all(np.array_equal(o, w.numpy()) for o, w in zip(out, want))
    assert taken == {False, True}


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_if_single_element_conditions_of_rank_x(dtype):
    """keepdims=1: the condition is a one-element tensor of x's rank, legal for If."""
    a, ins = _sample("If", dtype, 21, lambda a: a["keep"] == 1, rank=3)
    _check("If", a, ins, 21)


def test_if_branches_read_the_outer_scope_and_give_matching_types():
    a, ins = _sample("If", "float32", 21, lambda a: a["n_out"] == 2)
    model, _, outs = _model("If", a, ins, 21)
    node = next(n for n in model.graph.node if n.op_type == "If")
    branches = [helper.get_attribute_value(at) for at in node.attribute]
    assert {g.name.rsplit("_", 1)[1] for g in branches} == {"then", "else"}
    for g in branches:
        assert not g.input  # If's branches take no inputs: x and y are outer-scope names
        assert [o.type.tensor_type.elem_type for o in g.output] == [dt.ONNX[t.dtype] for t in outs]
    assert outs == ins


def test_if_reports_a_sum_within_rounding_of_its_threshold():
    a, ins = _sample("If", "float16", 21, lambda a: a["cond"] == "sum" and a["thr"] == 0.0, rank=1)
    spec = get("If")
    n = ins[0].shape[0]
    x = torch.zeros(n, dtype=torch.float16)
    if n > 1:
        x[0], x[1] = 1.0, -1.0
    assert spec.undefined(a, [x, torch.zeros(ins[1].shape, dtype=torch.float16)], spec.infer(ins, a))
    x = torch.full((n,), 2.0, dtype=torch.float16)
    assert spec.undefined(a, [x, torch.zeros(ins[1].shape, dtype=torch.float16)], spec.infer(ins, a)) is None


def test_if_is_discontinuous_and_both_branches_are_reachable_across_cases():
    spec = get("If")
    assert spec.discontinuous({})
    taken = set()
    for seed in range(30):
        a, ins = _sample("If", "float32", 21, seed=seed)
        taken.add(spec._cond(a, torch.from_numpy(_feeds(ins, seed)[0])))
    assert taken == {False, True}


# -- Loop -------------------------------------------------------------------------------------
@pytest.mark.parametrize("w", ["outer", "carried", "pass"])
@pytest.mark.parametrize("dtype,opset", [("float32", 13), ("float16", 21), ("int32", 17), ("int8", 28),
                                         ("bool", 21), ("float64", 16)])
def test_loop_carried_inputs(w, dtype, opset):
    a, ins = _sample("Loop", dtype, opset, lambda a: a["w"] == w)
    outs = _check("Loop", a, ins, opset)
    assert len(outs) == 1 + (w != "outer") + a["n_scan"]
    if w == "pass":
        assert np.array_equal(outs[1], _feeds(ins, 0)[1])


@pytest.mark.parametrize("cond_in,cond_out", [("const", "pass"), ("const", "const"), ("empty", "pass"),
                                              ("empty", "const")])
def test_loop_condition_spellings(cond_in, cond_out):
    a, ins = _sample("Loop", "float32", 21, lambda a: (a["cond_in"], a["cond_out"]) == (cond_in, cond_out))
    _check("Loop", a, ins, 21)
    model = _model("Loop", a, ins, 21)[0]
    loop = next(n for n in model.graph.node if n.op_type == "Loop")
    assert (loop.input[1] == "") == (cond_in == "empty")


def test_loop_uses_the_iteration_number_and_stacks_scan_outputs():
    a, ins = _sample("Loop", "float32", 21, lambda a: a["iter"] and a["n_scan"] == 2
                     and len(control.decode(a["body"]).nodes) >= 2)
    body = control.decode(a["body"])
    assert body.input_types()[2] == TensorType("float32", ())  # the iteration number, cast
    outs = get("Loop").infer(ins, a)
    for t, e in zip(outs[-2:], body.output_types()[-2:]):
        assert t.shape == (a["trips"],) + tuple(e.shape)
    _check("Loop", a, ins, 21)
    # the lowering casts the int64 iteration number to the data type
    model = _model("Loop", a, ins, 21)[0]
    g = helper.get_attribute_value(next(n for n in model.graph.node if n.op_type == "Loop").attribute[0])
    assert g.node[0].op_type == "Cast" and g.input[0].type.tensor_type.elem_type == onnx.TensorProto.INT64


def test_loop_reference_defects_are_real():
    """onnx.reference's Loop runs nothing when the condition input is absent, and stacks
    scan outputs with np.vstack: both disagree with onnxruntime, which is right."""
    spec = get("Loop")
    a, ins = _sample("Loop", "float32", 21, lambda a: a["cond_in"] == "empty" and a["n_scan"] == 0
                     and a["w"] == "outer")
    assert "absent" in spec.reference_defect(a, ins, 21)
    model, xs, _ = _model("Loop", a, ins, 21)
    feeds = _feeds(ins, 0)
    ref = ReferenceEvaluator(model).run(None, dict(zip(xs, feeds)))
    assert np.array_equal(ref[0], feeds[0])  # the initial value: no iteration ran
    a, ins = _sample("Loop", "float32", 21, lambda a: a["cond_in"] == "const" and a["w"] != "carried"
                     and a["n_scan"] >= 1 and any(t.rank == 2 for t in control.decode(a["body"]).output_types()[1:]))
    assert "vstack" in spec.reference_defect(a, ins, 21)
    model, xs, outs = _model("Loop", a, ins, 21)
    ref = ReferenceEvaluator(model).run(None, dict(zip(xs, _feeds(ins, 0))))
    assert [r.shape for r in ref] != [t.shape for t in outs]


def test_loop_trip_count_halves_and_scan_shapes_follow():
    """What the reducer does to a Loop: its trip count halved, every type re-inferred."""
    spec = get("Loop")
    a, ins = _sample("Loop", "float32", 21, lambda a: a["trips"] >= 4 and a["n_scan"] >= 1)
    b = dict(a, trips=a["trips"] // 2)
    assert all_true(spec.requires(ins, b))
    assert spec.infer(ins, b)[-1].shape[0] == a["trips"] // 2
    _check("Loop", b, ins, 21)


def test_loop_body_overflow_is_undefined():
    """A body whose int32 sums overflow after a few iterations: the spec says why."""
    i32 = TensorType("int32", (2,))
    body = Graph(tensors=[i32, i32, i32, i32], nodes=[Node("Add", {}, [0, 2], [3])], inputs=[0, 1], consts=[2],
                 outputs=[3], opset=21, values={2: np.array([2**30, 2**30], dtype=np.int32)})
    a = {"trips": 3, "w": "outer", "iter": 0, "cond_in": "const", "cond_out": "pass", "n_scan": 0,
         "body": control.encode(body)}
    spec = get("Loop")
    x = torch.zeros(2, dtype=torch.int32)
    assert "overflow" in spec.undefined(a, [x, x], spec.infer([i32, i32], a))
    assert spec.undefined(dict(a, trips=1), [x, x], [i32]) is None


# -- Scan -------------------------------------------------------------------------------------
@pytest.mark.parametrize("in_axis,in_dir", [(0, 0), (0, 1), (1, 0), (-1, 1), (-2, 0)])
@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
def test_scan_input_axes_and_directions(in_axis, in_dir, dtype):
    def want(a):
        return a["in_axis"] == in_axis and a["in_dir"] == in_dir
    a, ins = _sample("Scan", dtype, 21, want)
    _check("Scan", a, ins, 21)


@pytest.mark.parametrize("n_state,outer", [(1, 0), (1, 1), (0, 1)])
def test_scan_states_and_outer_scope(n_state, outer):
    a, ins = _sample("Scan", "float32", 17, lambda a: (a["n_state"], a["outer"]) == (n_state, outer))
    outs = _check("Scan", a, ins, 17)
    assert len(outs) == n_state + len(a["out_axes"]) >= 1
    model = _model("Scan", a, ins, 17)[0]
    scan = next(n for n in model.graph.node if n.op_type == "Scan")
    assert list(scan.input) == (["x0"] if n_state else []) + ["x1"]


def test_scan_output_axes_and_directions():
    seen = set()
    for seed in range(6):
        a, ins = _sample("Scan", "float32", 21, lambda a: len(a["out_axes"]) == 2, seed=seed)
        outs = _check("Scan", a, ins, 21, seed=seed)
        seen.update((ax < 0, d) for ax, d in zip(a["out_axes"], a["out_dirs"]))
        for o, ax in zip(outs[a["n_state"]:], a["out_axes"]):
            assert o.shape[ax] == a["length"]
    assert {d for _, d in seen} == {0, 1}


def test_scan_prepend_reverses_the_stacked_outputs():
    a, ins = _sample("Scan", "float32", 21, lambda a: len(a["out_axes"]) == 1 and a["length"] >= 3)
    spec = get("Scan")
    feeds = [torch.from_numpy(f) for f in _feeds(ins, 0)]
    k = a["n_state"]
    fwd = spec._execute(dict(a, out_dirs=[0]), *feeds)[0][k]
    back = spec._execute(dict(a, out_dirs=[1]), *feeds)[0][k]
    ax = a["out_axes"][0] % fwd.dim()
    assert torch.equal(back, fwd.flip(ax))
    assert spec.reference_defect(dict(a, out_dirs=[1]), ins, 21)


# -- all three --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["If", "Loop", "Scan"])
def test_value_bounds_hold(name):
    spec = get(name)
    rng = np.random.default_rng(0)
    for seed in range(25):
        dtype = ("float32", "float16", "int32", "int8")[seed % 4]
        a, ins = _sample(name, dtype, 21, seed=seed)
        bounds = spec.value_range(a, [(-2.0, 3.0)] * 2, ins)
        for _ in range(3):
            xs = [torch.from_numpy(rng.uniform(-2, 3, t.shape).astype(t.dtype) if dt.is_float(dtype)
                                   else rng.integers(-2, 4, t.shape).astype(t.dtype)) for t in ins]
            outs = spec.torch(a, *xs)
            for o, (lo, hi) in zip(outs if isinstance(outs, tuple) else (outs,), bounds):
                o = o.double()
                assert lo - 1e-3 <= float(o.min()) and float(o.max()) <= hi + 1e-3, (name, a, lo, hi)


@pytest.mark.parametrize("name", ["If", "Loop", "Scan"])
def test_bodies_use_bounded_operators(name):
    """Bodies hold only the body operators for their dtype: no product in iterated ones."""
    for seed in range(20):
        dtype = ("float32", "int64", "bool", "uint8", "float64")[seed % 5]
        a, _ = _sample(name, dtype, 21, seed=seed)
        assert _body_ops(a) <= set(control.body_ops(dtype, once=name == "If"))
        if name != "If":
            assert not _body_ops(a) & set(control.ONCE_OPS)


@pytest.mark.parametrize("name", ["If", "Loop", "Scan"])
def test_widened_float16_evaluation(name):
    """The oracle evaluates float16 graphs in float64: bodies follow the widened inputs."""
    spec = get(name)
    a, ins = _sample(name, "float16", 21)
    xs = [torch.from_numpy(f).double() for f in _feeds(ins, 0)]
    outs = spec.torch(a, *xs)
    for o in outs if isinstance(outs, tuple) else (outs,):
        assert o.dtype == torch.float64


@pytest.mark.parametrize("name", ["If", "Loop", "Scan"])
def test_declared_gaps(name):
    spec = get(name)
    assert spec.gaps and all(len(g) == 2 and all(isinstance(s, str) and s for s in g) for g in spec.gaps)
    assert not spec.symbolic_ok


def test_cases_regenerate_byte_identically_from_their_json():
    from dlgate.case import make_case
    from dlgate.graph.generator import GenConfig, Generator
    from dlgate.seeds import sub_seed

    gen = Generator(GenConfig(ops=("If", "Loop", "Scan", "Add", "Relu"), max_nodes=5, opset=21))
    found = set()
    for i in range(12):
        c = make_case(gen, "ctl", "regen", i)
        assert make_case(gen, "ctl", "regen", i).model_bytes == c.model_bytes
        found.update(c.graph.op_names())
        g = Graph.from_json(json.loads(json.dumps(c.graph.to_json())), c.graph.values)
        assert to_onnx(g, sub_seed(c.seed, "onnx"), doc=f"dlgate case ctl/regen/{i}").SerializeToString() \
            == c.model_bytes
    assert {"If", "Loop", "Scan"} <= found


@pytest.mark.parametrize("opset", [13, 21, 28])
def test_generated_models_run_alike_on_onnxruntime_and_torch(opset):
    from dlgate.case import make_case
    from dlgate.graph.generator import GenConfig, Generator

    gen = Generator(GenConfig(ops=("If", "Loop", "Scan", "Add", "Neg", "Sigmoid", "Relu"), max_nodes=6,
                              opset=opset))
    seen = set()
    for i in range(25):
        c = make_case(gen, "ctl", f"mixed{opset}", i)
        seen.update(c.graph.op_names())
        onnx.checker.check_model(onnx.load_from_string(c.model_bytes), full_check=True)
        feeds = [random_values(np.random.default_rng(i), c.graph.tensors[t]) for t in c.graph.inputs]
        with torch.no_grad():
            ours = [o.numpy() for o in GraphModule(c.graph)(*[torch.from_numpy(x.copy()) for x in feeds])]
        try:
            got = ort_run(c.model_bytes, c.graph, feeds)
        except Exception as e:  # an outer operator x dtype onnxruntime lacks (int64 Relu)
            assert "NOT_IMPLEMENTED" in str(e) and "if_" not in str(e) and "loop_" not in str(e), e
            continue
        if finite(*ours):
            for g, o in zip(got, ours):
                assert mismatch(g, o) is None, (c.id, c.graph.op_names(), mismatch(g, o))
    assert {"If", "Loop", "Scan"} <= seen


def test_body_operators_have_onnxruntime_kernels():
    for d in dt.ALL:
        for once in (True, False):
            ops = control.body_ops(d, once)
            assert ops and not any((op, d) in control.NO_KERNEL for op in ops)


# -- TVM end to end ---------------------------------------------------------------------------
def _cases(tmp_path, ops, n, root, max_nodes=5):
    from dlgate.case import make_case
    from dlgate.check import load_case, prepare
    from dlgate.graph.generator import GenConfig, Generator

    gen = Generator(GenConfig(ops=ops, dtypes=("float32",), max_nodes=max_nodes, opset=18))
    for i in range(n):
        make_case(gen, "e2e", root, i).write(str(tmp_path))
    return [prepare(*load_case(os.path.join(tmp_path, d))) for d in sorted(os.listdir(tmp_path))]


@pytest.fixture(scope="module")
def workers():
    """One pool of workers for the TVM tests: starting TVM's is what costs."""
    pytest.importorskip("tvm")
    from dlgate.exec.worker import Pool

    with Pool(timeout_s=120) as pool:
        yield pool


def _not_converted(verdict) -> set:
    """The operators TVM's ONNX frontend names as lacking a converter (it names every one
    of the model's operators it lacks, before converting anything)."""
    head, _, names = (verdict.get("detail") or "").partition("not supported for frontend ONNX:")
    return {n.strip() for n in names.split(",") if n.strip()} if "OpNotImplemented" in head else set()


def test_tvm_converts_if_but_not_loop_or_scan(tmp_path, workers):
    """TVM 0.27 has no converter for Loop or Scan: 'unsupported' naming them (never a
    crash or a mismatch) where onnxruntime passes. Its frontend refuses such a model before
    converting anything, so no other TVM bug can show there. It converts If: a model with
    If (and neither Loop nor Scan) is never 'unsupported' for If, and such models pass
    (one that TVM gets wrong in a branch's operator is not counted); models of Neg alone
    pass. Cases are generated until enough of each kind were checked."""
    from dlgate.backends.base import BackendSpec
    from dlgate.check import CheckConfig, check
    from dlgate.graph.generator import GenConfig, Generator
    from dlgate.oracle import verdict as V
    from tests.helpers import generated_cases

    gen = Generator(GenConfig(ops=("If", "Loop", "Scan", "Neg"), dtypes=("float32",), max_nodes=3, opset=18))
    cfg = CheckConfig([BackendSpec("onnxruntime"), BackendSpec("tvm")], crosscheck=False)
    lacking = if_passing = plain = 0
    for case in generated_cases(tmp_path, gen, "e2e", "ctl-tvm", 40):
        if not case.search["valid"]:
            continue  # no numeric-valid input: 'invalid' for every backend
        ort, tvm = check(workers, case, cfg)["verdicts"]
        assert ort["verdict"] == V.PASS, (case.id, ort)
        ops = set(case.graph.op_names())
        if {"Loop", "Scan"} & ops:
            lacking += 1
            assert tvm["verdict"] == V.UNSUPPORTED and "OpNotImplemented" in tvm["detail"], (case.id, tvm)
            assert {"Loop", "Scan"} & ops <= _not_converted(tvm) and "If" not in _not_converted(tvm), (case.id, tvm)
        elif "If" in ops:
            assert "If" not in _not_converted(tvm), (case.id, tvm)
            if_passing += tvm["verdict"] == V.PASS
        else:
            plain += 1
            assert tvm["verdict"] == V.PASS, (case.id, tvm)
        if lacking >= 3 and if_passing >= 2 and plain >= 1:
            break
    assert lacking >= 3 and if_passing >= 2 and plain >= 1, (lacking, if_passing, plain)


def _taken_branches(case) -> set:
    """The operators in the If branches this case's inputs take."""
    spec, ops = get("If"), set()

    def hook(i, node, ins, outs):
        if node.op == "If":
            key = "then" if spec._cond(node.attrs, ins[0]) else "else"
            ops.update(n.op for n in control.decode(node.attrs[key]).nodes)

    with torch.no_grad():
        GraphModule(case.graph).run([torch.from_numpy(np.array(x, copy=True)) for x in case.inputs], hook)
    return ops


def _with_sigmoid_as_tanh(case) -> bool:
    """Whether the reference changes when Sigmoid computes tanh (what the injected pass does)."""
    from dlgate.oracle.compare import compare

    def run():
        with torch.no_grad():
            outs = GraphModule(case.graph)(*[torch.from_numpy(np.array(x, copy=True)) for x in case.inputs])
        return [o.numpy() for o in outs]

    base = run()
    sig = get("Sigmoid")
    sig.torch = lambda a, x: torch.tanh(x)
    try:
        broken = run()
    finally:
        del sig.torch
    return not compare(base, broken).ok


def test_injected_miscompilation_inside_an_if_branch_is_caught(tmp_path, workers):
    """``relax.sigmoid`` compiled as ``tanh``, with Sigmoid only inside If branches: the
    cases whose taken branch holds one (and whose outputs it reaches) mismatch; the others,
    and a healthy TVM on every case, pass."""
    from dlgate.backends.base import BackendSpec
    from dlgate.check import CheckConfig, check
    from dlgate.oracle import verdict as V

    pool_cases = _cases(tmp_path, ("If", "Neg"), 80, "ctl-inject")
    hit = [c for c in pool_cases if c.search["valid"] and "Sigmoid" in _taken_branches(c)][:3]
    miss = [c for c in pool_cases if c.search["valid"] and "Sigmoid" not in _taken_branches(c)][:2]
    assert len(hit) == 3 and miss
    broken = BackendSpec("tvm", options=(("extra_passes", ("dlgate.backends.testing:sigmoid_to_tanh",)),))
    cfg = CheckConfig([broken, BackendSpec("tvm")], crosscheck=False)
    caught = 0
    for case in hit + miss:
        assert "Sigmoid" not in case.graph.op_names()  # only inside bodies
        bad, healthy = check(workers, case, cfg)["verdicts"]
        assert healthy["verdict"] == V.PASS, (case.id, healthy)
        if _with_sigmoid_as_tanh(case):
            caught += 1
            assert bad["verdict"] == V.MISMATCH, (case.id, bad)
            assert bad["signature"]["id"] and bad["comparison"]["max_abs"] > 0
        else:
            assert bad["verdict"] == V.PASS, (case.id, bad)
    assert caught >= 2


@pytest.mark.parametrize("name", ["If", "Loop", "Scan"])
def test_reducer_attribute_changes_are_refused_or_valid(name):
    """The reducer halves integer attributes and probes other regimes: each changed
    instance is either refused by ``requires`` or still a valid model that runs alike."""
    from dlgate.reduce.reducer import _smaller, alternatives

    spec = get(name)
    tried = accepted = 0
    for seed in range(3):
        a, ins = _sample(name, "float32", 21, seed=seed)
        for key, v in sorted(a.items()):
            for alt in alternatives(v) + [_smaller(v)]:
                if alt is None or alt == v:
                    continue
                b = dict(a, **{key: alt})
                tried += 1
                if all_true(spec.requires(ins, b)):
                    accepted += 1
                    _check(name, b, ins, 21)
    assert tried > accepted > 0
