"""The gate end to end: campaign configs, the journal and resume, regression semantics
(new / known / fixed / flaky / pre-existing / regression), shards and merge, reports."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest
import yaml

from dlgate.cli import main
from dlgate.gate import config as C
from dlgate.gate.journal import read_records
from tests.helpers import onnx_ops, output_cones, seed_where

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
XSD = os.path.join(REPO, "tests", "data", "junit.xsd")
OPS = ["Sigmoid", "Add", "Relu", "Mul", "Abs", "Neg", "Tanh"]
INJECTED_TVM = {"name": "tvm", "options": {"extra_passes": ["dlgate.backends.testing:sigmoid_to_tanh"]}}


def write_config(path, **kw) -> str:
    doc = {"campaign": "t", "models": 6, "max_nodes": 5, "opset": 18, "operators": OPS, "dtypes": ["float32"],
           "backends": ["onnxruntime"], "timeout_s": 120, "confirm_runs": 1}
    doc.update(kw)
    p = os.path.join(path, f"cfg-{abs(hash(json.dumps(doc, sort_keys=True))) % 10**8}.yaml")
    with open(p, "w") as f:
        yaml.safe_dump(doc, f)
    return p


def verdict(out) -> dict:
    with open(os.path.join(out, "verdict.json")) as f:
        return json.load(f)


def results(out) -> list:
    return read_records(os.path.join(out, "results.jsonl"))


# -- configuration ------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["pr.yaml", "weekly.yaml", "gpu.yaml"])
def test_shipped_configs_are_valid(name):
    cfg = C.load(os.path.join(REPO, "configs", name))
    assert cfg.campaign == name.split(".")[0] and cfg.backends


def test_pr_config_is_the_fast_cpu_check():
    cfg = C.load(os.path.join(REPO, "configs", "pr.yaml"))
    assert cfg.models == 100 and cfg.max_nodes == 10
    assert {C.backend_spec(b).name for b in cfg.backends} == {"tvm", "onnxruntime"}
    assert all(C.backend_spec(b).device == "cpu" for b in cfg.backends) and cfg.reference == "torch"


@pytest.mark.parametrize("doc, words", [
    ({"modles": 3}, ["'modles'", "unknown key", "allowed:", "models"]),
    ({"models": "many"}, ["models", "expected an integer", "'many'"]),
    ({"models": True}, ["models", "expected an integer"]),
    ({"backends": ["tmv"]}, ["backends[0]", "unknown backend 'tmv'", "allowed:", "onnxruntime", "tvm"]),
    ({"backends": ["tvm@O9"]}, ["backends[0]", "no optimization level 'O9'", "allowed: zero, default"]),
    ({"backends": [{"name": "tvm", "target": "llvm"}]}, ["backends[0].target", "unknown key"]),
    ({"fail_on": "sometimes"}, ["fail_on", "'sometimes'", "new, any, none"]),
    ({"tolerances": {"float32": [1e-2]}}, ["tolerances.float32", "[rtol, atol]"]),
    ({"tolerances": {"float8": [1, 1]}}, ["tolerances.float8", "unknown dtype"]),
    ({"min_nodes": 5, "max_nodes": 2}, ["min_nodes", "exceeds max_nodes"]),
    ({"opset": 9}, ["opset", "outside the allowed range 13..28"]),
    ({"max_opset": 29}, ["max_opset", "outside the allowed range 13..28"]),
    ({"dynamic_share": 1.5}, ["dynamic_share", "outside the allowed range"]),
    ({"operators": ["Sigmoid", "Frobnicate"]}, ["operators[1]", "'Frobnicate'"]),
    ({"base": {"pyhton": "/usr/bin/python3"}}, ["base.pyhton", "unknown key"]),
])
def test_config_errors_name_the_file_and_the_key(tmp_path, doc, words):
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(C.ConfigError) as e:
        C.load(str(p))
    msg = str(e.value)
    assert msg.startswith(str(p)), msg
    for w in words:
        assert w in msg, (w, msg)


def test_malformed_yaml_and_missing_file(tmp_path, capsys):
    p = tmp_path / "broken.yaml"
    p.write_text("models: [1, 2\n")
    with pytest.raises(C.ConfigError, match=r"broken.yaml: not valid YAML \(line"):
        C.load(str(p))
    assert main(["run", "--config", str(tmp_path / "nope.yaml"), "--seed", "x"]) == 2
    assert "nope.yaml: cannot read" in capsys.readouterr().err


def test_command_line_overrides_win_and_are_validated(tmp_path, capsys):
    p = write_config(str(tmp_path), models=50)
    cfg = C.load(p, {"models": 3, "backends": ["tvm@zero"], "max_nodes": None})
    assert cfg.models == 3 and cfg.backends == ["tvm@zero"] and cfg.max_nodes == 5
    assert main(["run", "--config", p, "--seed", "x", "--backend", "nosuch", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "--backend nosuch: unknown backend 'nosuch'" in err and p not in err  # the flag, not the file it overrides


def test_seed_comes_from_seed_commit_github_sha_then_git(monkeypatch, tmp_path):
    monkeypatch.setenv("GITHUB_SHA", "f" * 40)
    assert C.resolve_root("s", "c") == ("s", "--seed")
    assert C.resolve_root(None, "c") == ("c", "--commit")
    assert C.resolve_root(None, None) == ("f" * 40, "GITHUB_SHA")
    monkeypatch.delenv("GITHUB_SHA")
    root, src = C.resolve_root(None, None, cwd=REPO)
    assert src == "git rev-parse HEAD" and len(root) == 40
    with pytest.raises(C.ConfigError, match="no seed"):
        C.resolve_root(None, None, cwd=str(tmp_path))


def test_config_reference_lists_every_key(capsys):
    assert main(["config", "--reference"]) == 0
    out = capsys.readouterr().out
    for f in C.FIELDS:
        assert f"`{f.name}`" in out


# -- the injected miscompilation: new, then known, then fixed --------------------------------
def test_injected_miscompilation_new_then_known_then_fixed(tmp_path, capsys, monkeypatch):
    """One campaign's history checked for the gate's and novelty's rules at once: the
    broken build's failures are new and one fingerprint (one cluster); the baseline that
    accepts them keeps its repro; another commit's batch meets them again as known, never
    new, nothing claimed fixed; the healed build shows them fixed by the baseline's repro."""
    # seed inject4: four of the eight models hold a Sigmoid, whose error reaches an output in each
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    baseline = str(tmp_path / "baseline.json")
    # one dtype: a wrong answer's fingerprint names its dtypes, and this bug is one per dtype
    broken = write_config(str(tmp_path), backends=[INJECTED_TVM, "onnxruntime"], models=8, baseline=baseline,
                          dtypes=["float32"])
    healthy = write_config(str(tmp_path), backends=["tvm", "onnxruntime"], models=8, baseline=baseline,
                           dtypes=["float32"])

    out1 = str(tmp_path / "run1")
    assert main(["run", "--config", broken, "--seed", "inject4", "--out", out1]) == 1
    v1 = verdict(out1)
    assert v1["result"] == "fail" and v1["new"], v1
    fps = {g["fingerprint"] for g in v1["new"]}
    assert len(fps) == 1 and v1["clusters"] == 1  # every Sigmoid model reduces to one bug
    assert {g["typed"] for g in v1["new"]} == {"Sigmoid(float32)"}
    assert all(g["backend"] == "tvm[cpu]" and g["verdict"] == "mismatch" for g in v1["new"])
    err = capsys.readouterr().err
    for s in fps:
        assert s in err  # the log names each new fingerprint
    # every Sigmoid model fails on the broken TVM, and only those
    for rec in results(out1):
        tvm = next(v for v in rec["verdicts"] if v["backend"] == "tvm[cpu]")
        ort = next(v for v in rec["verdicts"] if v["backend"] == "onnxruntime[cpu]")
        assert ort["verdict"] == "pass"
        assert (tvm["verdict"] == "mismatch") == ("Sigmoid" in rec["operators"]), rec["case"]
        if tvm["verdict"] == "mismatch":
            # confirmed by a re-run of the case, or, where it reused the reduction of an earlier
            # Sigmoid case, by the run of its own Sigmoid cut out of it
            reused = "reused" in tvm["identity"].get("reduction", {})
            assert tvm["confirm"] == {"runs": 1, "reproduced": True, **({"on": "cut case"} if reused else {})}
            assert tvm["identity"]["typed"] == "Sigmoid(float32)" or tvm["identity"]["typed"].startswith("Sigmoid(")
            assert os.path.isfile(os.path.join(out1, rec["bundle"], "model.onnx"))
    summary = open(os.path.join(out1, "summary.md")).read()
    assert "New failures (fail the check)" in summary and "Sigmoid(" in summary
    assert "No base build configured" in summary and v1["novelty"] == "baseline"  # novelty from the baseline

    assert main(["baseline", "update", out1, "--baseline", baseline]) == 0
    doc = json.load(open(baseline))
    assert set(doc["fingerprints"]) == fps and doc["dlgate_baseline"] == 2
    (fp,) = fps
    assert os.path.isfile(os.path.join(tmp_path, "baseline.repros", fp, "repro.py"))

    # another commit's batch, one where a Sigmoid reaches an output: known, never new, nothing fixed
    other = seed_where(broken, lambda cases: any("Sigmoid" in cone for c in cases for cone in output_cones(c.model_bytes)),
                       "other")
    out2 = str(tmp_path / "run2")
    assert main(["run", "--config", broken, "--seed", other, "--out", out2]) == 0
    v2 = verdict(out2)
    assert v2["result"] == "pass" and not v2["new"] and not v2["fixed"]
    assert {g["fingerprint"] for g in v2["known"]} == fps
    assert "Known failures (in the baseline)" in open(os.path.join(out2, "summary.md")).read()

    # the bug is fixed: the baseline's own repro shows it, whatever the batch (one model)
    out3 = str(tmp_path / "run3")
    assert main(["run", "--config", healthy, "--seed", "inject4", "--out", out3, "--models", "1"]) == 0
    v3 = verdict(out3)
    assert not v3["new"] and not v3["known"]
    assert {f["fingerprint"] for f in v3["fixed"]} == fps  # shown by the baseline's own repro
    text = open(os.path.join(out3, "summary.md")).read()
    assert "Fixed" in text and "its reduced repro passes now" in text


