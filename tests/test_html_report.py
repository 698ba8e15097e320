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
    """The tables of a page (the id of the section they are in, their rows of cells with
    text and link targets), its images and its script elements."""

    def __init__(self, text: str):
        super().__init__()
        self.tables, self.images, self.scripts, self.section, self.cell = [], [], 0, None, None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "h2":
            self.section = a.get("id")
        elif tag == "table":
            self.tables.append({"section": self.section, "rows": []})
        elif tag == "tr":
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th"):
            self.cell = {"text": "", "links": []}
            self.tables[-1]["rows"][-1].append(self.cell)
        elif tag == "a" and self.cell is not None:
            self.cell["links"].append(a["href"])
        elif tag == "br" and self.cell is not None:
            self.cell["text"] += "\n"
        elif tag == "img":
            self.images.append(a)
        elif tag == "script":
            self.scripts += 1

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell["text"] += data

    def table(self, section: str, first: str) -> list:
        """The rows (header -> cell) of the table in ``section`` whose first header is ``first``."""
        for t in self.tables:
            head = [c["text"] for c in t["rows"][0]]
            if t["section"] == section and head[0] == first:
                return [dict(zip(head, r)) for r in t["rows"][1:]]
        raise AssertionError(f"no table {first!r} in section {section!r}")


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


def _v(backend, verdict="pass", fp=None, cluster=None, typed="", flaky=False, more=()):
    v = {"backend": backend, "verdict": verdict, "versions": VERSIONS[backend], "detail": ""}
    if fp:
        v["identity"] = {"fingerprint": fp, "cluster": cluster or fp, "typed": typed, "pattern": typed.split("(")[0],
                         "text": f"{verdict} :: {typed}", "cluster_text": f"{verdict} in {typed}"}
        v["confirm"] = {"runs": 1, "reproduced": not flaky}
    if more:
        v["more"] = list(more)
    return v


