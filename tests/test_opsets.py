"""Opsets up to the newest: a run caps its opset range at what every backend under test
loads, records the range, and a resumed run keeps it."""
from __future__ import annotations

import json
import os

import yaml

from dlgate.backends.base import BackendSpec
from dlgate.cli import main
from dlgate.exec.worker import Pool
from dlgate.graph.generator import NEWEST_OPSET
from dlgate.probe.support import opset_ceiling

OPS = ["Add", "Mul", "Relu", "Neg"]


def _config(tmp_path, **kw) -> str:
    doc = {"campaign": "opsets", "models": 8, "max_nodes": 3, "operators": OPS, "dynamic_share": 0, "dtypes": ["float32"],
           "backends": ["onnxruntime"], "timeout_s": 60, "reduce": False, "crosscheck": False}
    doc.update(kw)
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(doc))
    return str(p)


def _run_json(out) -> dict:
    with open(os.path.join(out, "run.json")) as f:
        return json.load(f)


def _opsets(out) -> set:
    with open(os.path.join(out, "results.jsonl")) as f:
        return {json.loads(line)["opset"] for line in f if line.strip()}


def test_the_ceiling_is_the_newest_opset_a_backend_loads():
    with Pool(timeout_s=60) as pool:
        new = opset_ceiling(lambda m, xs: pool.execute(BackendSpec("onnxruntime"), m, xs))
        old = opset_ceiling(lambda m, xs: pool.execute(BackendSpec("tests.fake_backends:OldRuntime"), m, xs))
    assert new["opset"] == NEWEST_OPSET and not new["refused"]
    assert old["opset"] == 20 and sorted(old["refused"]) == list(range(21, NEWEST_OPSET + 1))
    assert "opset version 20" in old["refused"][21] and old["ir_version"] >= 7


def test_a_run_caps_its_range_at_the_oldest_backend_and_a_resume_keeps_it(tmp_path, capsys):
    out = str(tmp_path / "out")
    cfg = _config(tmp_path, backends=["onnxruntime", "tests.fake_backends:OldRuntime"], models=12)
    assert main(["run", "--config", cfg, "--seed", "s", "--out", out]) == 0
    said = capsys.readouterr()
    assert "OldRuntime[cpu] loads models up to opset 20; generating up to it" in said.out + said.err
    assert _run_json(out)["opset_range"] == [13, 20]
    assert max(_opsets(out)) <= 20 and len(_opsets(out)) >= 3
    # the recorded range is kept by a resumed run, whatever the backends load now
    man = _run_json(out)
    lines = open(os.path.join(out, "results.jsonl")).read().splitlines(keepends=True)
    with open(os.path.join(out, "results.jsonl"), "w") as f:
        f.writelines(lines[:5])
    assert main(["run", "--config", cfg, "--seed", "s", "--out", out]) == 0
    assert _run_json(out)["opset_range"] == man["opset_range"]
    assert len(_opsets(out)) >= 3 and max(_opsets(out)) <= 20


def test_without_old_backends_the_newest_opset_is_drawn(tmp_path):
    out = str(tmp_path / "out")
    assert main(["run", "--config", _config(tmp_path, models=10), "--seed", "s", "--out", out]) == 0
    assert _run_json(out)["opset_range"] == [13, NEWEST_OPSET]
    assert NEWEST_OPSET in _opsets(out)


def test_max_opset_and_opset_fix_the_range_without_probing(tmp_path):
    out = str(tmp_path / "a")
    assert main(["run", "--config", _config(tmp_path, max_opset=17), "--seed", "s", "--out", out]) == 0
    assert _run_json(out)["opset_range"] == [13, 17] and max(_opsets(out)) <= 17
    out = str(tmp_path / "b")
    assert main(["run", "--config", _config(tmp_path, opset=15), "--seed", "s", "--out", out]) == 0
    assert _run_json(out)["opset_range"] == [15, 15] and _opsets(out) == {15}
