"""End to end: generated cases through input search, the reference, real and
misbehaving backends in workers, and the oracle."""
from __future__ import annotations

import json
import os

import pytest

from dlgate.backends.base import BackendSpec
from dlgate.case import make_case
from dlgate.check import CheckConfig, check, load_case, prepare
from dlgate.cli import main
from dlgate.exec.worker import Pool
from dlgate.graph.generator import GenConfig, Generator
from dlgate.oracle import verdict as V

OPS = ("Sigmoid", "Add", "Relu", "Mul", "Abs", "Neg")  # only Neg then Relu can erase a Sigmoid's offset
BROKEN_TVM = BackendSpec("tvm", options=(("extra_passes", ("dlgate.backends.testing:sigmoid_plus_half",)),))


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    out = tmp_path_factory.mktemp("batch")
    gen = Generator(GenConfig(ops=OPS, dtypes=("float32",), max_nodes=6, opset=18))
    for i in range(20):
        make_case(gen, "e2e", "check", i).write(str(out))
    return [prepare(*load_case(os.path.join(out, d))) for d in sorted(os.listdir(out))]


def _fault_shows(case) -> bool | None:
    """Whether the injected fault (every Sigmoid result +0.5) changes the case's outputs:
    the reference run again with the offset added after each Sigmoid. A later operator may
    erase it (Neg then Relu turns any Sigmoid, offset or not, into zeros): True where an
    output moves by more than the offset's tenth, False where none moves at all, None in
    between."""
    import numpy as np
    import torch

    from dlgate.materialize.torch_model import GraphModule, run_numpy

    def offset(i, node, ins, outs):
        if node.op == "Sigmoid":
            outs[0].add_(0.5)  # in place: the environment holds this tensor

    mod = GraphModule(case.graph)
    with torch.no_grad():
        env = mod.run([torch.from_numpy(np.array(x, copy=True)) for x in case.inputs], offset)
    faulty = [env[t].numpy() for t in case.graph.outputs]
    clean = run_numpy(case.graph, case.inputs)
    moved = max(float(np.abs(a.astype(np.float64) - b).max(initial=0.0)) for a, b in zip(faulty, clean))
    return True if moved > 0.05 else False if moved == 0 else None


def test_injected_tvm_miscompilation_is_caught_only_where_it_applies(cases):
    cfg = CheckConfig([BROKEN_TVM, BackendSpec("tvm")])
    with_sigmoid = 0
    with Pool(timeout_s=120) as pool:
        for case in cases:
            broken, healthy = check(pool, case, cfg)["verdicts"]
            assert healthy["verdict"] == V.PASS, (case.id, healthy)
            shows = _fault_shows(case)
            assert shows is not None, case.id  # an offset either shows or is erased exactly
            assert shows is False or "Sigmoid" in case.meta["operators"], case.id
            if shows:
                with_sigmoid += 1
                assert broken["verdict"] == V.MISMATCH, (case.id, broken)
                assert broken["signature"]["id"] and broken["comparison"]["max_abs"] > 0
                # the injected pass runs at every level, so the lowest level is wrong too
                assert broken["blame"] == "conversion"
                assert broken["crosscheck"]["onnx_reference"]["agrees_with_reference"] is True
            else:
                assert broken["verdict"] == V.PASS, (case.id, broken)
    assert with_sigmoid >= 3


def test_crashing_and_hanging_backends_do_not_stop_the_batch(cases):
    specs = [BackendSpec("tests.fake_backends:Segfault"), BackendSpec("tests.fake_backends:Hang"),
             BackendSpec("tests.fake_backends:Declines"), BackendSpec("tests.fake_backends:NoGpu")]
    cfg = CheckConfig(specs, timeout_s=2, crosscheck=False)
    records = []
    with Pool(cfg.timeout_s) as pool:
        for case in cases[:4]:
            records.append(check(pool, case, cfg))
    assert len(records) == 4
    for rec in records:
        got = [v["verdict"] for v in rec["verdicts"]]
        if rec["search"]["valid"]:
            assert got == [V.CRASH, V.TIMEOUT, V.UNSUPPORTED, V.SKIPPED]
            assert "SIGSEGV" in rec["verdicts"][0]["signature"]["text"]
            assert "needs a GPU" in rec["verdicts"][3]["detail"]
    crashes = {r["verdicts"][0]["signature"]["id"] for r in records if r["search"]["valid"]}
    assert len(crashes) == 1  # one bug, one signature


