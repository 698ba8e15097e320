"""More than one finding per case: after a failure (or a refusal) its operators are cut out
and the rest of the model runs again, judged like any case; and generation restricted to
what the backends under test support, recorded with the run."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml

from dlgate.backends.base import BackendSpec
from dlgate.check import CheckConfig, check, load_bundle
from dlgate.cli import main
from dlgate.exec.worker import Pool
from dlgate.gate import config as C
from dlgate.gate import restrict
from dlgate.gate.journal import read_records
from dlgate.graph.generator import GenConfig, Generator
from dlgate.reduce.cutout import cut_out, reference_values, refused, static_tensors
from dlgate.reduce.reducer import Reducer, Target, intermediates
from tests.fake_backends import RefusesAbs, RefusesQuietly
from tests.helpers import draw_cases, onnx_ops, output_cones, seed_where

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS = ["Sigmoid", "Abs", "Add", "Relu", "Mul"]
#: TVM with two independent miscompilations: every Sigmoid result +0.5, every Abs result +1.
TWO_FAULTS = {"name": "tvm", "options": {"extra_passes": ["dlgate.backends.testing:sigmoid_plus_half",
                                                          "tests.fake_backends:abs_plus_one"]}}


def write_config(path, **kw) -> str:
    doc = {"campaign": "mb", "models": 6, "max_nodes": 5, "opset": 18, "operators": OPS, "dtypes": ["float32"],
           "backends": [TWO_FAULTS], "timeout_s": 120, "crosscheck": False, "dynamic_share": 0, "extreme_share": 0,
           "reduce_seconds": 30}
    doc.update(kw)
    p = os.path.join(path, f"cfg-{abs(hash(json.dumps(doc, sort_keys=True))) % 10**8}.yaml")
    with open(p, "w") as f:
        yaml.safe_dump(doc, f)
    return p


def results(out) -> list:
    return read_records(os.path.join(out, "results.jsonl"))


def verdict(out) -> dict:
    with open(os.path.join(out, "verdict.json")) as f:
        return json.load(f)


def findings(rec) -> list:
    """(verdict, typed pattern, fingerprint, cluster) of each finding of a record, first ones first."""
    out = []
    for v in rec["verdicts"]:
        for x in [v] + v.get("more", []):
            if x.get("identity"):
                i = x["identity"]
                out.append((x["verdict"], i["typed"], i["fingerprint"], i["cluster"]))
    return out


@pytest.fixture(scope="module")
def two_faults(tmp_path_factory):
    """One run of the two-fault TVM with findings_per_case 4 (the default), and its config.
    Seed ``two34``'s batch holds models with both faults, one of them with further operators
    (so something is left, and passes, once both faults are cut out), and models with either
    fault alone."""
    d = tmp_path_factory.mktemp("two")
    cfg = write_config(str(d))
    out = str(d / "out")
    assert main(["run", "--config", cfg, "--seed", "two34", "--out", out, "--no-progress"]) == 1
    return cfg, out


# -- the cut ---------------------------------------------------------------------------------------
def _cases(n, ops=tuple(OPS), seed="cut"):
    gen = Generator(GenConfig(min_nodes=4, max_nodes=8, dtypes=("float32",), opset=18, ops=ops))
    return draw_cases(gen, seed, "c", n, keep=lambda p: p.search["valid"] and len(p.graph.nodes) >= 4)


def test_the_rest_is_fed_the_reference_values_of_what_the_cut_operators_made():
    for case in _cases(3):
        env = reference_values(case)
        removed = {0, len(case.graph.nodes) // 2}
        cut, keep = cut_out(case, env, removed, "cut1")
        assert keep == [i for i in range(len(case.graph.nodes)) if i not in removed]
        assert [n.op for n in cut.graph.nodes] == [case.graph.nodes[i].op for i in keep]
        sub = intermediates(cut.graph, cut.inputs)
        for k, i in enumerate(keep):  # every kept operator computes what it computed in the whole model
            for t_new, t_old in zip(cut.graph.nodes[k].outputs, case.graph.nodes[i].outputs):
                np.testing.assert_array_equal(sub[t_new], env[t_old])
    assert cut_out(case, env, set(range(len(case.graph.nodes))), "all") is None  # nothing left


def test_shape_computations_stay_constants_and_computed_data_becomes_inputs():
    from dlgate.check import Prepared
    from dlgate.graph.ir import Graph, Node
    from dlgate.materialize.onnx_model import to_onnx
    from dlgate.reduce.cutout import valid
    from dlgate.ops.base import TensorType

    # x -> Shape -> Neg (int64), x -> Relu -> Abs: cut Shape and Relu
    t = [TensorType("float32", (2, 3)), TensorType("int64", (2,)), TensorType("int64", (2,)),
         TensorType("float32", (2, 3)), TensorType("float32", (2, 3))]
    g = Graph(t, [Node("Shape", {"start": None, "end": None, "lo": 0, "hi": 2}, [0], [1]), Node("Neg", {}, [1], [2]),
                  Node("Relu", {}, [0], [3]), Node("Abs", {}, [3], [4])], [0], [], [2, 4], 18, {})
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    case = Prepared("hand", {"id": "hand", "seed": 1}, g, to_onnx(g, 1).SerializeToString(), [x],
                    {"valid": True, "method": "hand", "reason": ""})
    assert static_tensors(g) == {1, 2}
    cut, keep = cut_out(case, reference_values(case), {0, 2}, "cut1")
    assert keep == [1, 3] and valid(cut)
    neg, abs_ = cut.graph.nodes
    assert neg.inputs[0] in cut.graph.consts  # the shape, known before the run, stays a constant
    np.testing.assert_array_equal(cut.graph.values[neg.inputs[0]], [2, 3])
    assert cut.graph.inputs == [abs_.inputs[0]]  # computed data is a graph input, fed Relu's value
    np.testing.assert_array_equal(cut.inputs[0], np.maximum(x, 0))


def test_a_refusal_names_the_operators_it_refuses():
    case = next(c for c in _cases(20) if any(n.op == "Abs" for n in c.graph.nodes))
    named = refused(case.graph, {"type": "OpNotImplemented", "message": RefusesAbs.message})
    assert named == [i for i, n in enumerate(case.graph.nodes) if n.op == "Abs"]
    onnxruntime = {"type": "NotImplemented", "message": "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find "
                   "an implementation for Abs(13) node with name 'n2_Abs'"}
    assert refused(case.graph, onnxruntime) == named
    assert refused(case.graph, {"message": RefusesQuietly.message}) == []


def test_the_reduction_names_the_operators_of_the_case_it_kept():
    spec = BackendSpec("tvm", options=(("extra_passes", ("dlgate.backends.testing:sigmoid_plus_half",)),))
    cfg = CheckConfig([spec], crosscheck=False)
    case = next(c for c in _cases(30, seed="kept") if sum(n.op == "Sigmoid" for n in c.graph.nodes) == 1)
    with Pool(120) as pool:
        assert check(pool, case, cfg)["verdicts"][0]["verdict"] == "mismatch"
        res = Reducer(pool, cfg, Target(spec, "mismatch"), max_seconds=60).reduce(case)
    assert [case.graph.nodes[i].op for i in res.kept] == ["Sigmoid"], res.log


# -- the gate -----------------------------------------------------------------------------------------
def test_two_independent_faults_in_one_model_are_two_findings_with_distinct_causes(two_faults):
    _, out = two_faults
    both = [r for r in results(out) if {"Sigmoid", "Abs"} <= set(r["operators"])]
    assert both, "the batch should hold models with both faulty operators"
    assert any(set(r["operators"]) - {"Sigmoid", "Abs"} for r in both), "and one with further operators"
    for rec in both:
        got = findings(rec)
        assert len(got) == 2, (rec["case"], got, rec["verdicts"][0].get("residual"))
        assert {g[1].split("(")[0] for g in got} == {"Sigmoid", "Abs"}
        assert len({g[2] for g in got}) == 2 and len({g[3] for g in got}) == 2  # distinct fingerprints, causes
        v = rec["verdicts"][0]
        x = v["more"][0]
        # with both faults cut out, what is left passes; a model of faulty operators alone has nothing left
        rest = "the rest passes" if set(rec["operators"]) - {"Sigmoid", "Abs"} else "nothing left to run"
        assert x["confirm"]["reproduced"] and x["cut"] and v["residual"]["stopped"] == rest, (rec["case"], v["residual"])
        assert os.path.isfile(os.path.join(out, x["bundle"], "model.onnx"))
        assert load_bundle(os.path.join(out, x["bundle"])).graph.nodes  # a case folder dlgate check can run
        assert os.path.isfile(os.path.join(out, x["identity"]["repro"], "repro.py"))
        assert not {"compile_s", "run_s", "wall_s", "rewrites"} & set(x)  # timings go to timings.jsonl
    for rec in results(out):  # one fault alone: the rest passes, nothing more is claimed
        if len({"Sigmoid", "Abs"} & set(rec["operators"])) == 1:
            assert len(findings(rec)) == 1 and "more" not in rec["verdicts"][0]
    v = verdict(out)
    assert {g["typed"].split("(")[0] for g in v["new"]} == {"Sigmoid", "Abs"} and v["clusters"] == 2
    assert v["findings_behind"] == len(both) and sum(g["behind"] for g in v["new"]) == len(both)
    names = [tc.get("name") for tc in ET.parse(os.path.join(out, "junit.xml")).iter("testcase")
             if tc.find("failure") is not None]
    assert sum(n.endswith("/finding-2") for n in names) == len(both)
    text = open(os.path.join(out, "summary.md")).read()
    assert "of its case, behind another failure" in text
    assert f"{len(both)} of the {sum(len(g['cases']) for g in v['new'])} failures below were found that way" in text


def test_findings_per_case_1_stops_at_the_first_failure_as_before(two_faults, tmp_path, monkeypatch):
    cfg, out4 = two_faults
    out1 = str(tmp_path / "one")
    assert main(["run", "--config", cfg, "--seed", "two34", "--out", out1, "--no-progress",
                 "--findings-per-case", "1"]) == 1
    r1, r4 = results(out1), results(out4)
    def first(v: dict) -> dict:
        """A verdict without what looking behind it added, and without whether its cause's
        reduction was made here or reused (a cause reduced behind an earlier case's failure
        is reused at 4, reduced again at 1) and so how it was confirmed: the same identity."""
        out = {k: x for k, x in v.items() if k not in ("more", "residual", "confirm")}
        if "identity" in out:
            out["identity"] = {k: x for k, x in out["identity"].items() if k != "reduction"}
        return out

    for a, b in zip(r1, r4):
        assert all("more" not in v and "residual" not in v for v in a["verdicts"])
        # the first failure is judged and identified exactly as before
        assert [first(v) for v in a["verdicts"]] == [first(v) for v in b["verdicts"]]
        assert all((v.get("confirm") or {}).get("reproduced", True) for v in a["verdicts"] + b["verdicts"])
    assert verdict(out1)["findings_behind"] == 0
    # a campaign at findings_per_case 1 is the run it was before the key existed: same fingerprint
    c1 = C.load(cfg, {"findings_per_case": 1})
    with_key, default = c1.fingerprint(), C.load(cfg).fingerprint()
    assert default != with_key  # the default, 4, changes what a case records: no resuming across it
    monkeypatch.setattr(C, "_LATER_KEYS", ())  # the fingerprint as it was computed before the key
    assert c1.fingerprint() == with_key


@pytest.mark.parametrize("backend", ["RefusesAbs", "RefusesQuietly"])
def test_an_unsupported_operator_no_longer_hides_a_failure_elsewhere(tmp_path, backend):
    cfg = write_config(str(tmp_path), backends=[{"name": f"tests.fake_backends:{backend}"}], models=6,
                       operators=["Sigmoid", "Abs", "Add", "Relu"])
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "refused", "--out", out, "--no-progress"]) == 1
    both = [r for r in results(out) if {"Sigmoid", "Abs"} <= set(r["operators"])]
    assert both
    for rec in both:
        v = rec["verdicts"][0]
        assert v["verdict"] == "unsupported" and v["residual"]["cuts"][0]["for"] == "unsupported"
        whole = load_bundle(os.path.join(out, rec["bundle"])).graph
        refused_ops = [i for c in v["residual"]["cuts"] if c["for"] == "unsupported" for i in c["operators"]]
        assert sorted(refused_ops) == [i for i, n in enumerate(whole.nodes) if n.op == "Abs"]
        assert [f[1] for f in findings(rec)] == ["Sigmoid(float32)"], (rec["case"], v)
        x = v["more"][0]
        assert x["verdict"] == "mismatch" and "Abs" not in load_bundle(os.path.join(out, x["bundle"])).meta["operators"]
    new = verdict(out)["new"]
    assert [g["typed"] for g in new] == ["Sigmoid(float32)"] and new[0]["behind"] == len(both)
    # at findings_per_case 1 the refusal hides it: the same batch (reduction draws nothing),
    # unreduced, since only the verdicts are looked at here (a reduction of each Sigmoid
    # failure met alone would compile a candidate a step)
    cfg1 = write_config(str(tmp_path), backends=[{"name": f"tests.fake_backends:{backend}"}], models=6,
                        operators=["Sigmoid", "Abs", "Add", "Relu"], reduce=False)
    out1 = str(tmp_path / "one")
    main(["run", "--config", cfg1, "--seed", "refused", "--out", out1, "--no-progress", "--findings-per-case", "1"])
    hidden = {r["case"] for r in results(out1)
              if r["verdicts"][0]["verdict"] == "unsupported" and "more" not in r["verdicts"][0]}
    assert {r["case"] for r in both} <= hidden


def _abs_met_beside_sigmoid(cases) -> bool:
    """A model holding a Sigmoid whose first output that either fault reaches depends on an
    Abs and on no Sigmoid: head's first finding there is the Abs one, met beside a Sigmoid."""
    for c in cases:
        hit = [cone for cone in output_cones(c.model_bytes) if cone & {"Sigmoid", "Abs"}]
        if "Sigmoid" in onnx_ops(c) and hit and hit[0] & {"Sigmoid", "Abs"} == {"Abs"}:
            return True
    return False


