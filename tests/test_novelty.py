"""Novelty: fingerprints and clusters of reduced cases, the baseline, head versus base.

Rules under test, each silent on an unchanged compiler and loud on an injected fault:
one bug reached through many graphs has one fingerprint; two bugs in one operator under
different attribute regimes have two; one cause met through several operators or dtypes
is one cluster, and a baseline that holds the cluster knows it; "fixed" only when a
baseline entry's repro passes; head versus base is red only for what head introduced.
"""
from __future__ import annotations

import json
import os
import sys

import yaml

from dlgate.cli import main
from dlgate.gate import baseline as B
from dlgate.gate import decide as D
from dlgate.graph.ir import Graph, Node
from dlgate.ops.base import TensorType
from dlgate.oracle.signature import cluster, template
from dlgate.reduce.identity import identity, regime, typed_pattern

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one_op(op: str, dtype: str = "float32", **attrs) -> Graph:
    t = TensorType(dtype, (2, 3))
    return Graph(tensors=[t, t], nodes=[Node(op, attrs, [0], [1])], inputs=[0], consts=[], outputs=[1], opset=18)


# -- identity ------------------------------------------------------------------------------------
def test_message_templates_mask_operators_intrinsics_and_dtypes():
    msgs = [f"TVMError: unknown intrinsic tirx.{f}" for f in ("asinh", "acos", "atan", "cosh")]
    assert len({template(m) for m in msgs}) == 1
    a = template("Binary operators must have the same datatype, but got float16 and float32 in Selu")
    b = template("Binary operators must have the same datatype, but got float64 and float32 in Elu")
    assert a == b and "and" in a  # English words that are also operator names stay
    assert template("Sigmoid failed") != template("shape inference failed")
    # TVM prints the offending Relax expression: its shape varies with the converter
    mixed = "Binary operators must have the same datatype. However, {} uses datatype T.{} on the LHS (Type of " \
            "R.Tensor({}, dtype=\"{}\"))"
    assert template(mixed.format('R.subtract(R.const(1.0, "float32"), lv1)', "float32", "()", "float32")) == \
        template(mixed.format("R.subtract(lv9, lv4)", "float16", "(29, 1)", "float16"))


def test_two_bugs_in_one_operator_under_different_attribute_regimes_get_two_fingerprints():
    a = identity("mismatch", "tvm", None, one_op("Elu", alpha=1.0))
    b = identity("mismatch", "tvm", None, one_op("Elu", alpha=-0.5))
    c = identity("mismatch", "tvm", None, one_op("Elu", alpha=2.5))  # same regime as alpha=1.0
    assert a["fingerprint"] != b["fingerprint"] and a["fingerprint"] == c["fingerprint"]
    assert identity("mismatch", "tvm", None, one_op("Elu", "float16", alpha=1.0))["fingerprint"] != a["fingerprint"]
    # an attribute the reducer found irrelevant leaves the fingerprint
    m = identity("mismatch", "tvm", None, one_op("Elu", alpha=-0.5), matter=[set()])
    assert m["fingerprint"] == identity("mismatch", "tvm", None, one_op("Elu", alpha=1.0), matter=[set()])["fingerprint"]


def test_a_wrong_answer_has_no_message_so_its_cluster_is_its_fingerprint():
    i = identity("mismatch", "tvm", None, one_op("Sigmoid"))
    assert i["cluster"] == i["fingerprint"] and i["typed"] == "Sigmoid(float32)"


def test_errors_cluster_by_template_and_frames_whatever_the_operator():
    errs = [{"type": "TVMError", "message": f"unknown intrinsic tirx.{f}", "frames": ["codegen_llvm.cc:12"]}
            for f in ("asinh", "acos")]
    ids = [identity("compile_error", "tvm", e, one_op(op, "float16")) for e, op in zip(errs, ("Asinh", "Acos"))]
    assert ids[0]["fingerprint"] != ids[1]["fingerprint"]
    assert ids[0]["cluster"] == ids[1]["cluster"] == cluster("compile_error", "tvm", errs[0])["id"]
    other = {"type": "TVMError", "message": "Divide by zero", "frames": ["arith.cc:3"]}
    assert identity("compile_error", "tvm", other, one_op("Asinh", "float16"))["cluster"] != ids[0]["cluster"]
    assert cluster("compile_error", "onnxruntime", errs[0]) != cluster("compile_error", "tvm", errs[0])


def test_attribute_regimes():
    assert [regime(x) for x in (0, 1, 5, -1, -7, 0.0, 0.3, -2.0, True, "edge")] == \
        ["0", "1", ">1", "-1", "<-1", "0", "+", "-", "true", "edge"]
    assert regime([0, 0, 1, 1]) != regime([1, 1, 0, 0]) and regime([2, 3]) == regime([4, 9])
    assert typed_pattern(one_op("Elu", alpha=0.5)) == "Elu(float32;alpha=+)"


