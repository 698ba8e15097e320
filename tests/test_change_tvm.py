"""TVM's change mapping on real TVM diffs and source (tests/data/change/tvm/, see its
PROVENANCE.md): converters to operators and opsets, convert-map lines, intrinsic lowering
rules (with the dtypes the code names), Relax op definitions, legalizations and TOPI,
passes to motif rewrites, tests/docs to the ordinary batch, unmapped paths; the table
builder on an excerpt of the release; the shipped table against dlgate's specs."""
from __future__ import annotations

import copy
import json
import os
import shutil

import pytest

from dlgate.change import diff
from dlgate.change.builders import Source, build, dump
from dlgate.change.compilers import map_change, table
from dlgate.change.compilers import tvm as tvm_map
from dlgate.ops.registry import all_specs

DATA = os.path.join(os.path.dirname(__file__), "data", "change", "tvm")
FRONTEND = "python/tvm/relax/frontend/onnx/onnx_frontend.py"


def _map(name, repo=None, table_path=None):
    return map_change(diff.from_file(os.path.join(DATA, name), repo), "tvm", table_path)


def _keys(ts, path):
    (f,) = [f for f in ts.files if f.path == path]
    return [t.key for t in f.targets], f


@pytest.fixture
def squeeze_repo(tmp_path):
    """The frontend as after apache/tvm 396dd34946, class Squeeze at its own lines (the
    rest of the file left blank): what the enclosing definitions are read from."""
    with open(os.path.join(DATA, "onnx_frontend_squeeze.py.txt")) as f:
        body = f.read()
    p = tmp_path / FRONTEND
    p.parent.mkdir(parents=True)
    p.write_text("\n" * 2086 + body)
    return str(tmp_path)


def _hunk_keys(name, repo, tab):
    """The targets of each hunk before a file's targets are merged per operator."""
    ch = diff.from_file(os.path.join(DATA, name), repo)
    (fc,) = [f for f in ch.files if f.path == FRONTEND]
    return sorted(t.key for h in fc.hunks for t in tvm_map._hunk(FRONTEND, tab["files"][FRONTEND], h, tab)[0])


def test_converter_hunks_map_to_their_operator_and_the_opsets_of_each_impl(squeeze_repo):
    # _impl_v1 serves 1-12 (and older, as the fallback), _impl_v13 from 13, and _squeeze,
    # called by both, every opset
    assert _hunk_keys("squeeze_opset.diff", squeeze_repo, table("tvm")) == [
        "operator:Squeeze[1-12]", "operator:Squeeze[1-28]", "operator:Squeeze[13-28]"]
    ts = _map("squeeze_opset.diff", squeeze_repo)
    keys, f = _keys(ts, FRONTEND)
    assert keys == ["operator:Squeeze[1-28]"]  # one target per operator: the ranges' hull
    assert all(f"Squeeze.{d}" in f.targets[0].why for d in ("_impl_v1", "_impl_v13", "_squeeze"))
    (t,) = [f for f in ts.files if f.path.startswith("tests/")]
    assert t.skipped == "tests" and not t.targets


def test_a_converter_version_the_table_lacks_gets_its_opsets_from_the_class_versions(squeeze_repo):
    tab = copy.deepcopy(table("tvm"))  # as if the table predated Squeeze._impl_v1
    del tab["files"][FRONTEND]["definitions"]["Squeeze._impl_v1"]
    tab["files"][FRONTEND]["impls"]["Squeeze"] = [13]
    assert "operator:Squeeze[1-12]" in _hunk_keys("squeeze_opset.diff", squeeze_repo, tab)


def test_a_convert_map_line_names_its_operator():
    keys, f = _keys(_map("groupnorm_convert_map.diff"), FRONTEND)
    assert keys == ["operator:GroupNormalization[1-28]"]
    assert "_get_convert_map (GroupNormalization)" in f.targets[0].why


def test_an_intrinsic_lowering_rule_maps_to_the_unary_operators_lowering_to_it():
    ts = _map("llvm_asin_acos.diff")
    keys, f = _keys(ts, "src/target/llvm/intrin_rule_llvm.cc")
    assert keys == ["operator:Acos[1-28]", "operator:Asin[1-28]"]
    assert {t.why.split(": ")[-1] for t in f.targets} == {"tirx.acos", "tirx.asin"}


def test_an_intrinsic_rule_change_that_names_a_dtype_targets_that_dtype():
    keys, _ = _keys(_map("cuda_tan_float16.diff"), "src/backend/cuda/codegen/intrin_rule_cuda.cc")
    assert keys == ["operator:Tan[1-28;float16]"]


