"""Change-aware batches: reading a diff, targets and their merging, aiming the generator,
the coverage table, and the commands (``dlgate targets``, ``run --targets``, ``gen --targets``)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from dlgate.case import make_case
from dlgate.change import aim as A
from dlgate.change import diff as D
from dlgate.change.compilers import common
from dlgate.change.coverage import table
from dlgate.change.report import lines as report_lines
from dlgate.change.targets import FileTargets, Target, TargetSet, merge
from dlgate.cli import main
from dlgate.graph.generator import GenConfig, Generator

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DIFF = """\
diff --git a/python/tvm/relax/frontend/onnx/onnx_frontend.py b/python/tvm/relax/frontend/onnx/onnx_frontend.py
index 1111111..2222222 100644
--- a/python/tvm/relax/frontend/onnx/onnx_frontend.py
+++ b/python/tvm/relax/frontend/onnx/onnx_frontend.py
@@ -10,3 +10,4 @@ class Gelu(OnnxOpConverter):
 keep
-old
+new
+more
@@ -40,2 +41,1 @@ class Softsign(OnnxOpConverter):
 keep
-gone
diff --git a/src/new_pass.cc b/src/new_pass.cc
new file mode 100644
--- /dev/null
+++ b/src/new_pass.cc
@@ -0,0 +1,2 @@
+int f() {
+}
diff --git a/src/old.cc b/src/old.cc
deleted file mode 100644
--- a/src/old.cc
+++ /dev/null
@@ -1 +0,0 @@
-x
diff --git a/docs/a.md b/docs/b.md
similarity index 90%
rename from docs/a.md
rename to docs/b.md
"""


# -- reading a diff -----------------------------------------------------------------------

def test_a_unified_diff_gives_files_statuses_and_changed_lines():
    ch = D.parse(DIFF)
    assert [(f.where, f.status) for f in ch.files] == [
        ("python/tvm/relax/frontend/onnx/onnx_frontend.py", "modified"), ("src/new_pass.cc", "added"),
        ("src/old.cc", "deleted"), ("docs/b.md", "renamed")]
    h1, h2 = ch.files[0].hunks
    assert h1.lines == [11, 12] and h1.text == ["old", "new", "more"]
    assert h2.lines == [42] and h2.text == ["gone"]  # a deletion is placed before the line it precedes
    assert ch.files[0].hunks[0].header == "class Gelu(OnnxOpConverter):"
    assert ch.files[3].old_path == "docs/a.md"


def test_a_plain_diff_u_is_read_too_and_an_empty_diff_is_an_empty_change():
    text = "--- a.py\t2026-01-01\n+++ a.py\t2026-01-02\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    ch = D.parse(text)
    assert [f.where for f in ch.files] == ["a.py"] and ch.files[0].hunks[0].lines == [1]
    assert D.parse("").files == []


def test_text_that_is_not_a_diff_is_refused():
    with pytest.raises(D.DiffError, match="no file diff"):
        D.parse("hello\nworld\n")
    with pytest.raises(D.DiffError, match="hunk header outside"):
        D.parse("@@ -1 +1 @@\n-a\n+b\n")


PY = """\
import x


def helper(a):
    return a + 1


class Gelu(Base):
    @classmethod
    def _impl_v13(cls, bb, inputs, attr, params):
        y = helper(inputs[0])
        return y

    @classmethod
    def _impl_v20(cls, bb, inputs, attr, params):
        return None