# -- the decision, from fixture records --------------------------------------------------------
def rec(case: str, fp: str, cl: str, verdict: str = "compile_error", **extra) -> dict:
    v = {"backend": "tvm[cpu]", "verdict": verdict, "detail": "boom", "signature": {"id": "sig-" + case},
         "identity": {"fingerprint": fp, "cluster": cl, "pattern": "Asinh", "typed": "Asinh(float16)", "text": fp},
         "confirm": {"runs": 1, "reproduced": True}}
    v.update(extra)
    return {"case": case, "kind": "batch", "index": int(case[1:]) if case[1:].isdigit() else None, "verdicts": [v]}


def test_baseline_mode_on_an_unchanged_compiler_reports_no_known_cause_as_new(tmp_path):
    """A weekly baseline run meets causes through some operators; ten PR runs of other
    commits meet the same causes through other operators and dtypes: none is new."""
    causes = {f"cl{k}": [f"fp{k}-{j}" for j in range(6)] for k in range(5)}
    weekly = [rec(f"w{n}", fps[n % 3], cl) for n, (cl, fps) in enumerate(sorted(causes.items()) * 4)]
    base = B.Baseline(path=str(tmp_path / "b.json"))
    base = B.update(base, D.decide(weekly, base, "w", "weekly", ["tvm[cpu]"], True))
    assert len(base.clusters) == 5 and len(base.fingerprints) == 15
    reported_new = 0
    for commit in range(10):
        prs = [rec(f"p{n}", fps[(n + commit) % 6], cl) for n, (cl, fps) in enumerate(sorted(causes.items()))]
        d = D.decide(prs, base, f"c{commit}", "pr", ["tvm[cpu]"], True)
        reported_new += len(d.of(D.NEW))
        assert not d.fixed  # a batch that misses an entry does not make it fixed
    assert reported_new == 0
    # a new cause is still new
    d = D.decide([rec("p0", "fp-x", "cl-x")], base, "c", "pr", ["tvm[cpu]"], True)
    assert [g["fingerprint"] for g in d.of(D.NEW)] == ["fp-x"] and d.exit_code() == D.EXIT_FAIL


def test_clusters_group_fingerprints_and_are_counted():
    recs = [rec("b1", "fpA", "cl1"), rec("b2", "fpB", "cl1"), rec("b3", "fpC", "cl2", verdict="mismatch")]
    d = D.decide(recs, B.Baseline(), "r", "pr", ["tvm[cpu]"], True)
    assert len(d.of(D.NEW)) == 3 and len(d.clusters) == 2
    c1 = next(c for c in d.clusters if c["cause"] == "cl1")
    assert c1["fingerprints"] == ["fpA", "fpB"] and c1["cases"] == 2
    assert d.to_json()["clusters"] == 2


def test_flaky_means_it_never_reproduced_and_varying_wrong_values_still_fail():
    flaky = rec("b1", "fpA", "cl1", verdict="mismatch", confirm={"runs": 2, "reproduced": False})
    varies = rec("b2", "fpB", "cl2", verdict="mismatch", confirm={"runs": 2, "reproduced": True, "varies": True})
    d = D.decide([flaky, varies], B.Baseline(), "r", "pr", ["tvm[cpu]"], True)
    assert [g["fingerprint"] for g in d.of(D.FLAKY)] == ["fpA"]
    assert [g["fingerprint"] for g in d.of(D.NEW)] == ["fpB"] and d.of(D.NEW)[0]["varies"]


def test_worse_on_head_than_on_base_is_red_whatever_the_class():
    shared = rec("b1", "fpA", "cl1", base={"verdict": "compile_error", "reproduces": True})
    introduced = rec("b2", "fpB", "cl2", base={"verdict": "pass", "reproduces": False})
    refused = {"case": "b3", "kind": "batch", "index": 3, "verdicts": [
        {"backend": "tvm[cpu]", "verdict": "unsupported", "detail": "no", "signature": None,
         "base": {"verdict": "pass", "reproduces": False}}]}
    still_refused = {"case": "b4", "kind": "batch", "index": 4, "verdicts": [
        {"backend": "tvm[cpu]", "verdict": "unsupported", "detail": "no", "signature": None,
         "base": {"verdict": "unsupported", "reproduces": True}}]}
    d = D.decide([shared, introduced, refused, still_refused], B.Baseline(), "r", "pr", ["tvm[cpu]"], True,
                 mode="base")
    assert [g["cases"] for g in d.of(D.PRE_EXISTING)] == [["b1"]]
    assert sorted(c for g in d.of(D.NEW) for c in g["cases"]) == ["b2", "b3"]
    assert d.exit_code() == D.EXIT_FAIL


