"""bench/coverage.py's guided settings run as a recurring campaign does: consecutive runs,
each generated from the state the one before ended with (its features and the rewrite
kinds its backends applied), so guidance's MOTIF_UNFIRED weight acts from the second run
on; a single run starts empty and equals the first run of a longer campaign."""
from __future__ import annotations

import argparse
import importlib.util
import os

from dlgate.backends.base import BackendSpec
from dlgate.coverage.guide import MOTIF_UNFIRED, Guide
from dlgate.coverage.state import CoverageState
from dlgate.ops.registry import get

HERE = os.path.dirname(__file__)


def _bench():
    spec = importlib.util.spec_from_file_location("bench_coverage", os.path.join(HERE, "..", "bench", "coverage.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _args(**kw):
    return argparse.Namespace(**{"seed": "test-bench", "max_opset": 21, "jobs": 1, "timeout": 60.0, "dynamic_share": 0.25, **kw})


def test_runs_carry_features_and_rewrites_to_the_next_run():
    bench = _bench()
    ort = BackendSpec.parse("onnxruntime@all")
    cases, got, state = bench.campaign("c", 8, 2, [ort], _args())
    assert len(cases) == 8
    kinds, status, _ = got[ort.label()]
    assert sum(status.values()) == 8 and kinds
    assert state.rewrites[ort.label()] == set(kinds)  # every kind any run applied
    # the second run started from the first one's end state: regenerating it from that
    # state gives the same models, from an empty state (no rewrite record) others
    first, end1 = bench.generate("c", 4, bench.run_root("test-bench", 0, 2), 21)
    assert [c.model_bytes for c in first] == [c.model_bytes for c in cases[:4]]
    k1, _ = bench.compile_all(first, ort, 1, 60.0)
    end1.add_rewrites(ort.label(), k1)
    second, _ = bench.generate("c", 4, bench.run_root("test-bench", 1, 2), 21, start=end1)
    assert [c.model_bytes for c in second] == [c.model_bytes for c in cases[4:]]
    cold, _ = bench.generate("c", 4, bench.run_root("test-bench", 1, 2), 21)
    assert [c.model_bytes for c in cold] != [c.model_bytes for c in second]


def test_a_single_run_keeps_the_bench_seed_and_starts_empty():
    bench = _bench()
    assert bench.run_root("s", 0, 1) == "s" and bench.run_root("s", 0, 4) != bench.run_root("s", 1, 4)
    cases, _ = bench.generate("c", 3, "test-bench", 21)
    again, _ = bench.generate("c", 3, "test-bench", 21, start=CoverageState())
    assert [c.model_bytes for c in cases] == [c.model_bytes for c in again]


def test_unfired_motifs_weigh_more_only_once_rewrites_are_known():
    motif = get("MatMulIntegerToFloat")
    sigs = motif.dtypes
    empty = Guide(CoverageState())
    other = Guide(CoverageState(rewrites={"onnxruntime[cpu]@all": {"transformer:ConstantFolding"}}))
    fired = Guide(CoverageState(rewrites={"onnxruntime[cpu]@all": {"transformer:MatMulIntegerToFloatFusion"}}))
    assert other.spec_weight(motif, sigs) == empty.spec_weight(motif, sigs) + MOTIF_UNFIRED
    assert fired.spec_weight(motif, sigs) == empty.spec_weight(motif, sigs)


def test_a_rewrite_family_counts_once_whichever_of_its_kinds_fired():
    bench = _bench()
    none = bench.family_report("tvm", set())
    assert none["fired"] == 0 and none["families"] == len(none["not_fired"]) > 20
    conv = bench.family_report("tvm", {"fused:conv2d_add_relu", "fused:conv3d_add_tanh", "pass:FoldConstant"})
    # two kinds of the conv family are one family; FoldConstant is the aim of three constant-folding motifs
    assert "TvmConvBiasActivation" not in conv["not_fired"] and conv["fired"] == 4
    assert conv["families"] == none["families"]
    ort = bench.family_report("onnxruntime", {"transformer:ConvActivationFusion"})
    assert 1 <= ort["fired"] < ort["families"]
