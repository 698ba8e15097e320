"""The PyTorch Inductor change mapping on real PyTorch changes, and its table builder on a
real excerpt of PyTorch's source.

The diffs under ``tests/data/change/inductor/`` are hunks of the real change from torch
2.13.0 to 2.14.1 (the release wheels' ``torch/`` trees compared with ``git diff -U0``),
and of pytorch/pytorch pull request 181845; ``post-2.14.1.json`` holds the 2.14.1 source
of the definitions enclosing them, at their line numbers, so the enclosing definitions
are found as ``dlgate run --changed-from`` finds them in a checkout. ``tree/`` is a real
excerpt of torch 2.13.0's Inductor source (files end in ``.txt`` so no linter reads them
as code). Provenance: ``tests/data/change/inductor/PROVENANCE.md``.
"""
from __future__ import annotations

import json
import os
import shutil

import pytest

from dlgate.change import diff as D
from dlgate.change.builders import Source, dump
from dlgate.change.builders import inductor as builder
from dlgate.change.builders import inductor_source
from dlgate.change.compilers import common, map_change, table
from dlgate.change.compilers import inductor as mapper
from dlgate.change.targets import FileTargets
from dlgate.ops.registry import all_specs

DATA = os.path.join(os.path.dirname(__file__), "data", "change", "inductor")


@pytest.fixture(scope="module")
def shipped():
    return table("inductor")


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A folder holding the 2.14.1 definitions that enclose the vendored hunks, each at
    its line number (the lines between are blank)."""
    root = tmp_path_factory.mktemp("torch-2.14.1")
    with open(os.path.join(DATA, "post-2.14.1.json"), encoding="utf-8") as f:
        post = json.load(f)
    for path, entry in post.items():
        lines: list = []
        for start, text in entry["chunks"]:
            assert start - 1 >= len(lines)
            lines += [""] * (start - 1 - len(lines)) + text.splitlines()
        os.makedirs(os.path.dirname(root / path), exist_ok=True)
        (root / path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(root)


def mapped(name, tab, repo=None):
    """The vendored diff ``name`` read as ``--diff`` reads it (with the files in ``repo``
    when given), each file mapped on ``tab``."""
    ch = D.from_file(os.path.join(DATA, name), repo)
    out = {}
    for fc in ch.files:
        why = common.ordinary(fc.where)
        out[fc.where] = FileTargets(fc.where, skipped=why) if why else mapper.map_file(fc, tab)
    return ch, out


def names(ft) -> set:
    return {t.name for t in ft.targets}


def whys(ft, name) -> list:
    return [t.why for t in ft.targets if t.name == name]


# -- lowerings and decompositions -----------------------------------------------------------

def test_lowering_hunks_map_to_the_operators_whose_specs_reach_them(shipped, checkout):
    ch, files = mapped("lowering.diff", shipped, checkout)
    hunks = {h.new_start: h.enclosing for h in ch.files[0].hunks}
    assert hunks[7790] == ["div_mode"] and hunks[7965] == ["sum_"] and hunks[3069] == []
    ft = files["torch/_inductor/lowering.py"]
    assert not ft.skipped
    got = names(ft)
    # div_mode registers aten.div: the division specs (float and integer)
    assert {"Div", "Mod"} & got and "Div" in got
    assert any("div_mode (aten.div" in w for w in whys(ft, "Div"))
    # sum_ registers aten.sum (and mean/var_mean call it): the sum reductions
    assert {"ReduceSum", "ReduceMean", "ReduceSumSquare"} <= got
    assert any("sum_ (" in w and "aten.sum" in w for w in whys(ft, "ReduceSum"))
    # a module-level registration is read from its changed line: aten.sub
    assert any("line 8475 (aten.sub" in w for w in whys(ft, "Sub"))
    # make_fallback(aten.normal): no spec draws random normals
    assert "aten.normal" in ft.note and "no dlgate spec" in ft.note
    # an operator no changed lowering reaches stays out
    assert not {"Conv", "Relu", "Gather"} & {t.name for t in ft.targets if "div_mode" not in t.why
                                              and "sum_" not in t.why and "8475" not in t.why}


def test_lowering_dtypes_come_from_the_traces(shipped):
    """An operator a spec reaches with some input dtypes only is aimed at those: the
    float16 upcast of Gelu's decomposition, never the float32 instances."""
    assert shipped["specs"]["Gelu"]["ops"]["aten.to.dtype"] == ["float16"]
    assert shipped["specs"]["Gelu"]["ops"]["aten.erf.default"] == []
    hits, _ = mapper.specs_for(["aten.to"], shipped)
    ts = mapper._targets([h for h in hits if h[0] == "Gelu"], "x")
    assert [t.key for t in ts] == ["operator:Gelu[float16]"]
    hits, _ = mapper.specs_for(["aten.erf.default"], shipped)
    assert [t.key for t in mapper._targets([h for h in hits if h[0] == "Gelu"], "x")] == ["operator:Gelu"]


