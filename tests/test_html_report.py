"""``dlgate report``: the HTML page of a run folder, its plots, and the page as headless
Chromium renders it (tables drawn, every plot loaded)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.parse
from html.parser import HTMLParser

import numpy as np
import pytest
import yaml

from dlgate.cli import main
from dlgate.gate.journal import read_records
from dlgate.report import series as S
from dlgate.report.load import load
from tests.fake_backends import EnvBug

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- reading a page -------------------------------------------------------------------------
class _Page(HTMLParser):
    """The tables of a page (the ids of the h2 and h3 sections they are in, their rows of
    cells with text and link targets; nested tables apart), its images, its script elements,
    and its top-level <details> elements in order (open or not, the h2 section before each)."""

    def __init__(self, text: str):
        super().__init__()
        self.tables, self.images, self.scripts, self.details = [], [], 0, []
        self.section = self.sub = None
        self.stack, self.cells = [], []  # open tables, open cells (nested tables have their own)
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "h2":
            self.section = self.sub = a.get("id")
        elif tag == "h3":
            self.sub = a.get("id")
        elif tag == "table":
            t = {"section": self.section, "sub": self.sub, "rows": [], "class": a.get("class") or "",
                 "nested": bool(self.stack)}
            self.tables.append(t)
            self.stack.append(t)
        elif tag == "tr":
            self.stack[-1]["rows"].append({"class": a.get("class") or "", "cells": []})
        elif tag in ("td", "th"):
            cell = {"text": "", "links": []}
            self.stack[-1]["rows"][-1]["cells"].append(cell)
            self.cells.append(cell)
        elif tag == "a":
            for c in self.cells:
                c["links"].append(a["href"])
        elif tag == "br":
            self._text("\n")
        elif tag == "img":
            self.images.append(a)
        elif tag == "script":
            self.scripts += 1
        elif tag == "details" and not self.cells:
            self.details.append({"section": self.section, "open": "open" in a})

    def handle_endtag(self, tag):
        if tag in ("pre", "p"):  # blocks: the text after one starts a line
            self._text("\n")
        if tag in ("td", "th") and self.cells:
            self.cells.pop()
        elif tag == "table" and self.stack:
            self.stack.pop()

    def _text(self, data):
        for c in self.cells:
            c["text"] += data

    def handle_data(self, data):
        self._text(data)

    def table(self, section: str, first: str, rows: str = "") -> list:
        """The rows (header -> cell) of the top-level table in ``section`` (an h2 or h3 id)
        whose first header is ``first``; ``rows``: only rows of that class (a findings
        table's "cause" rows; its "more" rows are :meth:`details_rows`)."""
        out, found = [], False
        for t in self.tables:
            head = [c["text"] for c in t["rows"][0]["cells"]]
            if section in (t["section"], t["sub"]) and head[0] == first and not t["nested"]:
                found = True
                out += [dict(zip(head, r["cells"])) for r in t["rows"][1:]
                        if r["class"] != "more" and (not rows or r["class"] == rows)]
        if not found:
            raise AssertionError(f"no table {first!r} in section {section!r}")
        return out

    def fingerprints(self, section: str) -> list:
        """The rows (header -> cell) of the fingerprint tables nested in the details rows of ``section``."""
        out = []
        for t in self.tables:
            head = [c["text"] for c in t["rows"][0]["cells"]]
            if t["nested"] and section in (t["section"], t["sub"]) and head[0] == "fingerprint":
                out += [dict(zip(head, r["cells"])) for r in t["rows"][1:]]
        return out

    def details_rows(self, section: str) -> list:
        """The text of each details row ("more") of the findings tables in ``section``."""
        return [r["cells"][0]["text"] for t in self.tables if section in (t["section"], t["sub"])
                for r in t["rows"] if r["class"] == "more"]


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _target(page: str, href: str) -> str:
    """The file a relative link of ``page`` points to."""
    assert "://" not in href and not href.startswith("/"), href
    return os.path.normpath(os.path.join(os.path.dirname(page), urllib.parse.unquote(href)))


# -- a fixture run folder ----------------------------------------------------------------------
TVM, ORT = "tvm[cpu]", "ort[cpu]"
VERSIONS = {TVM: {"name": "tvm", "version": "0.27.0", "device": "cpu", "opt_level": "default"},
            ORT: {"name": "onnxruntime", "version": "1.32.0", "device": "cpu", "opt_level": "all"}}
EVIL = "Sigmoid(float32;mode=<script>alert(1)</script>&x)"


#: A compiler's error as the worker catches it: several lines, one of them a long unbroken
#: C++ signature (the page must wrap it, not widen for it), and the frames it was raised at.
LONG_TOKEN = "tvm::relax::InferBinaryArithOpOutDtype<" + "tvm::ffi::Array<tvm::PrimExpr,void>," * 12 + ">"
ERROR_C = {"type": "InternalError", "stage": "compile",
           "message": "Check failed: shape.size() == indices.size() (1 vs. 0) : Tensor dimension mismatch\n"
                      + "\n".join(f"  {k}: {LONG_TOKEN if k == 3 else 'frame text of the backtrace'}"
                                   for k in range(14)),
           "frames": ["onnx_frontend.py:_convert_operator", "tensor.cc:tvm::te::Tensor::IndexTensor"]}
ERROR_B = {"type": "WorkerDied", "message": "worker died: killed by SIGSEGV", "stage": "run", "frames": []}
REFUSAL = {"type": "NotImplemented", "stage": "compile", "frames": [],
           "message": "Could not find an implementation for Celu(12) node with name 'n1'"}
#: What the reduced repro of fpC fails with (repro.json): the row shows it first.
REDUCED_C = "InternalError: Check failed: shape.size() == indices.size() (1 vs. 0) on the reduced model"


def _v(backend, verdict="pass", fp=None, cluster=None, typed="", flaky=False, more=(), error=None, detail=""):
    v = {"backend": backend, "verdict": verdict, "versions": VERSIONS[backend], "detail": detail}
    if error:
        v["error"] = error
        v["detail"] = f"{error['type']}: {error['message']}"[:2000]
    if fp:
        v["identity"] = {"fingerprint": fp, "cluster": cluster or fp, "typed": typed, "pattern": typed.split("(")[0],
                         "text": f"{verdict} :: {typed}", "cluster_text": f"{verdict} in {typed}"}
        v["confirm"] = {"runs": 1, "reproduced": not flaky}
    if more:
        v["more"] = list(more)
    return v


def _cases():
    """(case id, [tvm verdict, ort verdict], bundle?) of the fixture's six cases."""
    behind = dict(_v(TVM, "mismatch", "fpD", "clC", "Neg(float32)", detail="output 0: 2 of 6 values differ"),
                  bundle="cases/c3-cut", cut=[0])
    refused = dict(_v(ORT, "unsupported", error=REFUSAL),
                   residual={"cuts": [{"for": "unsupported", "operators": [1], "rest": "crash"}],
                             "stopped": "the rest passes"},
                   more=[dict(_v(ORT, "crash", "fpF", "clF", "Add(float32)", error=ERROR_B),
                              bundle="cases/c4/cut1-ort-cpu", cut=[1])])
    return [
        ("c0", [_v(TVM), _v(ORT)], False),
        ("c1", [_v(TVM, "mismatch", "fpA", "clA", EVIL, detail="output 0: 3 of 6 values differ"), _v(ORT)], True),
        ("c2", [_v(TVM, "mismatch", "fpA", "clA", EVIL, detail="output 0: 3 of 6 values differ"),
                _v(ORT, "crash", "fpB", "clB", "Relu(float32)", error=ERROR_B)], True),
        ("c3", [_v(TVM, "compile_error", "fpC", "clC", "Abs(float32)", more=[behind], error=ERROR_C), _v(ORT)], True),
        ("c4", [_v(TVM, "mismatch", "fpE", "clE", "Tanh(float32)", flaky=True), refused], True),
        ("c5", [_v(TVM), _v(ORT, "reference_error")], True),
    ]


COVERAGE = {  # case -> features: the curves below are what these give
    "c0": ["op_dtype:Add:float32,float32", "edge:Add>Relu"],
    "c1": ["op_dtype:Add:float32,float32", "op_shape:Add:2x3"],
    "c2": ["edge:Add>Relu", "edge:Relu>Exp", "path3:Add>Relu>Exp"],
    "c3": ["motif:ConvBnMotif:fires"],
    "c4": [],
    "c5": ["op_dtype:Mul:float32,float32", "motif:ConvBnMotif:declines:dtype"],
}
FEATURE_CURVES = {"op_dtype": [1, 1, 1, 1, 1, 2], "op_shape": [0, 1, 1, 1, 1, 1], "edge": [1, 1, 2, 2, 2, 2],
                  "path3": [0, 0, 1, 1, 1, 1], "motif": [0, 0, 0, 1, 1, 2]}
REWRITES = {"c0": ["pass:FuseOps", "pass:LegalizeOps"], "c1": ["pass:FuseOps"], "c2": [],
            "c3": ["fused:add_relu"], "c4": ["pass:FuseOps", "fused:add_relu"], "c5": ["pass:FoldConstant"]}


def _lines(path, docs) -> None:
    with open(path, "w") as f:
        f.writelines(json.dumps(d, sort_keys=True) + "\n" for d in docs)


def _reduced_model(path: str) -> None:
    """fpC's reduced model: a Constant of a few floats feeding a Sub, as ONNX names them."""
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Constant", [], ["k"], value_floats=[0.5, 2.0]),
             helper.make_node("Sub", ["x", "k"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), path)


def make_folder(root: str, coverage: bool = True, decided: bool = True) -> str:
    d = os.path.join(root, "run")
    os.makedirs(d)
    manifest = {"campaign": "nightly", "root": "0123456789abcdef", "root_source": "commit", "dlgate": "0.1.0",
                "generator": "9", "fingerprint": "f00d", "planned": 6, "shard": None, "opset_range": [13, 21],
                "config": {"reference": "torch", "backends": ["tvm", "ort"]}, "config_source": "configs/pr.yaml"}
    records, timings = [], []
    for k, (case, verdicts, bundle) in enumerate(_cases()):
        rec = {"case": case, "index": k, "kind": "batch", "campaign": "nightly", "verdicts": verdicts,
               "operators": ["Add", "Celu"] if case == "c4" else ["Add", "Relu"],
               "reference": {"versions": {"name": "torch", "version": "2.13.0", "device": "cpu"}}}
        if bundle:
            rec["bundle"] = f"cases/{case}"
            os.makedirs(os.path.join(d, rec["bundle"]))
        records.append(rec)
        timings.append({"case": case, "backends": {TVM: {"compile_s": 0.1, "rewrites": REWRITES[case]},
                                                   ORT: {"compile_s": 0.1}}})
    os.makedirs(os.path.join(d, "cases", "c3-cut"))
    os.makedirs(os.path.join(d, "cases", "c4", "cut1-ort-cpu"))
    for fp in ("fpA", "fpC"):  # reduced repros; fpB, fpD, fpE, fpF were not reduced
        os.makedirs(os.path.join(d, "repros", fp))
        _lines(os.path.join(d, "repros", fp, "repro.json"),
               [{"fingerprint": fp, "detail": REDUCED_C if fp == "fpC" else "output 0: 1 of 1 values differ"}])
        with open(os.path.join(d, "repros", fp, "repro.py"), "w") as f:
            f.write("print('repro')\n")
    _reduced_model(os.path.join(d, "repros", "fpC", "model.onnx"))
    with open(os.path.join(d, "run.json"), "w") as f:
        json.dump(manifest, f)
    _lines(os.path.join(d, "results.jsonl"), records)
    _lines(os.path.join(d, "timings.jsonl"), timings)
    if coverage:
        _lines(os.path.join(d, "coverage.jsonl"),
               [{"index": k, "case": c, "features": COVERAGE[c]} for k, (c, _, _) in enumerate(_cases())])
    with open(os.path.join(d, "stats.json"), "w") as f:
        json.dump({"cases_run": 6, "wall_s": 1.5, "OTC": 0.25, "NOO": 3.5,
                   "coverage": {"features": {"edge": 2}, "rewrite_kinds": {TVM: 4}},
                   "rewrites": {TVM: {"pass:FuseOps": 3, "fused:add_relu": 2}}}, f)
    if decided:
        g = lambda fp, b, cls: {"fingerprint": fp, "backend": b, "class": cls}  # noqa: E731
        with open(os.path.join(d, "verdict.json"), "w") as f:
            json.dump({"cases": 6, "result": "fail", "exit_code": 1, "fail_on": "new", "novelty": "baseline",
                       "new": [g("fpA", TVM, "new"), g("fpB", ORT, "new"), g("fpD", TVM, "new"),
                               g("fpF", ORT, "new")],
                       "known": [g("fpC", TVM, "known")], "flaky": [g("fpE", TVM, "flaky")],
                       "regressions": [], "pre_existing": []}, f)
    return d


def report(d: str, *extra) -> str:
    assert main(["report", d, *extra]) == 0
    return extra[-1] if extra else os.path.join(d, "report.html")


# -- the page of a fixture folder -----------------------------------------------------------------
def test_verdict_counts_per_backend(tmp_path):
    page = _Page(_read(report(make_folder(str(tmp_path)))))
    rows = {r["backend"]["text"]: {k: c["text"] for k, c in r.items()} for r in page.table("verdicts", "backend")}
    assert rows == {TVM: {"backend": TVM, "pass": "2", "mismatch": "3", "crash": "0", "compile_error": "1",
                          "unsupported": "0", "reference_error": "0", "all cases": "6"},
                    ORT: {"backend": ORT, "pass": "3", "mismatch": "0", "crash": "1", "compile_error": "0",
                          "unsupported": "1", "reference_error": "1", "all cases": "6"}}


def _ids(page: _Page, section: str) -> list:
    return [r["id"]["text"].split("\n")[0] for r in page.table(section, "what went wrong")]


def test_one_row_per_cause_in_its_class_with_working_relative_links(tmp_path):
    d = make_folder(str(tmp_path))
    html_path = report(d)
    page = _Page(_read(html_path))
    # clC holds fpC (known) and fpD (new): one cause, in its most severe class
    assert _ids(page, "findings-new") == ["clA", "clB", "clC", "clF"]
    assert _ids(page, "findings-flaky") == ["clE"]
    with pytest.raises(AssertionError):
        page.table("findings-known", "what went wrong")
    rows = {r["id"]["text"].split("\n")[0]: r for r in page.table("findings", "what went wrong")}
    assert "+1 fingerprint(s)" in rows["clC"]["id"]["text"] and rows["clA"]["cases"]["text"] == "2"
    fps = {r["fingerprint"]["text"]: r for r in page.fingerprints("findings")}
    assert list(fps) == ["fpA", "fpB", "fpC", "fpD", "fpF", "fpE"]  # each finding once, under its cause
    assert {fp: r["class"]["text"] for fp, r in fps.items()} == {
        "fpA": "new", "fpB": "new", "fpC": "known", "fpD": "new", "fpF": "new", "fpE": "flaky"}
    assert fps["fpD"]["first case"]["links"] == ["cases/c3-cut/"]  # found behind fpC in c3: its cut bundle
    assert EVIL in fps["fpA"]["dlgate's pattern"]["text"]  # shown as text ...
    assert page.scripts == 0 and "<script>alert" not in _read(html_path)  # ... never as markup
    # the repro command first: the reduced repro, else the bundle the finding showed in
    cmds = {k: r["reproduce"]["text"].split("\n")[0] for k, r in rows.items()}
    assert cmds == {"clA": "python repros/fpA/repro.py", "clB": "dlgate check cases/c2 --backend ort",
                    "clC": "python repros/fpC/repro.py", "clE": "dlgate check cases/c4 --backend tvm",
                    "clF": "dlgate check cases/c4/cut1-ort-cpu --backend ort"}
    assert rows["clA"]["reproduce"]["links"] == ["repros/fpA/", "cases/c1/"]
    links = [h for r in rows.values() for c in r.values() for h in c["links"]] + \
        [h for r in fps.values() for c in r.values() for h in c["links"]]
    assert len(links) >= 12
    for href in links:
        assert os.path.exists(_target(html_path, href)), href
    # operators in ONNX's names, from the reduced model; dlgate's pattern only in the details
    assert rows["clC"]["reduced to (ONNX)"]["text"].startswith("Constant(value_floats=[0.5, 2]) → Sub(float32")
    assert "Abs(float32)" not in rows["clC"]["reduced to (ONNX)"]["text"]
    assert fps["fpC"]["dlgate's pattern"]["text"] == "Abs(float32)"
    # the page written elsewhere links the same files
    other = str(tmp_path / "pages" / "nightly.html")
    report(d, "--out", other)
    moved = _Page(_read(other))
    for r in moved.table("findings", "what went wrong") + moved.fingerprints("findings"):
        for href in [h for c in r.values() for h in c["links"]]:
            assert href.startswith("../run/") and os.path.exists(_target(other, href)), href
    assert [os.path.exists(_target(other, i["src"])) for i in moved.images] == [True, True, True]


def test_the_compilers_own_message_is_shown_first_and_whole_in_the_details(tmp_path):
    page = _Page(_read(report(make_folder(str(tmp_path)))))
    rows = {r["id"]["text"].split("\n")[0]: r for r in page.table("findings", "what went wrong")}
    what = rows["clC"]["what went wrong"]["text"]
    assert what.startswith("compile_error on tvm[cpu]") and REDUCED_C in what  # the reduced repro's message
    assert "WorkerDied: worker died: killed by SIGSEGV" in rows["clB"]["what went wrong"]["text"]
    assert "output 0: 1 of 1 values differ" in rows["clA"]["what went wrong"]["text"]
    details = dict(zip(_ids(page, "findings-new"), page.details_rows("findings-new")))
    full = "InternalError: " + ERROR_C["message"]
    assert full in details["clC"] and LONG_TOKEN in details["clC"]  # every line, as the worker caught it
    assert "tensor.cc:tvm::te::Tensor::IndexTensor" in details["clC"]  # where it was raised
    assert "clC" in details["clC"] and "compile_error in Abs(float32)" in details["clC"]  # the normalized key
    # a message of many lines shows its first lines in the row
    d = make_folder(str(tmp_path / "b"))  # without fpC's repro: the case's own message
    shutil.rmtree(os.path.join(d, "repros", "fpC"))
    rows = {r["id"]["text"].split("\n")[0]: r for r in _Page(_read(report(d))).table("findings", "what went wrong")}
    what = rows["clC"]["what went wrong"]["text"]
    assert "Check failed: shape.size() == indices.size()" in what and "whole message in the details" in what
    assert "13: frame text" not in what
    assert LONG_TOKEN[:100] in what and LONG_TOKEN not in what


def test_the_operators_a_backend_refused_are_listed(tmp_path):
    page = _Page(_read(report(make_folder(str(tmp_path)))))
    refused = page.table("refused", "operator (ONNX)")
    assert [{k: c["text"] for k, c in r.items()} for r in refused] == [
        {"operator (ONNX)": "Celu", "backend": ORT, "cases": "1", "first case": "c4",
         "message": "NotImplemented: " + REFUSAL["message"]}]
    rows = {r["id"]["text"].split("\n")[0]: r for r in page.table("findings", "what went wrong")}
    assert "Found in sub-model cut1 of its case, once the operator(s) it refuses (Celu) were cut out." in \
        " ".join(rows["clF"]["what went wrong"]["text"].split())
    assert "once the operators of an earlier failure were cut out" in \
        " ".join(rows["clC"]["what went wrong"]["text"].split())


def test_a_refusal_that_names_no_operator_of_the_case_says_so(tmp_path):
    d = make_folder(str(tmp_path))
    recs = read_records(os.path.join(d, "results.jsonl"))
    for r in recs:
        r["operators"] = ["Add", "Relu"]  # Celu, which the message names, is not among them
    _lines(os.path.join(d, "results.jsonl"), recs)
    refused = _Page(_read(report(d))).table("refused", "operator (ONNX)")
    assert [r["operator (ONNX)"]["text"] for r in refused] == ["not named by the message"]


def test_dlgates_coverage_internals_are_closed_at_the_end(tmp_path):
    text = _read(report(make_folder(str(tmp_path))))
    page = _Page(text)
    assert [x["section"] for x in page.details][-1] == "internals" and not page.details[-1]["open"]
    heads = [m for m in ("findings", "refused", "files", "internals") if f'<h2 id="{m}"' in text]
    assert heads == ["findings", "refused", "files", "internals"]
    assert text.index('<h2 id="internals"') > max(text.index(f'<h2 id="{h}"') for h in heads[:-1])
    assert text.count("<h2 ") - 1 == text[: text.index('<h2 id="internals"')].count("<h2 ")  # the last section
    tail = text[text.index('<h2 id="internals"'):]
    for inside in ('id="coverage"', 'id="stats"', "<img"):
        assert inside in tail and inside not in text[: text.index('<h2 id="internals"')], inside
    for t in ("criterion", "metric"):
        assert any(x["section"] == "internals" for x in page.tables if x["rows"][0]["cells"][0]["text"] == t)


def test_coverage_curves_are_monotone_and_count_distinct_features(tmp_path):
    d = make_folder(str(tmp_path))
    f = load(d)
    assert S.feature_curves(f) == FEATURE_CURVES
    rw = S.rewrite_curves(f)
    assert rw == {TVM: [2, 2, 2, 3, 3, 4]}  # ort named no rewrites: not recorded, not zero
    page = _Page(_read(report(d)))
    rows = page.table("coverage", "criterion")
    assert {r["criterion"]["text"]: int(r["distinct features in this run"]["text"]) for r in rows} == \
        {c: len({x for fs in COVERAGE.values() for x in fs if x.startswith(c + ":")}) for c in FEATURE_CURVES}
    assert [r["distinct rewrite kinds in this run"]["text"] for r in page.table("coverage", "backend")] == ["4"]
    assert "Rewrite kinds not recorded for ort[cpu]" in _read(os.path.join(d, "report.html"))
    assert sorted(os.listdir(os.path.join(d, "report"))) == ["features.png", "findings.png", "rewrites.png"]


def test_coverage_curves_follow_random_features(tmp_path):
    d = make_folder(str(tmp_path))
    rng = np.random.default_rng(7)
    pool = [f"{c}:X{k}" for c in ("op_dtype", "edge", "path3") for k in range(12)] + ["nocolon"]
    feats = [sorted(set(rng.choice(pool, size=rng.integers(0, 9)).tolist())) for _ in range(6)]
    _lines(os.path.join(d, "coverage.jsonl"),
           [{"index": k, "case": f"c{k}", "features": fs} for k, fs in enumerate(feats)])
    curves = S.feature_curves(load(d))
    for c, curve in curves.items():
        mine = [{x for x in fs if S.criterion(x) == c} for fs in feats]
        assert curve == [len(set().union(*mine[: k + 1])) for k in range(6)], c
        assert all(a <= b for a, b in zip(curve, curve[1:]))
    assert curves["nocolon"] == [int("nocolon" in set().union(*feats[: k + 1])) for k in range(6)]


def test_absent_coverage_says_so_and_draws_no_feature_plot(tmp_path):
    d = make_folder(str(tmp_path), coverage=False)
    text = _read(report(d))
    assert "coverage not recorded (no coverage.jsonl" in text
    page = _Page(text)
    assert [os.path.basename(i["src"]) for i in page.images] == ["findings.png", "rewrites.png"]
    with pytest.raises(AssertionError):
        page.table("coverage", "criterion")
    assert not os.path.exists(os.path.join(d, "report", "features.png"))


def test_an_undecided_folder_says_so(tmp_path):
    d = make_folder(str(tmp_path), decided=False)
    text = _read(report(d))
    assert "no verdict.json: the gate has not decided this folder" in text
    page = _Page(text)
    assert _ids(page, "findings-undecided") == ["clA", "clB", "clC", "clF"] and _ids(page, "findings-flaky") == ["clE"]
    assert [r["class"]["text"] for r in page.fingerprints("findings")] == ["undecided"] * 5 + ["flaky"]


def test_the_page_and_plots_are_deterministic(tmp_path):
    a = make_folder(str(tmp_path / "a"))
    b = make_folder(str(tmp_path / "b"))
    report(a)
    first = {n: open(os.path.join(a, "report", n), "rb").read() for n in os.listdir(os.path.join(a, "report"))}
    html_a = _read(os.path.join(a, "report.html"))
    report(a)
    report(b)
    assert _read(os.path.join(a, "report.html")) == html_a == _read(os.path.join(b, "report.html"))
    for n, data in first.items():
        assert open(os.path.join(a, "report", n), "rb").read() == data
        assert open(os.path.join(b, "report", n), "rb").read() == data
    assert b"Matplotlib" not in b"".join(first.values())  # no version stamp in the PNGs
    assert "run.json" in html_a and "0123456789ab" in html_a and "13 to 21" in html_a


def _damage(what):
    def apply(d):
        if what == "missing":
            shutil.rmtree(d)
        elif what == "a file":
            shutil.rmtree(d)
            open(d, "w").close()
        elif what == "no run.json":
            os.unlink(os.path.join(d, "run.json"))
        elif what == "run.json":
            open(os.path.join(d, "run.json"), "w").write("[1, 2]")
        elif what == "results.jsonl":
            with open(os.path.join(d, "results.jsonl"), "r+") as f:
                lines = f.readlines()
                f.seek(0)
                f.writelines(lines[:2] + ["garbage\n"] + lines[2:])
        elif what == "timings.jsonl":
            open(os.path.join(d, "timings.jsonl"), "a").write('{"no": "case"}\n')
        elif what == "coverage.jsonl":
            open(os.path.join(d, "coverage.jsonl"), "a").write('{"index": 9, "case": "c9", "features": "x"}\n')
        elif what == "coverage of another run":
            open(os.path.join(d, "coverage.jsonl"), "a").write('{"index": 9, "case": "c9", "features": []}\n')
        elif what == "a verdict behind":
            _lines(os.path.join(d, "results.jsonl"), [dict(r, verdicts=[dict(v, more=[{"verdict": "crash"}])
                                                                         for v in r["verdicts"]])
                                                      for r in read_records(os.path.join(d, "results.jsonl"))])
        elif what == "stats.json":
            open(os.path.join(d, "stats.json"), "w").write("{")
    return apply


@pytest.mark.parametrize("what,words", [
    ("missing", "no such folder"), ("a file", "not a folder"), ("no run.json", "not a dlgate run folder"),
    ("run.json", "not a dlgate manifest"), ("results.jsonl", "line 3 is not JSON"),
    ("timings.jsonl", "line 7 is not a case record"), ("coverage.jsonl", "line 7 is not a coverage record"),
    ("coverage of another run", "case c9, which results.jsonl does not hold"), ("stats.json", "not readable JSON"),
    ("a verdict behind", "case c0 has verdicts that are not objects with a backend and a verdict"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, what, words):
    d = make_folder(str(tmp_path))
    _damage(what)(d)
    capsys.readouterr()
    assert main(["report", d]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dlgate report: ") and words in err, err
    assert not os.path.exists(os.path.join(d, "report.html"))


def test_out_must_be_an_html_file(tmp_path, capsys):
    d = make_folder(str(tmp_path))
    assert main(["report", d, "--out", str(tmp_path / "page.txt")]) == 2
    assert "name an .html file" in capsys.readouterr().err


# -- headless Chromium ------------------------------------------------------------------------
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars"]
#: Added to a copy of the page for the check, once the page and its images have loaded: marks
#: each image loaded ("yes": decoded, with a width, and whole: a truncated PNG shows in part,
#: its last row left transparent) or not. Reading pixels of a file: image needs
#: --allow-file-access-from-files.
_PROBE = """<script>
function whole(i) {
  const c = document.createElement('canvas'); c.width = i.naturalWidth; c.height = i.naturalHeight;
  const g = c.getContext('2d'); g.drawImage(i, 0, 0);
  const row = g.getImageData(0, i.naturalHeight - 1, i.naturalWidth, 1).data;
  for (let k = 3; k < row.length; k += 4) if (row[k] !== 255) return false;
  return true;
}
addEventListener('load', () => {  // synchronous: the dump waits for no promise
  for (const i of document.images)
    i.dataset.loaded = i.complete && i.naturalWidth > 0 && whole(i) ? 'yes' : 'no';
  document.body.dataset.checked = 'yes';
});
</script>"""


def _chromium() -> str:
    """DLGATE_CHROMIUM, else chromium on PATH. Without one the browser tests skip, unless set-up
    was asked for one (DLGATE_SETUP_BROWSER=system, as .ci/run does): then a missing browser fails."""
    path = os.environ.get("DLGATE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        why = ("no headless Chromium: DLGATE_SETUP_BROWSER=system bash .ci/setup installs the system's "
               "package (as root), or set DLGATE_CHROMIUM=/path/to/chromium")
        if os.environ.get("DLGATE_SETUP_BROWSER") == "system":
            pytest.fail(why)
        pytest.skip(why)
    return path


def _chrome(tmp: str, *args) -> subprocess.CompletedProcess:
    profile = os.path.join(tmp, "profile")
    return subprocess.run([_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=180)


def rendered(page: str, tmp: str) -> str:
    """The DOM Chromium builds of ``page``, each <img> marked data-loaded yes or no."""
    probe = page[: -len(".html")] + ".probe.html"  # beside the page: its relative links resolve alike
    with open(probe, "w", encoding="utf-8") as f:
        f.write(_read(page).replace("</body>", _PROBE + "</body>"))
    try:
        got = _chrome(tmp, "--allow-file-access-from-files", "--virtual-time-budget=10000", "--dump-dom",
                      "file://" + probe)
    finally:
        os.unlink(probe)
    assert got.returncode == 0 and 'data-checked="yes"' in got.stdout, got.stderr[-2000:]
    return got.stdout


def assert_plots_loaded(dom: str, want: int) -> None:
    images = _Page(dom).images
    assert len(images) == want, [i.get("src") for i in images]
    broken = [i["src"] for i in images if i.get("data-loaded") != "yes"]
    assert not broken, f"plots that did not load: {broken}"


def test_chromium_renders_the_tables_and_loads_every_plot(tmp_path):
    d = make_folder(str(tmp_path))
    page_path = report(d)
    dom = rendered(page_path, str(tmp_path))
    page = _Page(dom)
    assert [r["backend"]["text"] for r in page.table("verdicts", "backend")] == [TVM, ORT]
    assert len(page.table("findings", "what went wrong")) == 5
    assert_plots_loaded(dom, 3)
    # a plot missing or broken is caught
    os.unlink(os.path.join(d, "report", "findings.png"))
    with open(os.path.join(d, "report", "features.png"), "r+b") as f:
        f.truncate(200)
    dom = rendered(page_path, str(tmp_path))
    with pytest.raises(AssertionError, match="findings.png.*features.png"):
        assert_plots_loaded(dom, 3)
    assert [i.get("data-loaded") for i in _Page(dom).images] == ["no", "no", "yes"]


# -- layout, as Chromium draws it ----------------------------------------------------------------
#: Added to a copy of the page: once it has loaded, writes the boxes the layout checks need
#: (viewport and document widths, each top-level table and its header cells, the repro
#: commands and messages of the findings rows with their line heights, the h2 headings, the
#: internals' <details>) into the body's data-layout attribute, which --dump-dom returns.
_LAYOUT = """<script>
addEventListener('load', () => {
  const box = e => { const b = e.getBoundingClientRect(); return {left: b.left, top: b.top + scrollY,
                                                                  right: b.right, bottom: b.bottom + scrollY}; };
  const text = e => Object.assign(box(e), {line: parseFloat(getComputedStyle(e).lineHeight)});
  const tables = [...document.querySelectorAll('table')].filter(t => !t.parentElement.closest('table'));
  const internals = document.querySelector('#internals + details');
  document.body.dataset.layout = JSON.stringify({
    width: innerWidth, scrollWidth: document.documentElement.scrollWidth,
    tables: tables.map(t => Object.assign(box(t), {cls: t.className, visible: t.checkVisibility(),
                                                   heads: [...t.rows[0].cells].map(box)})),
    causes: [...document.querySelectorAll('table.findings tr.cause')].map(r => box(r)),
    cmds: [...document.querySelectorAll('tr.cause pre.cmd')].map(text),
    msgs: [...document.querySelectorAll('tr.cause pre.msg')].map(text),
    h2: [...document.querySelectorAll('h2')].map(h => Object.assign(box(h), {id: h.id})),
    internals: internals && {open: internals.open, box: box(internals),
                             hidden: [...internals.querySelectorAll('img, table')].every(e => !e.checkVisibility())}
  });
});
</script>"""


def layout(page: str, tmp: str, width: int, height: int = 2400) -> dict:
    """The boxes :data:`_LAYOUT` records for ``page`` in a ``width`` x ``height`` window."""
    probe = page[: -len(".html")] + f".layout{width}.html"
    with open(probe, "w", encoding="utf-8") as f:
        f.write(_read(page).replace("</body>", _LAYOUT + "</body>"))
    try:
        got = _chrome(tmp, f"--window-size={width},{height}", "--virtual-time-budget=10000", "--dump-dom",
                      "file://" + probe)
    finally:
        os.unlink(probe)
    assert got.returncode == 0, got.stderr[-2000:]
    body = [a for tag, a in _tags(got.stdout) if tag == "body"]
    assert body and "data-layout" in body[0], "the layout probe did not run"
    return json.loads(body[0]["data-layout"])


def _tags(text: str) -> list:
    out = []

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            out.append((tag, dict(attrs)))

    P().feed(text)
    return out


def screenshot(page: str, tmp: str, width: int, height: int = 2400):
    """The page as Chromium draws it in a ``width`` x ``height`` window: an RGB array."""
    from matplotlib.image import imread

    shot = os.path.join(tmp, f"page-{width}.png")
    got = _chrome(tmp, f"--window-size={width},{height}", f"--screenshot={shot}", "file://" + page)
    assert got.returncode == 0 and os.path.isfile(shot), got.stderr[-2000:]
    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (height, width)  # a real screenshot, of the window asked for
    return pixels


def assert_fits(page: str, tmp: str, width: int) -> dict:
    """The findings fit a ``width``-pixel window: checked on Chromium's boxes and on its
    screenshot. Returns the boxes."""
    got = layout(page, tmp, width)
    assert got["width"] == width
    assert got["scrollWidth"] <= width, f"the page scrolls sideways: {got['scrollWidth']} > {width}"
    shown = [t for t in got["tables"] if t["visible"]]
    findings = [t for t in shown if "findings" in t["cls"].split()]
    assert findings
    for t in shown:
        assert t["right"] <= width - 8, (t["cls"], t["right"], width)  # inside the page's margin
        assert t["heads"][-1]["right"] <= t["right"] + 1  # the last column is on the page
    for t in findings:
        assert t["right"] - t["left"] >= 0.85 * min(width - 48, 1500)  # the table uses the width it has
        assert [h["top"] for h in t["heads"]] == [t["heads"][0]["top"]] * len(t["heads"])  # one header row
    assert got["cmds"] and got["msgs"]
    for c in got["cmds"]:  # the repro command wraps into a few lines, never a few characters a line
        assert c["right"] - c["left"] >= 200 and c["bottom"] - c["top"] <= 4 * c["line"] + 20, c
    for m in got["msgs"]:
        assert m["right"] - m["left"] >= 380, m
    # the internals: closed, drawn nothing, below every other section
    assert got["internals"] and not got["internals"]["open"] and got["internals"]["hidden"]
    assert got["h2"][-1]["id"] == "internals"
    assert got["internals"]["box"]["bottom"] - got["internals"]["box"]["top"] < 80
    # the screenshot: nothing drawn in the right margin (a table wider than the window would
    # run through it), and the findings table's right border where the boxes put it
    pixels = screenshot(page, tmp, width)
    margin = pixels[:, width - 6:, :]
    assert margin.min() > 0.97, "something is drawn in the right margin of the window"
    first = findings[0]
    assert first["bottom"] < pixels.shape[0], "the findings table starts below the screenshot"
    x, y = int(round(first["right"])) - 1, int((first["heads"][0]["top"] + first["heads"][0]["bottom"]) / 2)
    assert pixels[y, x - 1: x + 2].min() < 0.9, "no table border where Chromium's boxes put it"
    assert pixels[y, x + 3: x + 12].min() > 0.97, "the page goes on right of the table"
    return got


@pytest.mark.parametrize("width", [1280, 1920])
def test_the_findings_fit_the_window_in_chromium(tmp_path, width):
    page = report(make_folder(str(tmp_path)))
    got = assert_fits(page, str(tmp_path), width)
    assert [t["right"] <= width - 8 for t in got["tables"] if "refusals" in t["cls"].split()] == [True]
    # the message of many lines is clipped in the row: its box is a few lines, not the whole message
    assert max(m["bottom"] - m["top"] for m in got["msgs"]) <= (12 if width == 1280 else 11) * got["msgs"][0]["line"]


def test_the_layout_check_catches_a_page_that_does_not_fit(tmp_path):
    """The check fails on a page whose findings table is wider than the window, as the page
    of an earlier dlgate was (its columns sized to their unbroken contents)."""
    page = report(make_folder(str(tmp_path)))
    text = _read(page)
    with open(page, "w", encoding="utf-8") as f:
        f.write(text.replace("table.fixed { table-layout: fixed; width: 100%; }",
                             "table.fixed { width: 1500px; max-width: none; }"))
    with pytest.raises(AssertionError):
        assert_fits(page, str(tmp_path), 1280)
    with open(page, "w", encoding="utf-8") as f:
        f.write(text.replace('<pre class="cmd">', '<pre class="cmd" style="width: 3em">'))
    with pytest.raises(AssertionError, match="'right'"):
        assert_fits(page, str(tmp_path), 1280)


# -- end to end: a tiny real run --------------------------------------------------------------
class SigmoidBug(EnvBug):
    """onnxruntime's answers, off by one in every float output of a model holding a
    Sigmoid: one bug, which the reducer cuts down to the Sigmoid."""

    name = "sigmoidbug"

    def compile(self, model):
        import onnx

        return super().compile(model), any(n.op_type == "Sigmoid" for n in onnx.load_from_string(model.onnx).graph.node)

    def run(self, compiled, inputs):
        sess, bug = compiled
        outs = sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs)})
        return [o + 1 if bug and o.dtype.kind == "f" else o for o in outs]


def test_end_to_end_on_a_real_run_in_chromium(tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    cfg = str(tmp_path / "cfg.yaml")
    with open(cfg, "w") as f:
        yaml.safe_dump({"campaign": "t", "models": 6, "max_nodes": 4, "opset": 18, "dtypes": ["float32"],
                        "operators": ["Sigmoid", "Add", "Relu", "Mul", "Abs", "Neg", "Tanh"],
                        "backends": [{"name": "tests.test_html_report:SigmoidBug"}, "onnxruntime"],
                        "timeout_s": 120, "confirm_runs": 1, "reduce_seconds": 30}, f)
    out = str(tmp_path / "out")
    assert main(["run", "--config", cfg, "--seed", "report", "--out", out, "--no-progress"]) == 1
    verdict = json.load(open(os.path.join(out, "verdict.json")))
    page_path = report(out)
    dom = rendered(page_path, str(tmp_path))
    page = _Page(dom)
    records = read_records(os.path.join(out, "results.jsonl"))
    counts = {r["backend"]["text"]: int(r["all cases"]["text"]) for r in page.table("verdicts", "backend")}
    assert counts == {"tests.test_html_report:SigmoidBug[cpu]": len(records), "onnxruntime[cpu]": len(records)}
    rows = page.table("findings", "what went wrong")
    fps = [r["fingerprint"]["text"] for r in page.fingerprints("findings")]
    assert fps and sorted(fps) == sorted({g["fingerprint"] for g in verdict["new"]}) and len(set(fps)) == len(fps)
    assert len(rows) == len({g.get("cause") or g["cluster"] for g in verdict["new"]})  # one row per cause
    assert [r["class"]["text"] for r in page.fingerprints("findings")] == ["new"] * len(fps)
    for r in rows + page.fingerprints("findings"):
        for href in [h for c in r.values() for h in c["links"]]:
            assert os.path.exists(_target(page_path, href)), href
    assert any(r["reproduce"]["text"].startswith("python repros/") for r in rows)  # the reducer wrote a repro
    assert all("Sigmoid" in r["reduced to (ONNX)"]["text"] for r in rows)  # the bug's operator, as ONNX names it
    cov = {r["criterion"]["text"]: int(r["distinct features in this run"]["text"])
           for r in page.table("coverage", "criterion")}
    feats = [x for line in open(os.path.join(out, "coverage.jsonl")) for x in json.loads(line)["features"]]
    assert cov == {c: len({x for x in feats if S.criterion(x) == c}) for c in {S.criterion(x) for x in feats}}
    stats = json.load(open(os.path.join(out, "stats.json")))
    kinds = {r["backend"]["text"]: int(r["distinct rewrite kinds in this run"]["text"])
             for r in page.table("coverage", "backend")}
    assert kinds["onnxruntime[cpu]"] == len(stats["rewrites"]["onnxruntime[cpu]"])
    assert_plots_loaded(dom, 3)
    assert_fits(page_path, str(tmp_path), 1280)
    pixels = screenshot(page_path, str(tmp_path), 1200)
    assert pixels.std() > 0.05  # drawn, not a blank page


def test_page_quotes_the_id_the_summary_quotes():
    """A cause spanning several clusters is quoted by the id summary.md gives it (the first
    cluster in the gate's order), not by whichever cluster the page met first."""
    from types import SimpleNamespace

    from dlgate.report.page import _quote_ids

    v = {"new": [{"cluster": "c2", "cause": "K"}, {"cluster": "c1", "cause": "K"}, {"cluster": "c3"}],
         "pre_existing": [{"cluster": "c9", "cause": "P"}], "cluster_list": [{"cluster": "zz", "cause": "K"}]}
    assert _quote_ids(SimpleNamespace(verdict=v)) == {"K": "c2", "c3": "c3", "P": "c9"}
    assert _quote_ids(SimpleNamespace(verdict=None)) == {}


def test_the_causes_curve_counts_causes_as_the_rows_do():
    """One cause met in two dtypes (two clusters, one gate cause) is one cause on the curve,
    as it is one row of the page and one issue; a finding of another cause adds one."""
    from types import SimpleNamespace

    def found(fp, cluster, cause, at):
        return S.Finding("ort", fp, cluster, "mismatch", "", "", f"c{at}", at, confirmed_at=at, cause_id=cause)

    folder = SimpleNamespace(records=[{"verdicts": [{"backend": "ort"}]}] * 4)
    curves = S.finding_curves(folder, [found("f1", "c16", "K", 1), found("f2", "c32", "K", 2),
                                       found("f3", "c3", "c3", 4)])
    assert curves["ort"] == {"findings": [1, 2, 2, 3], "causes": [1, 1, 1, 2]}
    # a folder from before causes were recorded: each cluster is its own cause
    old = S.finding_curves(folder, [found("f1", "c16", "", 1), found("f2", "c32", "", 2)])
    assert old["ort"]["causes"] == [1, 2, 2, 2]
