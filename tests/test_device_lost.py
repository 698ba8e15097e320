"""A device lost mid-run is "cannot run" (exit status 4), never a finding; a kernel fault on a
healthy device stays a finding. The words of a failure (dlgate/backends/device_faults.py)
only make the gate ask the device again, in a fresh worker running the start-up self-test
(dlgate/exec/devicecheck.py); the self-test decides. Faked with ``GpuFaults``
(tests/fake_backends.py): onnxruntime's answers on a pretend GPU whose device state is a
folder shared by its workers."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from dlgate.backends import device_faults as F
from dlgate.backends.base import BackendSpec
from dlgate.backends.selftest import probe_model
from dlgate.cli import main
from dlgate.exec import devicecheck as DC
from dlgate.exec import worker as W
from tests.test_gate import REPO, results, verdict, write_config

#: A message of the form the runtime gives, for each entry of the CUDA row.
SAMPLES = {
    "no CUDA-capable device is detected": "RuntimeError: CUDA error: no CUDA-capable device is detected",
    "CUDA_ERROR_NO_DEVICE": "TVMError: CUDAError: cuInit(0) failed with error: CUDA_ERROR_NO_DEVICE",
    "busy or unavailable": "Fail: [ONNXRuntimeError] : 1 : FAIL : CUDA failure 46: CUDA-capable device(s) is/are "
                           "busy or unavailable ; GPU=0",
    "CUDA_ERROR_DEVICE_UNAVAILABLE": "TVMError: cuCtxCreate failed with error: CUDA_ERROR_DEVICE_UNAVAILABLE",
    "CUDA driver version is insufficient": "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA "
                                           "runtime version",
    "CUDA initialization failure": "RuntimeError: [TRT] [E] CUDA initialization failure with error: 100",
    "initialization error": "RuntimeError: CUDA error: initialization error",
    "CUDA_ERROR_NOT_INITIALIZED": "TVMError: cuModuleLoadData failed with error: CUDA_ERROR_NOT_INITIALIZED",
    "uncorrectable ECC error": "RuntimeError: CUDA error: uncorrectable ECC error encountered",
    "CUDA_ERROR_ECC_UNCORRECTABLE": "TVMError: cuMemcpyDtoH failed with error: CUDA_ERROR_ECC_UNCORRECTABLE",
    "unspecified launch failure": "RuntimeError: Triton Error [CUDA]: unspecified launch failure",
    "CUDA_ERROR_LAUNCH_FAILED": "TVMError: cuLaunchKernel failed with error: CUDA_ERROR_LAUNCH_FAILED",
    "illegal memory access": "RuntimeError: CUDA error: an illegal memory access was encountered",
    "CUDA_ERROR_ILLEGAL_ADDRESS": "TVMError: CUDAError: cuModuleUnload failed with error: CUDA_ERROR_ILLEGAL_ADDRESS",
    "GPU is lost": "Unable to determine the device handle for GPU 0000:3B:00.0: GPU is lost.  Reboot the system",
    "CUDA error: unknown error": "RuntimeError: CUDA error: unknown error",
    "CUDA failure 999": "Fail: [ONNXRuntimeError] : 1 : FAIL : CUDA failure 999: unknown error ; GPU=0",
}
#: A device's compile and run failures that are not the device's: they never ask it again.
NEAR_MISSES = (
    "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "RuntimeError: CUDA error: device-side assert triggered",  # a kernel's own assertion
    "RuntimeError: /build/src/lower/lower_sigmoid.cc:78 Sigmoid lowering needs a 4-D input.",
    "ValueError: Unsupported coordinate_transformation_mode: tf_crop_and_resize",
)


def _error(text: str, log: str = "") -> dict:
    typ, _, msg = text.partition(": ")
    return {"type": typ, "message": msg, "log": log}


# -- the table, without the compilers ----------------------------------------------------------
def test_every_entry_recognizes_its_runtime_message():
    assert set(SAMPLES) == {m.value for m in F.CUDA} and all(m.kind == "text" and m.where for m in F.CUDA)
    for value, text in SAMPLES.items():
        for device in ("cuda", "tensorrt"):
            mark = F.matching(device, _error(text))
            assert mark is not None, (value, text)


def test_near_misses_and_cpu_devices_never_ask_the_device_again():
    for text in NEAR_MISSES:
        assert F.matching("cuda", _error(text)) is None, text
    for text in SAMPLES.values():  # the CPU has no device to lose: its failures are what they are
        assert F.matching("cpu", _error(text)) is None
    assert F.matching("cuda", None) is None


def test_the_worker_output_counts_too():
    # onnxruntime logs the CUDA failure and raises a generic error: the log's tail shows it
    err = _error("Fail: [ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Add node",
                 log="[E:onnxruntime:Default, cuda_call.cc:116 CudaCall] CUDA failure 999: unknown error ; GPU=0")
    assert F.matching("cuda", err).value == "CUDA failure 999"


# -- the worker: the self-test decides ---------------------------------------------------------
def gpu(device: str = "cuda") -> BackendSpec:
    return BackendSpec("tests.fake_backends:GpuFaults", device)


@pytest.fixture()
def gpu_env(tmp_path, monkeypatch):
    """Sets this build's fault; the device's state lives in a fresh folder."""
    state = tmp_path / "gpu"
    state.mkdir()
    monkeypatch.setenv("FAKE_GPU_STATE", str(state))

    def fault(value: str) -> str:
        monkeypatch.setenv("FAKE_GPU_FAULT", value)
        return str(state)
    return fault


def test_a_kernel_fault_on_a_healthy_device_stays_a_run_error(gpu_env):
    gpu_env("kernel:Add")
    m, xs, _ = probe_model()
    with W.Pool(120) as pool:
        out = pool.execute(gpu(), m, xs)
        w = pool.get(gpu())
        assert out.status == W.RUN_ERROR and "illegal memory access" in out.error["message"]
        assert out.error["device_check"] == DC.PASSED and w.lost is None and w.restarts == 1
        again = pool.execute(gpu(), m, xs)  # the fresh worker serves the next job
        assert again.status == W.RUN_ERROR and w.restarts == 2


def test_a_lost_device_makes_the_failure_unavailable_and_the_worker_lost(gpu_env):
    state = gpu_env("lost:Add")
    m, xs, want = probe_model()
    with W.Pool(120) as pool:
        gpu_env("")
        first = pool.execute(gpu(), m, xs)  # a worker started before the fault, as in a run
        assert first.ok and np.array_equal(first.outputs[0], want[0])
        pool.get(gpu())._kill()
        gpu_env("lost:Add")
        out = pool.execute(gpu(), m, xs)
        w = pool.get(gpu())
        assert os.path.exists(os.path.join(state, "lost"))
        assert out.status == W.UNAVAILABLE and out.error["type"] == "DeviceLost" and out.outputs is None
        assert "unspecified launch failure" in out.error["message"] and "no CUDA-capable device" in w.lost
        assert pool.execute(gpu(), m, xs).status == W.UNAVAILABLE  # no later job runs on a lost device


def test_the_same_words_on_the_cpu_are_not_rechecked(gpu_env):
    gpu_env("kernel:Add")
    m, xs, _ = probe_model()
    with W.Pool(120) as pool:
        out = pool.execute(gpu("cpu"), m, xs)
        assert out.status == W.RUN_ERROR and "device_check" not in out.error and pool.get(gpu("cpu")).restarts == 0


# -- the gate ----------------------------------------------------------------------------------
BACKEND = {"name": "tests.fake_backends:GpuFaults", "device": "cuda"}
OPS = ["Abs", "Sigmoid", "Relu", "Neg", "Tanh", "Exp"]


def _cfg(tmp_path, **kw) -> str:
    return write_config(str(tmp_path), models=4, min_nodes=1, max_nodes=3, operators=OPS, backends=[BACKEND],
                        reduce=False, crosscheck=False, **kw)


def _abs_after_the_first(cases) -> bool:
    """Whether the first case holds no Abs and a later one does: the device is then lost
    mid-run, with a case reported before."""
    from tests.helpers import onnx_ops

    return "Abs" not in onnx_ops(cases[0]) and any("Abs" in onnx_ops(c) for c in cases[1:])


def test_a_device_lost_mid_run_stops_the_gate_with_exit_4_and_resumes(tmp_path, gpu_env, capsys):
    """The seed is the first whose batch :func:`_abs_after_the_first` takes."""
    from tests.helpers import seed_where

    state = gpu_env("lost:Abs")  # the first case holding Abs loses the device
    cfg, out = _cfg(tmp_path), str(tmp_path / "o")
    seed = seed_where(cfg, _abs_after_the_first, "dev")
    assert main(["run", "--config", cfg, "--seed", seed, "--out", out]) == 4
    v = verdict(out)
    assert v["result"] == "cannot-run" and v["exit_code"] == 4 and not v["new"]
    before = [r["case"] for r in results(out)]
    assert before and all(x["verdict"] == "pass" for r in results(out) for x in r["verdicts"])  # reported
    assert os.path.exists(os.path.join(out, "summary.md")) and os.path.exists(os.path.join(out, "junit.xml"))
    # the device is back: the same command resumes at the case it was lost at
    os.remove(os.path.join(state, "lost"))
    gpu_env("")
    assert main(["run", "--config", cfg, "--seed", seed, "--out", out]) == 0
    cases = [r["case"] for r in results(out)]
    assert len(cases) == 4 and cases[:len(before)] == before and verdict(out)["result"] == "pass"
    at = cases[len(before)]
    why = json.dumps(v["cannot_run"])
    assert f"the device was lost at case {at}: after a run_error" in why and "no CUDA-capable device" in why, why
    assert f"cannot run: the device was lost at case {at}" in capsys.readouterr().err


def test_a_kernel_fault_on_a_healthy_device_is_a_finding_of_the_gate(tmp_path, gpu_env):
    gpu_env("kernel:Sigmoid")
    out = str(tmp_path / "o")
    assert main(["run", "--config", _cfg(tmp_path), "--seed", "dev", "--out", out]) == 1
    v = verdict(out)
    assert v["result"] == "fail" and not v["cannot_run"] and v["new"]
    errors = [x for r in results(out) for x in r["verdicts"] if x["verdict"] == "run_error"]
    assert errors and len(results(out)) == 4
    assert all(x["error"]["device_check"] == DC.PASSED for x in errors)


@pytest.mark.parametrize("base_fault, code", [("lost:Sigmoid", 4), ("kernel:Sigmoid", 0)])
def test_head_versus_base_the_base_build_losing_its_device_is_exit_4(tmp_path, gpu_env, base_fault, code):
    """Head faults in Sigmoid's kernel on a healthy device; the base build, asked about
    head's failure, loses its device (exit 4, nothing pre-existing) or fails the same way
    on a healthy device (the finding stands, and the base build shares it)."""
    gpu_env("kernel:Sigmoid")
    base_state = tmp_path / "base-gpu"
    base_state.mkdir()
    base = {"python": sys.executable, "env": {"PYTHONPATH": REPO, "FAKE_GPU_STATE": str(base_state),
                                              "FAKE_GPU_FAULT": base_fault}}
    out = str(tmp_path / "o")
    assert main(["run", "--config", _cfg(tmp_path, base=base), "--seed", "dev", "--out", out]) == code
    v = verdict(out)
    if code == 4:
        assert v["result"] == "cannot-run" and not v["pre_existing"] and not v["new"]
        lost = {k: w for k, w in v["cannot_run"].items() if "(base build)" in k}
        assert lost and "the device was lost at case" in json.dumps(lost)
    else:
        assert v["result"] == "pass" and v["pre_existing"] and not v["cannot_run"]
        bases = [x["base"] for r in results(out) for x in r["verdicts"] if x["verdict"] == "run_error"]
        assert bases and all(b["reproduces"] for b in bases)
