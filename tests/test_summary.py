"""summary.md, junit.xml and verdict.json read in one minute: one row per cause with one id to
quote, counts that add up (findings behind refused operators explained), operators named from
the reduced ONNX model, a "what to do" line per section, and each cause in one class per run."""
from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import onnx
from markdown_it import MarkdownIt
from onnx import TensorProto, helper

from dlgate import opnames as N
from dlgate.gate import baseline as B
from dlgate.gate import decide as D
from dlgate.gate import report as R
from dlgate.graph.ir import Graph, Node
from dlgate.materialize.onnx_model import to_onnx
from dlgate.ops.base import TensorType
from dlgate.reduce.identity import identity

PARSER = MarkdownIt("commonmark", {"html": True}).enable(["table"])
ERR = {"type": "TVMError", "message": "Check failed: lanes == 1", "frames": ["codegen.cc:7"]}


def constant_sub() -> tuple:
    """dlgate's Constant spec drawn as ``c - x`` with ``c`` spelled ``value_floats``: the reduced
    graph and its ONNX model, as a run's repro bundle holds it."""
    x = TensorType("float32", (2, 3))
    g = Graph(tensors=[x, TensorType("float32", (2, 3))], inputs=[0], consts=[], outputs=[1], opset=17,
              nodes=[Node("Constant", {"spelling": "value_floats", "dtype": "float32", "value": [0.5, -2.0, 1.0],
                                       "op": "Sub", "first": True}, [0], [1])])
    return g, to_onnx(g, 0)


# -- operator names from the ONNX graph -----------------------------------------------------

def test_a_constant_feeding_sub_is_named_as_onnx_has_it_not_as_dlgates_spec():
    g, model = constant_sub()
    typed = identity("compile_error", "tvm", ERR, g)["typed"]
    assert typed.startswith("Add(float32;") and "spelling=value_floats" in typed  # dlgate's internal name
    assert N.model_label(model) == "Constant(value_floats=[0.5, -2, 1]) → Sub(float32)"
    assert N.op_types(model) == ["Constant", "Sub"]


def _model(nodes, inputs, outputs, inits=(), opset=21):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def test_attribute_values_are_the_models_own():
    x = helper.make_tensor_value_info("x", TensorProto.INT64, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    cast = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)], [x], [y])
    assert N.model_label(cast) == "Cast(int64; to=float32)"  # an element type by name, not 1
    h = helper.make_tensor_value_info("h", TensorProto.FLOAT16, [1, 2, 3, 4])
    o = helper.make_tensor_value_info("o", TensorProto.FLOAT16, [1, 2, 3, 4])
    att = _model([helper.make_node("Attention", ["h", "h", "h"], ["o"], softcap=2.6, is_causal=0,
                                   softmax_precision=TensorProto.DOUBLE)], [h], [o], opset=23)
    # float32 2.6 shown shortest; attributes the model leaves unset (scale) do not appear at all
    assert N.model_label(att) == "Attention(float16; is_causal=0, softcap=2.6, softmax_precision=float64)"
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 2])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 2])
    w = onnx.numpy_helper.from_array(__import__("numpy").arange(4, dtype="int64"), "w")
    pad = _model([helper.make_node("Pad", ["a", "w"], ["b"], mode="reflect")], [a], [b], inits=[w])
    assert N.model_label(pad) == 'Pad(float32, int64; mode="reflect")'
    c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    branch = helper.make_graph([helper.make_node("Identity", ["a"], ["t"])], "br", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 2])])
    iff = _model([helper.make_node("If", ["c"], ["b"], then_branch=branch, else_branch=branch)], [c, a], [b])
    assert N.model_label(iff) == "If(bool; else_branch=<graph: 1 nodes>, then_branch=<graph: 1 nodes>)"