def test_cli_check_writes_results_and_exit_status(tmp_path, capsys):
    main(["gen", "--seed", "cli", "--count", "3", "--out", str(tmp_path), "--ops", "Add,Relu,Sigmoid",
          "--opset", "18"])
    assert main(["check", str(tmp_path), "--backend", "onnxruntime", "--no-crosscheck"]) == 0
    lines = (tmp_path / "check" / "results.jsonl").read_text().splitlines()
    assert len(lines) == 3
    rec = json.loads(lines[0])
    assert rec["verdicts"][0]["backend"] == "onnxruntime[cpu]" and "search" in rec
    assert "onnxruntime[cpu]" in capsys.readouterr().out
    assert main(["check", str(tmp_path), "--backend", "tests.fake_backends:Raises", "--no-crosscheck"]) == 1
    assert main(["check", str(tmp_path), "--backend", "nosuch"]) == 2
    assert main(["check", str(tmp_path), "--backend", "tvm@O9"]) == 2


def _motif_cases(tmp_path, name: str, want, count: int = 40, dtype: str = "float32", n: int | None = None):
    """Cases of one operator or motif ``name`` whose attributes satisfy ``want``, among the
    first ``count`` draws; with ``n``, the first ``n`` of them (the draws stop there)."""
    from dlgate.ops.registry import get

    spec = get(name)
    gen = Generator(GenConfig(ops=(name,), min_nodes=1, max_nodes=1, dynamic_share=0.0, const_prob=0.0,
                              extra_output_prob=0.0, dtypes=(dtype,), opset_range=(max(13, spec.min_opset), 21)))
    out = []
    for i in range(count):
        c = make_case(gen, "refusal", "check", i)
        if want(c.graph.nodes[0].attrs):
            c.write(str(tmp_path))
            out.append(prepare(*load_case(os.path.join(str(tmp_path), c.id))))
            if len(out) == n:
                break
    return out


def test_a_refusal_only_an_optimization_makes_is_its_bug_a_refusal_at_every_level_is_not(tmp_path):
    # onnxruntime's MatMulIntegerToFloatFusion (level extended) fuses int8 A x uint8 B into a node the
    # CPU has no kernel for: "Failed to find kernel" (NOT_IMPLEMENTED) for a model it runs unoptimized
    fused = _motif_cases(tmp_path / "f", "MatMulIntegerToFloat",
                         lambda a: a.get("violate") is None and (a["mmi"]["at"], a["mmi"]["bt"]) == ("int8", "uint8"))
    same = _motif_cases(tmp_path / "s", "MatMulIntegerToFloat",
                        lambda a: a.get("violate") is None and (a["mmi"]["at"], a["mmi"]["bt"]) == ("uint8", "uint8"))
    assert fused and same
    cfg = CheckConfig([BackendSpec("onnxruntime")], crosscheck=False)
    with Pool(timeout_s=120) as pool:
        v = check(pool, fused[0], cfg)["verdicts"][0]
        assert v["verdict"] == V.COMPILE_ERROR, v
        assert "refused only with optimizations (at level disable the model compiles)" in v["detail"]
        assert check(pool, same[0], cfg)["verdicts"][0]["verdict"] == V.PASS
        # at the lowest level itself there is nothing lower to ask: the refusal stands
        low = CheckConfig([BackendSpec("onnxruntime", opt_level="disable")], crosscheck=False)
        assert check(pool, fused[0], low)["verdicts"][0]["verdict"] == V.PASS
        # a model onnxruntime refuses unoptimized too stays a refusal, not a finding: it has no
        # float64 Conv kernel at any level
        conv = _motif_cases(tmp_path / "c", "Conv", lambda a: True, count=2, dtype="float64")
        v = check(pool, conv[0], cfg)["verdicts"][0]
        assert v["verdict"] == V.UNSUPPORTED and "refused only" not in v["detail"], v


