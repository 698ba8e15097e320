"""The command surface: gen, stats, ops, and one-line errors with exit status 2."""
from __future__ import annotations

import json
import os

import onnx
import pytest

from dlgate.cli import main


def test_gen_writes_models_and_metadata(tmp_path, capsys):
    assert main(["gen", "--seed", "s", "--count", "4", "--out", str(tmp_path), "--max-nodes", "5", "--opset", "18"]) == 0
    cases = sorted(os.listdir(tmp_path))
    assert len(cases) == 4
    for c in cases:
        meta = json.loads((tmp_path / c / "meta.json").read_text())
        for key in ("seed", "index", "nodes", "operators", "inputs", "outputs", "sha256", "opset"):
            assert key in meta
        assert meta["opset"] == 18 and 1 <= meta["nodes"] <= 5
        model = onnx.load(str(tmp_path / c / "model.onnx"))
        assert len(model.graph.node) >= meta["nodes"]
        assert [i["name"] for i in meta["inputs"]] == [i.name for i in model.graph.input]
    assert "wrote 4 models" in capsys.readouterr().out


def test_gen_with_operator_list(tmp_path):
    assert main(["gen", "--seed", "s", "--count", "5", "--out", str(tmp_path), "--ops", "Add,Relu"]) == 0
    for c in os.listdir(tmp_path):
        assert set(json.loads((tmp_path / c / "meta.json").read_text())["operators"]) <= {"Add", "Relu"}


@pytest.mark.parametrize("argv, needle", [
    (["gen", "--seed", "s", "--count", "0", "--out", "x"], "--count"),
    (["gen", "--seed", "s", "--count", "two", "--out", "x"], "--count"),
    (["gen", "--count", "2", "--out", "x"], "--seed"),
    (["gen", "--seed", "s", "--count", "2", "--out", "x", "--ops", "Add,Bogus"], "Bogus"),
    (["gen", "--seed", "s", "--count", "2", "--out", "x", "--opset", "99"], "opset"),
    (["gen", "--seed", "s", "--count", "2", "--out", "x", "--support", "nosuch"], "nosuch"),
    (["gen", "--seed", "s", "--count", "2", "--out", "x", "--ops", "Gelu", "--opset", "18"],
     "no operator can be drawn at opset 18 within the operator list"),
    (["stats", "/nonexistent/dir"], "no generated cases"),
    (["frobnicate"], "unknown command 'frobnicate'"),
])
def test_bad_arguments_give_one_line_and_status_2(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_stats_prints_a_table_and_writes_json(tmp_path, capsys):
    main(["gen", "--seed", "s", "--count", "20", "--out", str(tmp_path)])
    assert main(["stats", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for m in ("NOO", "OTC", "SAC", "div_V", "div_E"):
        assert m in out
    res = json.loads((tmp_path / "stats.json").read_text())
    assert res["graphs"] == 20 and res["NOO"] >= 1


def test_ops_lists_every_spec(capsys):
    from dlgate.ops.registry import all_specs

    assert main(["ops"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 + len(all_specs()) + 1  # the header, a row per spec, and the count
    assert lines[0].split() == ["spec", "family", "opset", "dtypes", "ONNX", "operators"]
    assert sorted(line.split()[0] for line in lines[1:-1]) == sorted(all_specs())