def test_head_versus_base_judges_a_further_finding_on_the_same_cut_model(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_FAULTS", "sigmoid,abs")  # head: both faults; base: the Sigmoid one only
    base = {"python": sys.executable, "env": {"FAKE_FAULTS": "sigmoid", "PYTHONPATH": REPO}}
    # reduce_pre_existing: the weekly campaign's setting; a pull request's leaves shared failures unreduced
    cfg = write_config(str(tmp_path), backends=[{"name": "tests.fake_backends:EnvTvmFaults"}], base=base,
                       reduce_pre_existing=True)
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", seed_where(cfg, _abs_met_beside_sigmoid, "hvb"), "--out", out,
                 "--no-progress"]) == 1
    both = [r for r in results(out) if {"Sigmoid", "Abs"} <= set(r["operators"])]
    assert both
    abs_beside_sigmoid = 0  # Abs findings judged on a model that still holds a Sigmoid
    for rec in both:
        v = rec["verdicts"][0]
        got = [(x["identity"]["typed"].split("(")[0], x) for x in [v] + v.get("more", [])]
        assert {op for op, _ in got} == {"Sigmoid", "Abs"}, (rec["case"], v.get("residual"))
        # every finding, the first and those behind it, is decided on its reduced case where
        # the model it was met on (the case, or the cut case) still holds a Sigmoid: the base
        # build gets that wrong, maybe at the same output, and only the reduced case tells the
        # Sigmoid fault (shared) from the Abs one (new); a model with two Sigmoids and an Abs
        # was called pre-existing before. Where the Sigmoids were cut out, the base build
        # passes the cut case, and that decides: new.
        for op, x in got:
            met_on = rec["operators"] if x is v else load_bundle(os.path.join(out, x["bundle"])).meta["operators"]
            assert x["base"]["reproduces"] is (op == "Sigmoid"), (rec["case"], op, x["base"])
            if "Sigmoid" in met_on:
                assert x["base"]["decided_on"] == "reduced case", (rec["case"], op, x["base"])
                abs_beside_sigmoid += op == "Abs"
            else:
                assert op == "Abs" and x["base"]["verdict"] == "pass", (rec["case"], op, x["base"])
                assert x["base"]["decided_on"] == ("case" if x is v else "cut case"), (rec["case"], op, x["base"])
    assert abs_beside_sigmoid, "the batch should hold an Abs finding met beside a Sigmoid"
    d = verdict(out)
    assert "Abs" in {g["typed"].split("(")[0] for g in d["new"]}
    assert {g["typed"].split("(")[0] for g in d["pre_existing"]} >= {"Sigmoid"}
    assert "Sigmoid" not in {g["typed"].split("(")[0] for g in d["new"]}


