"""Reduction: a failing case shrinks while its failure keeps its class and signature."""
from __future__ import annotations

import json
import os

import pytest
import yaml

from dlgate.backends.base import BackendSpec
from dlgate.case import make_case
from dlgate.check import CheckConfig, check, load_bundle, prepare, save_bundle
from dlgate.cli import main
from dlgate.exec.worker import Pool
from dlgate.gate.journal import read_records
from dlgate.graph.generator import GenConfig, Generator
from dlgate.reduce.candidates import cut, intermediates
from dlgate.reduce.reducer import Reducer, Target
from tests.helpers import draw_cases, seed_where_pinned

BROKEN = BackendSpec("tvm", options=(("extra_passes", ("dlgate.backends.testing:sigmoid_to_tanh",)),))


def _sigmoid_cases(n):
    gen = Generator(GenConfig(min_nodes=6, max_nodes=10, dtypes=("float32",), opset=18,
                              ops=("Sigmoid", "Add", "Relu", "Mul", "Abs", "Neg", "Tanh", "Exp", "Sub")))
    return draw_cases(gen, "reduce", "r", n, where=lambda c: "Sigmoid" in c.graph.op_names(),
                      keep=lambda p: p.search["valid"], tries=300)


def test_cut_feeds_the_reference_values_so_kept_operators_see_the_same_inputs():
    case = _sigmoid_cases(1)[0]
    env = intermediates(case.graph, case.inputs)
    last = len(case.graph.nodes) - 1
    g, feeds = cut(case.graph, env, [last])
    assert [n.op for n in g.nodes] == [case.graph.nodes[last].op]
    sub = intermediates(g, feeds)
    for t_new, t_old in zip(g.nodes[0].outputs, case.graph.nodes[last].outputs):
        assert (sub[t_new] == env[t_old]).all()


def test_injected_miscompilation_reduces_to_the_sigmoid(tmp_path):
    cfg = CheckConfig([BROKEN], crosscheck=False)
    with Pool(120) as pool:
        reduced = 0
        for case in _sigmoid_cases(3):
            v = check(pool, case, cfg)["verdicts"][0]
            if v["verdict"] != "mismatch":
                continue
            res = Reducer(pool, cfg, Target(BROKEN, "mismatch")).reduce(case)
            assert res.case.graph.op_names() == ["Sigmoid"], res.log
            assert res.verdict.verdict == "mismatch" and res.original_nodes >= 6
            assert res.matter == [set()]  # one entry per kept operator; Sigmoid has no attributes
            reduced += 1
    assert reduced >= 2


def test_reduce_command_writes_a_reduced_case_that_still_fails(tmp_path):
    cfg = CheckConfig([BROKEN], crosscheck=False)
    with Pool(120) as pool:
        case = next(c for c in _sigmoid_cases(4) if check(pool, c, cfg)["verdicts"][0]["verdict"] == "mismatch")
    d = save_bundle(str(tmp_path), case)
    # the injected backend is named through the bundle's own check, so reduce with the real
    # TVM is "nothing to reduce" (exit 1), and the broken one through the Python API
    assert main(["reduce", d, "--backend", "onnxruntime"]) == 1
    with Pool(120) as pool:
        res = Reducer(pool, cfg, Target(BROKEN, "mismatch")).reduce(load_bundle(d))
        out = save_bundle(str(tmp_path), res.case, subdir="reduced")
        again = check(pool, load_bundle(out), cfg)["verdicts"][0]
    assert again["verdict"] == "mismatch"
    assert json.load(open(os.path.join(out, "meta.json")))["graph"]["nodes"][0]["op"] == "Sigmoid"