def test_a_refusal_stands_when_the_lowest_level_fails_to_compile_for_another_reason(cases):
    # a compile error at the lowest level may hide the same refusal: nothing shows the
    # optimization made it, so it stays a refusal (and a model that runs there is a finding)
    runs = BackendSpec("tests.fake_backends:LevelRefuses")
    fails = BackendSpec("tests.fake_backends:LevelRefuses", options=(("low", "error"),))
    with Pool(timeout_s=60) as pool:
        got = check(pool, cases[0], CheckConfig([runs, fails], crosscheck=False))["verdicts"]
    assert got[0]["verdict"] == V.COMPILE_ERROR and "at level low the model compiles" in got[0]["detail"], got[0]
    assert got[1]["verdict"] == V.UNSUPPORTED and "refused only" not in got[1]["detail"], got[1]


def test_a_4bit_weight_matmul_is_compared_exactly_onnxruntime_int8_activations_are_caught(tmp_path):
    # DequantizeLinear of constant int4/uint4 weights -> MatMul becomes onnxruntime's MatMulNBits
    # (level extended). With the float32 activations dlgate asks for, it gives the spec's result;
    # with onnxruntime's default accuracy level 4 it quantizes the activations to int8, 0.5% off,
    # which the oracle reports: the 4-bit weights are compared, not excused
    # K of at least 32: over a few terms int8 activations can be exact (one value a block is)
    fused = _motif_cases(tmp_path, "DQMatMulNBits",
                         lambda a: a.get("violate") is None and a["dq"]["bits"] == 4 and a["dq"]["k"] >= 32, count=400,
                         n=5)
    assert len(fused) >= 5
    cfg = CheckConfig([BackendSpec("onnxruntime"), BackendSpec("tests.fake_backends:OrtDefaultAccuracy")],
                      crosscheck=False)
    caught = 0
    with Pool(timeout_s=120) as pool:
        for case in fused[:5]:  # a few: int8 activations can happen to be exact on one
            exact, approx = check(pool, case, cfg)["verdicts"]
            assert exact["verdict"] == V.PASS, exact
            assert "fused:com.microsoft:MatMulNBits" in exact["rewrites"], exact["rewrites"]
            caught += approx["verdict"] == V.MISMATCH
    assert caught >= 2


def test_embed_layer_norm_fusion_is_checked_on_ids_and_its_negative_index_failure_is_caught(tmp_path):
    # BERT embeddings + DistilBert attention at opset 13 with symbolic dims: onnxruntime fuses
    # Attention and EmbedLayerNormalization. Non-negative ids: the fused model agrees with the
    # reference. Negative ids (valid for Gather, which counts them from the end of the table):
    # the fused EmbedLayerNormalization fails, though the model runs at level disable.
    gen = Generator(GenConfig(ops=("EmbedLayerNormAttention",), dtypes=("int64",), min_nodes=1, max_nodes=1,
                              dynamic_share=1.0, const_prob=0.0, extra_output_prob=0.0, opset=13))
    ok, negative = [], []
    for i in range(60):
        try:
            c = make_case(gen, "eln", "check", i)
        except Exception:  # noqa: BLE001 - a draw that fits nothing
            continue
        a = c.graph.nodes[0].attrs
        if a["violate"] is None and c.graph.dynamic:
            c.write(str(tmp_path))
            (ok if a["abs"] else negative).append(prepare(*load_case(os.path.join(str(tmp_path), c.id))))
    assert ok and negative
    cfg = CheckConfig([BackendSpec("onnxruntime"), BackendSpec("onnxruntime", opt_level="disable")], crosscheck=False)
    with Pool(timeout_s=120) as pool:
        for case in ok[:2]:
            fused, plain = check(pool, case, cfg)["verdicts"]
            assert fused["verdict"] == V.PASS and plain["verdict"] == V.PASS, (fused, plain)
            assert "transformer:EmbedLayerNormFusion" in fused["rewrites"]
        caught = 0
        for case in negative[:3]:
            fused, plain = check(pool, case, cfg)["verdicts"]
            assert plain["verdict"] == V.PASS, plain
            if any(int(x.min()) < 0 for x in case.inputs):
                assert fused["verdict"] in (V.RUN_ERROR, V.MISMATCH), fused
                caught += 1
        assert caught
