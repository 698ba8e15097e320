"""onnxruntime's change mapping on onnxruntime's own source and commits (vendored under
tests/data/change/onnxruntime/, see PROVENANCE there): kernels, registration lists,
transformers, MLAS, ordinary files, unknown paths, and the table builder itself."""
import os

import pytest

from dlgate.change import diff
from dlgate.change.builders import Source, build, dump
from dlgate.change.builders import onnxruntime as builder
from dlgate.change.builders import onnxruntime_source
from dlgate.change.compilers import map_change, table
from dlgate.change.compilers import onnxruntime as ort
from dlgate.change.diff import FileChange, Hunk, c_definitions

DATA = os.path.join(os.path.dirname(__file__), "data", "change", "onnxruntime")
TREE = os.path.join(DATA, "tree")
EWO = "onnxruntime/core/providers/cpu/math/element_wise_ops.cc"


def mapped(name):
    ch = diff.from_file(os.path.join(DATA, "diffs", name))
    return {f.path: f for f in map_change(ch, "onnxruntime").files}


def keys(ft):
    return {t.key for t in ft.targets}


@pytest.fixture(scope="module")
def shipped():
    return table("onnxruntime")


@pytest.fixture(scope="module")
def built():
    return build("onnxruntime", Source(TREE))


def unmerged(name, path):
    """The mapper's own rows for one file (before ``map_change`` merges them per operator)."""
    ch = diff.from_file(os.path.join(DATA, "diffs", name))
    return ort.map_file(next(f for f in ch.files if f.path == path), table("onnxruntime"))


def test_kernel_fix_maps_to_its_operator_with_opsets_and_dtypes(shipped):
    top = shipped["max_opset"]
    # each registration of the kernel, with its opset range and type
    assert keys(unmerged("prelu_9f81e2dfc2.diff", EWO)) == {
        "operator:PRelu[7-8;float32]", "operator:PRelu[9-15;float32]", f"operator:PRelu[16-{top};float32]"}
    # merged into one target per operator: the ranges' hull, the types' union
    files = mapped("prelu_9f81e2dfc2.diff")
    assert keys(files[EWO]) == {f"operator:PRelu[7-{top};float32]"}
    assert all("PRelu<float>::Compute" in t.why for t in files[EWO].targets)
    assert files["onnxruntime/test/providers/cpu/activation/activation_op_test.cc"].skipped == "tests"


def test_registration_list_lines_name_their_kernels_and_docs_are_ordinary(shipped):
    files = mapped("cos_double_3162778d1a.diff")
    top = shipped["max_opset"]
    reg = keys(unmerged("cos_double_3162778d1a.diff", "onnxruntime/core/providers/cpu/cpu_execution_provider.cc"))
    assert {"operator:Cos[7-21;float64]", f"operator:Cos[22-{top};float64]"} <= reg
    assert keys(files["onnxruntime/core/providers/cpu/cpu_execution_provider.cc"]) == {
        f"operator:Cos[7-{top};float32,float64]"}
    assert {t.split("[")[0] for t in reg} == {"operator:Cos"}
    assert {t.split("[")[0] for t in keys(files[EWO])} == {"operator:Cos"}
    assert files["docs/OperatorKernels.md"].skipped == "docs"
    assert files["onnxruntime/test/providers/cpu/math/element_wise_ops_test.cc"].skipped == "tests"


def test_transformer_change_maps_to_its_rewrite():
    files = mapped("simplified_ln_5b6f1e6769.diff")
    ft = files["onnxruntime/core/optimizer/layer_norm_fusion.cc"]
    assert "rewrite:SimplifiedLayerNormFusion" in keys(ft)
    # the hunks inside SimplifiedLayerNormFusion::ApplyImpl aim at that rewrite alone
    assert {t.why for t in unmerged("simplified_ln_5b6f1e6769.diff", ft.path).targets
            if t.name == "SimplifiedLayerNormFusion"} >= \
        {"onnxruntime/core/optimizer/layer_norm_fusion.cc: SimplifiedLayerNormFusion::ApplyImpl"}
    assert files["onnxruntime/test/optimizer/graph_transform_test_layernorm.cc"].skipped == "tests"


def test_transformer_no_motif_aims_at_is_unmapped_with_that_note():
    ft = mapped("reshape_fusion_737328babf.diff")["onnxruntime/core/optimizer/reshape_fusion.cc"]
    assert ft.skipped == "unmapped" and not ft.targets
    assert ft.note == "no motif aims at this transformer (ReshapeFusion)"


def test_mlas_change_reaches_kernels_through_entry_points(shipped):
    files = mapped("mlas_fp16_a02f7699f1.diff")
    gelu = files["onnxruntime/core/mlas/lib/gelu.cpp"]
    assert f"operator:Gelu[20-{shipped['max_opset']};float16]" in keys(gelu)
    assert any("MlasComputeFP16Gelu" in t.why for t in gelu.targets)
    tanh = keys(files["onnxruntime/core/mlas/lib/tanh.cpp"])
    assert any(k.startswith("operator:Tanh[") for k in tanh)


def test_unknown_source_paths_are_unmapped_with_a_reason(shipped):
    fw = ort.map_file(FileChange("onnxruntime/core/framework/session_state.cc", hunks=[Hunk(1, 1, 1, 1)]), shipped)
    assert fw.skipped == "unmapped" and fw.note == "no table entry for this path"
    new = ort.map_file(FileChange("onnxruntime/core/providers/cpu/math/brand_new_op.cc", hunks=[Hunk(1, 1, 1, 1)]),
                       shipped)
    assert new.skipped == "unmapped" and "CPU-provider file the table does not know" in new.note
    reg = ort.map_file(FileChange("onnxruntime/core/providers/cpu/cpu_execution_provider.cc",
                                  hunks=[Hunk(1, 1, 1, 1, text=["#include <memory>"])]), shipped)
    assert reg.skipped == "unmapped" and "register no kernel" in reg.note


