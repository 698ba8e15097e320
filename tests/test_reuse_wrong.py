"""One reduction per wrong-answer cause: a wrong answer whose operators, cut out of its case,
fail as a cause reduced earlier in the run reuses that reduction; two bugs in one case stay
two causes. Cheap onnxruntime-based compilers with conversions broken on purpose."""
from __future__ import annotations

import json
import os
import sys

import pytest
import yaml

from dlgate.check import load_bundle
from dlgate.cli import main
from dlgate.gate import reuse as T
from dlgate.gate.journal import read_records
from dlgate.graph.ir import Graph, Node
from dlgate.ops.base import TensorType
from tests.helpers import onnx_ops, seed_where

#: Softsign run as Softplus; with ``TwoFaults``, Sin run as Cos too.
ONE = {"name": "dlgate.backends.testing:MisconvertingOnnxRuntime",
       "options": {"convert_from": "Softsign", "convert_to": "Softplus"}}
TWO = {"name": "tests.fake_backends:TwoFaults"}


def _config(tmp_path, name: str, backend: dict, ops: list, **kw) -> str:
    doc = {"campaign": "rw", "models": 8, "max_nodes": 5, "opset": 18, "operators": ops, "dtypes": ["float32"],
           "backends": [backend], "reference": "torch", "crosscheck": False, "dynamic_share": 0, "extreme_share": 0,
           "reduce_seconds": 20, "guidance": False}
    doc.update(kw)
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(doc))
    return str(p)


def _findings(out: str) -> list:
    """(case id, finding) for every wrong answer with an identity, first findings first."""
    got = []
    for rec in read_records(os.path.join(out, "results.jsonl")):
        for v in rec["verdicts"]:
            for x in [v] + v.get("more", []):
                if x["verdict"] in ("mismatch", "shape_mismatch", "dtype_mismatch") and x.get("identity"):
                    got.append((rec["case"], x))
    return got


def _fresh(found) -> list:
    return [x for _, x in found if "key" in (x["identity"].get("reduction") or {})
            and "reused" not in x["identity"]["reduction"]]


def test_one_wrong_answer_cause_in_many_cases_is_reduced_once(tmp_path):
    cfg = _config(tmp_path, "one", ONE, ["Softsign", "Add", "Relu", "Mul"], findings_per_case=1)
    seed = seed_where(cfg, lambda cases: sum("Softsign" in onnx_ops(c) for c in cases) >= 4, "rw")
    out = str(tmp_path / "out")
    assert main(["run", "--config", cfg, "--seed", seed, "--out", out, "--no-progress"]) == 1
    found = _findings(out)
    assert len(found) >= 3
    assert all(x["identity"]["pattern"] == "Softsign" for _, x in found)
    fresh = _fresh(found)
    assert len(fresh) == 1  # reduced in one case ...
    reused = [(c, x) for c, x in found if "reused" in (x["identity"].get("reduction") or {})]
    assert len(reused) == len(found) - 1  # ... and reused by every other
    src = fresh[0]["identity"]
    for case_id, x in reused:
        i = x["identity"]
        assert i["reduction"]["reused"] == src["reduction"]["case"] and i["fingerprint"] == src["fingerprint"]
        assert i["repro"] == src["repro"] and i["cause"] == src["cause"]
        assert x["confirm"] == {"runs": 1, "reproduced": True, "on": "cut case"}  # the cut re-ran it
        # the operators cut are this case's Softsign operators
        rec = next(r for r in read_records(os.path.join(out, "results.jsonl")) if r["case"] == case_id)
        graph = load_bundle(os.path.join(out, rec["bundle"])).graph
        assert [graph.nodes[k].op for k in i["reduction"]["cut"]] == ["Softsign"]
    verdict = json.load(open(os.path.join(out, "verdict.json")))
    assert len({g["fingerprint"] for g in verdict["new"]}) == 1
    # a resumed run rebuilds what was reduced from the journal: the one reduction, under its key
    red = T.Reductions(out)
    red.add(read_records(os.path.join(out, "results.jsonl")))
    key = T.reduction_key(fresh[0])
    assert list(red.entries) == [key] and [i["fingerprint"] for i in red.entries[key]] == [src["fingerprint"]]