# -- one TVM campaign, whole: what a resumed run and merged shards must equal ----------------------
@pytest.fixture(scope="module")
def tvm_whole(tmp_path_factory):
    """One uninterrupted run of the injected TVM beside onnxruntime on 9 models (seed
    ``shards``; it finds the injected bug, so reductions and repros are in it): (config,
    folder). A SIGKILLed run resumed, and three shards merged, must each give exactly it."""
    d = tmp_path_factory.mktemp("tvm-whole")
    cfg = write_config(str(d), models=9, backends=[INJECTED_TVM, "onnxruntime"], crosscheck=False)
    whole = str(d / "whole")
    assert main(["run", "--config", cfg, "--seed", "shards", "--out", whole]) == 1
    return cfg, whole


# -- journal: a SIGKILL half-way, then resume ---------------------------------------------------
def _run_cmd(cfg, out):
    return [sys.executable, "-m", "dlgate", "run", "--config", cfg, "--seed", "shards", "--out", out, "--no-progress"]


def test_sigkill_then_resume_gives_the_uninterrupted_results(tvm_whole, tmp_path, capsys):
    cfg, whole = tvm_whole
    killed = str(tmp_path / "killed")
    proc = subprocess.Popen(_run_cmd(cfg, killed), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO,
                            start_new_session=True)
    path = os.path.join(killed, "results.jsonl")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if os.path.exists(path) and len(read_records(path)) >= 4:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    n_before = len(read_records(path))
    assert 4 <= n_before < 9, n_before
    assert not os.path.exists(os.path.join(killed, "verdict.json"))
    # the resume runs in this process: only the SIGKILL needs a process of its own, and this
    # one has TVM and PyTorch warm already (a fresh interpreter would import both again)
    capsys.readouterr()
    assert main(_run_cmd(cfg, killed)[3:]) == 1  # the injected bug, as in the whole run
    err = capsys.readouterr().err
    assert f"{n_before} of 9 cases already done" in err, err
    assert open(path).read() == open(os.path.join(whole, "results.jsonl")).read()
    assert verdict(killed)["counts"] == verdict(whole)["counts"]