def test_an_error_reduces_without_leaving_the_domain_the_spec_defines():
    # a compiler error kept whatever the values: rounding a scale of 1/64 to one decimal makes it 0,
    # which still raises it, but x / 0 has no integer in ONNX, and a repro resting on it would go on
    # failing (on its values) once the error is fixed
    import numpy as np

    from dlgate.oracle import ub

    spec = BackendSpec("tests.fake_backends:QuantRaises")
    cfg = CheckConfig([spec], crosscheck=False)
    gen = Generator(GenConfig(ops=("QuantizeLinear",), min_nodes=1, max_nodes=1, dtypes=("float32",), opset=21))
    reduced = 0
    with Pool(120) as pool:
        for i in range(200):
            c = make_case(gen, "reduce", "q", i)
            scale = c.graph.nodes[0].attrs["scale"]
            if not isinstance(scale, float) or scale >= 0.05:
                continue  # a scale that rounds to 0 at one decimal
            case = prepare(c.meta(), c.graph, c.model_bytes)
            v = check(pool, case, cfg)["verdicts"][0]
            assert v["verdict"] == "compile_error", v
            res = Reducer(pool, cfg, Target.of(spec, v)).reduce(case)
            g = res.case.graph
            assert g.op_names() == ["QuantizeLinear"], res.log
            assert ub.undefined_values(g, res.case.inputs) is None, res.log
            assert np.asarray(g.nodes[0].attrs["scale"]).all(), res.log
            reduced += 1
            if reduced == 2:
                break
    assert reduced == 2


def test_a_failure_that_needs_symbolic_dims_reduces_keeping_them():
    # the candidates keep the case's declared symbolic input dims (run at its first binding),
    # so a failure of a rewrite that fires only on unknown shapes survives the cuts
    from dlgate.materialize.onnx_model import to_onnx

    spec = BackendSpec("tests.fake_backends:SymbolicSigmoidFails")
    gen = Generator(GenConfig(min_nodes=4, max_nodes=6, dtypes=("float32",), opset=18, dynamic_share=1.0,
                              ops=("Sigmoid", "Add", "Relu", "Mul", "Abs", "Neg", "Tanh")))
    cfg = CheckConfig([spec], crosscheck=False)
    done = 0
    with Pool(60) as pool:
        for i in range(60):
            c = make_case(gen, "symred", "r", i)
            if "Sigmoid" not in c.graph.op_names() or not c.graph.dynamic or len(c.graph.nodes) < 4:
                continue
            case = prepare(c.meta(), c.graph, c.model_bytes)
            v = check(pool, case, cfg)["verdicts"][0]
            if v["verdict"] != "run_error":
                continue
            res = Reducer(pool, cfg, Target.of(spec, v)).reduce(case)
            # the Sigmoid, and at most the one operator between it and a symbolic graph input (a
            # cut feeds a tensor of the case as a new, static input)
            ops = res.case.graph.op_names()
            assert "Sigmoid" in ops and len(ops) <= 2 < len(case.graph.nodes), res.log
            assert res.case.graph.dynamic and res.case.graph.dynamic["bindings"] == []
            m = to_onnx(res.case.graph, 1)
            assert any(d.dim_param for i in m.graph.input for d in i.type.tensor_type.shape.dim)
            done += 1
            if done == 2:
                break
    assert done == 2


def _quant_case(tmp_path):
    """A bundle of a case holding a QuantizeLinear among at least three operators."""
    gen = Generator(GenConfig(ops=("QuantizeLinear", "Relu", "Abs", "Neg", "Add"), min_nodes=3, max_nodes=5,
                              dtypes=("float32",), opset=21))
    def wanted(c) -> bool:
        ops = c.graph.op_names()
        if "QuantizeLinear" not in ops or len(ops) < 3:
            return False
        scale = c.graph.nodes[ops.index("QuantizeLinear")].attrs.get("scale")
        return isinstance(scale, float) and scale >= 0.05  # a scale no rounding makes 0

    (case,) = draw_cases(gen, "reduce", "cli", where=wanted, keep=lambda p: True)
    return save_bundle(str(tmp_path), case)


