"""Reduction to the cause: every operator, input and attribute left in a repro is needed.

Hand-built graphs on backends with injected faults (defined here, loaded by name in the
worker processes): onnxruntime's answers, except where the fault fires.
"""
from __future__ import annotations

import numpy as np
import pytest

from dlgate.backends.base import BackendSpec
from dlgate.check import CheckConfig, Prepared, check
from dlgate.exec.worker import Pool
from dlgate.graph.ir import Graph, Node
from dlgate.materialize.onnx_model import to_onnx
from dlgate.ops.base import TensorType
from dlgate.oracle import signature as S
from dlgate.oracle import verdict as V
from dlgate.reduce.identity import identity
from dlgate.reduce.reducer import Reducer, Target, alternatives, cut_map, intermediates
from tests.reduce_backends import ConstFoldMod, NamesFirstOp, PrintsConstants, DtypeLeak, PositiveSlope, NoLayerNorm


def _spec(cls) -> BackendSpec:
    return BackendSpec(f"tests.reduce_backends:{cls.__name__}")


def _case(name: str, graph: Graph, inputs: list) -> Prepared:
    model = to_onnx(graph, 7, doc=name).SerializeToString()
    return Prepared(name, {"id": name, "seed": 7}, graph, model, inputs, {"valid": True, "method": "test", "reason": ""})


def _f32(shape, lo, hi, seed):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)


def log_mod_case() -> Prepared:
    """``y = Mod(Log(c1), c2) + Relu(x)``: the Log before the Mod is unrelated to the bug."""
    f = lambda *s: TensorType("float32", s)  # noqa: E731
    # t0 x, t1 c1, t2 c2, t3 log, t4 mod, t5 relu, t6 y
    g = Graph([f(2, 4), f(2, 4), f(2, 4), f(2, 4), f(2, 4), f(2, 4), f(2, 4)],
              [Node("Log", {}, [1], [3]), Node("Mod", {}, [3, 2], [4]), Node("Relu", {}, [0], [5]),
               Node("Add", {}, [4, 5], [6])],
              inputs=[0], consts=[1, 2], outputs=[6], opset=18,
              values={1: _f32((2, 4), 2.0, 9.0, 1), 2: _f32((2, 4), 0.3, 0.7, 2)})
    return _case("logmod", g, [_f32((2, 4), -1.0, 1.0, 3)])


def relu_mul_case() -> Prepared:
    """``y = Neg(Mul(Relu(x), c))``: only the Mul matters to the fault."""
    f = lambda *s: TensorType("float32", s)  # noqa: E731
    g = Graph([f(3, 4), f(3, 4), f(3, 4), f(3, 4), f(3, 4)],
              [Node("Relu", {}, [0], [2]), Node("Mul", {}, [2, 1], [3]), Node("Neg", {}, [3], [4])],
              inputs=[0], consts=[1], outputs=[4], opset=18, values={1: _f32((3, 4), 0.5, 1.5, 4)})
    return _case("relumul", g, [_f32((3, 4), -1.0, 1.0, 5)])


def chain_case() -> Prepared:
    """``Reciprocal(Neg(Floor(Abs(x))))`` and an unrelated ``Sigmoid(x)``."""
    f = lambda *s: TensorType("float32", s)  # noqa: E731
    g = Graph([f(2, 3)] * 6,
              [Node("Abs", {}, [0], [1]), Node("Floor", {}, [1], [2]), Node("Sigmoid", {}, [0], [3]),
               Node("Neg", {}, [2], [4]), Node("Reciprocal", {}, [4], [5])],
              inputs=[0], consts=[], outputs=[5, 3], opset=18)
    return _case("chain", g, [_f32((2, 3), 2.0, 5.0, 8)])


def hard_sigmoid_case() -> Prepared:
    """``y = HardSigmoid(Abs(x); alpha=0.25, beta=0.5)``."""
    f = lambda *s: TensorType("float32", s)  # noqa: E731
    g = Graph([f(2, 3), f(2, 3), f(2, 3)],
              [Node("Abs", {}, [0], [1]), Node("HardSigmoid", {"alpha": 0.25, "beta": 0.5}, [1], [2])],
              inputs=[0], consts=[], outputs=[2], opset=18)
    return _case("hardsigmoid", g, [_f32((2, 3), -1.0, 1.0, 6)])