def test_a_correct_backend_yields_nothing_extra(tmp_path):
    cfg = write_config(str(tmp_path), backends=[{"name": "tests.fake_backends:RefusesAbsHealthy"}], models=8)
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "healthy", "--out", out, "--no-progress"]) == 0
    refusals = 0
    for rec in results(out):
        v = rec["verdicts"][0]
        assert v["verdict"] in ("pass", "unsupported") and "more" not in v, (rec["case"], v)
        if v["verdict"] == "unsupported":
            refusals += 1
            assert v["residual"]["stopped"] in ("the rest passes", "nothing left to run"), v["residual"]
    assert refusals >= 2
    v = verdict(out)
    assert not v["new"] and v["findings_behind"] == 0


def test_a_model_refused_for_its_symbolic_dimensions_runs_static(tmp_path):
    # seed symbolic2: three of the four models hold a Sigmoid and get symbolic dimensions
    cfg = write_config(str(tmp_path), backends=[{"name": "tests.fake_backends:RefusesSymbolic"}], models=4,
                       operators=["Sigmoid", "Add", "Relu"], dynamic_share=1.0)
    out = str(tmp_path / "o")
    main(["run", "--config", cfg, "--seed", "symbolic2", "--out", out, "--no-progress"])
    seen = 0
    for rec in results(out):
        v = rec["verdicts"][0]
        if v["verdict"] == "unsupported" and "Sigmoid" in rec["operators"]:
            assert v["residual"]["cuts"][0] == {"operators": [], "for": "symbolic dimensions", "rest": "mismatch"}
            assert [f[1] for f in findings(rec)] == ["Sigmoid(float32)"]
            seen += 1
    assert seen