def test_two_wrong_answer_bugs_in_one_case_stay_two_causes(tmp_path):
    cfg = _config(tmp_path, "two", TWO, ["Softsign", "Sin", "Add", "Mul"])

    def holds(cases):
        both = [k for k, c in enumerate(cases) if {"Softsign", "Sin"} <= set(onnx_ops(c))]
        one = [k for k, c in enumerate(cases) if {"Softsign", "Sin"} & set(onnx_ops(c))]
        return bool(both) and min(one) < max(both)  # a case with both after a cause was reduced

    seed = seed_where(cfg, holds, "rw2")
    out = str(tmp_path / "out")
    assert main(["run", "--config", cfg, "--seed", seed, "--out", out, "--no-progress"]) == 1
    found = _findings(out)
    assert {x["identity"]["pattern"] for _, x in found} == {"Softsign", "Sin"}
    fresh = _fresh(found)
    assert sorted(x["identity"]["pattern"] for x in fresh) == ["Sin", "Softsign"]  # each reduced once
    by_case: dict = {}
    for case_id, x in found:
        by_case.setdefault(case_id, []).append(x["identity"]["pattern"])
    # a case holding both bugs: one reused (or reduced) for its first finding, the other found behind it
    assert any(sorted(p) == ["Sin", "Softsign"] for p in by_case.values())
    verdict = json.load(open(os.path.join(out, "verdict.json")))
    assert {g["pattern"] for g in verdict["new"]} == {"Softsign", "Sin"}