"""

CC = """\
#include <x.h>
namespace onnxruntime {

template <typename T>
Status Pow<T>::Compute(OpKernelContext* ctx) const {
  auto* x = ctx->Input<Tensor>(0);
  if (x == nullptr) {
    return Status::OK();
  }
  return Status::OK();
}

class Softsign final : public OpKernel {
 public:
  Status Compute(OpKernelContext* ctx) const override;
};

}  // namespace onnxruntime
"""


def test_enclosing_definitions_come_from_the_file_after_the_change():
    fc = D.FileChange("m.py", hunks=[D.Hunk(11, 1, 11, 1, lines=[11]), D.Hunk(1, 1, 1, 1, lines=[1]),
                                     D.Hunk(5, 1, 5, 1, lines=[5])])
    D.enclose(fc, PY)
    assert [h.enclosing for h in fc.hunks] == [["Gelu", "_impl_v13"], [], ["helper"]]
    cc = D.FileChange("pow.cc", hunks=[D.Hunk(7, 1, 7, 1, lines=[7]), D.Hunk(14, 1, 14, 1, lines=[14])])
    D.enclose(cc, CC)
    assert cc.hunks[0].enclosing == ["Pow<T>::Compute"]  # template arguments kept: a specialization is its own
    assert cc.hunks[1].enclosing == ["Softsign"]


def test_without_the_file_git_s_hunk_header_names_the_definition():
    fc = D.parse(DIFF).files[0]
    D.enclose(fc, None)
    assert [h.enclosing for h in fc.hunks] == [["Gelu"], ["Softsign"]]


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t",
                            GIT_COMMITTER_EMAIL="t@e"))


def test_a_git_change_is_read_from_the_merge_base_with_definitions(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "m.py").write_text(PY)
    (repo / "README.md").write_text("x\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    _git(repo, "checkout", "-qb", "pr")
    (repo / "m.py").write_text(PY.replace("y = helper(inputs[0])", "y = helper(inputs[0]) * 2"))
    (repo / "README.md").write_text("y\n")
    _git(repo, "commit", "-qam", "change")
    ch = D.from_git(str(repo), "main")
    assert {f.where: f.definitions for f in ch.files} == {"m.py": ["Gelu", "_impl_v13"], "README.md": []}
    with pytest.raises(D.DiffError, match="git diff"):
        D.from_git(str(repo), "no-such-ref")


# -- targets ------------------------------------------------------------------------------

def test_targets_validate_and_merge_by_what_they_aim_at():
    with pytest.raises(ValueError, match="kind"):
        Target("kernel", "Gelu")
    with pytest.raises(ValueError, match="empty"):
        Target("operator", "Gelu", (18, 13))
    with pytest.raises(ValueError, match="regime"):
        Target("operator", "Gelu", regimes=("huge",))
    a = Target("operator", "Pow", (13, 14), ("float32", "float16"), why="pow.cc")
    assert a.dtypes == ("float16", "float32") and a.key == "operator:Pow[13-14;float16,float32]"
    b = Target("operator", "Pow", (13, 14), ("float16", "float32"), why="math.cc")
    assert merge([a, b]) == [a] and merge([a, b])[0].why == "math.cc; pow.cc"
    assert Target.from_json(a.to_json()) == a


def test_a_target_set_s_digest_depends_on_the_targets_only():
    t1 = TargetSet("tvm", "x", [FileTargets("a.py", [Target("operator", "Gelu", why="a.py")])])
    t2 = TargetSet("tvm", "y", [FileTargets("b.py", [Target("operator", "Gelu", why="b.py")]),
                                FileTargets("README.md", skipped="docs")])
    t3 = TargetSet("tvm", "x", [FileTargets("a.py", [Target("operator", "Erf")])])
    assert t1.digest() == t2.digest() != t3.digest()
    back = TargetSet.from_json(t2.to_json())
    assert back.targets == t2.targets and back.digest() == t2.digest() and back.to_json()["files"] == t2.to_json()["files"]


@pytest.mark.parametrize("path,why", [("tests/python/relax/test_frontend_onnx.py", "tests"),
                                      ("onnxruntime/test/providers/cpu/math/gemm_test.cc", "tests"),
                                      ("docs/how_to/deploy.rst", "docs"), ("README.md", "docs"),
                                      ("CMakeLists.txt", "build"), ("cmake/onnxruntime.cmake", "build"),
                                      (".github/workflows/ci.yml", "build"), ("src/relax/transform/fuse_ops.cc", ""),
                                      ("python/tvm/relax/frontend/onnx/onnx_frontend.py", "")])
def test_tests_docs_and_build_files_run_the_ordinary_batch(path, why):
    assert common.ordinary(path) == why


TABLE = {"compiler": "tvm", "files": {"conv.py": {
    "definitions": {"Gelu": [{"kind": "operator", "name": "Gelu"}], "_impl_v13": [{"kind": "operator", "name": "X"}]},
    "targets": [{"kind": "operator", "name": "Gelu"}, {"kind": "operator", "name": "Erf"}]}},
    "prefixes": [{"prefix": "src/", "targets": []}, {"prefix": "src/transform/", "targets": [
        {"kind": "rewrite", "name": "FuseOps"}]}]}


def test_the_lookup_takes_the_innermost_mapped_definition_else_the_file_else_the_longest_prefix():
    fc = D.FileChange("conv.py", hunks=[D.Hunk(1, 1, 1, 1, enclosing=["Gelu"])])
    assert [t.key for t in common.lookup(fc, TABLE).targets] == ["operator:Gelu"]
    assert common.lookup(fc, TABLE).targets[0].why == "conv.py: Gelu"
    fc.hunks[0].enclosing = ["Gelu", "_impl_v13"]
    assert [t.key for t in common.lookup(fc, TABLE).targets] == ["operator:X"]
    fc.hunks[0].enclosing = []  # module level: the file's own targets
    assert [t.key for t in common.lookup(fc, TABLE).targets] == ["operator:Gelu", "operator:Erf"]
    deep = common.lookup(D.FileChange("src/transform/fuse.cc", hunks=[D.Hunk(1, 1, 1, 1)]), TABLE)
    assert [t.key for t in deep.targets] == ["rewrite:FuseOps"]
    shallow = common.lookup(D.FileChange("src/other.cc", hunks=[D.Hunk(1, 1, 1, 1)]), TABLE)
    assert shallow.skipped == "unmapped" and "maps to no target" in shallow.note
    none = common.lookup(D.FileChange("lib/x.cc", hunks=[D.Hunk(1, 1, 1, 1)]), TABLE)
    assert none.skipped == "unmapped" and none.note == "no table entry for this path"


# -- aims ---------------------------------------------------------------------------------

def test_targets_resolve_to_the_specs_that_exercise_them_or_to_a_gap():
    aims, gaps = A.resolve([Target("operator", "Softsign"), Target("rewrite", "FuseOps"),
                            Target("operator", "NoSuchOp"), Target("rewrite", "NoSuchPass"),
                            Target("operator", "Softsign", dtypes=("int8",)),
                            Target("operator", "BitCast", (13, 20))], "tvm")
    by = {a.target.key: a for a in aims}
    assert by["operator:Softsign"].specs == ("Softsign",)
    fuse = by["rewrite:FuseOps"].specs
    assert len(fuse) >= 10 and all(n for n in fuse)
    assert gaps == {"operator:NoSuchOp": "no spec generates this operator (dlgate ops --gaps)",
                    "rewrite:NoSuchPass": "no motif aims at this rewrite",
                    "operator:Softsign[int8]": "no spec draws it with int8 (dlgate ops --gaps)",
                    "operator:BitCast[13-20]": "no spec for it exists at opsets 13-20"}
    # a rewrite of another compiler is not this compiler's
    assert A.resolve([Target("rewrite", "GeluFusion")], "tvm")[0] == []
    assert A.resolve([Target("rewrite", "GeluFusion")], "onnxruntime")[0]


AIMS = tuple(A.resolve([Target("operator", "Softsign"), Target("operator", "Pow", dtypes=("float16",)),
                        Target("operator", "Transpose", (13, 20), regimes=("degenerate",)),
                        Target("rewrite", "GeluFusion")], "onnxruntime")[0])


def _digest(gen, n, root="aim", campaign="pr"):
    h = hashlib.sha256()
    for i in range(n):
        h.update(make_case(gen, root, campaign, i).model_bytes)
    return h.hexdigest()


def test_without_aims_or_with_a_zero_share_the_batch_is_unchanged():
    plain = _digest(Generator(GenConfig(dynamic_share=0.25, extreme_share=0.2)), 40)
    assert _digest(Generator(GenConfig(dynamic_share=0.25, extreme_share=0.2, aims=AIMS, aim_share=0.0)), 40) == plain
    assert _digest(Generator(GenConfig(dynamic_share=0.25, extreme_share=0.2, aims=AIMS)), 40) != plain


def test_aimed_cases_exercise_their_target_with_its_dtypes_opsets_and_regime():
    gen = Generator(GenConfig(aims=AIMS, aim_share=1.0))
    seen, missed, degenerate = {}, 0, 0
    for i in range(80):
        g = make_case(gen, "aim", "pr", i).graph
        key = g.aimed["target"]
        seen[key] = seen.get(key, 0) + 1
        missed += key not in A.exercised(AIMS, g)
        if key.startswith("operator:Transpose"):
            assert 13 <= g.opset <= 20 and g.aimed.get("degenerate")
        degenerate += bool(g.aimed.get("degenerate"))
        if key.startswith("operator:Pow"):  # every Pow of the case has the target's dtype
            assert all(g.tensors[n.inputs[0]].dtype == "float16" for n in g.nodes if n.op == "Pow")
    assert set(seen) == {a.target.key for a in AIMS} and min(seen.values()) >= 10
    assert missed <= 2, f"{missed} of 80 aimed cases do not exercise their target"
    assert seen["operator:Transpose[13-20;degenerate]"] < degenerate < 80  # the regime, and a share of the rest


def test_the_aimed_share_follows_the_configuration():
    gen = Generator(GenConfig(aims=AIMS, aim_share=0.8))
    aimed = sum(make_case(gen, "share", "pr", i).graph.aimed is not None for i in range(200))
    assert 140 <= aimed <= 180


def test_a_target_the_configuration_leaves_out_gives_a_random_case():
    only = tuple(A.resolve([Target("operator", "Softsign")], "onnxruntime")[0])
    gen = Generator(GenConfig(aims=only, aim_share=1.0, ops=("Relu", "Add")))
    g = make_case(gen, "out", "pr", 0).graph
    assert g.aimed is None and {n.op for n in g.nodes} <= {"Relu", "Add"}


def test_targeted_batches_are_identical_across_processes(tmp_path):
    code = ("import hashlib,sys; from dlgate.change.aim import resolve; from dlgate.change.targets import Target;"
            "from dlgate.graph.generator import Generator,GenConfig; from dlgate.case import make_case;"
            "a=tuple(resolve([Target('operator','Softsign'),Target('rewrite','GeluFusion')],'onnxruntime')[0]);"
            "g=Generator(GenConfig(aims=a)); h=hashlib.sha256()\n"
            "for i in range(25): h.update(make_case(g,'x','pr',i).model_bytes)\n"
            "print(h.hexdigest())")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO,
                           env=dict(os.environ, PYTHONHASHSEED=s)).stdout for s in ("1", "2")}
    assert len(outs) == 1


# -- the coverage table -------------------------------------------------------------------

def _doc(targets, compiler="onnxruntime", files=()):
    ts = TargetSet(compiler, "diff x.diff", [FileTargets("f.cc", list(targets))] + list(files))
    return dict(ts.to_json(), target_share=0.8)


def test_the_coverage_table_counts_aimed_exercising_and_tested_models_and_applied_rewrites():
    doc = _doc([Target("operator", "Softsign", why="act.cc: Softsign"), Target("rewrite", "GeluFusion"),
                Target("operator", "NoSuchOp"), Target("operator", "Erf")])
    recs = [
        {"case": "c1", "change": {"aimed": "operator:Softsign", "exercised": ["operator:Softsign"]},
         "verdicts": [{"backend": "ort", "verdict": "pass"}]},
        {"case": "c2", "change": {"aimed": "operator:Softsign", "exercised": ["operator:Softsign"]},
         "verdicts": [{"backend": "ort", "verdict": "unsupported"}]},
        {"case": "c3", "change": {"aimed": "rewrite:GeluFusion", "exercised": ["rewrite:GeluFusion"]},
         "verdicts": [{"backend": "ort", "verdict": "mismatch"}]},
        {"case": "c4", "change": {"aimed": "rewrite:GeluFusion", "exercised": ["rewrite:GeluFusion"]},
         "verdicts": [{"backend": "ort", "verdict": "pass"}]},
        {"case": "c5", "change": {"exercised": []}, "verdicts": [{"backend": "ort", "verdict": "pass"}]},
    ]
    rewrites = {("c3", "ort"): ["transformer:GeluFusion", "fused:com.microsoft:Gelu"], ("c4", "ort"): ["removed:Erf"]}
    rows = {r["target"]: r for r in table(doc, recs, rewrites)["rows"]}
    soft = rows["operator:Softsign"]
    assert (soft["aimed"], soft["models"], soft["tested"], soft["why"]) == (2, 2, 1, "act.cc: Softsign")
    assert "applied" not in soft and "gap" not in soft
    gelu = rows["rewrite:GeluFusion"]
    assert (gelu["models"], gelu["tested"], gelu["applied"]) == (2, 2, {"ort": 1})
    assert rows["operator:NoSuchOp"]["gap"].startswith("no spec generates")
    assert rows["operator:Erf"]["gap"].startswith("no case was aimed at it")


def test_a_target_refused_by_every_backend_is_a_gap_saying_so():
    doc = _doc([Target("operator", "Softsign")])
    recs = [{"case": "c1", "change": {"aimed": "operator:Softsign", "exercised": ["operator:Softsign"]},
             "verdicts": [{"backend": "ort", "verdict": "unsupported"}]}]
    assert "refused" in table(doc, recs, {})["rows"][0]["gap"]


def test_the_summary_section_lists_targets_gaps_and_unmapped_files():
    doc = _doc([Target("operator", "Softsign", why="act.cc: Softsign"), Target("operator", "NoSuchOp")],
               files=[FileTargets("README.md", skipped="docs"),
                      FileTargets("core/x.cc", skipped="unmapped", note="no table entry for this path")])
    recs = [{"case": "c1", "change": {"aimed": "operator:Softsign", "exercised": ["operator:Softsign"]},
             "verdicts": [{"backend": "ort", "verdict": "pass"}]}]
    text = "\n".join(report_lines(table(doc, recs, {})))
    assert text.startswith("### 🎯 What this change touches")
    assert "| ✅ | operator `Softsign` | act.cc: Softsign | 1 | 1 | 1 |" in text
    assert "- operator `NoSuchOp`: no spec generates this operator" in text
    assert "`core/x.cc`: no target (no table entry for this path)" in text and "`README.md`: docs only" in text
    ordinary = "\n".join(report_lines(table(_doc([], files=[FileTargets("README.md", skipped="docs")]), [], {})))
    assert "touches no target" in ordinary and "docs only" in ordinary and "ordinary, random one" in ordinary


# -- commands -----------------------------------------------------------------------------

def test_bad_change_input_is_one_line_and_exit_status_2(tmp_path, capsys):
    assert main(["targets", "--diff", str(tmp_path / "nope.diff"), "--compiler", "tvm"]) == 2
    assert "cannot read diff" in capsys.readouterr().err
    (tmp_path / "x.diff").write_text("not a diff\n")
    assert main(["targets", "--diff", str(tmp_path / "x.diff"), "--compiler", "tvm"]) == 2
    assert "no file diff found" in capsys.readouterr().err
    (tmp_path / "y.diff").write_text(DIFF)
    assert main(["targets", "--diff", str(tmp_path / "y.diff"), "--compiler", "gcc"]) == 2
    assert "no change mapping for compiler 'gcc'" in capsys.readouterr().err
    (tmp_path / "z.diff").write_text(DIFF.replace("python/tvm/relax/frontend/onnx/", "lib/"))
    assert main(["targets", "--diff", str(tmp_path / "z.diff")]) == 2
    assert "cannot tell whose source tree" in capsys.readouterr().err
    assert main(["targets"]) == 2
    assert main(["targets", "--diff", "a", "--changed-from", "b", "--compiler", "tvm"]) == 2
    assert "not several" in capsys.readouterr().err
    assert main(["targets", "--changed-from", "main", "--repo", str(tmp_path), "--compiler", "tvm"]) == 2
    assert "git diff" in capsys.readouterr().err
    (tmp_path / "t.json").write_text("{}")
    assert main(["gen", "--seed", "s", "--count", "1", "--out", str(tmp_path / "g"), "--targets",
                 str(tmp_path / "t.json")]) == 2
    assert "not a target set" in capsys.readouterr().err


FAKE = """\
campaign: pr
models: {models}
max_nodes: 8
backends:
  - name: dlgate.backends.testing:MisconvertingOnnxRuntime
    options: {{convert_from: Softsign, convert_to: Softplus}}
