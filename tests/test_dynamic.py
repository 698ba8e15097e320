"""Dynamic shapes: graphs with symbolic input dimensions, checked at several bindings with
one compile; a backend specialized on its first shape is caught at the second."""
from __future__ import annotations

import random

import onnx
import pytest

from dlgate.backends.base import BackendSpec
from dlgate.case import make_case
from dlgate.check import CheckConfig, check, prepare
from dlgate.exec.worker import Pool
from dlgate.graph import dynamic
from dlgate.graph.generator import GenConfig, Generator
from dlgate.graph.ir import Graph
from dlgate.oracle import verdict as V

OPS = ("Add", "Mul", "Relu", "Tanh", "Transpose", "ReduceSum", "MatMul", "Softmax")


def _cases(n=24, share=1.0, ops=OPS):
    gen = Generator(GenConfig(ops=ops, dtypes=("float32",), max_nodes=5, opset=18, dynamic_share=share))
    return [make_case(gen, "dyn", "test", i) for i in range(n)]


def test_a_share_of_graphs_is_dynamic_and_each_binding_type_checks():
    cases = _cases(40)
    dyn = [c for c in cases if c.graph.dynamic]
    assert len(dyn) >= 10
    for c in dyn:
        g = c.graph
        binds = dynamic.bindings(g)
        assert len(binds) >= 2 and len({tuple(sorted(b.items())) for b in binds}) == len(binds)
        for k in range(1, len(binds)):
            gk = dynamic.at(g, k)
            for pos, axis, sym in g.dynamic["dims"]:
                assert gk.tensors[gk.inputs[pos]].shape[axis] == binds[k][sym]
        m = onnx.load_from_string(c.model_bytes)
        onnx.checker.check_model(m, full_check=True)
        declared = {(i.name, a): d.dim_param for i in m.graph.input for a, d in enumerate(i.type.tensor_type.shape.dim)}
        for pos, axis, sym in g.dynamic["dims"]:
            assert declared[(g.name(g.inputs[pos]), axis)] == sym


def test_the_share_is_honoured_and_static_graphs_do_not_change():
    static = _cases(30, share=0.0)
    mixed = _cases(30, share=0.25)
    assert not any(c.graph.dynamic for c in static)
    n = sum(bool(c.graph.dynamic) for c in mixed)
    assert 2 <= n <= 15
    for a, b in zip(static, mixed):  # the graph is drawn first: only the declared dims differ
        assert a.graph.op_names() == b.graph.op_names()
        if not b.graph.dynamic:
            assert a.model_bytes == b.model_bytes


def test_dynamic_graphs_are_deterministic_and_round_trip():
    a, b = _cases(12), _cases(12)
    assert [c.model_bytes for c in a] == [c.model_bytes for c in b]
    for c in a:
        g = Graph.from_json(c.graph.to_json(), c.graph.values)
        assert g.dynamic == c.graph.dynamic


def test_a_reshape_to_a_constant_shape_keeps_the_graph_static():
    gen = Generator(GenConfig(ops=("Reshape",), dtypes=("float32",), max_nodes=1, opset=18))
    g = gen.generate(3)
    # Reshape's target is a constant: a different batch size breaks it unless it is all -1/0
    d = dynamic.make_dynamic(g, random.Random(0))
    for k in range(1, len(dynamic.bindings(d))):
        gk = dynamic.at(d, k)
        assert gk.tensors[gk.outputs[0]].numel == gk.tensors[gk.inputs[0]].numel


@pytest.fixture(scope="module")
def prepared():
    out = []
    for c in _cases(16):
        if c.graph.dynamic:
            p = prepare(c.meta(), c.graph, c.model_bytes)
            if p.shapes and p.search["valid"]:
                out.append(p)
    assert len(out) >= 4
    return out[:6]


def test_correct_backends_pass_at_every_binding(prepared):
    cfg = CheckConfig([BackendSpec("onnxruntime"), BackendSpec("tvm")], crosscheck=False)
    with Pool(timeout_s=120) as pool:
        for case in prepared:
            rec = check(pool, case, cfg)
            assert len(rec["shapes"]) == 1 + len(case.shapes)
            for v in rec["verdicts"]:
                assert v["verdict"] in (V.PASS, V.UNSUPPORTED), (case.id, v)
                if v["verdict"] == V.UNSUPPORTED:
                    assert "symbolic input dimensions" in v["detail"]


def test_a_backend_specialized_on_the_first_shape_is_caught_at_the_second(prepared):
    cfg = CheckConfig([BackendSpec("tests.fake_backends:FirstShape"), BackendSpec("onnxruntime")], crosscheck=False)
    with Pool(timeout_s=120) as pool:
        for case in prepared:
            broken, healthy = check(pool, case, cfg)["verdicts"]
            assert healthy["verdict"] == V.PASS, (case.id, healthy)
            assert broken["verdict"] in V.FAILURES, (case.id, broken)
            assert broken["shape"]["index"] >= 1 and "compiled for symbolic shapes" in broken["detail"]


def test_a_static_case_runs_once():
    c = next(c for c in _cases(8, share=0.0))
    p = prepare(c.meta(), c.graph, c.model_bytes)
    assert p.shapes == []
    with Pool(timeout_s=60) as pool:
        rec = check(pool, p, CheckConfig([BackendSpec("tests.fake_backends:FirstShape")], crosscheck=False))
    assert "shapes" not in rec and rec["verdicts"][0]["verdict"] == V.PASS and "shape" not in rec["verdicts"][0]