def _cmd(cfg, out):
    return [sys.executable, "-m", "dlgate", "run", "--config", cfg, "--seed", "two34", "--out", out, "--no-progress"]


def test_a_run_killed_while_looking_behind_a_failure_resumes_with_each_finding_once(two_faults, tmp_path):
    cfg, whole = two_faults
    killed = str(tmp_path / "killed")
    proc = subprocess.Popen(_cmd(cfg, killed), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO,
                            start_new_session=True)
    deadline = time.monotonic() + 300
    cases = os.path.join(killed, "cases")
    while time.monotonic() < deadline and proc.poll() is None:
        if os.path.isdir(cases) and any(n.startswith("cut") for d in os.listdir(cases)
                                         for n in os.listdir(os.path.join(cases, d))):
            break  # a further finding is saved and its case not yet journaled (or just)
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    n_before = len(read_records(os.path.join(killed, "results.jsonl")))
    assert n_before < 6
    # the resume runs in this process: only the SIGKILL needs a process of its own, and this
    # one has TVM and PyTorch warm already (a fresh interpreter would import both again)
    assert main(_cmd(cfg, killed)[3:]) == 1
    assert open(os.path.join(killed, "results.jsonl")).read() == open(os.path.join(whole, "results.jsonl")).read()
    vk, vw = verdict(killed), verdict(whole)
    assert vk["new"] == vw["new"] and vk["findings_behind"] == vw["findings_behind"]
    for g in vk["new"]:
        assert len(g["cases"]) == len(set(g["cases"]))


