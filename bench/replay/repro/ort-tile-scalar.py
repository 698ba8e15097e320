"""ort-tile-scalar: onnxruntime's CPU Tile refused a rank-0 input.

Tile of a scalar with an empty repeats tensor is the scalar itself (the spec asks for repeats of
the input's rank, here 0); the CPU kernel (tile.cc) rejected any input of rank below 1.
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
KIND = 'error'
SIGNATURE = 'must be atleast 1 dimensional'


def build():
    repeats = numpy_helper.from_array(np.zeros((0,), np.int64), "repeats")
    node = helper.make_node("Tile", ["x", "repeats"], ["y"])
    graph = helper.make_graph(
        [node], "tile_scalar",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
        initializer=[repeats])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def feeds():
    return {"x": np.array(2.5, np.float32)}


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