def test_long_models_and_missing_files():
    a = helper.make_tensor_value_info("t0", TensorProto.FLOAT, [2])
    nodes = [helper.make_node("Relu" if k % 2 else "Neg", [f"t{k}"], [f"t{k + 1}"]) for k in range(12)]
    m = _model(nodes, [a], [helper.make_tensor_value_info("t12", TensorProto.FLOAT, [2])])
    label = N.model_label(m, limit=3)
    assert label == "Neg(float32) → Relu(float32) → Neg(float32) → … (9 more: Relu, Neg)"
    assert N.folder_label("/nonexistent", "repros/x") is None and N.folder_label("/tmp", None) is None


def test_an_unreadable_model_is_none(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "model.onnx").write_bytes(b"not a model")
    assert N.folder_label(str(tmp_path), "r") is None and N.folder_op_types(str(tmp_path), "r") is None


# -- one class per cause --------------------------------------------------------------------

def _v(ident: dict, verdict="compile_error", base=None, more=(), **kw) -> dict:
    v = {"backend": "tvm[cpu]", "verdict": verdict, "detail": "TVMError: Check failed: lanes == 1",
         "signature": {"id": "sig-" + ident["fingerprint"]}, "identity": ident,
         "confirm": {"runs": 1, "reproduced": True}, **kw}
    if base is not None:
        v["base"] = base
    if more:
        v["more"] = list(more)
    return v


def _rec(k: int, *verdicts) -> dict:
    return {"case": f"{k:05d}-abcd", "kind": "batch", "index": k, "campaign": "pr", "seed": k, "opset": 17,
            "operators": ["Constant"], "bundle": f"cases/{k:05d}-abcd", "verdicts": list(verdicts)}


def err_identity(repro: bool = True) -> dict:
    g, _ = constant_sub()
    i = identity("compile_error", "tvm", ERR, g)
    if repro:
        i["repro"] = f"repros/{i['fingerprint']}"
    return i


def pair() -> list:
    """One cause met in two cases: the base build does not share it in the first (new) and does
    in the second (pre-existing)."""
    i = err_identity()
    return [_rec(0, _v(i, base={"verdict": "pass", "reproduces": False})),
            _rec(1, _v(i, base={"verdict": "compile_error", "reproduces": True}))]


def decide(records, baseline=None, mode="base"):
    return D.decide(records, baseline or B.Baseline(), "root", "pr", ["tvm[cpu]"], True, mode=mode)


def test_the_double_listing_is_what_overlaps_catches(monkeypatch):
    """Without :func:`one_class` (grouping by class, then fingerprint, as before) the pair lists
    one cause as new and as pre-existing, and the header's cause count is not the rows' sum."""
    monkeypatch.setattr(D, "one_class", lambda groups: groups)
    d = decide(pair())
    assert len(d.of(D.NEW)) == len(d.of(D.PRE_EXISTING)) == 1
    (fp,) = {g["fingerprint"] for g in d.failure_groups()}
    cause = d.of(D.NEW)[0]["cause"]
    assert D.overlaps(d.failure_groups()) == [(f"cause {cause}", ["new", "pre-existing"]),
                                              (f"fingerprint {fp}", ["new", "pre-existing"])]


def test_a_cause_is_in_one_class_the_most_severe_with_its_other_cases_counted():
    d = decide(pair())
    assert D.overlaps(d.failure_groups()) == [] and not d.of(D.PRE_EXISTING)
    (g,) = d.of(D.NEW)
    assert g["cases"] == ["00000-abcd", "00001-abcd"] and g["cases_by_class"] == {"new": 1, "pre-existing": 1}
    assert g["base"]["reproduces"] is False  # the note the row shows is the winning class's
    assert d.exit_code() == D.EXIT_FAIL  # a cause new in any case still fails the check
    doc = d.to_json()
    assert len(doc["new"]) == 1 and doc["pre_existing"] == [] and doc["clusters"] == 1
    assert doc["cluster_list"][0]["classes"] == ["new"] and doc["cluster_list"][0]["cases"] == 2
    text = R.summary(d, "new")
    rows = table_rows(text)
    assert len(rows) == 1 and rows[0][3] == "2 (1 pre-existing on its own)"
    assert "1 distinct failure cause(s): 1 new." in text and "Pre-existing" not in text


