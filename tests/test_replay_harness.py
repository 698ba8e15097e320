"""bench/replay/repro/harness.py, which every replay repro calls: the exit status it maps each
outcome to (1 the bug shows, 0 it does not, 3 the case could not run), its onnxruntime child
(a crash is seen as a signal), and the repros' constants as bench/replay.py reads them.

The buggy releases are not installed here, so a crashing or raising onnxruntime is a stand-in
package put first on PYTHONPATH, the way verify.py puts a release there; the real onnxruntime
and TVM of this environment are releases where every bug is fixed (exit 0)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPLAY = os.path.join(ROOT, "bench", "replay")
REPRO = os.path.join(REPLAY, "repro")
BUGS = yaml.safe_load(open(os.path.join(REPLAY, "bugs.yaml")))["bugs"]


def _load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


harness = _load("replay_harness_under_test", os.path.join(REPRO, "harness.py"))


def _run(script: str, pythonpath: str = "") -> tuple:
    """Run a repro as verify.py does (fresh interpreter, another cwd): (exit status, last line)."""
    env = dict(os.environ, PYTHONPATH=pythonpath)
    proc = subprocess.run([sys.executable, os.path.join(REPRO, script)], capture_output=True, text=True,
                          env=env, cwd="/", timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    return proc.returncode, (lines[-1] if lines else proc.stderr)


def _fake_ort(tmp_path, body: str) -> str:
    """A folder holding a stand-in ``onnxruntime`` whose InferenceSession does ``body``."""
    pkg = tmp_path / "fake" / "onnxruntime"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "import os, signal\n"
        "class SessionOptions:\n    graph_optimization_level = None\n"
        "class GraphOptimizationLevel:\n    ORT_ENABLE_ALL = 99\n"
        f"def InferenceSession(*a, **k):\n    {body}\n")
    return str(pkg.parent)


def test_every_repro_declares_how_its_bug_shows_and_builds_a_valid_model():
    replay = _load("bench_replay_under_test", os.path.join(ROOT, "bench", "replay.py"))
    assert len(BUGS) == 17
    for bug in BUGS:
        kind, sig = replay.how_it_shows(bug)  # what bench/replay.py reads from the repro's text
        assert kind in ("wrong", "error", "crash"), bug["id"]
        assert bool(sig) == (kind == "error"), bug["id"]
        mod = _load(f"repro_{bug['id'].replace('-', '_')}", os.path.join(REPLAY, bug["repro"]))
        assert (mod.KIND, mod.SIGNATURE) == (kind, sig)
        expected = harness.reference(mod.build(), mod.feeds())  # checker full check + onnx.reference
        assert expected and all(isinstance(e, np.ndarray) for e in expected)


def _main(monkeypatch, capsys, outcome, kind, signature="", compiler="onnxruntime"):
    """(exit status, printed line) of harness.main on ort-batchnorm-1d's case when the
    compiler's run ends in ``outcome`` (outputs, or an exception it raises)."""
    def runner(model, feeds):
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    monkeypatch.setitem(harness.RUNNERS, compiler, runner)
    mod = _load("repro_ort_batchnorm_1d", os.path.join(REPRO, "ort-batchnorm-1d.py"))
    capsys.readouterr()
    status = harness.main(compiler, kind, signature, mod.build, mod.feeds)
    return status, capsys.readouterr().out.rstrip("\n")