def test_reduce_command_shrinks_a_failing_case_to_its_cause_and_writes_it(tmp_path, capsys):
    d = _quant_case(tmp_path)
    before = json.load(open(os.path.join(d, "meta.json")))
    out = str(tmp_path / "small")
    assert main(["reduce", d, "--backend", "tests.fake_backends:QuantRaises", "--out", out]) == 0
    meta = json.load(open(os.path.join(out, "meta.json")))
    assert meta["operators"] == ["QuantizeLinear"] and meta["id"] == "small" and meta["reduced_from"] == before["id"]
    red = meta["reduction"]
    assert red["verdict"] == "compile_error" and red["nodes"] == 1 and red["original_nodes"] == before["nodes"] >= 3
    assert f"{before['nodes']} -> 1 operators (QuantizeLinear), still compile_error" in capsys.readouterr().out
    cfg = CheckConfig([BackendSpec("tests.fake_backends:QuantRaises")], crosscheck=False)
    with Pool(120) as pool:  # the written case fails as the original did
        assert check(pool, load_bundle(out), cfg)["verdicts"][0]["verdict"] == "compile_error"


def test_reduce_command_says_when_a_failure_does_not_reproduce(tmp_path, capsys):
    # Flaky is wrong on every other compilation: the check sees a mismatch, the reduction's
    # first run of the same case does not; one line and exit status 1, not an internal error
    d = save_bundle(str(tmp_path), _sigmoid_cases(1)[0])
    assert main(["reduce", d, "--backend", "tests.fake_backends:Flaky", "--out", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "failed (mismatch) but not when run again" in err and "does not reproduce" in err
    assert "internal error" not in err and not os.path.exists(tmp_path / "r")


def _gathernd(batch_dims: int) -> bytes:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])
    i = helper.make_tensor("i", TensorProto.INT64, [2, 3, 1], [0, 1, 0, 1, 0, 1])
    n = helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=batch_dims)
    g = helper.make_graph([n], "g", [x], [y], [i])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def test_a_candidate_that_kills_onnx_checker_is_invalid_and_the_run_goes_on():
    """onnx's shape inference dies by SIGSEGV on GatherND with batch_dims -2 (onnx 1.23): in
    the reducer's own process that ended `dlgate run` (exit 139). The check runs in a forked
    child: such a candidate is only not valid."""
    from dlgate.reduce.candidates import _checks

    assert _checks(_gathernd(-2)) is False
    assert _checks(_gathernd(0)) is False  # an ordinary rejection (the output shape is wrong)
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    ok = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]),
                           opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    assert _checks(ok) is True


#: Hangs on Neg and Abs together (a hang needing two operators, as a campaign's did).
HANG = BackendSpec("tests.fake_backends:HangsOn", options=(("hang", "Abs,Neg"),))
#: Hangs only with Neg and Abs together; Neg alone is merely slow (2 s, within the 4 s timeout).
SLOW = BackendSpec("tests.fake_backends:HangsOn", options=(("hang", "Abs,Neg"), ("slow", "Neg"), ("slow_s", "2")))


def _hang_case():
    gen = Generator(GenConfig(min_nodes=5, max_nodes=7, dtypes=("float32",), opset=18,
                              ops=("Neg", "Add", "Relu", "Mul", "Abs", "Tanh", "Sub")))
    return draw_cases(gen, "hang", "h", 1, where=lambda c: {"Neg", "Abs"} <= set(c.graph.op_names())
                      and len(c.graph.nodes) >= 5, keep=lambda p: p.search["valid"], tries=300)[0]


def test_a_hang_is_reduced_with_short_probes_and_confirmed_with_the_full_timeout(monkeypatch):
    """A compile that hangs on Abs and Neg together, in a 5-7 operator case, a 4 s timeout
    and an 8 s bound: probed at the full timeout, two candidates that still hang fit the
    bound; probed at 0.5 s (``HANG_PROBE_S``), the case reduces to Abs and Neg, which is then
    run once with the full timeout and still gives no answer."""
    from dlgate.reduce import hang

    monkeypatch.setattr(hang, "HANG_PROBE_S", 0.5)
    case = _hang_case()
    cfg = CheckConfig([HANG], crosscheck=False)
    with Pool(4) as pool:
        v = check(pool, case, cfg)["verdicts"][0]  # the triage's timeout, at the full 4 s
        assert v["verdict"] == "timeout", v
        res = Reducer(pool, cfg, Target.of(HANG, v), max_seconds=8).reduce(case)
    assert sorted(res.case.graph.op_names()) == ["Abs", "Neg"], res.log
    assert res.verdict.verdict == "timeout" and res.verdict.error["message"] == "no answer within 4 s", res.verdict
    assert res.log[-1] == "hang: probed with a 0.5 s timeout; the reduced case gives no answer within the full 4 s either"
    assert res.seconds >= 4  # the confirmation's full timeout counts in the reduction's time