# -- configuration -------------------------------------------------------------------------------------
@pytest.mark.parametrize("doc, words", [
    ({"findings_per_case": 0}, ["findings_per_case", "outside the allowed range 1..64"]),
    ({"findings_per_case": "all"}, ["findings_per_case", "expected an integer"]),
    ({"restrict_to_support": "sometimes"}, ["restrict_to_support", "expected true, false or auto"]),
])
def test_config_errors(tmp_path, doc, words):
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(C.ConfigError) as e:
        C.load(str(p))
    for w in words:
        assert w in str(e.value)


def test_which_backends_restrict_generation():
    b = C.build({"backends": ["tvm", "tvm@zero", "onnxruntime", "tvm:cuda?"], "restrict_to_support": True})
    assert restrict.systems(b) == ["onnxruntime", "tvm"]  # optional backends may be absent: not counted
    assert restrict.systems(C.build({"backends": ["tvm"]})) == []
    assert restrict.systems(C.build({"backends": ["tvm"], "restrict_to_support": "auto"})) == ["tvm"]
    base = {"python": sys.executable}
    assert restrict.systems(C.build({"backends": ["tvm"], "restrict_to_support": "auto", "base": base})) == []
    assert restrict.systems(C.build({"backends": ["tvm"], "restrict_to_support": True, "base": base})) == ["tvm"]
    assert restrict.systems(C.build({"backends": ["tvm"], "support": ["onnxruntime"]})) == ["onnxruntime"]