def test_a_relax_op_definition_maps_to_the_operators_whose_converters_emit_it():
    keys, _ = _keys(_map("qdq_op.diff"), "src/relax/op/tensor/qdq.cc")
    assert keys == ["operator:DequantizeLinear[1-28]", "operator:DynamicQuantizeLinear[1-28]",
                    "operator:QuantizeLinear[1-28]"]


def test_a_legalization_and_its_topi_kernel_map_to_the_operator_emitting_the_op():
    ts = _map("legalize_conv.diff")
    assert _keys(ts, "python/tvm/relax/transform/legalize_ops/nn.py")[0] == ["operator:Conv[1-28]"]
    assert _keys(ts, "python/tvm/topi/nn/conv2d.py")[0] == ["operator:Conv[1-28]"]


def _motifs(name):
    return [s.name for s in all_specs().values() if getattr(s, "optimizer", None) == "tvm"
            and (s.rewrite == name or s.rewrite.startswith(name + " "))]


def test_passes_map_to_the_rewrites_dlgate_motifs_aim_at():
    assert _keys(_map("fold_constant.diff"), "src/relax/transform/fold_constant.cc")[0] == ["rewrite:FoldConstant"]
    keys, _ = _keys(_map("fuse_ops.diff"), "src/relax/transform/fuse_ops.cc")
    assert "rewrite:FuseOps" in keys and "rewrite:ONNX importer activation decomposition + FuseOps" in keys
    for k in keys:
        assert _motifs(k.split(":", 1)[1]), k
    assert len(_motifs("FuseOps")) > 10 and _motifs("FoldConstant")
    ts = _map("sort_scan_bucketize.diff")
    assert _keys(ts, "python/tvm/relax/backend/dispatch_sort_scan.py")[0] == ["rewrite:DispatchSortScan"]
    keys, f = _keys(ts, "python/tvm/relax/transform/legalize_ops/search.py")
    assert not keys and f.skipped == "unmapped" and "relax.bucketize" in f.note


def test_a_pass_no_motif_aims_at_says_so():
    ch = diff.parse("--- a/src/relax/transform/fuse_ops.cc\n+++ b/src/relax/transform/fuse_ops.cc\n"
                    "@@ -1495 +1495 @@\n-x\n+y\n")
    ch.files[0].hunks[0].enclosing = ["FuseOpsByPattern"]
    (f,) = map_change(ch, "tvm").files
    assert f.skipped == "unmapped" and f.note == "no motif aims at this pass (FuseOpsByPattern)"
    ch = diff.parse("--- a/src/relax/transform/legalize_ops.cc\n+++ b/src/relax/transform/legalize_ops.cc\n"
                    "@@ -10 +10 @@\n-x\n+y\n")
    (f,) = map_change(ch, "tvm").files
    assert f.skipped == "unmapped" and f.note == "no motif aims at this pass (LegalizeOps)"


def test_docs_only_is_the_ordinary_batch():
    ts = _map("docs_only.diff")
    assert ts.only_ordinary and [f.skipped for f in ts.files] == ["docs"]


def test_source_paths_the_table_does_not_map_are_unmapped_with_the_reason():
    ts = _map("unmapped_paths.diff")
    by = {f.path: f for f in ts.files}
    assert ts.only_ordinary
    assert by["python/tvm/relax/frontend/nn/llm/position_embedding.py"].note.startswith("another frontend than ONNX")
    assert by["src/runtime/vm/paged_kv_cache.cc"].skipped == "unmapped"
    assert "runtime" in by["src/runtime/vm/paged_kv_cache.cc"].note
    ch = diff.parse("--- a/conda/x/y.cc\n+++ b/conda/x/y.cc\n@@ -1 +1 @@\n-a\n+b\n")
    (f,) = map_change(ch, "tvm").files
    assert f.skipped == "unmapped" and f.note == "no table entry for this path"


def test_registration_chains_are_definitions_named_by_the_registered_op():
    with open(os.path.join(DATA, "tree", "src/target/llvm/intrin_rule_llvm.cc")) as f:
        text = f.read()
    defs = {d[2][-1]: (d[0], d[1]) for d in diff.c_definitions(text)}
    lines = text.splitlines()
    lo, hi = defs["tirx.asin"]
    assert lines[lo - 1].startswith('TVM_REGISTER_OP("tirx.asin")') and lines[hi - 1].rstrip().endswith(";")
    assert "tirx.acos" in defs and hi < defs["tirx.acos"][0]