def layer_norm_case() -> Prepared:
    """A LayerNormalization over one element: its variance is 0, so an epsilon of 0 or
    below leaves the reference NaN, and the epsilon's regime cannot be probed."""
    f = lambda *s: TensorType("float32", s)  # noqa: E731
    g = Graph([f(2, 1), f(1), f(1), f(2, 1)],
              [Node("LayerNormalization", {"epsilon": 1e-5, "axis": -1}, [0, 1, 2], [3])],
              inputs=[0], consts=[1, 2], outputs=[3], opset=18,
              values={1: np.ones(1, np.float32), 2: np.full(1, 0.5, np.float32)})
    return _case("layernorm", g, [_f32((2, 1), -1.0, 1.0, 9)])


def _reduce(pool, spec, case, **kw):
    cfg = CheckConfig([spec], crosscheck=False)
    v = check(pool, case, cfg)["verdicts"][0]
    assert v["verdict"] in V.FAILURES, v
    target = kw.pop("target", None) or Target.of(spec, v)
    return Reducer(pool, cfg, target, **kw).reduce(case), v


@pytest.fixture(scope="module")
def pool():
    with Pool(120) as p:
        yield p


def test_a_removed_first_operator_is_fed_as_a_constant_when_the_bug_needs_one():
    case = log_mod_case()
    env = intermediates(case.graph, case.inputs)
    g, feeds, order = cut_map(case.graph, env, [1], as_const=[3], need_input=False)
    assert [n.op for n in g.nodes] == ["Mod"] and g.inputs == [] and feeds == [] and len(g.consts) == 2
    assert np.array_equal(g.values[g.nodes[0].inputs[0]], env[3]) and order[:2] == [3, 2]
    g, feeds, _ = cut_map(case.graph, env, [1])  # as an input by default
    assert len(g.inputs) == 1 and np.array_equal(feeds[0], env[3])


def test_an_unrelated_operator_before_the_faulty_one_is_removed(pool):
    res, _ = _reduce(pool, _spec(ConstFoldMod), log_mod_case())
    g = res.case.graph
    assert g.op_names() == ["Mod"], res.log
    assert g.inputs == [] and len(g.consts) == 2, res.log  # the fold needs both operands constant
    assert res.verdict.verdict == V.COMPILE_ERROR and not res.hit_limit
    assert all(d == 1 for t in g.consts for d in g.tensors[t].shape), res.log  # constants shrunk too
    assert res.matter == [set()]


def test_an_error_naming_the_operator_reduces_by_its_cluster(pool):
    spec = _spec(NamesFirstOp)
    res, v = _reduce(pool, spec, relu_mul_case())
    assert res.case.graph.op_names() == ["Mul"], res.log
    # the message now names Mul, not Relu: another signature, the same cluster
    assert res.verdict.signature["id"] != v["signature"]["id"]
    assert S.cluster(res.verdict.verdict, spec.name, res.verdict.error)["id"] == Target.of(spec, v).cluster
    # a target of the exact signature (the old behaviour) must keep the first operator
    exact = Target(spec, v["verdict"], v["signature"]["id"])
    old, _ = _reduce(pool, spec, relu_mul_case(), target=exact)
    assert old.case.graph.op_names() == ["Relu", "Mul"], old.log
    assert old.verdict.signature["id"] == v["signature"]["id"]


def test_operators_between_a_wrong_dtype_and_where_it_breaks_are_short_circuited(pool):
    res, _ = _reduce(pool, _spec(DtypeLeak), chain_case())
    g = res.case.graph
    assert g.op_names() == ["Abs", "Reciprocal"], res.log
    assert g.nodes[1].inputs == g.nodes[0].outputs and len(g.inputs) == 1, res.log
    assert any("short-circuited" in line for line in res.log)


def test_a_fed_input_becomes_a_constant_only_where_the_failure_stays_exactly_the_same(pool):
    res, _ = _reduce(pool, _spec(NamesFirstOp), relu_mul_case())
    assert res.case.graph.inputs == [] and "input t0 as a constant" in res.log  # fewer graph inputs
    res, v = _reduce(pool, _spec(PrintsConstants), relu_mul_case())
    g = res.case.graph
    assert g.op_names() == ["Mul"] and len(g.inputs) == 1, res.log  # a constant would change the message
    assert res.verdict.signature["id"] == v["signature"]["id"]


def test_only_the_attribute_the_fault_depends_on_matters(pool):
    spec = _spec(PositiveSlope)
    res, _ = _reduce(pool, spec, hard_sigmoid_case())
    g = res.case.graph
    assert g.op_names() == ["HardSigmoid"], res.log
    assert res.matter == [{"alpha"}], res.log
    assert g.nodes[0].attrs["beta"] == 0.5  # the repro keeps its values
    ident = identity(V.MISMATCH, spec.name, None, g, matter=res.matter)
    assert "alpha=+" in ident["typed"] and "beta" not in ident["typed"]
    # so a beta of another regime is the same bug
    other = Graph(g.tensors, [Node("HardSigmoid", dict(g.nodes[0].attrs, beta=-0.5), g.nodes[0].inputs,
                                   g.nodes[0].outputs)], g.inputs, g.consts, g.outputs, g.opset)
    assert identity(V.MISMATCH, spec.name, None, other, matter=res.matter)["fingerprint"] == ident["fingerprint"]