def test_the_rule_is_silent_when_each_cause_has_one_class(monkeypatch):
    """Causes each in one class (new, pre-existing, known, in several cases) come out as the
    grouping made them: the same groups with or without :func:`one_class`."""
    g, _ = constant_sub()
    a = err_identity()
    other = dict(ERR, message="unknown intrinsic tirx.asinh", frames=["intrin.cc:3"])
    b = identity("compile_error", "tvm", other, g)
    c = identity("compile_error", "tvm", dict(ERR, message="Segfault in pass X", frames=["x.cc:1"]), g)
    base = B.Baseline(fingerprints={c["fingerprint"]: {}})
    recs = [_rec(0, _v(a, base={"verdict": "pass", "reproduces": False})),
            _rec(1, _v(a, base={"verdict": "pass", "reproduces": False})),
            _rec(2, _v(b, base={"verdict": "compile_error", "reproduces": True})),
            _rec(3, _v(c, base={"verdict": "compile_error", "reproduces": True}))]
    d = decide(recs, base)
    assert D.overlaps(d.failure_groups()) == []
    assert [len(d.of(k)) for k in (D.NEW, D.PRE_EXISTING, D.KNOWN)] == [1, 1, 1]
    monkeypatch.setattr(D, "one_class", lambda groups: groups)
    assert decide(recs, base).groups == d.groups


def test_fingerprints_of_one_cause_share_its_class():
    """A wrong answer's cause spans fingerprints (dtypes): one accepted in the baseline, one not.
    The cause is new, both its fingerprints with it; the accepted one's case is counted as known."""
    from tests.test_causes import reduce_op, wrong

    i16 = identity("mismatch", "tvm", None, reduce_op("ReduceMax", "float16"), comparison=wrong("float16", "offset"))
    i32 = identity("mismatch", "tvm", None, reduce_op("ReduceMax", "float32"), comparison=wrong("float32", "offset"))
    assert i16["cause"] == i32["cause"] and i16["fingerprint"] != i32["fingerprint"]
    base = B.Baseline(fingerprints={i32["fingerprint"]: {}}, clusters={i32["cluster"]: {}})
    d = decide([_rec(0, _v(i16, "mismatch")), _rec(1, _v(i32, "mismatch"))], base, mode="baseline")
    assert not d.of(D.KNOWN) and len(d.of(D.NEW)) == 2 and len(d.clusters) == 1
    by = {g["fingerprint"]: g["cases_by_class"] for g in d.of(D.NEW)}
    assert by == {i16["fingerprint"]: {"new": 1}, i32["fingerprint"]: {"known": 1}}
    rows = table_rows(R.summary(d, "new"))
    assert len(rows) == 1 and rows[0][3] == "2 (1 known on its own)"


# -- the summary ----------------------------------------------------------------------------

def table_rows(text: str, width: int = 6) -> list:
    """The body rows of summary.md's finding tables (``width`` columns), as plain text per cell."""
    tokens = PARSER.parse(text)
    rows, cur, in_head = [], None, False
    for t in tokens:
        if t.type == "thead_open":
            in_head = True
        elif t.type == "thead_close":
            in_head = False
        elif t.type == "tr_open":
            cur = []
        elif t.type == "inline" and cur is not None:
            cur.append("".join(c.content for c in t.children if c.type in ("text", "code_inline")))
        elif t.type == "tr_close":
            if not in_head and len(cur) == width:
                rows.append(cur)
            cur = None
    return rows