def test_a_torn_last_line_is_cut_and_redone(tmp_path):
    cfg = write_config(str(tmp_path), models=3, backends=["onnxruntime"])
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "torn", "--out", out]) == 0
    full = open(os.path.join(out, "results.jsonl")).read()
    lines = full.splitlines(keepends=True)
    with open(os.path.join(out, "results.jsonl"), "w") as f:
        f.write("".join(lines[:2]) + lines[2][: len(lines[2]) // 2])
    assert main(["run", "--config", cfg, "--seed", "torn", "--out", out]) == 0
    assert open(os.path.join(out, "results.jsonl")).read() == full


def test_resuming_a_different_run_is_refused(tmp_path, capsys):
    cfg = write_config(str(tmp_path), models=2, backends=["onnxruntime"])
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "a", "--out", out]) == 0
    assert main(["run", "--config", cfg, "--seed", "b", "--out", out]) == 2
    assert "holds a different run" in capsys.readouterr().err
    assert main(["run", "--config", cfg, "--seed", "b", "--out", out, "--fresh"]) == 0


# -- shards ---------------------------------------------------------------------------------------
def test_three_shards_merged_equal_one_run(tvm_whole, tmp_path):
    cfg, whole = tvm_whole
    shards = []
    for i in (1, 2, 3):
        d = str(tmp_path / f"s{i}")
        main(["run", "--config", cfg, "--seed", "shards", "--out", d, "--shard", f"{i}/3"])
        assert json.load(open(os.path.join(d, "run.json")))["shard"] == [i, 3]
        shards.append(d)
    cases = [{r["case"] for r in results(d)} for d in shards]
    assert all(cases) and not (cases[0] & cases[1]) and not (cases[1] & cases[2]) and not (cases[0] & cases[2])
    merged = str(tmp_path / "merged")
    assert main(["merge", *shards, "--out", merged]) == 1
    key = lambda out: {r["case"]: [(v["backend"], v["verdict"], (v.get("identity") or {}).get("fingerprint"))  # noqa: E731
                                   for v in r["verdicts"]] for r in results(out)}
    assert key(merged) == key(whole)
    vw, vm = verdict(whole), verdict(merged)
    for k in ("counts", "new", "known", "fixed", "flaky", "exit_code"):
        assert vm[k] == vw[k], k
    # byte for byte, but for which case of a cause was reduced: a failure that reused an
    # earlier case's reduction in the whole run may be reduced itself in its shard (docs/gate.md,
    # Sharding), and then it records that reduction, its confirming run and that case's cause
    assert _triage_blind(merged) == _triage_blind(whole)
    for rm, rw in zip(results(merged), results(whole)):
        for a, b in zip(rm["verdicts"], rw["verdicts"]):
            if a != b:
                assert any("reused" in ((x.get("identity") or {}).get("reduction") or {}) for x in (a, b)), rm["case"]
                assert a["identity"]["fingerprint"] == b["identity"]["fingerprint"]
    for g in vm["new"]:
        assert all(os.path.isdir(os.path.join(merged, b)) for b in g["bundles"])