def test_an_attribute_whose_other_regimes_cannot_be_judged_does_not_matter(pool):
    res, _ = _reduce(pool, _spec(NoLayerNorm), layer_norm_case())
    assert res.case.graph.op_names() == ["LayerNormalization"]
    assert res.matter == [set()], res.log
    assert "LayerNormalization.epsilon does not matter: no other regime can be judged here" in res.log
    assert res.case.graph.nodes[0].attrs["epsilon"] > 0


def test_reduction_is_deterministic(pool):
    runs = [_reduce(pool, _spec(ConstFoldMod), log_mod_case())[0] for _ in range(2)]
    a, b = runs
    assert a.case.model == b.case.model and a.log == b.log and a.matter == b.matter and a.probes == b.probes
    assert len(a.case.inputs) == len(b.case.inputs)
    assert all(np.array_equal(x, y) for x, y in zip(a.case.inputs, b.case.inputs))


def test_alternatives_cover_other_regimes_in_a_fixed_order():
    assert alternatives(True) == [False]
    assert alternatives(3) == [1, 0, -1, -2]
    assert alternatives(0.5) == [-0.5, 0.0] and alternatives(0.0) == [1.0, -1.0]
    assert alternatives([0, 2])[:4] == [[1, 2], [2, 2], [-1, 2], [-2, 2]]
    assert alternatives("same_upper") == [] and alternatives(list(range(9))) == []


def test_target_of_a_verdict_matches_by_cluster_for_errors_only():
    spec = BackendSpec("tvm")
    err = {"type": "TVMError", "message": "In Relu: Binary operators must have the same datatype, got float32",
           "frames": ["a.py:f"]}
    v = V.Verdict("tvm[cpu]", V.COMPILE_ERROR, "x", S.signature(V.COMPILE_ERROR, "tvm", err), error=err)
    t = Target.of(spec, v)
    assert t.cluster == S.cluster(V.COMPILE_ERROR, "tvm", err)["id"] and t.signature == v.signature["id"]
    err2 = dict(err, message="In Mul: Binary operators must have the same datatype, got float16")
    v2 = V.Verdict("tvm[cpu]", V.COMPILE_ERROR, "x", S.signature(V.COMPILE_ERROR, "tvm", err2), error=err2)
    assert t.matches(v2) and not Target(spec, V.COMPILE_ERROR, v.signature["id"]).matches(v2)
    m = Target.of(spec, V.Verdict("tvm[cpu]", V.MISMATCH, "", {"id": "x"}))
    assert m.cluster is None and m.matches(V.Verdict("tvm[cpu]", V.MISMATCH, "", {"id": "y"}))


def test_a_reduction_stays_within_its_time_bound_even_when_probes_are_slow():
    """Every probe of this backend takes 3 s and the workers' timeout is 120 s: the
    reduction's bound (2 s) still holds, to within a probe's grace, because no probe may
    run past it."""
    import time

    spec = BackendSpec("tests.fake_backends:SlowCompile", options=(("seconds", 3.0),))
    case = chain_case()
    with Pool(120) as slow:
        cfg = CheckConfig([spec], crosscheck=False)
        import os

        os.environ["FAKE_BUG"] = "1"
        try:
            v = check(slow, case, cfg)["verdicts"][0]
            assert v["verdict"] == V.MISMATCH
            t0 = time.perf_counter()
            try:  # the bound cuts even the first probe: the gate then identifies the whole case
                Reducer(slow, cfg, Target.of(spec, v), max_seconds=2).reduce(case)
            except ValueError:
                pass
            took = time.perf_counter() - t0
        finally:
            os.environ.pop("FAKE_BUG", None)
    assert took < 2 + 2, took
    assert slow.deadline is None  # the bound is the reduction's only


def test_an_attribute_value_the_lowering_cannot_write_is_not_a_candidate():
    """Regime probes try values a spec never draws; one its lowering cannot write (a
    negative scale under a square root) is skipped, not a crash of the reducer."""
    from dlgate.probe.single import single_op_graph
    from dlgate.reduce.reducer import reattributed

    g = single_op_graph("AttentionIdiom", ("float32",) * 3, 18, 0)
    a = dict(g.nodes[0].attrs)
    assert reattributed(g, 0, dict(a, scale=0.5)) is not None
    assert reattributed(g, 0, dict(a, scale=-1.0)) is None