@pytest.mark.parametrize("zero, reused", [("Abs,Neg", True), ("Relu", False)])
def test_a_hang_reduced_at_one_level_stands_for_the_same_case_at_another_once_it_hangs_there(
        tmp_path, monkeypatch, zero, reused):
    """A case hanging on Abs and Neg together at both levels of a backend (``tvm`` and
    ``tvm@zero`` in TVM's importer): the default level's hang is reduced, and the zero level's
    reuses that reduction after one run of the reduced case there, which hangs too. Where the
    zero level hangs on Relu instead (another hang), the reduced case answers there, so that
    level's hang is reduced itself: two causes."""
    from dlgate.reduce import hang

    monkeypatch.setattr(hang, "HANG_PROBE_S", 0.3)
    monkeypatch.chdir(tmp_path)
    be = "tests.fake_backends:HangsOnLevels"
    opts = {"hang": "Abs,Neg", "hang_zero": zero}
    doc = {"campaign": "levels", "models": 1, "min_nodes": 3, "max_nodes": 3, "opset": 18,
           "operators": ["Neg", "Abs", "Relu"], "dtypes": ["float32"], "crosscheck": False,
           "backends": [{"name": be, "options": opts}, {"name": be, "opt_level": "zero", "options": opts}],
           "timeout_s": 1, "confirm_runs": 0, "findings_per_case": 1}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(doc))
    seed = seed_where_pinned("c.yaml", lambda b: {"Neg", "Abs", "Relu"} == set(b[0].graph.op_names()), "lv", "lv1")
    assert main(["run", "--config", "c.yaml", "--seed", seed, "--out", "o"]) == 1
    (rec,) = read_records("o/results.jsonl")
    default, at_zero = rec["verdicts"]
    assert (default["verdict"], at_zero["verdict"]) == ("timeout", "timeout")
    assert sorted(default["identity"]["pattern"].split(">")) == ["Abs", "Neg"], default["identity"]
    assert ("reused" in at_zero["identity"]["reduction"]) is reused, at_zero["identity"]
    if reused:
        assert at_zero["identity"]["cluster"] == default["identity"]["cluster"]
    else:
        assert at_zero["identity"]["pattern"] == "Relu" and at_zero["identity"]["cluster"] != default["identity"]["cluster"]


def test_a_case_slow_but_not_hung_once_reduced_leaves_the_original_standing(monkeypatch):
    """Where the short probes keep a candidate that is only slow (Neg alone: 2 s), its run
    with the full timeout answers: it is no hang, and the original case, which does hang,
    stands as the reduction."""
    from dlgate.reduce import hang

    monkeypatch.setattr(hang, "HANG_PROBE_S", 0.5)
    case = _hang_case()
    cfg = CheckConfig([SLOW], crosscheck=False)
    with Pool(4) as pool:
        v = check(pool, case, cfg)["verdicts"][0]
        assert v["verdict"] == "timeout", v
        res = Reducer(pool, cfg, Target.of(SLOW, v), max_seconds=8).reduce(case)
    assert res.case is case and res.original_nodes == len(case.graph.nodes), res.log
    assert res.verdict.verdict == "timeout" and res.verdict.error["message"] == "no answer within 4 s"
    assert res.log[-1] == ("hang: the case reduced with 0.5 s probes gave an answer within the full 4 s (slow, not hung): "
                           "the original case stands"), res.log
    assert res.kept == list(range(len(case.graph.nodes))) and len(res.matter) == len(case.graph.nodes)
    assert res.seconds >= 2 + 4  # the reduced case's 2 s answer and the original's full 4 s timeout
