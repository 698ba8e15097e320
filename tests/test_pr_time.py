"""A run's time goes to what the change introduced, and to each cause once.

Head versus base, a failing case runs on the base build before it is confirmed and
reduced: a failure the base build shares is pre-existing and, in a pull request's run
(``reduce_pre_existing: false``), neither confirmed nor reduced; the weekly campaign
(``true``) reduces it. In every mode a cause is reduced once per run: a later failure of the
same cause reuses the reduction (its identity and repro), also after a resume, which reads
what was reduced from the journal.

The compiler is ``tests.fake_backends:EnvFaults``: onnxruntime's answers, with the faults
its environment names (``FAKE_FAULT``: an operator whose lowering fails; ``FAKE_REFUSE``:
one it has no kernel for), for head and base builds of one compiler.
"""
from __future__ import annotations

import json
import os
import shutil
import sys

import yaml

from dlgate.check import load_case
from dlgate.cli import main
from dlgate.gate.decide import findings
from dlgate.gate.journal import read_records

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAULTY = {"PYTHONPATH": REPO, "FAKE_SPELLING": "old", "FAKE_FAULT": "Sigmoid"}


def _cfg(tmp_path, base_env: dict | None = None, **kw) -> str:
    doc = {"campaign": "prtime", "models": 6, "min_nodes": 3, "max_nodes": 5, "opset": 18,
           "operators": ["Abs", "Sigmoid", "Relu", "Neg"], "dtypes": ["float32"],
           "backends": ["tests.fake_backends:EnvFaults"], "timeout_s": 120, "confirm_runs": 1, "crosscheck": False,
           "reduce_seconds": 30, "dynamic_share": 0, "extreme_share": 0}
    if base_env is not None:
        doc["base"] = {"python": sys.executable, "env": base_env}
    doc.update(kw)
    p = tmp_path / f"c{len(list(tmp_path.glob('c*.yaml')))}.yaml"
    p.write_text(yaml.safe_dump(doc))
    return str(p)


def _head(monkeypatch, **kw) -> None:
    for k, x in dict(FAULTY, **kw).items():
        monkeypatch.setenv(k, x)


def _failures(out: str) -> list:
    """(case, verdict) of every failing verdict of the run, findings behind others included."""
    return [(r["case"], x) for r in read_records(os.path.join(out, "results.jsonl")) for x, _ in findings(r)
            if x["verdict"] == "compile_error"]


def _verdict(out: str) -> dict:
    with open(os.path.join(out, "verdict.json")) as f:
        return json.load(f)


def _repros(out: str) -> list:
    d = os.path.join(out, "repros")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def test_the_shipped_campaigns_reduce_shared_failures_weekly_only():
    from dlgate.gate import config as C

    pr, weekly = (C.load(os.path.join(REPO, "configs", f"{n}.yaml")) for n in ("pr", "weekly"))
    assert not pr.reduce_pre_existing and weekly.reduce_pre_existing
    for cfg in (pr, weekly):
        assert cfg.base_first and cfg.reuse_reductions


# -- a failure the base build shares ---------------------------------------------------------------
def test_a_shared_failure_is_not_reduced_in_a_pull_request_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _head(monkeypatch)
    out = str(tmp_path / "o")
    assert main(["run", "--config", _cfg(tmp_path, FAULTY), "--seed", "s1", "--out", out]) == 0
    failed = _failures(out)
    assert len({c for c, _ in failed}) >= 2, failed  # several models hold a Sigmoid
    for case, v in failed:
        assert v["base"]["reproduces"] and v["base"]["decided_on"] == "case", (case, v["base"])
        assert v["identity"]["not_reduced"] == "pre-existing" and not v["identity"]["reduced"], (case, v["identity"])
        assert "confirm" not in v and "reduction" not in v["identity"], (case, v)
    assert _repros(out) == []  # nothing was reduced
    d = _verdict(out)
    assert d["pre_existing"] and not d["new"]
    assert len(d["cluster_list"]) == 1  # one cause, reported by its cluster


def test_a_shared_failure_is_reduced_in_a_weekly_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _head(monkeypatch)
    out = str(tmp_path / "o")
    assert main(["run", "--config", _cfg(tmp_path, FAULTY, reduce_pre_existing=True), "--seed", "s1",
                 "--out", out]) == 0
    failed = _failures(out)
    assert failed
    for case, v in failed:
        # the base build failing the same way confirms it: reduced, not re-run
        assert v["base"]["reproduces"] and "confirm" not in v, (case, v)
        assert v["identity"]["reduced"] and v["identity"]["typed"] == "Sigmoid(float32)", (case, v["identity"])
        assert "not_reduced" not in v["identity"]
    assert len(_repros(out)) == 1
    assert _verdict(out)["pre_existing"] and not _verdict(out)["new"]


