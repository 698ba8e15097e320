"""The TIR mode on a GPU target (``cuda``): the programs the ``threads`` mutator makes go
through TVM's GPU-side passes up to code generation (SplitHostDevice makes one device kernel,
the host keeps no buffer access), which needs no GPU and runs here; a program that touches a
buffer outside every thread-bound loop is rejected for the GPU; the TIR backend on ``cuda``
is unavailable with TVM's own reason where there is no GPU or no CUDA build, and a campaign
with ``tvm:cuda?`` and ``tir_share`` then skips its TIR steps; the campaign picks the CPU
before the GPU. The build and run on the GPU itself needs one (skipped here with that reason)."""
from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest
import yaml

tvm = pytest.importorskip("tvm")

from dlgate.backends.base import Unavailable  # noqa: E402
from dlgate.backends.tvm import TVM  # noqa: E402
from dlgate.cli import main  # noqa: E402
from dlgate.gate import config as C  # noqa: E402
from dlgate.gate.journal import read_records  # noqa: E402
from dlgate.gate.run import tir as RT  # noqa: E402
from dlgate.tir import build as B  # noqa: E402
from dlgate.tir import mutators as M  # noqa: E402
from dlgate.tir import passes as P  # noqa: E402
from dlgate.tir.mutators.base import Context  # noqa: E402
from dlgate.tir.seeds import hand_seeds  # noqa: E402

CUDA = Context("cuda")
#: Why the GPU itself is not exercised here, or None where it can be.
NO_GPU = TVM.unavailable_reason("cuda")


@pytest.fixture(scope="module")
def mutants():
    """The ``threads`` mutator's programs from the hand-written seeds (three draws each)
    that put every buffer access under a thread binding."""
    out = []
    for k, s in enumerate(hand_seeds()):
        for j in range(3):
            r = M.apply(M.BY_NAME["threads"], s.program, random.Random(100 * k + j), CUDA)
            if r.program is not None and B.host_accesses(r.program.func()) == 0:
                out.append(r.program.text)
    return out


def _kernels(device: dict) -> list:
    return [f for m in device.values() for f in m.functions.values()]


@pytest.mark.parametrize("sequence", ["minimal", "default"])
def test_threads_mutants_pass_tvms_gpu_side_passes(mutants, sequence):
    assert len(mutants) >= 20, len(mutants)
    assert sum("vthread" in t for t in mutants) >= 3  # InjectVirtualThread is exercised
    names = P.minimal(gpu=True) if sequence == "minimal" else P.default()
    for text in mutants:
        mod = B.apply_passes(B.parse(text, "cuda"), names, False, "cuda")
        host, device = B.finalize(mod)
        kernels = _kernels(device)
        assert len(kernels) == 1, text
        k = kernels[0]
        assert k.attrs["target"].kind.name == "cuda" and int(k.attrs["calling_conv"]) == 2  # a kernel launch
        assert "blockIdx.x" in [str(p) for p in k.attrs["tirx.kernel_launch_params"]] or \
            "threadIdx.x" in [str(p) for p in k.attrs["tirx.kernel_launch_params"]]
        script = host.script()
        assert "T.launch_thread" not in script and "T.thread_binding" not in script
        assert "tvm_call_packed_lowered" in script or "__tvm_ffi_" in script or "kernel" in script


def test_the_gpu_required_passes_are_needed(mutants):
    """Without SplitHostDevice no device kernel is made: TVM's MakePackedAPI finds the thread
    variables undefined on the host, or the build keeps the whole program on the host, which
    would read the GPU's buffers there. The CPU's minimal sequence lacks it."""
    assert "SplitHostDevice" not in P.minimal() and P.complete(P.minimal(gpu=True), gpu=True)
    assert not P.complete(P.minimal(), gpu=True) and P.complete(P.minimal(gpu=True))
    failed = 0
    for text in mutants:
        try:
            _, device = B.finalize(B.apply_passes(B.parse(text, "cuda"), P.minimal(), False, "cuda"))
        except Exception as e:  # noqa: BLE001 - TVM's errors are many classes
            failed += 1
            assert "not passed in as API arguments" in str(e)
        else:
            assert not _kernels(device)
    assert 0 < failed < len(mutants)  # both happen