def test_decomposition_hunks(shipped, checkout):
    ch, files = mapped("decomposition.diff", shipped, checkout)
    hunks = {h.new_start: h.enclosing for fc in ch.files for h in fc.hunks}
    assert hunks[5638] == ["aminmax"] and hunks[847] == ["full_like"] and hunks[466] == ["addmm", "add_input"]
    core = files["torch/_decomp/decompositions.py"]
    # aminmax's decomposition: OneHot's implementation calls torch.aminmax
    assert [(t.key, t.why) for t in core.targets] == [
        ("operator:OneHot", "torch/_decomp/decompositions.py: aminmax (aten.aminmax)")]
    # batch norm's helper is reached by ATen batch norms, which no spec calls (dlgate's
    # BatchNormalization computes it in arithmetic): said so
    assert "native_batch_norm_helper handles aten._batch_norm_no_update" in core.note
    ind = files["torch/_inductor/decomposition.py"]
    assert {"CumSum", "LSTM", "RoiAlign"} <= names(ind)
    assert all(t.why == "torch/_inductor/decomposition.py: full_like (aten.full_like)" for t in ind.targets)
    assert "addmm handles aten.addmm: no dlgate spec" in ind.note


def test_header_only_mapping_of_a_pull_request(shipped):
    """Without the files (``--diff`` alone), git's hunk header names the nearest ``def``
    above: here ``op_count``, a helper nested in the ``cat`` lowering that the hunk
    follows; the table knows where it is nested."""
    ch, files = mapped("pr181845.diff", shipped)
    assert ch.files[1].hunks[0].enclosing == ["op_count"]
    cat = files["torch/_inductor/lowering.py"]
    assert "Concat" in names(cat)
    assert all("cat (aten.cat" in t.why for t in cat.targets)
    conf = files["torch/_inductor/config.py"]
    assert conf.skipped == "unmapped" and "registers no lowering" in conf.note


# -- pattern passes ---------------------------------------------------------------------------

def test_pattern_passes_map_through_their_patterns(shipped, checkout):
    ch, files = mapped("passes.diff", shipped, checkout)
    jg = files["torch/_inductor/fx_passes/joint_graph.py"]
    # @register_graph_pattern(CallFunction(aten.bmm, ...)): the specs reaching aten.bmm
    assert "MatMul" in names(jg)
    assert all("bmm_to_mm (aten.bmm" in t.why for t in jg.targets)
    bmm = {h[1] for h in mapper.uses(shipped)["aten.bmm"]}
    assert names(jg) == bmm
    pg = files["torch/_inductor/fx_passes/post_grad.py"]
    # the cumsum-of-full pattern needs both nodes: no spec's trace has a cumsum of a full
    # (its replacement's body, torch.arange ..., is not the pattern)
    assert pg.skipped == "unmapped"
    assert "aten.cumsum.default, aten.full.default: no dlgate spec's PyTorch implementation uses these operators " \
           "together" in pg.note


def test_no_rewrite_targets_and_the_table_says_why(shipped):
    rewrites = [t for e in shipped["files"].values() for t in e.get("targets", ()) if t.get("kind") == "rewrite"]
    assert not rewrites
    assert not [s for s in all_specs().values() if getattr(s, "optimizer", "") == "inductor"]
    assert "no motif aimed at Inductor" in shipped["notes"]["rewrites"]


def test_pattern_rule_needs_the_operators_together(shipped):
    """A pattern reaches the specs whose traces hold most of its operators: an attention
    pattern (bmm, amax, exp, sum, div) is not every spec with a division."""
    ops = ["aten.bmm", "aten.amax", "aten.exp", "aten.sub", "aten.sum", "aten.div"]
    hits, matched = mapper.specs_for(ops, shipped, pattern="most")
    assert hits and all("Attention" in h[0] for h in hits), hits
    assert {"Attention", "AttentionIdiom"} <= {h[0] for h in hits}
    assert "Div" not in {h[1] for h in hits} and len(matched) >= 4
    alone, _ = mapper.specs_for(ops, shipped)
    assert "Div" in {h[1] for h in alone}
    strict, _ = mapper.specs_for(ops + ["aten.cumsum"], shipped, pattern="all")
    assert strict == []