def test_shipped_table_loads_and_every_reference_resolves(shipped):
    from dlgate.ops.registry import all_specs

    assert shipped["compiler"] == "onnxruntime" and shipped["version"] and len(shipped["commit"]) == 40
    motifs = {s.rewrite for s in all_specs().values() if getattr(s, "optimizer", None) == "onnxruntime"}
    gaps = set(shipped["notes"]["rewrites_without_motif"])
    for row in shipped["targets"].values():
        if row["kind"] == "rewrite":
            assert any(builder.rewrite_matches(row["name"], m) for m in motifs) or row["name"] in gaps, row
    kinds = {"t": shipped["targets"], "k": shipped["kernels"], "m": shipped["mlas"]}
    lists = list(shipped["kernels"].values()) + list(shipped["mlas"].values())
    for entry in shipped["files"].values():
        lists.append(entry.get("refs") or [])
        lists += list((entry.get("definitions") or {}).values())
    for refs in lists:
        for r in refs:
            kind, _, name = r.partition(":")
            assert name in kinds[kind], r
    # the four trees the brief names are all there
    for p in ("onnxruntime/core/optimizer/gelu_fusion.cc", "onnxruntime/core/mlas/lib/sgemm.cpp",
              "onnxruntime/contrib_ops/cpu/activations.cc", EWO,
              "onnxruntime/core/optimizer/transpose_optimization/onnx_transpose_optimization.cc",
              "onnxruntime/core/optimizer/qdq_transformer/selectors_actions/qdq_selector_action_transformer.cc"):
        assert p in shipped["files"], p


def test_contrib_kernels_map_to_the_fusions_emitting_them(shipped):
    def rewrites(kid):
        return {r.split(":")[-1] for r in shipped["kernels"][kid]}

    assert rewrites("kMSDomain/QuickGelu/1-/QuickGelu<float>") == {"QuickGeluFusion"}
    assert rewrites("kMSDomain/FusedGemm/1-/FusedGemm<float>") == {"GemmActivationFusion"}
    assert "DQMatMulToMatMulNBits" in rewrites("kMSDomain/MatMulNBits/1-/MatMulNBits<float>")


def test_builder_on_vendored_tree(built):
    files = built["files"]
    top = built["max_opset"]
    ewo = files[EWO]

    def resolved(refs):
        return {t.key for t in ort.resolve(built, refs, "x")}

    # a method maps to its kernel only; a helper used by one kernel maps to that kernel
    pow_keys = {"operator:Pow[7-11;float32,float64]", "operator:Pow[12-12;float32,float64,int32,int64]",
                "operator:Pow[13-14;float32,float64,int32,int64]", f"operator:Pow[15-{top};float32,float64,int32,int64]"}
    assert resolved(ewo["definitions"]["Pow::Compute"]) == pow_keys
    assert resolved(ewo["definitions"]["PowImpl"]) == pow_keys
    assert resolved(ewo["definitions"]["Erf<float>::Compute"]) == {"operator:Erf[9-12;float32]",
                                                                  f"operator:Erf[13-{top};float32]"}
    # the rest of the file is every kernel it registers
    assert {k.split("[")[0] for k in resolved(ewo["refs"])} == {"operator:Pow", "operator:PRelu", "operator:Erf"}
    assert resolved(files["onnxruntime/core/optimizer/gelu_fusion.cc"]["refs"]) == {"rewrite:GeluFusion"}
    assert resolved(files["onnxruntime/contrib_ops/cpu/activations.cc"]["refs"]) == {"rewrite:QuickGeluFusion"}
    assert files["onnxruntime/core/optimizer/reshape_fusion.h"]["note"] == \
        "no motif aims at this transformer (ReshapeFusion)"
    # MLAS: erf.cpp implements MlasComputeErf, which the Erf float kernels call
    assert files["onnxruntime/core/mlas/lib/erf.cpp"]["refs"] == ["m:MlasComputeErf"]
    assert resolved(["m:MlasComputeErf"]) == {"operator:Erf[9-12;float32]", f"operator:Erf[13-{top};float32]"}


def test_builder_is_deterministic(built):
    again = build("onnxruntime", Source(TREE))
    assert dump(again) == dump(built)


def test_registration_macros_expand_through_file_wrappers():
    text = open(os.path.join(TREE, EWO)).read()
    regs = onnxruntime_source.registrations(text, onnxruntime_source.defines(text))
    erf = sorted((r["name"], r["lo"], r.get("hi"), r.get("type")) for r in regs if r["name"] == "Erf")
    assert erf == [("Erf", "13", None, "MLFloat16"), ("Erf", "13", None, "float"), ("Erf", "9", "12", "float")]


def test_c_definitions_names_template_methods_and_mlas_functions():
    names = [d[2][0] for d in c_definitions(open(os.path.join(TREE, EWO)).read())]
    assert "PRelu<float>::Compute" in names and "Pow::Compute" in names
    # MLAS puts a block comment between a signature and its body
    mlas_names = [d[2][0] for d in c_definitions(open(os.path.join(TREE, "onnxruntime/core/mlas/lib/erf.cpp")).read())]
    assert "MlasComputeErf" in mlas_names