reference: torch
confirm_runs: 1
findings_per_case: 1
"""


def _targets_file(tmp_path):
    p = tmp_path / "targets.json"
    p.write_text(json.dumps(_doc([Target("operator", "Softsign", why="activations.cc: Softsign")])))
    return str(p)


def test_a_fault_in_one_converter_is_caught_with_targeting_and_reported_as_tested(tmp_path):
    cfg = tmp_path / "fake.yaml"
    cfg.write_text(FAKE.format(models=20))
    out = str(tmp_path / "out")
    assert main(["run", "--config", str(cfg), "--seed", "conv", "--out", out, "--no-progress",
                 "--targets", _targets_file(tmp_path)]) == 1
    verdict = json.load(open(os.path.join(out, "verdict.json")))
    assert any("Softsign" in (g.get("typed") or "") for g in verdict["new"])
    row = verdict["change"]["rows"][0]
    assert row["target"] == "operator:Softsign" and row["aimed"] >= 12 and row["tested"] >= 1
    assert "### 🎯 What this change touches" in open(os.path.join(out, "summary.md")).read()
    manifest = json.load(open(os.path.join(out, "run.json")))
    assert manifest["change"]["targets"][0]["name"] == "Softsign"
    # the HTML report opens with the same table
    page = str(tmp_path / "report.html")
    assert main(["report", out, "--out", page]) == 0
    html = open(page).read()
    assert html.index('<h2 id="change">What this change touches</h2>') < html.index('<h2 id="verdicts">')
    assert f'<td class="n">{row["aimed"]}</td><td class="n">{row["models"]}</td><td class="n">{row["tested"]}</td>' in html
    # dlgate gen regenerates the run's cases from its run.json
    gen_out = str(tmp_path / "gen")
    assert main(["gen", "--seed", "conv", "--campaign", "pr", "--count", "20", "--max-nodes", "8", "--out", gen_out,
                 "--targets", os.path.join(out, "run.json"), "--coverage-state",
                 os.path.join(out, "coverage-start.json")]) == 0
    for rec in map(json.loads, open(os.path.join(out, "results.jsonl"))):
        meta = json.load(open(os.path.join(gen_out, rec["case"], "meta.json")))
        assert meta.get("aimed", {}).get("target") == rec["change"].get("aimed")
        assert sorted(meta["operators"]) == sorted(rec["operators"])
    # a resumed run with another change is refused
    other = tmp_path / "other.json"
    other.write_text(json.dumps(_doc([Target("operator", "Erf")])))
    assert main(["run", "--config", str(cfg), "--seed", "conv", "--out", out, "--targets", str(other)]) == 2


def test_shards_share_the_targets_and_draw_the_cases_of_the_whole_run(tmp_path):
    cfg = tmp_path / "fake.yaml"
    cfg.write_text(FAKE.format(models=8))
    t = _targets_file(tmp_path)
    whole = str(tmp_path / "whole")
    main(["run", "--config", str(cfg), "--seed", "sh", "--out", whole, "--no-progress", "--targets", t])
    parts = []
    for i in (1, 2):
        d = str(tmp_path / f"s{i}")
        main(["run", "--config", str(cfg), "--seed", "sh", "--out", d, "--no-progress", "--targets", t,
              "--shard", f"{i}/2"])
        parts.append(d)

    def rows(d):
        return {r["case"]: (r["operators"], r["features"], r.get("change")) for r in
                map(json.loads, open(os.path.join(d, "results.jsonl")))}

    merged = {**rows(parts[0]), **rows(parts[1])}
    assert merged == rows(whole)
    assert main(["merge", *parts, "--out", str(tmp_path / "m")]) == 1
    assert json.load(open(tmp_path / "m" / "verdict.json"))["change"]["rows"][0]["models"] == \
        json.load(open(os.path.join(whole, "verdict.json")))["change"]["rows"][0]["models"]


def test_without_the_file_a_definition_the_hunk_shows_beats_git_s_header():
    # git names the definition above the hunk (CumSum); the hunk itself opens class Squeeze
    text = """\