# -- code generation ---------------------------------------------------------------------------

def test_codegen_op_handlers_map_to_their_operators(shipped, checkout):
    ch, files = mapped("codegen.diff", shipped, checkout)
    hunks = {h.new_start: h.enclosing for h in ch.files[0].hunks}
    assert hunks[742] == ["CppOverrides", "abs"] and hunks[1342] == ["CppVecOverrides", "expm1"]
    assert hunks[2329] == ["CppKernel", "store"]
    ft = files["torch/_inductor/codegen/cpp.py"]
    # abs -> aten.abs -> Abs; expm1 -> aten.expm1, which Elu's and Celu's decompositions call
    assert {"Abs", "Elu", "Celu"} <= names(ft)
    assert any("CppVecOverrides.expm1 (aten.expm1" in w for w in whys(ft, "Elu"))
    # the kernel's store is code generation for every operator: said, not aimed
    assert "outside the op handlers" in ft.note


def test_codegen_for_unused_devices_is_unmapped(shipped):
    fc = D.FileChange("torch/_inductor/codegen/mps.py", hunks=[D.Hunk(1, 1, 1, 1, enclosing=["MetalOverrides", "erf"])])
    ft = mapper.map_file(fc, shipped)
    assert ft.skipped == "unmapped" and "does not use" in ft.note


# -- the ordinary batch and unmapped paths ---------------------------------------------------

def test_tests_only_change_is_the_ordinary_batch(shipped):
    ch = D.from_file(os.path.join(DATA, "tests.diff"))
    ts = map_change(ch, "inductor")
    assert [(f.path, f.skipped) for f in ts.files] == [("torch/testing/_internal/inductor_utils.py", "tests")]
    assert ts.only_ordinary


def test_unmapped_source_paths_say_why(shipped):
    for path, why in (("torch/_inductor/scheduler.py", "registers no lowering"),
                      ("torch/_inductor/fx_passes/overlap_scheduling.py", ""),
                      ("torch/_dynamo/eval_frame.py", "outside Inductor"),
                      ("torch/_inductor/codegen/wrapper.py", "code generation shared")):
        fc = D.FileChange(path, hunks=[D.Hunk(10, 1, 10, 1, text=["    x = 1"], enclosing=["Something", "run"])])
        ft = mapper.map_file(fc, shipped)
        assert ft.skipped == "unmapped" and ft.note, path
        assert why in ft.note, (path, ft.note)


def test_shared_helpers_are_left_to_the_ordinary_batch(shipped):
    entry = shipped["files"]["torch/_inductor/lowering.py"]
    assert entry["shared"]["register_lowering"] > inductor_source.SHARED
    fc = D.FileChange("torch/_inductor/lowering.py",
                      hunks=[D.Hunk(540, 1, 540, 1, text=["    x = 1"], enclosing=["register_lowering", "decorator"])])
    ft = mapper.map_file(fc, shipped)
    assert ft.skipped == "unmapped" and "register_lowering is shared" in ft.note


# -- the table ---------------------------------------------------------------------------------

def test_shipped_table_loads_and_describes_the_pinned_release(shipped):
    import torch

    assert shipped["compiler"] == "inductor" and shipped["version"] == "2.13.0"
    assert len(shipped["commit"]) == 40
    assert shipped["traced_with"]["torch"] == torch.__version__.split("+")[0]
    specs = all_specs()
    # every spec is traced (or said why not), and the rows name the specs' own operators
    assert set(shipped["specs"]) | set(shipped["untraced"]) == set(specs)
    for name, row in shipped["specs"].items():
        assert row["onnx_op"] == specs[name].onnx_op
    for p in ("torch/_inductor/lowering.py", "torch/_inductor/decomposition.py", "torch/_decomp/decompositions.py",
              "torch/_inductor/fx_passes/post_grad.py", "torch/_inductor/codegen/cpp.py",
              "torch/_inductor/codegen/triton.py", "torch/_inductor/kernel/mm.py"):
        assert shipped["files"][p]["definitions"], p
    assert shipped["files"]["torch/_inductor/lowering.py"]["definitions"]["cat"][0] == "aten.cat"
    assert "aten.erf" in shipped["files"]["torch/_inductor/codegen/triton.py"]["definitions"]["TritonOverrides.erf"]