def _triage_blind(out) -> str:
    """``results.jsonl`` without what says which case of a cause was reduced."""
    lines = []
    for r in results(out):
        for v in r["verdicts"]:
            (v.get("confirm") or {}).pop("on", None)
            for k in ("reduction", "cause", "cause_text"):
                (v.get("identity") or {}).pop(k, None)
        lines.append(json.dumps(r, sort_keys=True))
    return "\n".join(lines)


def test_merge_refuses_incomplete_or_mismatched_shards(tmp_path, capsys):
    cfg = write_config(str(tmp_path), models=4, backends=["onnxruntime"])
    d1, d2 = str(tmp_path / "a"), str(tmp_path / "b")
    main(["run", "--config", cfg, "--seed", "m", "--out", d1, "--shard", "1/2"])
    assert main(["merge", d1, "--out", str(tmp_path / "m")]) == 2
    assert "expected shards 1..2" in capsys.readouterr().err
    main(["run", "--config", cfg, "--seed", "other", "--out", d2, "--shard", "2/2"])
    assert main(["merge", d1, d2, "--out", str(tmp_path / "m")]) == 2
    assert "root" in capsys.readouterr().err
    assert main(["run", "--config", cfg, "--seed", "m", "--out", d2, "--shard", "3/2"]) == 2


def test_slices_of_the_batch_run_its_cases_and_merge_into_the_whole_run(tmp_path, capsys):
    """--cases A-B runs those cases of the batch alone, the same models as the whole run's;
    slices (sharded or not) merge into the whole run's journal."""
    corpus = str(tmp_path / "corpus")  # a corpus case runs in the whole run, not in a slice
    assert main(["gen", "--seed", "c", "--count", "1", "--out", corpus]) == 0
    cfg = write_config(str(tmp_path), models=6, backends=["onnxruntime"], corpus=corpus)
    whole = str(tmp_path / "whole")
    assert main(["run", "--config", cfg, "--seed", "sl", "--out", whole]) == 0
    assert results(whole)[0]["case"].startswith("corpus/")
    lo, hi1, hi2 = (str(tmp_path / n) for n in ("lo", "hi1", "hi2"))
    assert main(["run", "--config", cfg, "--seed", "sl", "--out", lo, "--cases", "0-2"]) == 0
    assert [r["case"][:5] for r in results(lo)] == ["00000", "00001", "00002"]
    assert json.load(open(os.path.join(lo, "run.json")))["cases"] == [[0, 2]]
    for i, d in ((1, hi1), (2, hi2)):
        assert main(["run", "--config", cfg, "--seed", "sl", "--out", d, "--cases", "3-5", "--shard", f"{i}/2"]) == 0
    assert [r["case"][:5] for r in results(hi1)] == ["00004"]  # shard 1 owns the even indices, as in a whole run
    assert [r["case"][:5] for r in results(hi2)] == ["00003", "00005"]
    hi = str(tmp_path / "hi")
    assert main(["merge", hi1, hi2, "--out", hi]) == 0
    merged = str(tmp_path / "merged")
    assert main(["merge", lo, hi, "--out", merged]) == 0
    key = lambda out: [(r["case"], [(v["backend"], v["verdict"]) for v in r["verdicts"]]) for r in results(out)]  # noqa: E731
    assert key(merged) == key(whole)[1:]
    assert json.load(open(os.path.join(merged, "run.json")))["cases"] == [[0, 2], [3, 5]]
    capsys.readouterr()
    # resuming with another slice, shards of different slices, a range past the batch: one line, exit 2
    assert main(["run", "--config", cfg, "--seed", "sl", "--out", lo, "--cases", "1-2"]) == 2
    assert "holds a different run (cases: [[0, 2]], now [[1, 2]])" in capsys.readouterr().err
    odd = str(tmp_path / "odd")
    assert main(["run", "--config", cfg, "--seed", "sl", "--out", odd, "--cases", "0-2", "--shard", "2/2"]) == 0
    assert main(["merge", hi1, odd, "--out", str(tmp_path / "bad")]) == 2
    assert "run the same --cases slice" in capsys.readouterr().err
    for bad, said in (("4-9", "the batch has 6 cases (0-5)"), ("3-1", "need 0 <= A <= B"), ("x", "expected A-B")):
        assert main(["run", "--config", cfg, "--seed", "sl", "--out", str(tmp_path / "n"), "--cases", bad]) == 2
        err = capsys.readouterr().err.strip()
        assert said in err and len(err.splitlines()) == 1, err
    assert not os.path.exists(tmp_path / "n")  # refused before the output folder is touched