def test_fixed_only_when_a_baseline_repro_passes(tmp_path):
    base = B.Baseline(fingerprints={"fpA": {"backend": "tvm", "cluster": "cl1", "repro": "fpA"}},
                      clusters={"cl1": {"fingerprints": ["fpA"]}}, path=str(tmp_path / "b.json"))
    passing = {"case": "baseline/fpA", "kind": "baseline", "baseline_entry": "fpA",
               "verdicts": [{"backend": "tvm[cpu]", "verdict": "pass"}]}
    d = D.decide([passing], base, "r", "pr", ["tvm[cpu]"], True)
    assert [f["fingerprint"] for f in d.fixed] == ["fpA"]
    assert "fpA" not in B.update(base, d).fingerprints  # a fixed entry leaves; its return is new again
    failing = dict(rec("baseline/fpA", "fpZ", "clZ"), kind="baseline", baseline_entry="fpA", case="baseline/fpA")
    d = D.decide([failing], base, "r", "pr", ["tvm[cpu]"], True)
    assert not d.fixed and d.of(D.KNOWN) and not d.of(D.NEW)


def test_a_format_1_baseline_still_reads(tmp_path):
    p = tmp_path / "old.json"
    p.write_text(json.dumps({"dlgate_baseline": 1, "signatures": {"sig-b1": {"backend": "tvm"}}, "corpus": {}}))
    base = B.load(str(p))
    d = D.decide([rec("b1", "fpA", "cl1")], base, "r", "pr", ["tvm[cpu]"], True)
    assert d.of(D.KNOWN) and not d.of(D.NEW)


# -- end to end ----------------------------------------------------------------------------------
OPS = ["Sigmoid", "Add", "Relu", "Mul", "Abs", "Neg", "Tanh"]


def _cfg(tmp_path, **kw) -> str:
    doc = {"campaign": "nov", "models": 6, "min_nodes": 2, "max_nodes": 5, "opset": 18, "operators": OPS,
           "dtypes": ["float32"], "backends": ["tvm"], "timeout_s": 120, "confirm_runs": 1, "crosscheck": False}
    doc.update(kw)
    p = tmp_path / f"c{abs(hash(json.dumps(doc, sort_keys=True))) % 10**6}.yaml"
    p.write_text(yaml.safe_dump(doc))
    return str(p)


# The injected bug's history (one fingerprint, then known on another batch, then fixed by
# its repro), head versus base, and the summary without a base build are checked on the
# campaigns of tests/test_gate.py (test_injected_miscompilation_new_then_known_then_fixed,
# test_head_versus_base), with the gate's own properties of the same runs.


def _hvb(tmp_path, head_bug: bool, base_bug: bool, **kw) -> str:
    base = {"python": sys.executable, "env": {"FAKE_BUG": "1" if base_bug else "0", "PYTHONPATH": REPO}}
    return _cfg(tmp_path, backends=[{"name": "tests.fake_backends:EnvTVM"}], base=base, **kw)


def test_an_unchanged_real_tvm_as_head_and_base_is_never_red(tmp_path, monkeypatch):
    """TVM 0.27 as head and base on operators and dtypes it has known failures on
    (float16 maths intrinsics, float32 constants in float16 graphs): the base build shares
    every one of them."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FAKE_BUG", "0")
    cfg = _hvb(tmp_path, False, False, operators=["Asinh", "Acosh", "Selu", "Elu", "Sigmoid", "Add", "Mul"],
               dtypes=["float16", "float32"], models=6, max_nodes=4)
    pre = 0
    for commit in ("c1", "c2"):
        assert main(["run", "--config", cfg, "--seed", commit, "--out", commit]) == 0
        v = json.load(open(f"{commit}/verdict.json"))
        assert not v["new"] and v["novelty"] == "base"
        pre += len(v["pre_existing"])
    assert pre > 0  # it did meet failures, and none was blamed on the change


def test_an_injected_regression_is_red_only_where_the_batch_reaches_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FAKE_BUG", "1")  # head has the pass, base does not
    reaches = _hvb(tmp_path, True, False, models=4)
    assert main(["run", "--config", reaches, "--seed", "r1", "--out", "r1"]) == 1
    v = json.load(open("r1/verdict.json"))
    assert {g["typed"] for g in v["new"]} == {"Sigmoid(float32)"}
    assert all(g["base"]["verdict"] == "pass" for g in v["new"])
    misses = _hvb(tmp_path, True, False, models=4, operators=[op for op in OPS if op != "Sigmoid"])
    assert main(["run", "--config", misses, "--seed", "r2", "--out", "r2"]) == 0