def test_the_title_counts_the_rows_and_ids_are_clusters_with_fingerprints_on_hover():
    i = err_identity()
    g, _ = constant_sub()
    j = identity("compile_error", "tvm", dict(ERR, message="unknown intrinsic tirx.asinh", frames=["i.cc:3"]), g)
    # two cases of one cause and one of another: the title counts causes, not cases or fingerprints
    d = decide([_rec(0, _v(i)), _rec(1, _v(i)), _rec(2, _v(j))], mode="baseline")
    text = R.summary(d, "new")
    rows = table_rows(text)
    assert text.splitlines()[0].endswith("❌ failed: 2 new failure(s)") and len(rows) == 2 == len(d.clusters)
    assert "### ❌ New failures (fail the check): 2 cause(s), 3 case(s)" in text
    assert {r[0] for r in rows} == {i["cluster"], j["cluster"]}
    assert f'<span title="fingerprint(s) {i["fingerprint"]}"><code>{i["cluster"]}</code></span>' in text


def test_internal_names_stay_in_the_details(tmp_path):
    """The reduced model names the operators; dlgate's spec pattern and cause key only in the
    closed details block at the end."""
    i = err_identity()
    _, model = constant_sub()
    os.makedirs(tmp_path / i["repro"])
    onnx.save(model, str(tmp_path / i["repro"] / "model.onnx"))
    d = decide([_rec(0, _v(i))], mode="baseline")
    R.annotate(str(tmp_path), d)
    text = R.summary(d, "new", out=str(tmp_path))
    main, details = text.split("<details>")
    assert table_rows(text)[0][1] == "Constant(value_floats=[0.5, -2, 1]) → Sub(float32)"
    assert "spelling" not in main and "Add(" not in main and "NoneType" not in main
    assert "spelling=value\\_floats" in details and i["fingerprint"] in details
    assert d.clusters[0]["reduced_to"] == ["Constant(value_floats=[0.5, -2, 1]) → Sub(float32)"]


def test_novelty_lines_say_what_decides_and_how_to_set_a_base_build():
    d = decide([_rec(0, _v(err_identity()))], mode="baseline")
    line = R.novelty_line(d)
    assert "the baseline an empty baseline" not in line
    assert line.startswith("No base build and no baseline configured: every failure counts as new")
    assert "`base: {python: PATH}`" in line and "`--base-python PATH`" in line and "`base-compiler`" in line
    d2 = D.decide([], B.Baseline(fingerprints={"a": {}, "b": {}}, path=".dlgate/b.json"), "r", "pr", ["tvm[cpu]"],
                  True)
    assert R.novelty_line(d2).startswith("No base build configured: novelty is decided against the baseline "
                                         "`.dlgate/b.json` (2 accepted fingerprint(s)): a failure it does not hold")
    assert R.novelty_line(decide([])).startswith("Novelty is decided against the **base build**")


def test_every_section_says_what_to_do():
    g, _ = constant_sub()
    ids = [identity("compile_error", "tvm", dict(ERR, message=f"failure number {k}", frames=[f"f{k}.cc:1"]), g)
           for k in range(3)]
    known = B.Baseline(fingerprints={ids[2]["fingerprint"]: {}}, path="bl.json")
    recs = [_rec(0, _v(ids[0], base={"verdict": "pass", "reproduces": False})),
            _rec(1, _v(ids[1], base={"verdict": "compile_error", "reproduces": True})),
            _rec(2, _v(ids[2], base={"verdict": "compile_error", "reproduces": True})),
            _rec(3, dict(_v(err_identity(), "mismatch"), confirm={"runs": 1, "reproduced": False}))]
    text = R.summary(decide(recs, known), "new", out="dlgate-out")
    todo = [line for line in text.splitlines() if line.startswith("**What to do:**")]
    assert len(todo) == 4  # new, pre-existing, known, flaky
    assert "the change introduced them" in todo[0]
    assert "nothing on this change" in todo[1] and "`bl.json`" in todo[2] and "`confirm_runs`" in todo[3]
    baseline_mode = R.summary(decide([_rec(0, _v(ids[0]))], mode="baseline"), "new", out="my out")
    assert ("`dlgate baseline update 'my out' --baseline .dlgate/baseline.json`, then commit "
            "`.dlgate/baseline.json` and `.dlgate/baseline.repros/`, and set `baseline: .dlgate/baseline.json` "
            "in the campaign") in baseline_mode