@pytest.mark.parametrize("base_has_it", [False, True])
def test_a_new_wrong_answer_cause_is_run_on_the_base_build_once(tmp_path, monkeypatch, base_has_it):
    """Head versus base: once a wrong-answer cause is reduced and the base build passes the
    case that decided, later cases of that cause reuse the reduction (their cut confirms
    them) and are new without a base-build run of their own (``decided_on: reused
    reduction``). A cause the base build shares is run on the base build case by case and
    stays pre-existing: the check stays green."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    monkeypatch.setenv("FAKE_WRONG", "Softsign")
    monkeypatch.setenv("PYTHONPATH", repo)
    base = {"python": sys.executable, "env": {"PYTHONPATH": repo, "FAKE_WRONG": "Softsign" if base_has_it else ""}}
    cfg = _config(tmp_path, "base", {"name": "tests.fake_backends:EnvSoftsign"}, ["Softsign", "Add", "Relu", "Mul"],
                  findings_per_case=1, base=base)
    seed = seed_where(cfg, lambda cases: sum("Softsign" in onnx_ops(c) for c in cases) >= 4, "rwb")
    out = str(tmp_path / "out")
    assert main(["run", "--config", cfg, "--seed", seed, "--out", out, "--no-progress"]) == (0 if base_has_it else 1)
    found = _findings(out)
    assert len(found) >= 3
    ons = [x["base"]["decided_on"] for _, x in found]
    if base_has_it:  # pre-existing: each run on the base build, left unreduced (reduce_pre_existing false)
        assert all(x["base"]["reproduces"] and x["base"]["verdict"] == "mismatch" for _, x in found), found
        assert "reused reduction" not in ons and all(x["identity"].get("not_reduced") for _, x in found), ons
        return
    assert all(x["identity"]["pattern"] == "Softsign" for _, x in found)
    first = found[0]
    assert first[1]["base"]["decided_on"] == "case" and first[1]["base"]["verdict"] == "pass"
    for case_id, x in found[1:]:
        assert x["base"]["decided_on"] == "reused reduction" and x["base"]["reused"] == first[0], (case_id, x)
        assert not x["base"]["reproduces"] and x["base"]["verdict"] == "pass"
        assert x["identity"]["reduction"]["reused"] == first[0]
        assert x["confirm"] == {"runs": 1, "reproduced": True, "on": "cut case"}
    verdict = json.load(open(os.path.join(out, "verdict.json")))
    assert [g["pattern"] for g in verdict["new"]] == ["Softsign"] and not verdict["pre_existing"]


def _chain() -> Graph:
    """x -> Sin -> Relu -> Sin (t3, output 0); x -> Relu (t4, output 1)."""
    f = TensorType("float32", (2, 3))
    return Graph([f] * 5, [Node("Sin", {}, [0], [1]), Node("Relu", {}, [1], [2]), Node("Sin", {}, [2], [3]),
                           Node("Relu", {}, [0], [4])], [0], [], [3, 4], 18)


def test_sites_are_the_reduced_operators_in_the_wrong_outputs_cone():
    g = _chain()
    sin, relu = ("Sin", ("float32",)), ("Relu", ("float32",))
    assert T.wrong_cone(g, {"comparison": {"output": 0}}) == [0, 1, 2]
    assert T.wrong_cone(g, {"comparison": {"output": 0, "differing": [0, 1]}}) == [0, 1, 2, 3]
    assert T.sites(g, [sin], [0, 1, 2]) == [[0], [2]]
    assert T.sites(g, [relu], [0, 1, 2]) == [[1]]  # the Relu outside the cone is not tried
    assert T.sites(g, [sin, relu], [0, 1, 2, 3]) == [[0, 1]]
    assert T.sites(g, [relu, sin], [0, 1, 2, 3]) == []  # Sin at 2 reads Relu 1, which reads Sin 0: 3 operators
    assert T.sites(g, [("Sin", ("float16",))], [0, 1, 2]) == []  # another dtype is another operator
    segs = T.segments("Conv(float32,float32;group=>1,pads=[0,1])>Relu(float32)")
    assert segs == [("Conv", ("float32", "float32"), "group=>1,pads=[0,1]"), ("Relu", ("float32",), "")]


def test_a_cause_is_new_on_the_base_build_only_where_the_base_build_passes_the_deciding_case():
    assert T.new_on_base({"base": {"verdict": "pass", "reproduces": False, "decided_on": "reduced case"}})
    assert T.new_on_base({"base": {"verdict": "pass", "reproduces": False, "decided_on": "case"}})
    # shared, failing the case otherwise (sharing not shown), or no base build: not decided for the cause
    assert not T.new_on_base({"base": {"verdict": "mismatch", "reproduces": True}})
    assert not T.new_on_base({"base": {"verdict": "compile_error", "reproduces": False, "decided_on": "case"}})
    assert not T.new_on_base({"verdict": "mismatch"})
    from dlgate.gate.report import base_notes

    assert base_notes({"verdict": "pass", "reproduces": False, "decided_on": "reused reduction",
                       "reused": "00001-ab"}) == \
        ["base build: pass (decided for its cause on case 00001-ab, whose reduction it reuses)"]


def test_a_wrong_answer_is_reduced_from_the_operators_near_its_wrong_output_first():
    """The first round tries each operator alone: for a wrong answer at output 0 of
    ``_chain``, the operators output 0 depends on, last first, then the rest; for an error,
    graph order."""
    from types import SimpleNamespace

    from dlgate.reduce.reducer import _Run

    run = _Run.__new__(_Run)
    run.best = (None, SimpleNamespace(verdict="mismatch", comparison={"output": 0, "differing": [0]}))
    assert run.singles(_chain()) == [2, 1, 0, 3]
    run.best = (None, SimpleNamespace(verdict="mismatch", comparison={"output": 1, "differing": [1]}))
    assert run.singles(_chain()) == [3, 0, 1, 2]
    # the first wrong output's operators before another wrong output's
    run.best = (None, SimpleNamespace(verdict="mismatch", comparison={"output": 1, "differing": [1, 0]}))
    assert run.singles(_chain()) == [3, 2, 1, 0]
    run.best = (None, SimpleNamespace(verdict="compile_error", comparison=None))
    assert run.singles(_chain()) == [0, 1, 2, 3]
