"""What every replay repro shares: run the model on the compiler, compare with onnx.reference,
and turn the outcome into the exit status verify.py reads.

A repro holds only the bug: its docstring, ``build()`` (the ONNX model), ``feeds()`` (the
inputs), ``KIND`` and ``SIGNATURE``, and ends with::

    sys.exit(harness.main("onnxruntime", KIND, SIGNATURE, build, feeds))

``KIND`` says how the bug shows on the buggy release: "wrong" (a result that differs from the
reference), "error" (an exception whose text holds ``SIGNATURE``) or "crash" (the process dies
of a signal). bench/replay.py reads both constants from the repro's text, so they stay literal
assignments at the start of a line. Exit status: 1 the bug shows (the outcome ``KIND`` names),
0 it does not (the result matches the reference), 3 the case could not run or failed some
other way, so that another bug is never taken for this one.

The compilers run as dlgate's backends run them: onnxruntime with the CPU provider and
``ORT_ENABLE_ALL``, in a child process so that a crash is observed (a signal) rather than
suffered; TVM through ``from_onnx(..., keep_params_in_input=False)``, ``tvm.compile`` with
``relax.get_default_pipeline(llvm)`` and the Relax VM. The printed lines are the evidence
VERIFIED.md quotes, so their wording is part of the contract.

    python harness.py --child FOLDER   (internal: the onnxruntime child)
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import numpy as np

#: Exit statuses.
SHOWS, ABSENT, COULD_NOT_RUN = 1, 0, 3
#: Seconds the onnxruntime child may take before the case counts as not run.
CHILD_TIMEOUT = 300
#: How each compiler's failure is named, how much text before the signature is quoted, and
#: what a pass of an "error" bug is called (TVM's errors are raised while compiling).
STYLE = {"onnxruntime": {"error": "error", "context": 80, "passed": ""},
         "tvm": {"error": "compile error", "context": 60, "passed": "compiles and "}}


class Crashed(Exception):
    """The compiler's process died of a signal."""

    def __init__(self, signal: int):
        super().__init__(f"killed by signal {signal}")
        self.signal = signal


