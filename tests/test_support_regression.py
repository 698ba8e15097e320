"""Support regressions, head versus base: a model the base build runs and head refuses
(``unsupported``) is reduced to the operator head refuses, with both builds judging every
candidate, and reported once per refused operator however many models meet it.

Head is ``dlgate.backends.testing:RefusingOnnxRuntime``: onnxruntime that refuses the
operator types ``DLGATE_REFUSE`` names in its worker's environment, with onnxruntime's own
exception and words; the base build is the same backend in an environment that names none
(plain onnxruntime) or others."""
from __future__ import annotations

import json
import os
import sys

import onnx
import pytest
import yaml

from dlgate.backends.base import BackendSpec
from dlgate.case import make_case
from dlgate.check import CheckConfig, check, prepare
from dlgate.cli import main
from dlgate.exec.worker import Pool
from dlgate.gate.journal import read_records
from dlgate.graph.generator import GenConfig, Generator
from dlgate.reduce.reducer import NotReproduced, Reducer, Target

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFUSING = "dlgate.backends.testing:RefusingOnnxRuntime"
OPS = ["Sigmoid", "Add", "Relu", "Mul", "Abs", "Neg", "Tanh", "Exp"]


def _run(tmp_path, monkeypatch, head: str, base: str, seed: str, pick=None, **kw) -> tuple:
    """``dlgate run`` head versus base: head refuses ``head``'s types, the base build ``base``'s.
    ``pick``: the seed is then the first ``seed``1, 2, ... whose batch ``pick`` takes."""
    monkeypatch.setenv("DLGATE_REFUSE", head)
    doc = {"campaign": "support", "models": 10, "min_nodes": 4, "max_nodes": 8, "opset": 18, "operators": OPS,
           "dtypes": ["float32"], "backends": [{"name": REFUSING}], "timeout_s": 120, "crosscheck": False,
           "base": {"python": sys.executable, "env": {"DLGATE_REFUSE": base, "PYTHONPATH": REPO}}}
    doc.update(kw)
    cfg, out = tmp_path / "campaign.yaml", tmp_path / "out"
    cfg.write_text(yaml.safe_dump(doc))
    if pick is not None:
        from tests.helpers import seed_where

        seed = seed_where(str(cfg), pick, seed)
    rc = main(["run", "--config", str(cfg), "--seed", seed, "--out", str(out), "--no-progress"])
    with open(out / "verdict.json") as f:
        return rc, json.load(f), read_records(str(out / "results.jsonl")), str(out)


def _refusals(records) -> list:
    """Every unsupported verdict of the run, those found behind another finding included."""
    out = []
    for rec in records:
        for v in rec["verdicts"]:
            out += [x for x in [v] + v.get("more", []) if x["verdict"] == "unsupported"]
    return out


def _both_refused_from_four(cases) -> bool:
    """Whether a batch has three cases or more holding Tanh, as many holding Exp, and one
    holding both; and each holding both keeps four nodes or more besides those of the first
    of the two types met (which onnxruntime refuses first): the model the second refusal is
    found on, and reduced from, is the case cut there."""
    from tests.helpers import onnx_ops

    refused = ("Tanh", "Exp")
    ops = [onnx_ops(c) for c in cases]
    if any(sum(op in o for o in ops) < 3 for op in refused):
        return False
    both = [o for o in ops if all(op in o for op in refused)]
    firsts = [next(op for op in o if op in refused) for o in both]
    return bool(both) and all(len(o) - o.count(first) >= 4 for o, first in zip(both, firsts))