def test_the_gpu_worker_rejects_a_sequence_without_the_gpus_required_passes(mutants):
    """An incomplete sequence may build with no kernel (the threads on the host): the GPU
    worker rejects it before building, never runs it. Checked on the worker's compile step,
    which needs no GPU (the backend is made without its device check)."""
    w = object.__new__(B.TirBackend)
    w.device, w.options = "cuda", {}
    with pytest.raises(B.Rejected, match="passes: .*lacks"):
        w.compile(B.Job(mutants[0], tuple(P.minimal()), 0, True).model())


def test_a_program_with_host_side_buffer_accesses_is_rejected_on_gpu_only():
    s = hand_seeds()[0]
    assert B.host_accesses(s.program.func()) > 0
    B.parse(s.program.text)  # the CPU takes it
    with pytest.raises(B.Rejected, match="validate: .* outside every thread-bound loop"):
        B.parse(s.program.text, "cuda")
    assert B.host_accesses(B.parse(B.PROBE, "cuda")["main"]) == 0


@pytest.mark.skipif(NO_GPU is None, reason="a GPU is here: the backend is available")
def test_the_tir_backend_on_cuda_is_unavailable_here_with_tvms_reason():
    with pytest.raises(Unavailable) as e:
        B.TirBackend("cuda")
    assert str(e.value) == f"tir on cuda: {NO_GPU}"
    B.TirBackend("cpu")  # the CPU's is there


def test_the_campaign_picks_the_cpu_before_the_gpu():
    both = C.build({"backends": ["tvm:cuda?", "tvm"], "tir_share": 0.5})
    spec, tir = RT.tir_backend(both)
    assert (spec.device, tir.device, tir.name) == ("cpu", "cpu", B.SPEC.name) and not RT.gpu(both)
    assert RT.settings(both).target == "llvm"
    gpu = C.build({"backends": ["onnxruntime", "tvm:cuda?"], "tir_share": 0.5})
    spec, tir = RT.tir_backend(gpu)
    assert (spec.label(), tir.device) == ("tvm[cuda]", "cuda") and RT.gpu(gpu)
    assert RT.settings(gpu).target == "cuda" and CUDA.gpu
    assert RT.tir_backend(C.build({"backends": ["onnxruntime"], "tir_share": 0.5})) is None


@pytest.mark.skipif(NO_GPU is None, reason="a GPU is here: the TIR steps run rather than skip")
def test_a_campaign_with_tvm_cuda_optional_skips_its_tir_steps(tmp_path):
    doc = {"campaign": "tir-gpu", "models": 2, "max_nodes": 3, "opset": 18, "operators": ["Add", "Relu"],
           "dtypes": ["float32"], "backends": ["tvm:cuda?"], "crosscheck": False, "timeout_s": 120,
           "tir_share": 1.0, "tir_slow_margin": 1000.0}
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(doc))
    out = str(tmp_path / "out")
    status = main(["run", "--config", str(cfg), "--seed", "gpu", "--out", out, "--no-progress"])
    recs = read_records(os.path.join(out, "results.jsonl"))
    steps = [r for r in recs if r.get("kind") == "tir"]
    assert len(steps) == 2
    for r in steps:
        (v,) = r["verdicts"]
        assert v["backend"] == "tvm[cuda]"
        if r["tir"]["digest"] is not None:  # built: the worker could not start, with TVM's reason
            assert v["verdict"] == "skipped", v
            assert NO_GPU in json.dumps(v), v
    assert status == 0


@pytest.mark.skipif(NO_GPU is not None, reason=f"needs a CUDA GPU and a TVM built with CUDA: {NO_GPU}")
def test_threads_mutants_build_and_run_on_the_gpu_as_on_the_cpu(mutants):
    gpu, cpu = B.TirBackend("cuda"), B.TirBackend("cpu")
    gpu.start()
    cpu.start()
    for text in mutants[:8]:
        job = B.Job(text, tuple(P.minimal(gpu=True)), 3)
        got = gpu.run(gpu.compile(job.model()), [])
        want = cpu.run(cpu.compile(B.Job(text, tuple(P.minimal()), 3).model()), [])
        for g, w in zip(got[:-1], want[:-1]):
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-3)