def test_a_slice_of_a_campaign_with_tir_steps_is_refused(tmp_path, capsys):
    cfg = write_config(str(tmp_path), models=6, backends=["tvm"], tir_share=0.5)
    assert main(["run", "--config", cfg, "--seed", "sl", "--out", str(tmp_path / "o"), "--cases", "0-2"]) == 2
    assert "chains run whole" in capsys.readouterr().err


# -- flaky, head-versus-base ----------------------------------------------------------------------
def test_a_failure_that_does_not_reproduce_is_flaky_and_does_not_fail(tmp_path):
    cfg = write_config(str(tmp_path), models=3, backends=[{"name": "tests.fake_backends:Flaky"}], crosscheck=False)
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "flaky", "--out", out]) == 0
    v = verdict(out)
    assert v["flaky"] and not v["new"], v
    confirmed = [v["confirm"] for r in results(out) for v in r["verdicts"] if "confirm" in v]
    assert confirmed and all(c["reproduced"] is False for c in confirmed)
    assert "Flaky" in open(os.path.join(out, "summary.md")).read()


@pytest.mark.parametrize("base_has_bug, expect_exit, cls", [(True, 0, "pre_existing"), (False, 1, "new")])
def test_head_versus_base(tmp_path, monkeypatch, base_has_bug, expect_exit, cls):
    monkeypatch.setenv("FAKE_BUG", "1")  # the head build (this environment) has the bug
    base = {"python": sys.executable, "env": {"FAKE_BUG": "1" if base_has_bug else "0", "PYTHONPATH": REPO}}
    cfg = write_config(str(tmp_path), models=3, backends=[{"name": "tests.fake_backends:EnvBug"}], crosscheck=False,
                       base=base)
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "hvb", "--out", out]) == expect_exit
    v = verdict(out)
    assert v[cls] and sum(len(v[k]) for k in ("new", "pre_existing")) == len(v[cls])
    assert v["novelty"] == "base" and "base build" in open(os.path.join(out, "summary.md")).read()
    for rec in results(out):
        for x in rec["verdicts"]:
            if x["verdict"] == "mismatch":
                assert x["base"]["reproduces"] is base_has_bug


def _tanh_outputs_with_and_without_sigmoid(cases) -> bool:
    """Whether the batch holds models with a Sigmoid whose first output reached by a Tanh
    depends on a Sigmoid too, and ones where it does not."""
    kinds = set()
    for c in cases:
        hit = [cone for cone in output_cones(c.model_bytes) if "Tanh" in cone]
        if hit and "Sigmoid" in onnx_ops(c):
            kinds.add("Sigmoid" in hit[0])
    return kinds == {True, False}