@pytest.fixture
def tree(tmp_path):
    """The excerpt tree with its Python files under their own names."""
    src = os.path.join(DATA, "tree")
    for d, _, fs in os.walk(src):
        for name in fs:
            rel = os.path.relpath(os.path.join(d, name), src)
            out = tmp_path / (rel[:-4] if rel.endswith(".py.txt") else rel)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(os.path.join(d, name), out)
    return str(tmp_path)


def test_the_builder_reads_the_release_excerpt(tree):
    doc = build("tvm", Source(tree), ceiling=28)
    fe = doc["files"][FRONTEND]
    assert fe["definitions"]["Gelu._impl_v1"] == [{"kind": "operator", "name": "Gelu", "opsets": [1, 19]}]
    assert fe["definitions"]["Gelu._impl_v20"] == [{"kind": "operator", "name": "Gelu", "opsets": [20, 28]}]
    # a base class's method maps to every operator whose converter inherits it
    assert {r["name"] for r in fe["definitions"]["BinaryBase.base_impl"]} == {"Add", "Sub"}
    assert {r["name"] for r in fe["definitions"]["get_constant"]} >= {"Squeeze"}
    assert fe["impls"]["Squeeze"] == [1, 13]
    # relax.asin <- Asin's converter; its legalization, TOPI kernel and intrinsic follow
    assert [r["name"] for r in doc["relax_ops"]["relax.asin"]] == ["Asin"]
    assert [r["name"] for r in doc["intrinsics"]["tirx.asin"]] == ["Asin"]
    assert [r["name"] for r in doc["files"]["python/tvm/topi/math.py"]["definitions"]["asin"]] == ["Asin"]
    assert [r["name"] for r in doc["files"]["python/tvm/relax/transform/legalize_ops/nn.py"]["definitions"]["_nn_gelu"]] \
        == ["Gelu"]
    assert "relax.clip" in doc["files"]["src/relax/op/tensor/unary.cc"]["unreached"]["clip"]
    fuse = doc["files"]["src/relax/transform/fuse_ops.cc"]
    assert fuse["definitions"]["FuseOpsByPattern"] == [] and fuse["passes"] == ["FuseOps", "FuseOpsByPattern"]
    assert {"kind": "rewrite", "name": "FuseOps"} in fuse["definitions"]["FuseOps"]
    assert doc["files"]["src/relax/transform/fold_constant.cc"]["targets"] == [{"kind": "rewrite", "name": "FoldConstant"}]
    assert "passes no motif aims at: FuseOpsByPattern" in doc["notes"]
    # a refresh is byte-identical
    assert dump(doc) == dump(build("tvm", Source(tree), ceiling=28))


def test_change_tables_cli_writes_the_table_and_refuses_a_bad_source(tree, tmp_path, capsys):
    from tools.change_tables import main

    out = tmp_path / "tvm.json"
    assert main(["--compiler", "tvm", "--source", tree, "--version", "0.27.0", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["version"] == "0.27.0" and doc["compiler"] == "tvm" and FRONTEND in doc["files"]
    assert main(["--compiler", "tvm", "--source", str(tmp_path / "missing")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_the_shipped_table_loads_and_its_rewrites_match_motifs_or_are_gaps():
    tab = table("tvm")
    assert tab["version"] == "0.27.0.post1" and len(tab["commit"]) == 40 and tab["python"]["commit"]
    specs = all_specs().values()
    named = {r["name"] for e in tab["files"].values()
             for rows in [e.get("targets") or []] + list((e.get("definitions") or {}).values())
             for r in rows if r["kind"] == "rewrite"}
    assert {"FuseOps", "FoldConstant", "DispatchSortScan", "RewriteDataflowReshape"} <= named
    for name in named:
        assert _motifs(name) or name in tab["rewrite_gaps"], name
    # operators some converter handles but no spec generates are listed as gaps
    have = {o for s in specs if not getattr(s, "optimizer", None)
            for o in (getattr(s, "onnx_ops", None) or ()) + (s.onnx_op,) if o}
    ops = set(tab["files"][FRONTEND]["operators"])
    assert sorted(ops - have) == tab["operator_gaps"]
    assert {"Gelu", "Squeeze", "Conv", "CastLike"} <= ops
    assert tvm_map.NAME == "tvm" and tvm_map.BACKENDS == ("tvm",)
