"""Repro bundles and fingerprints: standalone repro.py scripts that fail while the bug is
present, readable graphs, one fingerprint per distinct bug."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml

from dlgate.backends.base import BackendSpec
from dlgate.check import CheckConfig, check, load_bundle
from dlgate.cli import main
from dlgate.exec.worker import Pool
from dlgate.reduce.bundle import listing, mermaid, write_repro
from dlgate.reduce.identity import identity, pattern
from tests.test_reduce import BROKEN, _sigmoid_cases

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _fresh(script: str, cwd: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    return subprocess.run([sys.executable, script], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def injected_run(tmp_path_factory):
    """A gate run with the injected TVM miscompilation: new failures, reduced. No extreme
    values: TVM's default pipeline folds ``Sub(x, x)`` to 0 where x is inf (IEEE and
    onnxruntime: NaN; TVM's lowest opt level agrees), a real finding this run is not about."""
    tmp = tmp_path_factory.mktemp("gate")
    cfg = tmp / "c.yaml"
    cfg.write_text(yaml.safe_dump({
        "campaign": "repro", "models": 6, "min_nodes": 4, "max_nodes": 8, "opset": 18, "dtypes": ["float32"],
        "operators": ["Sigmoid", "Add", "Relu", "Mul", "Abs", "Neg", "Tanh", "Exp", "Sub"],
        "backends": [{"name": "tvm", "options": {"extra_passes": ["dlgate.backends.testing:sigmoid_to_tanh"]}}],
        "crosscheck": False, "reduce_seconds": 60, "extreme_share": 0}))
    out = str(tmp / "out")
    assert main(["run", "--config", str(cfg), "--seed", "repro", "--out", out]) == 1
    return out


def test_gate_reduces_each_new_failure_to_a_repro_that_fails_standalone(injected_run, tmp_path):
    v = json.load(open(os.path.join(injected_run, "verdict.json")))
    assert v["new"]
    for g in v["new"]:
        assert g["repro"] == f"repros/{g['fingerprint']}" and g["pattern"] == "Sigmoid"
        d = os.path.join(injected_run, g["repro"])
        for f in ("model.onnx", "inputs.npz", "reference.npz", "repro.py", "graph.txt", "graph.mmd", "repro.json"):
            assert os.path.isfile(os.path.join(d, f)), f
        res = _fresh(os.path.join(d, "repro.py"), str(tmp_path))  # from another folder, fresh process
        assert res.returncode == 1, res.stdout + res.stderr
        assert "BUG: wrong result (mismatch)" in res.stdout and "max abs error" in res.stdout
    summary = open(os.path.join(injected_run, "summary.md")).read()
    assert "repro.py" in summary and "Sigmoid(float32)" in summary


def test_the_repro_passes_once_the_bug_is_gone(injected_run, tmp_path):
    g = json.load(open(os.path.join(injected_run, "verdict.json")))["new"][0]
    d = os.path.join(injected_run, g["repro"])
    text = open(os.path.join(d, "repro.py")).read()
    fixed = tmp_path / "fixed"
    fixed.mkdir()
    for f in ("model.onnx", "inputs.npz", "reference.npz"):
        (fixed / f).write_bytes(open(os.path.join(d, f), "rb").read())
    (fixed / "repro.py").write_text(text.replace("EXTRA_PASSES = ['dlgate.backends.testing:sigmoid_to_tanh']",
                                                 "EXTRA_PASSES = []"))
    res = _fresh(str(fixed / "repro.py"), str(tmp_path))
    assert res.returncode == 0 and res.stdout.startswith("OK:"), res.stdout + res.stderr


def test_all_mismatches_of_one_bug_share_a_fingerprint(injected_run):
    v = json.load(open(os.path.join(injected_run, "verdict.json")))
    fps = {json.load(open(os.path.join(injected_run, g["repro"], "repro.json")))["fingerprint"] for g in v["new"]}
    assert len(fps) == 1
    from dlgate.github.issues import findings

    found = findings(injected_run)
    assert len(found) == 1 and found[0].cases == sum(len(g["cases"]) for g in v["new"])
    assert sorted(x[0] for x in found[0].fingerprints) == sorted(g["fingerprint"] for g in v["new"])


def test_fingerprints_separate_bugs():
    case = _sigmoid_cases(1)[0]
    g = case.graph
    fp = lambda *a: identity(*a)["fingerprint"]  # noqa: E731
    assert fp("mismatch", "tvm", None, g) != fp("mismatch", "onnxruntime", None, g)
    e1, e2 = {"type": "E", "message": "one thing"}, {"type": "E", "message": "another thing"}
    assert fp("compile_error", "tvm", e1, g) != fp("compile_error", "tvm", e2, g)
    assert pattern(g).count(">") == len(g.nodes) - 1


def test_listing_and_mermaid_describe_the_onnx_graph(tmp_path):
    case = _sigmoid_cases(1)[0]
    text = listing(case.model)
    assert "Sigmoid" in text and "opset_import" in text
    mmd = mermaid(case.model)
    assert mmd.startswith("flowchart TD") and mmd.count('["Sigmoid') >= 1 and "output" in mmd


def test_an_error_repro_prints_the_error(tmp_path):
    """A compile error (a backend that rejects the model) reproduces as an exception."""
    case = _sigmoid_cases(1)[0]
    spec = BackendSpec("onnxruntime")
    verdict = {"verdict": "compile_error", "backend": "onnxruntime[cpu]", "signature": {"id": "x", "text": ""},
               "detail": "boom", "versions": {}}
    d = write_repro(str(tmp_path / "r"), case, spec, verdict, [np.zeros(1)], {"case": case.id})
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(b"not a model")  # onnx.load fails before the compiler: still a non-zero exit
    res = _fresh(os.path.join(d, "repro.py"), str(tmp_path))
    assert res.returncode != 0


def test_reduce_command_end_to_end(injected_run, tmp_path):
    v = json.load(open(os.path.join(injected_run, "verdict.json")))
    case_dir = os.path.join(injected_run, v["new"][0]["bundles"][0])
    assert main(["reduce", case_dir, "--backend", "tvm"]) == 1  # the real TVM is right on it: nothing to reduce
    cfg = CheckConfig([BROKEN], crosscheck=False)
    with Pool(120) as pool:
        assert check(pool, load_bundle(case_dir), cfg)["verdicts"][0]["verdict"] == "mismatch"


def test_mermaid_names_sequence_optional_and_untyped_values():
    from onnx import TensorProto, helper

    from dlgate.reduce.bundle import mermaid

    seq = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)
    untyped = helper.make_tensor_value_info("u", TensorProto.UNDEFINED, None)
    g = helper.make_graph([helper.make_node("SequenceConstruct", ["x"], ["s"]),
                           helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0),
                           helper.make_node("Identity", ["y"], ["u"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("u", TensorProto.FLOAT, [2])], value_info=[seq, untyped])
    text = mermaid(helper.make_model(g).SerializeToString())
    assert "sequence" in text and "SequenceConstruct" in text