def test_main_maps_each_outcome_to_its_exit_status(monkeypatch, capsys):
    mod = _load("repro_ort_batchnorm_1d", os.path.join(REPRO, "ort-batchnorm-1d.py"))
    right = harness.reference(mod.build(), mod.feeds())
    wrong = [right[0] + 1]

    def run(outcome, kind, signature="", compiler="onnxruntime"):
        return _main(monkeypatch, capsys, outcome, kind, signature, compiler)

    assert run(harness.Crashed(6), "crash") == (1, "onnxruntime crashed: killed by signal 6")
    assert run(harness.Crashed(6), "error", "x")[0] == 3  # a crash is not this error
    text = "Fail: " + "a" * 100 + " MatMulBnFusion_Gemm shape " + "b" * 400
    status, line = run(harness.Raised(text), "error", "MatMulBnFusion_Gemm")
    assert status == 1 and line == "error: ..." + text[27:][:300]  # 80 characters before the signature
    assert run(harness.Raised("Fail: something else"), "error", "MatMulBnFusion_Gemm") == (
        3, "could not run: Fail: something else")
    assert run(harness.Raised("Fail: x"), "wrong")[0] == 3
    assert run(harness.NotRun("child exited 2: boom"), "crash") == (3, "could not run: child exited 2: boom")
    status, line = run(wrong, "wrong")
    assert status == 1 and line.startswith("wrong result: onnxruntime float32[6]")
    assert run(wrong, "error", "x")[0] == 3  # another bug
    assert run([right[0].astype(np.float64)], "wrong")[0] == 1  # the dtype differs
    assert run([right[0][:3]], "wrong")[0] == 1  # the shape differs
    assert run(right, "wrong") == (0, "matches the reference: [('float32', [6])]")
    assert run(right, "crash") == (0, "matches the reference: [('float32', [6])]")
    # TVM names its failures compile errors and quotes 60 characters before the signature
    assert run(harness.Raised("E: " + "c" * 70 + "SIG"), "error", "SIG", "tvm") == (
        1, "compile error: ..." + "c" * 60 + "SIG")
    assert run(right, "error", "SIG", "tvm") == (0, "compiles and matches the reference: [('float32', [6])]")


def test_main_uses_a_repros_own_check_and_refuses_a_broken_case(monkeypatch, capsys):
    mod = _load("repro_tvm_lppool", os.path.join(REPRO, "tvm-lppool-odd-p.py"))
    expected = harness.reference(mod.build(), mod.feeds())
    off = [expected[0].copy()]
    off[0][0, 0, 0, 0] += 0.5
    monkeypatch.setitem(harness.RUNNERS, "tvm", lambda m, f: off)
    assert harness.main("tvm", mod.KIND, mod.SIGNATURE, mod.build, mod.feeds, mod.check) == 1
    assert capsys.readouterr().out.startswith("max |tvm - reference| = 0.5; ")
    monkeypatch.setitem(harness.RUNNERS, "tvm", lambda m, f: expected)
    assert harness.main("tvm", mod.KIND, mod.SIGNATURE, mod.build, mod.feeds, mod.check) == 0
    assert capsys.readouterr().out.startswith("max |tvm - reference| = 0; ")

    def broken():
        model = mod.build()
        model.graph.node[0].op_type = "NoSuchOp"
        return model

    assert harness.main("tvm", "wrong", "", broken, mod.feeds) == 3  # never read as the bug
    assert capsys.readouterr().out.startswith("could not run: the model or its reference failed: ")
    assert harness.main("tensorrt", "wrong", "", mod.build, mod.feeds) == 3


@pytest.mark.parametrize("script,body,status,line", [
    ("ort-batchnorm-1d.py", "os.kill(os.getpid(), signal.SIGSEGV)", 1, "onnxruntime crashed: killed by signal 11"),
    ("ort-einsum-reduce-transpose.py", "os.abort()", 3, "onnxruntime crashed: killed by signal 6"),
    ("ort-tile-scalar.py", "raise RuntimeError('Tile: the input must be atleast 1 dimensional')", 1,
     "error: ...RuntimeError: Tile: the input must be atleast 1 dimensional"),
    ("ort-batchnorm-1d.py", "raise RuntimeError('no kernel')", 3, "could not run: RuntimeError: no kernel"),
])
def test_onnxruntime_runs_in_a_child_so_a_crash_is_seen(tmp_path, script, body, status, line):
    assert _run(script, _fake_ort(tmp_path, body)) == (status, line)


def test_repros_pass_on_the_fixed_releases_installed_here():
    """onnxruntime 1.32 and TVM 0.27 postdate every fix: each repro runs and matches."""
    assert _run("ort-einsum-empty.py") == (0, "matches the reference: [('float32', [1])]")
    assert _run("tvm-shape-of-scalar.py") == (0, "compiles and matches the reference: [('int64', [0])]")
