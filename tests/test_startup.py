"""Worker start-up fails closed: the compiler is imported explicitly and a one-node probe
must run on the device asked for. A GPU provider that onnxruntime cannot load (it warns
and runs on the CPU: reproduced here for real by asking onnxruntime-CPU for the CUDA and
TensorRT providers) is "cannot run", exit status 4, at start-up and mid-run, in
head-versus-base mode too; never a compile_error on every case that the base build,
failing the same way, would make pre-existing and green."""
from __future__ import annotations

import json
import os
import sys
import warnings

import numpy as np
import pytest

from dlgate.backends.base import Backend, BackendSpec, Unavailable
from dlgate.backends.registry import create
from dlgate.backends.selftest import check_outputs, probe_model
from dlgate.cli import main
from dlgate.exec import worker as W
from dlgate.materialize.onnx_model import to_onnx
from tests.test_gate import REPO, results, verdict, write_config


def fake(name: str, device: str = "cpu") -> BackendSpec:
    return BackendSpec(f"tests.fake_backends:{name}", device)


def start(spec: BackendSpec) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # onnxruntime warns about a provider it does not have
        create(spec).start()


# -- the probe and each backend's start-up -------------------------------------------------------
def test_the_probe_is_exact_in_float32_and_float16():
    for dtype in ("float32", "float16"):
        model, xs, want = probe_model(dtype)
        assert [x.dtype for x in xs] == [np.dtype(dtype)] * 2 and want[0].dtype == np.dtype(dtype)
        assert np.array_equal(want[0].astype(np.float64), xs[0].astype(np.float64) + xs[1].astype(np.float64))
        check_outputs("x", want, want)
    with pytest.raises(Unavailable, match="start-up probe Add gave"):
        check_outputs("x", [want[0] + np.float16(1)], want)
    with pytest.raises(Unavailable, match="1 outputs, expected 2"):
        check_outputs("x", want, want * 2)


def test_the_probe_is_the_model_to_onnx_writes_for_its_graph():
    # written without the operator registry (which imports PyTorch), it must stay the same model
    for dtype in ("float32", "float16", "float64"):
        for opset in (13, 17, 21):
            model, _, _ = probe_model(dtype, opset)
            assert model.onnx == to_onnx(model.graph, 0, doc="dlgate start-up probe").SerializeToString()


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads which libraries a process mapped")
@pytest.mark.parametrize("name", ["onnxruntime", "onnx-reference"])
def test_a_worker_that_needs_no_pytorch_starts_without_it(name):
    """PyTorch is ~1.5 s of every worker start; onnxruntime's and onnx.reference's workers
    start (import, start-up probe) and stay ready without it."""
    with W.Worker(BackendSpec(name)) as w:
        assert w.start(), w.unavailable
        with open(f"/proc/{w._proc.pid}/maps") as f:
            maps = f.read()
        assert "libtorch_cpu" not in maps
        if name == "onnxruntime":
            assert "onnxruntime_pybind11_state" in maps  # the check can see an imported library


@pytest.mark.parametrize("name", ["onnxruntime", "onnx-reference", "torch", "tvm", "inductor"])
def test_backends_that_load_pass_start_up(name):
    start(BackendSpec(name))  # silent: the CPU paths load, the onnxruntime probe ran on the CPU provider


@pytest.mark.parametrize("device, provider", [("cuda", "CUDAExecutionProvider"),
                                              ("tensorrt", "TensorrtExecutionProvider")])
def test_an_onnxruntime_provider_that_falls_back_to_the_cpu_fails_start_up(device, provider):
    import onnxruntime as ort

    if provider in ort.get_available_providers():
        pytest.skip(f"this onnxruntime build has {provider}: it cannot show the fallback")
    with pytest.raises(Unavailable, match=f"{provider} failed to load; onnxruntime fell back to CPUExecutionProvider"):
        start(fake("OrtGpuBuild", device))


def test_a_probe_node_that_ran_elsewhere_fails_start_up():
    # the provider is among the session's, but onnxruntime's profile shows the node ran on the CPU
    with pytest.raises(Unavailable, match="probe's node ran on CPUExecutionProvider, not on CUDAExecutionProvider"):
        start(fake("OrtWrongProbe", "cuda"))