def test_every_target_the_table_can_give_has_a_spec(shipped):
    """Targets come from traced specs, so each names an operator some spec generates;
    operators the source names and no spec uses are listed in the notes instead."""
    idx = mapper.uses(shipped)
    generated = {s.onnx_op for s in all_specs().values()}
    assert {h[1] for hs in idx.values() for h in hs} <= generated
    assert "aten.randint," in shipped["notes"]["no_spec"] and "aten.erf," not in shipped["notes"]["no_spec"]


# -- the builder, on a real excerpt ------------------------------------------------------------

@pytest.fixture(scope="module")
def excerpt(tmp_path_factory):
    root = tmp_path_factory.mktemp("torch-2.13.0-excerpt")
    src = os.path.join(DATA, "tree")
    for d, _, fs in os.walk(src):
        for f in fs:
            rel = os.path.relpath(os.path.join(d, f), src)
            dst = root / rel[:-len(".txt")]
            os.makedirs(dst.parent, exist_ok=True)
            shutil.copy(os.path.join(d, f), dst)
    return str(root)


@pytest.fixture(scope="module")
def small(excerpt):
    return builder.build(Source(excerpt), specs=["Erf", "Gelu", "Abs", "ReduceMax", "MatMul"], seeds=1)


def test_builder_reads_registrations_patterns_and_handlers(small):
    f = small["files"]
    low = f["torch/_inductor/lowering.py"]
    assert low["mode"] == "lowering"
    assert low["definitions"]["isinf"] == ["aten.isinf"]
    # make_reduction registers nothing itself: it reaches amax/amin through the
    # module-level registrations calling it
    assert low["definitions"]["make_reduction"] == ["aten.amax", "aten.amin"]
    assert {"aten.erf", "aten.log1p", "aten.amax"} <= set(low["module"])
    dec = f["torch/_inductor/decomposition.py"]
    assert dec["mode"] == "decomposition"
    assert dec["definitions"] == {"clamp": ["aten.clamp"], "silu": ["aten.silu"]}
    jg = f["torch/_inductor/fx_passes/joint_graph.py"]
    assert jg["definitions"]["bmm_to_mm"] == ["aten.bmm"] and jg["patterns"] == {"bmm_to_mm": "all"}
    assert "bmm_to_mm.repl" not in jg["definitions"]
    cg = f["torch/_inductor/codegen/cpp.py"]
    assert cg["definitions"] == {"CppOverrides.erf": ["aten.erf"]}
    assert small["version"] == "2.13.0" and small["commit"] == "cf30153c4c131c8164ee7798e5022d810682e2cb"


def test_builder_traces_specs_to_aten(small):
    sp = small["specs"]
    assert "aten.erf.default" in sp["Erf"]["ops"] and "torch.erf" in sp["Erf"]["ops"]
    # Gelu dispatches aten.gelu, and Inductor's decompositions turn it into erf (or tanh)
    assert "aten.gelu.default" in sp["Gelu"]["ops"] and "aten.erf.default" in sp["Gelu"]["ops"]
    assert "aten.amax.default" in sp["ReduceMax"]["ops"] or "aten.max.dim" in sp["ReduceMax"]["ops"]
    assert sp["Abs"]["dtypes"] and sp["Abs"]["instances"] >= len(sp["Abs"]["dtypes"])


def test_builder_table_maps_a_change(small, excerpt):
    """The excerpt's own table maps a change to its ``CppOverrides.erf`` to Erf and Gelu."""
    fc = D.FileChange("torch/_inductor/codegen/cpp.py", hunks=[D.Hunk(1, 1, 1, 1, enclosing=["CppOverrides", "erf"])])
    ft = mapper.map_file(fc, small)
    assert {t.name for t in ft.targets} == {"Erf", "Gelu"}


def test_builder_output_is_deterministic(excerpt):
    a = dump(builder.build(Source(excerpt), specs=["Erf"], seeds=1))
    b = dump(builder.build(Source(excerpt), specs=["Erf"], seeds=1))
    assert a == b


def test_builder_refuses_a_tree_without_inductor(tmp_path):
    from dlgate.change.builders import SourceError

    (tmp_path / "README.md").write_text("not pytorch\n")
    with pytest.raises(SourceError, match="holds no torch/_inductor/"):
        builder.build(Source(str(tmp_path)), specs=[], seeds=1)
