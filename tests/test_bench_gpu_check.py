"""bench/gpu_check.py on a machine without a GPU: every GPU path asked for is printed as
skipped with its reason, and the fail-closed case that needs no GPU (onnxruntime asked
for a provider its build lacks) runs and fails closed."""
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_gpu_check_skips_what_cannot_run_here_and_fails_closed(tmp_path):
    import onnxruntime as ort

    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("a GPU build of onnxruntime: the check runs the path itself")
    res = subprocess.run([sys.executable, os.path.join(REPO, "bench", "gpu_check.py"), "--paths", "onnxruntime:cuda",
                          "--models", "1", "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert any(x.startswith("onnxruntime:cuda: skipped: ") and "CUDAExecutionProvider" in x for x in lines), lines
    assert any(x.startswith("fail-closed provider-missing:cuda: closed (exit status 4)") and "failed to load" in x
               for x in lines), lines
    assert "fail-closed hidden-device:onnxruntime:cuda: skipped: onnxruntime:cuda cannot run here" in res.stdout
    assert "device-check:onnxruntime:cuda: skipped: onnxruntime:cuda cannot run here, no device" in res.stdout


def test_gpu_check_refuses_an_unknown_path():
    res = subprocess.run([sys.executable, os.path.join(REPO, "bench", "gpu_check.py"), "--paths", "tvm:tpu"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "bad arguments" in res.stderr