def test_start_up_imports_the_compiler_explicitly():
    class NoCompiler(Backend):
        name = "nocompiler"
        package = "dlgate_no_such_compiler"

        def version(self):
            return "1"  # reading the version imports nothing: only start() finds the broken build

    with pytest.raises(ImportError, match="dlgate_no_such_compiler"):
        NoCompiler().start()


def test_gpu_paths_probe_their_device_where_there_is_one():
    """TVM, torch and Inductor on cuda: unavailable here before any probe (no CUDA), with
    the reason; on a GPU machine their probe runs (bench/gpu_check.py)."""
    for name in ("tvm", "torch", "inductor"):
        cls = __import__("dlgate.backends.registry", fromlist=["load"]).load(name)
        reason = cls.unavailable_reason("cuda")
        if reason is None:
            start(BackendSpec(name, "cuda"))
        else:
            with pytest.raises(Unavailable):
                start(BackendSpec(name, "cuda"))


# -- the worker --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model():
    return probe_model()


def test_a_worker_whose_provider_fails_to_load_is_unavailable(model):
    m, xs, _ = model
    with W.Pool() as pool:
        out = pool.execute(fake("OrtGpuBuild", "cuda"), m, xs)
        assert out.status == W.UNAVAILABLE and "CUDAExecutionProvider failed to load" in out.error["message"]
        ok = pool.execute(BackendSpec("onnxruntime"), m, xs)
        assert ok.ok and np.array_equal(ok.outputs[0], model[2][0])


def test_a_provider_lost_mid_run_is_unavailable_not_a_compile_error(model):
    m, xs, _ = model
    with W.Pool() as pool:
        w = pool.get(fake("OrtGpuLostMidRun", "cuda"))
        assert w.start()  # the probe passed at start-up
        out = pool.execute(fake("OrtGpuLostMidRun", "cuda"), m, xs)
        assert out.status == W.UNAVAILABLE and out.error["stage"] == "compile"
        assert "CUDAExecutionProvider failed to load" in out.error["message"]
        # and it stays so: no later case is compiled on the CPU and called the GPU's answer
        again = pool.execute(fake("OrtGpuLostMidRun", "cuda"), m, xs)
        assert again.status == W.UNAVAILABLE and "failed to load" in again.error["message"]


# -- the gate ----------------------------------------------------------------------------------
def _base(tmp_path):
    return {"python": sys.executable, "env": {"PYTHONPATH": REPO}}


def test_a_provider_that_cannot_load_fails_the_gate_in_head_versus_base_mode(tmp_path, capsys):
    backend = {"name": "tests.fake_backends:OrtGpuBuild", "device": "cuda"}
    cfg = write_config(str(tmp_path), models=2, backends=[backend], base=_base(tmp_path))
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "gpu", "--out", out]) == 4
    v = verdict(out)
    assert v["result"] == "cannot-run" and v["exit_code"] == 4
    assert "CUDAExecutionProvider failed to load" in json.dumps(v["cannot_run"])
    assert results(out) == []  # nothing was judged on the CPU in the GPU's name
    assert "could not run (exit status 4)" in capsys.readouterr().err


def test_a_provider_lost_mid_run_fails_the_gate_and_nothing_is_pre_existing(tmp_path):
    backend = {"name": "tests.fake_backends:OrtGpuLostMidRun", "device": "cuda"}
    cfg = write_config(str(tmp_path), models=2, backends=[backend], base=_base(tmp_path))
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "gpu", "--out", out]) == 4
    v = verdict(out)
    assert v["result"] == "cannot-run" and "failed to load" in json.dumps(v["cannot_run"])
    # the run stops at the case the provider was lost at: nothing is journaled in its name,
    # so a rerun resumes there (tests/test_device_lost.py covers the resumption)
    assert "the device was lost at case" in json.dumps(v["cannot_run"]) and results(out) == []
    assert not v["pre_existing"] and not any(v["counts"].get(b, {}).get("compile_error") for b in v["counts"])


def test_a_cpu_provider_that_loads_passes_the_gate_in_head_versus_base_mode(tmp_path):
    cfg = write_config(str(tmp_path), models=2, backends=["onnxruntime"], base=_base(tmp_path))
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "gpu", "--out", out]) == 0
    v = verdict(out)
    assert v["result"] == "pass" and not v["cannot_run"] and len(results(out)) == 2
    assert os.path.exists(os.path.join(out, "summary.md"))
