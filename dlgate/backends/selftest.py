"""The start-up probe: a one-node model every backend compiles and runs once when its
worker starts, on the device it was asked for, before any case. A GPU path that cannot
really run (an onnxruntime provider whose CUDA, cuDNN or TensorRT libraries do not load,
which onnxruntime answers by warning and running on the CPU; a TVM without a usable CUDA
device; a torch without CUDA) then makes the gate say "cannot run" (exit status 4),
instead of a ``compile_error`` on every case that a base build, failing the same way,
would turn into a green check."""
from __future__ import annotations

import numpy as np

from dlgate.backends.base import Model, Unavailable
from dlgate.graph.ir import Graph, Node
from dlgate.materialize.onnx_model import to_onnx
from dlgate.ops.base import TensorType

#: The probe's inputs: small exact float32 values, so every device gives the exact sum.
X = np.array([[1.0, 2.0, 3.0], [-4.0, 0.5, 8.0]], dtype=np.float32)
Y = np.array([[0.25, -2.0, 1.0], [4.0, 1.5, -0.125]], dtype=np.float32)


def probe_model(dtype: str = "float32", opset: int = 17) -> tuple:
    """(model, inputs, expected outputs) of ``t2 = Add(t0, t1)`` on ``dtype``[2, 3] (the
    values and their sum are exact in float16 too)."""
    t = TensorType(dtype, (2, 3))
    g = Graph([t, t, t], [Node("Add", {}, [0, 1], [2])], inputs=[0, 1], consts=[], outputs=[2], opset=opset)
    onnx_bytes = to_onnx(g, 0, doc="dlgate start-up probe").SerializeToString()
    x, y = X.astype(dtype), Y.astype(dtype)
    return Model(onnx_bytes, g), [x, y], [x + y]


def check_outputs(what: str, got: list, expected: list) -> None:
    """Unavailable unless ``got`` is exactly ``expected`` (dtype, shape and values): a
    device path that gives a wrong sum of six small exact numbers cannot be judged on."""
    if len(got) != len(expected):
        raise Unavailable(f"{what}: the start-up probe gave {len(got)} outputs, expected {len(expected)}")
    for g, e in zip(got, expected):
        g = np.asarray(g)
        if g.dtype != e.dtype or g.shape != e.shape or not np.array_equal(g, e):
            raise Unavailable(f"{what}: the start-up probe Add gave {g.dtype}{list(g.shape)} "
                              f"{np.array2string(g.ravel()[:6])}, expected {np.array2string(e.ravel())}")