def test_a_base_build_wrong_in_another_output_does_not_hide_a_new_error(tmp_path, monkeypatch):
    import onnx

    # head gets every Tanh wrong (new), base every Sigmoid (an older bug): faults tied to
    # operators, as compilers' are. In a model holding both, the base build is wrong in the
    # outputs a Sigmoid reaches; where head's failing output depends on no Sigmoid, that is
    # another output, and it must not hide head's new error: the failure is not reduced, so
    # its cone (the operators that output depends on) decides, and the base build passes it.
    # Where that output depends on a Sigmoid too, the base build is wrong there: shared.
    monkeypatch.setenv("FAKE_WRONG", "Tanh")
    monkeypatch.delenv("FAKE_BUG", raising=False)
    base = {"python": sys.executable, "env": {"FAKE_WRONG": "Sigmoid", "PYTHONPATH": REPO}}
    # no Relu or Neg: neither can hide an operator's result off by one (Relu(-x - 1) = Relu(-x) = 0)
    cfg = write_config(str(tmp_path), models=6, backends=[{"name": "tests.fake_backends:EnvOpBugs"}],
                       crosscheck=False, base=base, operators=["Sigmoid", "Tanh", "Add", "Mul", "Abs"],
                       dtypes=["float32"], findings_per_case=1, reduce=False)
    out = str(tmp_path / "o")
    rc = main(["run", "--config", cfg, "--seed", seed_where(cfg, _tanh_outputs_with_and_without_sigmoid, "outputs"),
               "--out", out])
    through_cone = shared = 0
    for rec in results(out):
        for x in rec["verdicts"]:
            if x["verdict"] != "mismatch":
                continue
            model = onnx.load(os.path.join(out, rec["bundle"], "model.onnx"))
            cone = output_cones(model)[x["comparison"]["output"]]  # what head's failing output depends on
            assert "Tanh" in cone, (rec["case"], cone)
            b = x["base"]
            assert b["reproduces"] is ("Sigmoid" in cone), (rec["case"], cone, b)
            if "Sigmoid" not in {n.op_type for n in model.graph.node}:
                assert b["verdict"] == "pass" and b["decided_on"] == "case", (rec["case"], b)
            elif "Sigmoid" not in cone:  # the base build is wrong in another output: the cone decides
                assert b["decided_on"] == "cone case" and b["verdict"] == "pass", (rec["case"], b)
                assert b["whole"]["verdict"] == "mismatch" and b["cone"]["operators"] < b["cone"]["of"], b
                through_cone += 1
            shared += b["reproduces"]
    assert through_cone and shared, (through_cone, shared)
    d = verdict(out)
    assert rc == 1 and d["new"] and d["pre_existing"]


# -- corpus ---------------------------------------------------------------------------------------
def test_corpus_regression_and_fix(tmp_path, monkeypatch):
    """A corpus case that failed, then passed, fails again: a regression. The last run's
    seed is one whose generated case holds none of the corpus case's operators."""
    monkeypatch.chdir(tmp_path)
    corpus, baseline = str(tmp_path / "corpus"), str(tmp_path / "baseline.json")
    bug = {"name": "tests.fake_backends:EnvBug"}
    cfg = write_config(str(tmp_path), models=2, backends=[bug], crosscheck=False, corpus=corpus, baseline=baseline)
    monkeypatch.setenv("FAKE_BUG", "1")
    assert main(["run", "--config", cfg, "--seed", "c1", "--out", "r1"]) == 1
    names = sorted(os.listdir(corpus))
    assert names and all(n.startswith("tests.fake_backends:EnvBug-mismatch-") for n in names)
    # the fix lands: the corpus case passes now and is reported as fixed
    monkeypatch.setenv("FAKE_BUG", "0")
    assert main(["baseline", "update", "r1", "--baseline", baseline]) == 0
    assert main(["run", "--config", cfg, "--seed", "c2", "--out", "r2"]) == 0
    v = verdict("r2")
    assert any(f.get("corpus") == names[0] for f in v["fixed"]), v["fixed"]
    # record the corpus passing, then the bug comes back: a regression fails the check
    assert main(["baseline", "update", "r2", "--baseline", baseline, "--prune"]) == 0
    assert json.load(open(baseline))["corpus"][names[0]] == {"tests.fake_backends:EnvBug[cpu]": "pass"}
    monkeypatch.setenv("FAKE_BUG", "1")
    # a batch case meeting the corpus case's operator would share its cause, and the cause
    # would be new there: the one generated case holds none of them
    import glob

    import onnx

    kept = {n.op_type for f in glob.glob(os.path.join(corpus, names[0], "**", "*.onnx"), recursive=True)
            for n in onnx.load(f).graph.node}
    assert kept, os.listdir(os.path.join(corpus, names[0]))
    c3 = seed_where(cfg, lambda cases: not kept & set(onnx_ops(cases[0])), "c3-")
    assert main(["run", "--config", cfg, "--seed", c3, "--out", "r3", "--models", "1"]) == 1
    v = verdict("r3")
    assert [g["cases"] for g in v["regressions"]] and all(c.startswith("corpus/") for g in v["regressions"]
                                                          for c in g["cases"])
    junit = ET.parse("r3/junit.xml").getroot()
    names_in_junit = {tc.get("name") for tc in junit.iter("testcase")}
    assert f"corpus/{names[0]}" in names_in_junit  # stable across commits