def _cases():
    """(case id, [tvm verdict, ort verdict], bundle?) of the fixture's six cases."""
    behind = dict(_v(TVM, "mismatch", "fpD", "clC", "Neg(float32)"), bundle="cases/c3-cut")
    return [
        ("c0", [_v(TVM), _v(ORT)], False),
        ("c1", [_v(TVM, "mismatch", "fpA", "clA", EVIL), _v(ORT)], True),
        ("c2", [_v(TVM, "mismatch", "fpA", "clA", EVIL), _v(ORT, "crash", "fpB", "clB", "Relu(float32)")], True),
        ("c3", [_v(TVM, "compile_error", "fpC", "clC", "Abs(float32)", more=[behind]), _v(ORT)], True),
        ("c4", [_v(TVM, "mismatch", "fpE", "clE", "Tanh(float32)", flaky=True), _v(ORT, "unsupported")], False),
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


def make_folder(root: str, coverage: bool = True, decided: bool = True) -> str:
    d = os.path.join(root, "run")
    os.makedirs(d)
    manifest = {"campaign": "nightly", "root": "0123456789abcdef", "root_source": "commit", "dlgate": "0.1.0",
                "generator": "9", "fingerprint": "f00d", "planned": 6, "shard": None, "opset_range": [13, 21],
                "config": {"reference": "torch", "backends": ["tvm", "ort"]}, "config_source": "configs/pr.yaml"}
    records, timings = [], []
    for k, (case, verdicts, bundle) in enumerate(_cases()):
        rec = {"case": case, "index": k, "kind": "batch", "campaign": "nightly", "verdicts": verdicts,
               "reference": {"versions": {"name": "torch", "version": "2.13.0", "device": "cpu"}}}
        if bundle:
            rec["bundle"] = f"cases/{case}"
            os.makedirs(os.path.join(d, rec["bundle"]))
        records.append(rec)
        timings.append({"case": case, "backends": {TVM: {"compile_s": 0.1, "rewrites": REWRITES[case]},
                                                   ORT: {"compile_s": 0.1}}})
    os.makedirs(os.path.join(d, "cases", "c3-cut"))
    for fp in ("fpA", "fpC"):  # reduced repros; fpB, fpD, fpE were not reduced
        os.makedirs(os.path.join(d, "repros", fp))
        _lines(os.path.join(d, "repros", fp, "repro.json"), [{"fingerprint": fp}])
        with open(os.path.join(d, "repros", fp, "repro.py"), "w") as f:
            f.write("print('repro')\n")
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
                       "new": [g("fpA", TVM, "new"), g("fpB", ORT, "new"), g("fpD", TVM, "new")],
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


def test_each_distinct_finding_is_listed_once_with_working_relative_links(tmp_path):
    d = make_folder(str(tmp_path))
    html_path = report(d)
    page = _Page(_read(html_path))
    rows = page.table("findings", "backend")
    fps = [r["finding (reduced to)"]["text"].split("\n")[0] for r in rows]
    assert fps == ["fpA", "fpB", "fpC", "fpD", "fpE"]  # once each, by first case; the reference error is none
    by = {fp: r for fp, r in zip(fps, rows)}
    assert {fp: by[fp]["class"]["text"] for fp in fps} == {"fpA": "new", "fpB": "new", "fpC": "known",
                                                          "fpD": "new", "fpE": "flaky"}
    assert by["fpA"]["cases"]["text"] == "2" and by["fpA"]["first case"]["text"] == "c1"
    assert by["fpD"]["first case"]["text"] == "c3"  # found behind fpC in c3, its own cut bundle linked
    assert EVIL in by["fpA"]["finding (reduced to)"]["text"]  # shown as text ...
    assert page.scripts == 0 and "<script>alert" not in _read(html_path)  # ... never as markup
    want = {"fpA": ["cases/c1/", "repros/fpA/", "repros/fpA/repro.py"], "fpB": ["cases/c2/"],
            "fpC": ["cases/c3/", "repros/fpC/", "repros/fpC/repro.py"], "fpD": ["cases/c3-cut/"], "fpE": []}
    for fp, targets in want.items():
        links = by[fp]["first case"]["links"] + by[fp]["repro"]["links"]
        assert links == targets, fp
        for href in links:
            assert os.path.exists(_target(html_path, href)), href
    assert by["fpB"]["repro"]["text"] == "not reduced"
    # the page written elsewhere links the same files
    other = str(tmp_path / "pages" / "nightly.html")
    report(d, "--out", other)
    moved = _Page(_read(other))
    for r in moved.table("findings", "backend"):
        for href in r["first case"]["links"] + r["repro"]["links"]:
            assert href.startswith("../run/") and os.path.exists(_target(other, href)), href
    assert [os.path.exists(_target(other, i["src"])) for i in moved.images] == [True, True, True]


def test_findings_curves_count_distinct_confirmed_findings_and_causes(tmp_path):
    f = load(make_folder(str(tmp_path)))
    curves = S.finding_curves(f, S.findings(f))
    # fpA at c1; fpB at c2; fpC and fpD at c3 share cause clC; fpE is only flaky
    assert curves[TVM] == {"findings": [0, 1, 1, 3, 3, 3], "causes": [0, 1, 1, 2, 2, 2]}
    assert curves[ORT] == {"findings": [0, 0, 1, 1, 1, 1], "causes": [0, 0, 1, 1, 1, 1]}


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
    classes = [r["class"]["text"] for r in _Page(text).table("findings", "backend")]
    assert classes == ["undecided"] * 4 + ["flaky"]


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
    assert len(page.table("findings", "backend")) == 5
    assert_plots_loaded(dom, 3)
    # a plot missing or broken is caught
    os.unlink(os.path.join(d, "report", "findings.png"))
    with open(os.path.join(d, "report", "features.png"), "r+b") as f:
        f.truncate(200)
    dom = rendered(page_path, str(tmp_path))
    with pytest.raises(AssertionError, match="findings.png.*features.png"):
        assert_plots_loaded(dom, 3)
    assert [i.get("data-loaded") for i in _Page(dom).images] == ["no", "no", "yes"]


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
    rows = page.table("findings", "backend")
    fps = [r["finding (reduced to)"]["text"].split("\n")[0] for r in rows]
    assert fps and sorted(fps) == sorted({g["fingerprint"] for g in verdict["new"]}) and len(set(fps)) == len(fps)
    for r in rows:
        assert r["class"]["text"] == "new"
        for href in r["first case"]["links"] + r["repro"]["links"]:
            assert os.path.exists(_target(page_path, href)), href
    assert any(r["repro"]["links"] for r in rows)  # the reducer wrote a repro, and the page links it
    cov = {r["criterion"]["text"]: int(r["distinct features in this run"]["text"])
           for r in page.table("coverage", "criterion")}
    feats = [x for line in open(os.path.join(out, "coverage.jsonl")) for x in json.loads(line)["features"]]
    assert cov == {c: len({x for x in feats if S.criterion(x) == c}) for c in {S.criterion(x) for x in feats}}
    stats = json.load(open(os.path.join(out, "stats.json")))
    kinds = {r["backend"]["text"]: int(r["distinct rewrite kinds in this run"]["text"])
             for r in page.table("coverage", "backend")}
    assert kinds["onnxruntime[cpu]"] == len(stats["rewrites"]["onnxruntime[cpu]"])
    assert_plots_loaded(dom, 3)
    shot = str(tmp_path / "page.png")
    got = _chrome(str(tmp_path), "--window-size=1200,2400", f"--screenshot={shot}", "file://" + page_path)
    assert got.returncode == 0 and os.path.getsize(shot) > 10_000, got.stderr[-2000:]
    from matplotlib.image import imread

    pixels = imread(shot)
    assert pixels.shape[:2] == (2400, 1200) and pixels[..., :3].std() > 0.05  # drawn, not a blank page
