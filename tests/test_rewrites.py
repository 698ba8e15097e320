"""Rewrite coverage: which graph rewrites onnxruntime applied to a model, named from the
optimized model it saves, recorded per case outside the deterministic record."""
from __future__ import annotations

import json
import os

import numpy as np
import yaml
from onnx import TensorProto, helper, numpy_helper

from dlgate.backends import registry
from dlgate.backends.base import Model
from dlgate.cli import main
from dlgate.gate.run.guidance import rewrite_coverage


def _conv_relu_identity() -> Model:
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32) * 0.1, "w")
    nodes = [helper.make_node("Identity", ["x"], ["xi"]),
             helper.make_node("Conv", ["xi", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return _Named(m.SerializeToString(), None)


class _Named(Model):
    """A hand-built model: its input and output names, without a dlgate graph."""

    @property
    def input_names(self):
        return ["x"]

    @property
    def output_names(self):
        return ["y"]


def _rewrites(level: str, **options):
    be = registry.load("onnxruntime")(opt_level=level, **options)
    compiled = be.compile(_conv_relu_identity())
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    out = be.run(compiled, [x])[0]
    return be.rewrites(compiled), out


def test_fusions_and_eliminations_are_named_and_results_unchanged():
    plain, ref = _rewrites("disable")
    basic, y_basic = _rewrites("basic")
    extended, y_ext = _rewrites("extended")
    full, y_all = _rewrites("all")
    assert plain is None  # nothing optimized, nothing to name
    assert "removed:Identity" in basic and not any(k.startswith("fused:com.microsoft") for k in basic)
    assert "fused:com.microsoft:FusedConv" in extended and "removed:Relu" in extended, extended
    # and the transformers onnxruntime's session log says changed the graph, level by level
    assert "transformer:Level1_RuleBasedTransformer" in basic and "transformer:ConvActivationFusion" not in basic
    assert "transformer:ConvActivationFusion" in extended, extended
    # level all adds the layout transformation where the CPU has the vector width for it
    assert "removed:Relu" in full and ("fused:com.microsoft:FusedConv" in full or
                                       "fused:com.microsoft.nchwc:Conv" in full), full
    for y in (y_basic, y_ext, y_all):
        np.testing.assert_allclose(y, ref, rtol=1e-5)
    off, _ = _rewrites("all", record_rewrites=False)
    assert off is None


def test_a_run_keeps_rewrites_out_of_the_journal_and_in_the_timings(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({
        "campaign": "rw", "models": 6, "max_nodes": 4, "opset": 17, "dtypes": ["float32"], "dynamic_share": 0,
        "operators": ["Conv", "Relu", "Add", "Identity", "Transpose", "MatMul"],
        "backends": ["onnxruntime@all"], "crosscheck": False, "reduce": False}))
    out = str(tmp_path / "out")
    assert main(["run", "--config", str(cfg), "--seed", "rw", "--out", out]) == 0
    with open(os.path.join(out, "results.jsonl")) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    assert all("rewrites" not in v for r in recs for v in r["verdicts"])
    with open(os.path.join(out, "timings.jsonl")) as f:
        times = [json.loads(line) for line in f if line.strip()]
    named = [t["backends"]["onnxruntime[cpu]@all"].get("rewrites") for t in times]
    assert len(named) == 6 and all(isinstance(k, list) for k in named)
    assert any(named), named  # some model met some rewrite
    with open(os.path.join(out, "stats.json")) as f:
        coverage = json.load(f)["rewrites"]["onnxruntime[cpu]@all"]
    assert coverage and all(0 < n <= 6 for n in coverage.values())
    assert set(coverage) == {k for kinds in named for k in kinds}
    # most frequent first where read in the process (stats.json itself sorts its keys)
    ordered = rewrite_coverage(out)["onnxruntime[cpu]@all"]
    assert ordered == coverage and list(ordered.values()) == sorted(ordered.values(), reverse=True)


def test_tvm_names_the_relax_passes_that_changed_the_module_and_the_fusions():
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    got = {}
    for level, opts in (("default", {}), ("zero", {}), ("default", {"record_rewrites": False})):
        be = registry.load("tvm")(opt_level=level, **opts)
        compiled = be.compile(_conv_relu_identity())
        got[(level, bool(opts))] = (be.rewrites(compiled), be.run(compiled, [x])[0])
    full, y = got[("default", False)]
    assert "fused:conv2d_relu" in full and "pass:FuseOps" in full and "pass:LegalizeOps" in full, full
    assert not any(k.startswith(("pass:tirx.", "pass:s_tir.", "pass:sequential")) for k in full)
    zero, y0 = got[("zero", False)]
    assert not any(k.startswith("fused:") for k in zero) and "pass:FuseOps" not in zero, zero
    assert got[("default", True)][0] is None
    np.testing.assert_allclose(y, y0, rtol=1e-5)