class Raised(Exception):
    """The compiler raised; ``text`` is ``Type: message`` on one line."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


class NotRun(Exception):
    """The case did not reach the compiler (the child failed for another reason)."""


def one_line(e: BaseException) -> str:
    return " ".join(f"{type(e).__name__}: {e}".split())


def run_onnxruntime(model, feeds: dict) -> list:
    """The model's outputs on onnxruntime, run by a child process (``child``) so that a crash
    kills the child, not the repro. Raises Crashed, Raised or NotRun."""
    import onnx

    with tempfile.TemporaryDirectory(prefix="replay-repro-") as folder:
        onnx.save(model, os.path.join(folder, "model.onnx"))
        np.savez(os.path.join(folder, "inputs.npz"), **feeds)
        try:
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", folder],
                                  capture_output=True, text=True, timeout=CHILD_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise NotRun(f"onnxruntime did not finish in {CHILD_TIMEOUT} s") from None
        if proc.returncode < 0:
            raise Crashed(-proc.returncode)
        if proc.returncode != 0:
            raise NotRun(f"child exited {proc.returncode}: {proc.stderr[-300:]}")
        err_path = os.path.join(folder, "error.txt")
        if os.path.exists(err_path):
            with open(err_path) as f:
                raise Raised(" ".join(f.read().split()))
        with np.load(os.path.join(folder, "outputs.npz")) as data:
            return [data[f"arr_{i}"] for i in range(len(data.files))]


def child(folder: str) -> int:
    """Run ``folder``/model.onnx on ``folder``/inputs.npz; write outputs.npz, or error.txt when
    onnxruntime raises. A crash leaves neither: the parent sees the signal."""
    import onnxruntime as ort

    with np.load(os.path.join(folder, "inputs.npz")) as data:
        inputs = dict(data)
    try:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(os.path.join(folder, "model.onnx"), so, providers=["CPUExecutionProvider"])
        outs = sess.run(None, inputs)
    except Exception as e:
        with open(os.path.join(folder, "error.txt"), "w") as f:
            f.write(f"{type(e).__name__}: {e}")
        return 0
    np.savez(os.path.join(folder, "outputs.npz"), *outs)
    return 0


def run_tvm(model, feeds: dict) -> list:
    """The model's outputs on TVM, by the path dlgate's TVM backend takes. Raises Raised."""
    try:
        import tvm
        from tvm import relax
        from tvm.relax.frontend.onnx import from_onnx

        mod = from_onnx(model, keep_params_in_input=False)
        target = tvm.target.Target("llvm")
        ex = tvm.compile(mod, target=target, relax_pipeline=relax.get_default_pipeline(target))
        vm = relax.VirtualMachine(ex, tvm.cpu(0))
        out = vm["main"](*[tvm.runtime.tensor(feeds[i.name]) for i in model.graph.input])
        if hasattr(out, "numpy"):
            return [out.numpy()]
        if type(out).__name__ in ("Shape", "ShapeTuple"):  # an ONNX Shape output comes back as a shape
            return [np.array([int(d) for d in out], dtype=np.int64)]
        return [o.numpy() for o in out]
    except Exception as e:
        raise Raised(one_line(e)) from e


RUNNERS = {"onnxruntime": run_onnxruntime, "tvm": run_tvm}


def reference(model, feeds: dict) -> list:
    """The expected outputs: the model checked (onnx.checker, full check) and run by onnx.reference."""
    import onnx
    from onnx.reference import ReferenceEvaluator

    onnx.checker.check_model(model, full_check=True)
    return ReferenceEvaluator(model).run(None, feeds)


def compare(compiler: str, got: list, expected: list, rtol: float = 1e-3, atol: float = 1e-3) -> tuple:
    """(same, line): whether every output matches the reference in shape, dtype and value, and
    the line that says so or shows the first output that differs."""
    for g, r in zip(got, expected):
        if g.shape != r.shape or g.dtype != r.dtype or not np.allclose(g, r, rtol=rtol, atol=atol):
            return False, (f"wrong result: {compiler} {g.dtype}{list(g.shape)} {g.ravel()[:6]} vs reference "
                           f"{r.dtype}{list(r.shape)} {r.ravel()[:6]}")
    return True, f"matches the reference: {[(g.dtype.name, list(g.shape)) for g in got]}"


def main(compiler: str, kind: str, signature: str, build, feeds, check=None) -> int:
    """Build the model, run it on ``compiler`` and on the reference, print one line of evidence
    and return the exit status: 1 when the outcome is the one ``kind`` (and ``signature``) names,
    0 when the result matches, 3 otherwise. ``check(got, expected) -> (same, line)`` replaces
    ``compare`` where a bug is best shown another way."""
    if compiler not in RUNNERS or kind not in ("wrong", "error", "crash"):
        print(f"harness: unknown compiler {compiler!r} or kind {kind!r}")
        return COULD_NOT_RUN
    style = STYLE[compiler]
    try:
        model, inputs = build(), feeds()
        expected = reference(model, inputs)
    except Exception as e:  # the case itself is broken: nothing about the compiler is known
        print(f"could not run: the model or its reference failed: {one_line(e)[:300]}")
        return COULD_NOT_RUN
    try:
        got = RUNNERS[compiler](model, inputs)
    except Crashed as e:
        print(f"{compiler} crashed: {e}")
        return SHOWS if kind == "crash" else COULD_NOT_RUN
    except Raised as e:
        if kind == "error" and signature in e.text:
            at = max(0, e.text.index(signature) - style["context"])
            print(f"{style['error']}: ...{e.text[at:][:300]}")
            return SHOWS
        print(f"could not run: {e.text[:300]}")
        return COULD_NOT_RUN
    except NotRun as e:
        print(f"could not run: {e}")
        return COULD_NOT_RUN
    same, line = (check or (lambda g, r: compare(compiler, g, r)))(got, expected)
    if not same:
        print(line if kind == "wrong" else f"{line} (not this bug)")
        return SHOWS if kind == "wrong" else COULD_NOT_RUN
    print(f"{style['passed'] if kind == 'error' else ''}{line}")
    return ABSENT


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2]))
    print("harness.py is run by the repros (python bench/replay/repro/<id>.py)", file=sys.stderr)
    sys.exit(2)