def test_a_refusal_the_base_build_runs_is_reduced_to_the_refused_operator_and_grouped_by_it(tmp_path, monkeypatch):
    """The seed is the first whose batch :func:`_both_refused_from_four` takes."""
    rc, v, records, out = _run(tmp_path, monkeypatch, head="Tanh,Exp", base="", seed="lost-kernels",
                               pick=_both_refused_from_four)
    assert rc == 1
    # one cause per refused operator, each standing for several models
    causes = {tuple(c["operators"]): c for c in v["cluster_list"]}
    assert set(causes) == {("Exp",), ("Tanh",)}, v["cluster_list"]
    for (op,), c in causes.items():
        assert c["classes"] == ["new"] and c["verdict"] == "unsupported" and c["cases"] >= 3, c
        assert c["text"] == f"unsupported: refuses {op}, which the base build runs"
    assert len(v["new"]) == 2 and {g["pattern"] for g in v["new"]} == {"Tanh", "Exp"}
    # each one a one-operator model of the refused type, still refused by head; the base build runs it
    for g in v["new"]:
        model = onnx.load(os.path.join(out, g["repro"], "model.onnx"))
        assert [n.op_type for n in model.graph.node] == [g["pattern"]]
        assert f"Could not find an implementation for {g['pattern']}(" in g["detail"]
    refusals = _refusals(records)
    assert len(refusals) >= 4
    for x in refusals:
        assert x["base"]["verdict"] == "pass" and x["base"]["reproduces"] is False
        assert x["identity"]["nodes"] == 1 and x["identity"]["original_nodes"] >= 4
        assert x["identity"]["refused"] == [x["identity"]["pattern"]]
    # a model holding both operators: the second refusal is found behind the first, with its own cause
    both = [x for rec in records for v0 in rec["verdicts"] for x in v0.get("more", ())]
    assert both and all(x["verdict"] == "unsupported" and x["identity"]["refused"] != [] for x in both)


def test_a_refusal_the_base_build_shares_is_no_regression(tmp_path, monkeypatch):
    rc, v, records, _ = _run(tmp_path, monkeypatch, head="Tanh", base="Tanh", seed="lost-kernels")
    assert rc == 0 and not v["new"] and not v["pre_existing"] and v["cluster_list"] == []
    refusals = _refusals(records)
    assert refusals  # head did refuse models; the base build refused them the same way
    for x in refusals:
        assert x["base"]["verdict"] == "unsupported" and x["base"]["reproduces"] is True
        assert "identity" not in x  # not a finding: nothing reduced, nothing recorded


def _case_with(op: str):
    """A generated case (4 to 8 operators) holding ``op``, not as its only operator type."""
    gen = Generator(GenConfig(min_nodes=4, max_nodes=8, dtypes=("float32",), opset=18, ops=tuple(OPS)))
    for i in range(400):
        c = make_case(gen, "support", "reducer", i)
        if op in c.graph.op_names() and len(set(c.graph.op_names())) > 2:
            p = prepare(c.meta(), c.graph, c.model_bytes)
            if p.search["valid"]:
                return p
    raise AssertionError(f"no case with {op}")


def test_the_reducer_keeps_only_what_head_refuses_and_the_base_build_runs(monkeypatch):
    monkeypatch.setenv("DLGATE_REFUSE", "Tanh")
    spec = BackendSpec(REFUSING)
    cfg = CheckConfig([spec], crosscheck=False)
    case = _case_with("Tanh")
    with Pool(120) as pool:
        v = check(pool, case, cfg)["verdicts"][0]
        assert v["verdict"] == "unsupported"
        with Pool(120, python=sys.executable, env={"DLGATE_REFUSE": "", "PYTHONPATH": REPO}) as base:
            res = Reducer(pool, cfg, Target.of(spec, v), base_pool=base).reduce(case)
        assert res.case.graph.op_names() == ["Tanh"] and res.original_nodes >= 4, res.log
        assert res.verdict.verdict == "unsupported" and "Tanh(" in res.verdict.detail
        # a base build that refuses Tanh too: no candidate, the case itself included, shows a regression
        with Pool(120, python=sys.executable, env={"DLGATE_REFUSE": "Tanh", "PYTHONPATH": REPO}) as base:
            with pytest.raises(NotReproduced):
                Reducer(pool, cfg, Target.of(spec, v), base_pool=base).reduce(case)


@pytest.mark.parametrize("options, words", [
    ({"refuse": 3}, "option 'refuse': expected ONNX operator types"),
    ({"convert_from": "Softplus"}, "give both or neither"),
    ({"colour": "red"}, "unknown option 'colour'"),
])
def test_the_refusing_backend_checks_its_options(options, words):
    from dlgate.backends.testing import RefusingOnnxRuntime

    with pytest.raises(ValueError, match=words):
        RefusingOnnxRuntime.check_options(options)