def test_findings_behind_a_refused_operator_are_explained():
    """One case refused (``unsupported``) with a failure found in its cut sub-model, one failing
    case: the counts table shows 1 unsupported and 1 compile_error, the tables 2 failures; the
    line between says where the second comes from."""
    g, _ = constant_sub()
    hidden = identity("compile_error", "tvm", dict(ERR, message="hidden one", frames=["h.cc:1"]), g)
    x = dict(_v(hidden), cut=[2], bundle="cases/00000-abcd/cut1-tvm-cpu")
    refused = {"backend": "tvm[cpu]", "verdict": "unsupported", "detail": "OpNotImplemented: Scan",
               "signature": {"id": "u"}, "more": [x], "residual": {"cuts": [{"for": "unsupported", "operators": [2]}]}}
    d = decide([_rec(0, refused), _rec(1, _v(err_identity()))], mode="baseline")
    assert d.counts == {"tvm[cpu]": {"compile_error": 1, "unsupported": 1}}
    text = R.summary(d, "new")
    assert "❌ failed: 2 new failure(s)" in text and len(table_rows(text)) == 2
    assert ("`unsupported`: the compiler refused an operator it does not implement; that never fails the check "
            "on its own.") in text
    assert ("1 of the 2 failures below were found that way, all behind an operator the compiler refuses") in text
    row = next(r for r in table_rows(text) if r[0] == hidden["cluster"])
    assert row[4].endswith("found in sub-model cut1 of its case, behind an operator the compiler refuses")
    assert D.behind_refusal(refused, x)
    # behind a failure whose cut model then refused an operator: behind a refusal too
    fail = {"verdict": "compile_error", "residual": {"cuts": [{"for": "fp", "operators": [1]},
                                                              {"for": "unsupported", "operators": [4]}]}}
    assert D.behind_refusal(fail, {"cut": [1, 4]}) and not D.behind_refusal(fail, {"cut": [1]})


# -- JUnit and verdict.json through write_all -----------------------------------------------

def test_write_all_names_operators_from_the_models_everywhere(tmp_path):
    i = err_identity()
    _, model = constant_sub()
    for folder in (i["repro"], "cases/00000-abcd", "cases/00001-abcd"):
        os.makedirs(tmp_path / folder)
        onnx.save(model, str(tmp_path / folder / "model.onnx"))
    recs = [_rec(0, _v(i, base={"verdict": "pass", "reproduces": False})),
            _rec(1, _v(i, base={"verdict": "compile_error", "reproduces": True}))]
    d = decide(recs)
    paths = R.write_all(str(tmp_path), recs, d, B.Baseline(), {}, {"campaign": "pr"}, "new")
    label = "Constant(value_floats=[0.5, -2, 1]) → Sub(float32)"
    v = json.load(open(paths["verdict"]))
    assert v["new"][0]["reduced_to"] == label and v["cluster_list"][0]["reduced_to"] == [label]
    cases = list(ET.parse(paths["junit"]).getroot().iter("testcase"))
    msgs = [tc.find("error").get("message") for tc in cases]
    assert msgs[0].startswith(f"new compile_error in {label} [{i['cluster']}] (repro: ")
    assert msgs[1].startswith(f"new compile_error in {label} [{i['cluster']}] (this case on its own: pre-existing)")
    out = cases[0].findtext("system-out")
    assert "operators: Constant, Sub\n" in out and "dlgate specs (the generator's names): Constant" in out
    assert "Add(" not in "".join(msgs)
    again = tmp_path / "again"
    os.makedirs(again)
    for f in ("summary.md", "junit.xml", "verdict.json"):  # the same inputs give the same bytes
        os.rename(tmp_path / f, again / f)
    R.write_all(str(tmp_path), recs, decide(recs), B.Baseline(), {}, {"campaign": "pr"}, "new")
    for f in ("summary.md", "junit.xml", "verdict.json"):
        assert (tmp_path / f).read_bytes() == (again / f).read_bytes(), f
    assert table_rows((tmp_path / "summary.md").read_text())[0][1] == label