def _probe_doc(cache, system, rows):
    from dlgate.probe.support import cache_path

    os.makedirs(os.path.dirname(cache_path(system, "1")), exist_ok=True)
    with open(cache_path(system, "1"), "w") as f:
        json.dump({"system": system, "version": "1", "opsets": [13],
                   "supported": [[op, sig, 13] for op, sig in rows], "unsupported": [], "findings": []}, f)


def test_support_restriction_is_recorded_and_honoured_on_resume(tmp_path, monkeypatch):
    monkeypatch.setenv("DLGATE_CACHE", str(tmp_path / "cache"))
    system = "tests.fake_backends:EnvBug"
    _probe_doc(tmp_path, system, [("Abs", ["float32"]), ("Relu", ["float32"]), ("Add", ["float32", "float32"])])
    cfg = write_config(str(tmp_path), backends=[{"name": system}], restrict_to_support=True, models=6)
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "sup", "--out", out, "--no-progress"]) == 0
    man = json.load(open(os.path.join(out, "run.json")))
    assert man["support"]["systems"][system]["supported"] == ["Abs|float32|13", "Add|float32,float32|13",
                                                              "Relu|float32|13"]
    full = results(out)
    assert all(set(r["operators"]) <= {"Abs", "Relu", "Add"} for r in full)
    assert any(len(r["operators"]) > 1 for r in full)
    whole = open(os.path.join(out, "results.jsonl")).read()
    # the probe cache changes (another version's answers); a resumed run keeps the recorded support
    _probe_doc(tmp_path, system, [("Sigmoid", ["float32"]), ("Mul", ["float32", "float32"])])
    lines = whole.splitlines(keepends=True)
    with open(os.path.join(out, "results.jsonl"), "w") as f:
        f.writelines(lines[:2])
    assert main(["run", "--config", cfg, "--seed", "sup", "--out", out, "--no-progress"]) == 0
    assert open(os.path.join(out, "results.jsonl")).read() == whole
    assert json.load(open(os.path.join(out, "run.json")))["support"] == man["support"]
    # a fresh run takes the new answers
    fresh = str(tmp_path / "fresh")
    assert main(["run", "--config", cfg, "--seed", "sup", "--out", fresh, "--no-progress"]) in (0, 1)
    assert all(set(r["operators"]) <= {"Sigmoid", "Mul"} for r in results(fresh))
    shutil.rmtree(fresh)


def test_a_cause_met_again_behind_a_failure_is_not_recorded_twice(tmp_path):
    # a compiler that fails on every model with one message: each cut fails the same way (one
    # cluster). (A segfault says nothing but its signal, so its cluster is its reduced
    # operators: one in other operators behind it is another finding, docs/gate.md.)
    cfg = write_config(str(tmp_path), backends=[{"name": "tests.fake_backends:Raises"}], models=2, timeout_s=20)
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "again", "--out", out, "--no-progress"]) == 1
    met_again = 0
    for rec in results(out):
        v = rec["verdicts"][0]
        assert v["verdict"] == "run_error" and "more" not in v
        cuts = v["residual"]["cuts"]
        if "rest" not in cuts[0]:  # the cut took the whole model: nothing behind it to run
            assert len(cuts) == 1 and v["residual"]["stopped"] == "nothing left to run", v["residual"]
            continue
        # every rest that ran crashed again, of the first failure's cause: cut, not recorded
        assert all(c["again"] == v["identity"]["cluster"] for c in cuts if "rest" in c), v["residual"]
        met_again += 1
    assert met_again >= 1
    assert verdict(out)["findings_behind"] == 0 and verdict(out)["clusters"] == 1