def test_a_failure_the_base_build_lacks_is_still_confirmed_and_reduced(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _head(monkeypatch)
    out = str(tmp_path / "o")
    assert main(["run", "--config", _cfg(tmp_path, dict(FAULTY, FAKE_FAULT="")), "--seed", "s1", "--out", out]) == 1
    failed = _failures(out)
    assert len(failed) > 1
    first = failed[0][0]
    for case, v in failed:
        # the first is run on the base build; the rest reuse its reduction, and its cause is
        # new on the base build: no base-build run of their own (decided for the cause)
        on = "case" if case == first else "reused reduction"
        assert v["base"] == dict(v["base"], verdict="pass", reproduces=False, decided_on=on), (case, v["base"])
        assert v["confirm"] == {"runs": 1, "reproduced": True}, (case, v)
        assert v["identity"]["reduced"] and v["identity"]["typed"] == "Sigmoid(float32)", (case, v["identity"])
        if case != first:
            assert v["base"]["reused"] == first and v["identity"]["reduction"]["reused"] == first, (case, v)
    d = _verdict(out)
    assert [g["typed"] for g in d["new"]] == ["Sigmoid(float32)"] and not d["pre_existing"]
    assert d["new"][0]["repro"] == f"repros/{d['new'][0]['fingerprint']}"


def test_the_order_before_base_first_confirms_and_reduces_every_failure(tmp_path, monkeypatch):
    """``base_first: false`` (what bench/pr_time.py compares with) reduces shared failures too."""
    monkeypatch.chdir(tmp_path)
    _head(monkeypatch)
    out = str(tmp_path / "o")
    cfg = _cfg(tmp_path, FAULTY, base_first=False, reuse_reductions=False, models=4)
    assert main(["run", "--config", cfg, "--seed", "s1", "--out", out]) == 0
    failed = _failures(out)
    assert failed and all(v["identity"]["reduced"] and v["confirm"]["reproduced"] and v["base"]["reproduces"]
                          for _, v in failed), failed


def test_sharing_is_still_decided_on_a_reduced_case_when_the_base_build_fails_the_model_otherwise(
        tmp_path, monkeypatch):
    """The base build has no kernel for Abs: models where Abs comes before Sigmoid are
    refused whole there, so the plain base run cannot show whether it shares head's fault;
    those are reduced (or reuse a reduction head fails alike) and decided on the reduced
    case, which the base build fails as head does (pre-existing) or passes (new)."""
    monkeypatch.chdir(tmp_path)
    _head(monkeypatch, FAKE_SPELLING="new")
    for base_fault, expect in (("Sigmoid", 0), ("", 1)):
        out = str(tmp_path / f"o-{base_fault or 'none'}")
        cfg = _cfg(tmp_path, dict(FAULTY, FAKE_FAULT=base_fault, FAKE_REFUSE="Abs"), models=10)
        assert main(["run", "--config", cfg, "--seed", "s1", "--out", out]) == expect
        failed = _failures(out)
        on_reduced = [v for _, v in failed if v["base"]["decided_on"] == "reduced case"]
        assert on_reduced, [v["base"] for _, v in failed]
        for v in on_reduced:
            assert v["base"]["whole"]["verdict"] == "unsupported", v["base"]
            assert v["base"]["reproduces"] is bool(base_fault), v["base"]
            assert v["identity"]["reduced"] and "not_reduced" not in v["identity"], v["identity"]
        assert all(v["base"]["reproduces"] is bool(base_fault) for _, v in failed)
        d = _verdict(out)
        assert bool(d["pre_existing"]) is bool(base_fault) and bool(d["new"]) is not bool(base_fault)


# -- one reduction per cause -----------------------------------------------------------------------
def _reduced_and_reused(out: str) -> tuple:
    failed = _failures(out)
    first = [(c, v) for c, v in failed if "reused" not in v["identity"].get("reduction", {})]
    again = [(c, v) for c, v in failed if "reused" in v["identity"].get("reduction", {})]
    return failed, first, again


def test_a_second_failure_of_a_reduced_cause_reuses_its_reduction(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _head(monkeypatch)
    out = str(tmp_path / "o")
    assert main(["run", "--config", _cfg(tmp_path), "--seed", "s1", "--out", out]) == 1  # baseline mode
    failed, first, again = _reduced_and_reused(out)
    assert len(first) == 1 and len(again) >= 1, failed  # one reduction recorded
    case0, v0 = first[0]
    assert v0["identity"]["reduction"]["case"] == case0 and v0["identity"]["reduced"]
    for case, v in again:
        assert v["identity"]["reduction"] == {"key": v0["identity"]["reduction"]["key"], "reused": case0}
        for k in ("fingerprint", "cluster", "typed", "repro"):
            assert v["identity"][k] == v0["identity"][k], (case, k)
    assert _repros(out) == [v0["identity"]["fingerprint"]]
    err = capsys.readouterr().err
    assert err.count("dlgate: reduced ") == 1 and err.count("its reduction is reused") == len(again)
    d = _verdict(out)
    assert len(d["new"]) == 1 and d["new"][0]["repro"] == v0["identity"]["repro"]
    assert sorted(d["new"][0]["cases"]) == sorted({c for c, _ in failed})

    # the same run without reuse reduces every failure, to the same fingerprint
    out2 = str(tmp_path / "o2")
    assert main(["run", "--config", _cfg(tmp_path, reuse_reductions=False), "--seed", "s1", "--out", out2]) == 1
    failed2, first2, again2 = _reduced_and_reused(out2)
    assert len(first2) == len(failed2) == len(failed) and not again2
    assert {v["identity"]["fingerprint"] for _, v in failed2} == {v0["identity"]["fingerprint"]}
    assert all("reduction" not in v["identity"] for _, v in failed2)


def test_a_reused_reduction_locates_the_operators_to_look_behind(tmp_path, monkeypatch):
    """Behind a failure whose reduction is reused, its Sigmoid is cut and the rest runs."""
    monkeypatch.chdir(tmp_path)
    _head(monkeypatch)
    out = str(tmp_path / "o")
    main(["run", "--config", _cfg(tmp_path), "--seed", "s1", "--out", out])
    _, _, again = _reduced_and_reused(out)
    recs = {r["case"]: r for r in read_records(os.path.join(out, "results.jsonl"))}
    looked = 0
    for case, v in again:
        if v.get("residual") is None:
            continue  # a finding behind another one: its case's record holds the cuts
        cuts = v["residual"]["cuts"]
        assert cuts, (case, v["residual"])
        ops = load_case(os.path.join(out, recs[case]["bundle"]))[1].op_names()  # in the model's order
        assert {ops[i] for i in cuts[0]["operators"]} == {"Sigmoid"}, (case, cuts, ops)
        assert len(cuts[0]["operators"]) == ops.count("Sigmoid")
        looked += 1
    assert looked


def test_a_resumed_run_reuses_what_the_journal_says_was_reduced(tmp_path, monkeypatch):
    """Killed after the case that was reduced (the journal and the repros it wrote stay),
    the run resumes: later failures of the cause reuse that reduction, as in the
    uninterrupted run, whose journal it matches line for line."""
    monkeypatch.chdir(tmp_path)
    _head(monkeypatch)
    cfg = _cfg(tmp_path, models=8)
    whole = str(tmp_path / "whole")
    main(["run", "--config", cfg, "--seed", "s1", "--out", whole])
    failed, first, again = _reduced_and_reused(whole)
    lines = open(os.path.join(whole, "results.jsonl")).read().splitlines(keepends=True)
    cut = 1 + next(k for k, line in enumerate(lines) if json.loads(line)["case"] == first[0][0])
    assert cut < len(lines) and any(c not in {json.loads(x)["case"] for x in lines[:cut]} for c, _ in again)
    killed = str(tmp_path / "killed")
    shutil.copytree(whole, killed)
    with open(os.path.join(killed, "results.jsonl"), "w") as f:
        f.write("".join(lines[:cut]))
    for name in ("verdict.json", "summary.md", "junit.xml", "timings.jsonl"):
        os.unlink(os.path.join(killed, name))
    main(["run", "--config", cfg, "--seed", "s1", "--out", killed])
    assert open(os.path.join(killed, "results.jsonl")).read() == "".join(lines)
    assert _repros(killed) == _repros(whole)

    # without the repros (a resume must not need them): the identity is still reused
    bare = str(tmp_path / "bare")
    shutil.copytree(killed, bare)
    shutil.rmtree(os.path.join(bare, "repros"))
    with open(os.path.join(bare, "results.jsonl"), "w") as f:
        f.write("".join(lines[:cut]))
    main(["run", "--config", cfg, "--seed", "s1", "--out", bare])
    _, first3, again3 = _reduced_and_reused(bare)
    assert [c for c, _ in first3] == [c for c, _ in first] and [c for c, _ in again3] == [c for c, _ in again]


def test_a_reduction_stands_only_for_a_case_holding_its_operators(tmp_path):
    """One message can come from several operators (TVM's dtype error from its Elu and Selu
    converters): a case without the reduced operators (type and input dtypes) is reduced
    itself; one holding them reuses the reduction, its operators located for the cut."""
    import numpy as np

    from dlgate.check import Prepared, save_bundle
    from dlgate.gate.reuse import Reductions, Reused
    from dlgate.graph.ir import Graph, Node
    from dlgate.materialize.onnx_model import to_onnx
    from dlgate.ops.base import TensorType

    def case(name, ops, dtype="float32"):
        t = TensorType(dtype, (2, 3))
        nodes = [Node(op, {}, [k], [k + 1]) for k, op in enumerate(ops)]
        g = Graph([t] * (len(ops) + 1), nodes, inputs=[0], consts=[], outputs=[len(ops)], opset=18)
        x = np.random.default_rng(3).uniform(-1, 1, (2, 3)).astype(dtype)
        return Prepared(name, {"id": name, "seed": 7}, g, to_onnx(g, 7).SerializeToString(), [x],
                        {"valid": True, "method": "test", "reason": ""})

    out = str(tmp_path)
    save_bundle(out, case("r", ["Sigmoid"]), subdir="repros/fp1")
    open(os.path.join(out, "repros", "fp1", "repro.json"), "w").write("{}")
    ident = {"fingerprint": "fp1", "cluster": "cl", "pattern": "Sigmoid", "typed": "Sigmoid(float32)",
             "repro": "repros/fp1", "reduced": True, "reduction": {"key": "k", "case": "c0"}}
    red = Reductions(out)
    red.add([{"case": "c0", "verdicts": [{"verdict": "compile_error", "backend": "x", "identity": ident}]}])
    v = {"verdict": "compile_error", "backend": "x", "error": {"type": "E", "message": "m"}}
    got = red.reuse("k", case("c1", ["Abs", "Sigmoid", "Neg", "Sigmoid"]), v)
    assert isinstance(got, Reused) and got.kept == [1, 3] and got.source == "c0"
    assert v["identity"]["fingerprint"] == "fp1" and v["identity"]["reduction"] == {"key": "k", "reused": "c0"}
    assert v["identity"]["original_nodes"] == 4
    for ops, dtype in ((["Abs", "Neg"], "float32"), (["Sigmoid"], "float64")):
        w = dict(v, identity=None)
        assert red.reuse("k", case("c2", ops, dtype), w) is None and w["identity"] is None
    # without the repro, the operators' types decide
    ident2 = dict(ident, repro=None, reduction={"key": "k2", "case": "c0"})
    red.add([{"case": "c0b", "verdicts": [{"verdict": "compile_error", "backend": "x", "identity": ident2}]}])
    assert red.reuse("k2", case("c3", ["Sigmoid"], "float64"), dict(v)).kept == [0]
    assert red.reuse("k2", case("c4", ["Abs"]), dict(v)) is None


def test_a_cause_reduced_at_one_optimization_level_is_reused_at_another(tmp_path, monkeypatch, capsys):
    """The same lowering failure at the backend's default level and at ``zero``: reduced
    once, at whichever level met it first; the other level's failures reuse that reduction
    (its identity holds no level), confirmed by their own re-run at their own level."""
    monkeypatch.chdir(tmp_path)
    _head(monkeypatch)
    out = str(tmp_path / "o")
    cfg = _cfg(tmp_path, backends=["tests.fake_backends:EnvFaultsLevels", "tests.fake_backends:EnvFaultsLevels@zero"])
    assert main(["run", "--config", cfg, "--seed", "s1", "--out", out]) == 1
    failed, first, again = _reduced_and_reused(out)
    assert len(first) == 1, [(c, v["backend"]) for c, v in first]  # one reduction for both levels
    levels = {v["backend"] for _, v in failed}
    assert levels == {"tests.fake_backends:EnvFaultsLevels[cpu]", "tests.fake_backends:EnvFaultsLevels[cpu]@zero"}, levels
    assert {v["backend"] for _, v in again} == levels  # the other level reused it too
    fp = first[0][1]["identity"]["fingerprint"]
    assert all(v["identity"]["fingerprint"] == fp and v["confirm"]["reproduced"] for _, v in failed)
    assert capsys.readouterr().err.count("dlgate: reduced ") == 1
    assert _repros(out) == [fp]