# -- reports --------------------------------------------------------------------------------------
def test_junit_is_valid_and_maps_verdicts(tmp_path, monkeypatch):
    xmlschema = pytest.importorskip("xmlschema")
    step = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    monkeypatch.setenv("FAKE_BUG", "1")
    cfg = write_config(str(tmp_path), models=3, crosscheck=False, dtypes=["float32"], findings_per_case=1,
                       backends=["onnxruntime", {"name": "tests.fake_backends:EnvBug"},
                                 {"name": "tests.fake_backends:Declines"}, {"name": "tests.fake_backends:Segfault"}])
    out = str(tmp_path / "o")  # one testcase per model (findings behind others: tests/test_multibug.py)
    assert main(["run", "--config", cfg, "--seed", "junit", "--out", out, "--timeout", "20"]) == 1
    path = os.path.join(out, "junit.xml")
    xmlschema.XMLSchema(XSD).validate(path)
    root = ET.parse(path).getroot()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert len(suites) == 4 and all(int(s.get("tests")) == 3 for s in suites.values())

    def kinds(label):
        s = next(v for k, v in suites.items() if label in k)
        return [[c.tag for c in tc if c.tag in ("failure", "error", "skipped")] for tc in s.iter("testcase")]

    assert kinds("onnxruntime") == [[], [], []]
    assert kinds("EnvBug") == [["failure"]] * 3  # wrong answers
    assert kinds("Segfault") == [["error"]] * 3  # crashes
    assert kinds("Declines") == [["skipped"]] * 3  # unsupported
    fail = next(iter(root.iter("failure")))
    ids = {g["cluster"] for g in verdict(out)["new"] if g["verdict"] == "mismatch"}  # the id to quote
    assert {f.get("message").split("[")[1].split("]")[0] for f in root.iter("failure")} == ids
    assert all(f.get("message").startswith("new mismatch in ") for f in root.iter("failure"))
    assert fail.get("type") == "mismatch"
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["root"] == "junit" and props["campaign"] == "t" and "version.version" in props
    outs = [tc.findtext("system-out") for tc in root.iter("testcase")]
    assert any("reproduce the whole case: dlgate check cases/" in o for o in outs)
    assert any("reduced repro: repros/" in o for o in outs)
    names = [tc.get("name") for tc in root.iter("testcase")]
    assert set(names) == {"t/00000", "t/00001", "t/00002"}  # stable across commits
    assert any("(repro: repros/" in f.get("message") for f in root.iter("failure"))
    assert "dlgate `t` on `junit`" in step.read_text()
    v = verdict(out)
    assert v["exit_code"] == 1 and v["counts"]["onnxruntime[cpu]"] == {"pass": 3}