--- a/conv.py
+++ b/conv.py
@@ -10,6 +10,11 @@ class CumSum(OnnxOpConverter):
 class Squeeze(OnnxOpConverter):
     \"\"\"Squeeze.\"\"\"
 
+    @classmethod
+    def _impl_v1(cls, bb, inputs, attr, params):
+        return None
+
     @classmethod
     def _impl_v13(cls, bb, inputs, attr, params):
         data = inputs[0]
@@ -40,3 +45,4 @@ class Squeeze(OnnxOpConverter):
     def _squeeze(cls, bb, data, axis):
         x = 1
+        y = 2
"""
    fc = D.parse(text).files[0]
    D.enclose(fc, None)
    assert fc.hunks[0].enclosing == ["Squeeze", "_impl_v1"]
    # a hunk inside a method: the header's class completes it outwards
    assert fc.hunks[1].enclosing == ["Squeeze", "_squeeze"]


def test_without_the_file_a_line_whose_definition_starts_above_the_hunk_takes_the_header_s_whole():
    # the first change is in a method that starts above the hunk: the class as a whole
    text = """\
--- a/conv.py
+++ b/conv.py
@@ -10,6 +10,6 @@ class TopK(OnnxOpConverter):
         if x:
             raise ValueError()
-        return a
+        return b
 
     @classmethod
     def _impl_v1(cls, bb, inputs, attr, params):
-        return c
+        return d
"""
    fc = D.parse(text).files[0]
    D.enclose(fc, None)
    assert fc.hunks[0].enclosing == ["TopK"]
