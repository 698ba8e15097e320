"""ort-convinteger-absent-zero-point: onnxruntime's ConvInteger treated an omitted (empty-name) x_zero_point as present and crashed.

ConvInteger's optional inputs are skipped by an empty name; the CPU kernel (conv_integer.cc)
only counted the inputs, so with x_zero_point omitted and w_zero_point given it dereferenced
the missing tensor and the process died.
onnxruntime runs in a child process (default CPU provider, all graph optimizations on, as
dlgate's onnxruntime backend runs it), so a crash is seen rather than suffered.
Exit 1 if the bug shows, 0 if not, 3 if the script could not run the case at all.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

#: How the bug shows on the buggy release: "wrong" (a result that differs from the reference),
#: "error" (an exception whose text holds SIGNATURE) or "crash" (the process dies of a signal).
KIND = 'crash'
SIGNATURE = ''


def build():
    w = numpy_helper.from_array(np.random.default_rng(1).integers(0, 255, (1, 1, 2, 2)).astype(np.uint8), "w")
    w_zero_point = numpy_helper.from_array(np.array(3, np.uint8), "w_zero_point")
    node = helper.make_node("ConvInteger", ["x", "w", "", "w_zero_point"], ["y"])
    graph = helper.make_graph(
        [node], "convinteger_absent_zero_point",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 1, 3, 3])],
        initializer=[w, w_zero_point])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def feeds():
    rng = np.random.default_rng(0)
    return {"x": rng.integers(0, 255, (1, 1, 4, 4)).astype(np.uint8)}


def child(folder):
    """Run the saved model on onnxruntime; write outputs.npz or error.txt into ``folder``."""
    import onnxruntime as ort

    inputs = dict(np.load(os.path.join(folder, "inputs.npz")))
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


def main():
    model = build()
    x = feeds()
    expected = ReferenceEvaluator(model).run(None, x)
    with tempfile.TemporaryDirectory(prefix="replay-repro-") as folder:
        onnx.save(model, os.path.join(folder, "model.onnx"))
        np.savez(os.path.join(folder, "inputs.npz"), **x)
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", folder],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode < 0:
            print(f"onnxruntime crashed: killed by signal {-proc.returncode}")
            return 1 if KIND == "crash" else 3
        if proc.returncode != 0:
            print(f"could not run: child exited {proc.returncode}: {proc.stderr[-300:]}")
            return 3
        err_path = os.path.join(folder, "error.txt")
        if os.path.exists(err_path):
            text = " ".join(open(err_path).read().split())
            if KIND == "error" and SIGNATURE in text:
                print(f"error: ...{text[max(0, text.index(SIGNATURE) - 80):][:300]}")
                return 1
            print(f"could not run: {text[:300]}")
            return 3
        data = np.load(os.path.join(folder, "outputs.npz"))
        got = [data[f"arr_{i}"] for i in range(len(data.files))]
    for g, r in zip(got, expected):
        if g.shape != r.shape or g.dtype != r.dtype or not np.allclose(g, r, rtol=1e-3, atol=1e-3):
            print(f"wrong result: onnxruntime {g.dtype}{list(g.shape)} {g.ravel()[:6]} vs reference {r.dtype}{list(r.shape)} {r.ravel()[:6]}")
            return 1 if KIND == "wrong" else 3
    print(f"matches the reference: {[(g.dtype.name, list(g.shape)) for g in got]}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2]))
    sys.exit(main())