def test_fail_on_policy(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_BUG", "1")
    baseline = str(tmp_path / "b.json")
    cfg = write_config(str(tmp_path), models=2, backends=[{"name": "tests.fake_backends:EnvBug"}], crosscheck=False,
                       baseline=baseline)
    assert main(["run", "--config", cfg, "--seed", "p", "--out", str(tmp_path / "a")]) == 1
    assert main(["baseline", "update", str(tmp_path / "a"), "--baseline", baseline]) == 0
    assert main(["run", "--config", cfg, "--seed", "p", "--out", str(tmp_path / "b")]) == 0
    assert main(["run", "--config", cfg, "--seed", "p", "--out", str(tmp_path / "c"), "--fail-on", "any"]) == 1
    assert main(["run", "--config", cfg, "--seed", "q", "--out", str(tmp_path / "d"), "--fail-on", "none"]) == 0


def test_internal_errors_exit_3_and_are_not_compiler_failures(tmp_path, monkeypatch, capsys):
    from dlgate.gate.run import loop

    cfg = write_config(str(tmp_path), models=1, backends=["onnxruntime"])

    def boom(*a, **k):
        raise RuntimeError("a defect")

    monkeypatch.setattr(loop, "generator", boom)
    assert main(["run", "--config", cfg, "--seed", "x", "--out", str(tmp_path / "o")]) == 3
    err = capsys.readouterr().err
    assert "internal error" in err and "not a failure of the compiler" in err


def test_a_campaign_whose_restriction_leaves_no_operator_is_a_bad_config_not_an_internal_error(tmp_path, capsys):
    # Gelu exists from opset 20: at the campaign's fixed opset 18 no case can be generated, redrawn or not
    cfg = write_config(str(tmp_path), models=1, operators=["Gelu"])
    assert main(["run", "--config", cfg, "--seed", "x", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("dlgate run: t: no operator can be drawn at opset 18 within the operator list"), err
    assert "internal error" not in err and "Traceback" not in err


def test_reference_failure_is_an_internal_error(tmp_path):
    from dlgate.gate import baseline as B
    from dlgate.gate import decide as D

    rec = {"case": "00000-x", "kind": "batch", "index": 0,
           "verdicts": [{"backend": "tvm[cpu]", "verdict": "reference_error", "detail": "torch failed"}]}
    d = D.decide([rec], B.Baseline(), "r", "t", ["tvm[cpu]"], True)
    assert d.exit_code() == 3 and d.internal and not d.failure_groups()


def test_without_a_config_the_embedded_default_runs(tmp_path):
    out = str(tmp_path / "o")
    assert main(["run", "--seed", "emb", "--models", "2", "--backend", "onnxruntime", "--out", out]) in (0, 1)
    v = verdict(out)
    assert v["campaign"] == "default" and v["cases"] == 2 and v["backends"] == ["onnxruntime[cpu]"]
    assert C.embedded_default().backends == ["tvm"] and C.embedded_default().reference == "torch"


def test_the_docs_config_reference_is_current():
    page = open(os.path.join(REPO, "docs", "configuration.md")).read()
    assert C.reference_markdown() in page, "regenerate docs/configuration.md's table with `dlgate config --reference`"


def test_optional_backends_that_cannot_run_here_are_skipped_with_their_reason(tmp_path, capsys):
    cfg = write_config(str(tmp_path), models=2, backends=["onnxruntime", "tvm:cuda?"])
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "skip", "--out", out]) == 0
    v = verdict(out)
    assert v["counts"]["tvm[cuda]"] == {"skipped": 2} and "tvm[cuda]" in v["unavailable"]
    summary = open(os.path.join(out, "summary.md")).read()
    assert "cannot run on this machine" in summary and v["unavailable"]["tvm[cuda]"][:40] in summary
    assert "tvm[cuda] cannot run here, skipped (optional)" in capsys.readouterr().err


@pytest.mark.parametrize("backend, words", [
    ("tvm:cuda", "no CUDA"),  # named by the campaign, not optional
    ({"name": "tests.fake_backends:BrokenImport"}, "libtvm.so"),  # a broken build: its import raises
    ({"name": "tests.fake_backends:DiesOnStart"}, "died while starting"),  # segfaults while starting
])
def test_a_required_backend_that_cannot_start_fails_the_gate(tmp_path, capsys, backend, words):
    cfg = write_config(str(tmp_path), models=2, backends=["onnxruntime", backend])
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "closed", "--out", out]) == 4
    v = verdict(out)
    assert v["result"] == "cannot-run" and v["exit_code"] == 4 and not v["unavailable"]
    (label,) = v["cannot_run"]
    assert words in v["cannot_run"][label]
    summary = open(os.path.join(out, "summary.md")).read()
    assert "Could not run" in summary and words in summary
    assert "could not run (exit status 4)" in capsys.readouterr().err
    assert results(out) == []  # nothing was judged; a rerun resumes from the start


def test_a_base_build_that_cannot_start_fails_the_gate(tmp_path, capsys):
    cfg = write_config(str(tmp_path), models=2, base={"python": str(tmp_path / "no-such-python")})
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "closed", "--out", out]) == 4
    v = verdict(out)
    assert any("base build" in k for k in v["cannot_run"]) and "no-such-python" in json.dumps(v["cannot_run"])
    # an existing interpreter that cannot import the compiler is no better
    cfg = write_config(str(tmp_path), models=2, backends=[{"name": "tests.fake_backends:EnvBroken"}],
                       base={"python": sys.executable, "env": {"FAKE_BROKEN": "1", "PYTHONPATH": REPO}})
    assert main(["run", "--config", cfg, "--seed", "closed", "--out", str(tmp_path / "o2")]) == 4
    assert "No module named" in json.dumps(verdict(str(tmp_path / "o2"))["cannot_run"])


def test_a_reference_that_cannot_start_fails_the_gate(tmp_path):
    cfg = write_config(str(tmp_path), models=2, reference="tests.fake_backends:BrokenImport")
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "closed", "--out", out]) == 4
    assert any("reference" in k for k in verdict(out)["cannot_run"])


def test_a_required_backend_skipped_mid_run_fails_the_gate_and_an_optional_one_does_not():
    from dlgate.gate import baseline as B
    from dlgate.gate import decide as D

    rec = {"case": "00000-x", "kind": "batch", "index": 0,
           "verdicts": [{"backend": "tvm[cpu]", "verdict": "skipped", "detail": "tvm[cpu] died while starting"}]}
    d = D.decide([rec], B.Baseline(), "r", "t", ["tvm[cpu]"], True)
    assert d.exit_code() == D.EXIT_CANNOT_RUN and d.cannot_run == {"tvm[cpu]": "tvm[cpu] died while starting"}
    d = D.decide([rec], B.Baseline(), "r", "t", ["tvm[cpu]"], True, optional={"tvm[cpu]"})
    assert d.exit_code() == D.EXIT_OK and d.unavailable and not d.cannot_run
