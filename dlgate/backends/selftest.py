"""The start-up probe: a one-node model every backend compiles and runs once when its
worker starts, on the device it was asked for, before any case. A GPU path that cannot
really run (an onnxruntime provider whose CUDA, cuDNN or TensorRT libraries do not load,
which onnxruntime answers by warning and running on the CPU; a TVM without a usable CUDA
device; a torch without CUDA) then makes the gate say "cannot run" (exit status 4),
instead of a ``compile_error`` on every case that a base build, failing the same way,
would turn into a green check."""
from __future__ import annotations

import numpy as np
from onnx import helper

from dlgate import __version__
from dlgate import dtypes as dt
from dlgate.backends.base import Model, Unavailable
from dlgate.graph.ir import Graph, Node
from dlgate.ops.base import TensorType

#: The probe's inputs: small exact float32 values, so every device gives the exact sum.
X = np.array([[1.0, 2.0, 3.0], [-4.0, 0.5, 8.0]], dtype=np.float32)
Y = np.array([[0.25, -2.0, 1.0], [4.0, 1.5, -0.125]], dtype=np.float32)


def probe_model(dtype: str = "float32", opset: int = 17) -> tuple:
    """(model, inputs, expected outputs) of ``t2 = Add(t0, t1)`` on ``dtype``[2, 3] (the
    values and their sum are exact in float16 too).

    The ONNX is written with ``onnx.helper`` here, byte for byte what ``to_onnx`` makes of
    the graph (``tests/test_startup.py`` compares them), rather than through ``to_onnx``:
    that looks the operator up in the registry, which imports every spec and PyTorch with
    them, ~2.5 s at every start of a worker (onnxruntime's, onnx.reference's) that needs
    neither."""
    t = TensorType(dtype, (2, 3))
    g = Graph([t, t, t], [Node("Add", {}, [0, 1], [2])], inputs=[0, 1], consts=[], outputs=[2], opset=opset)
    vi = [helper.make_tensor_value_info(g.name(i), dt.ONNX[dtype], [2, 3]) for i in range(3)]
    graph = helper.make_graph([helper.make_node("Add", ["t0", "t1"], ["t2"], name="n0_Add")], "dlgate",
                              vi[:2], vi[2:], doc_string="dlgate start-up probe")
    ops = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=ops, producer_name="dlgate", producer_version=__version__)
    model.ir_version = helper.find_min_ir_version_for(ops)
    x, y = X.astype(dtype), Y.astype(dtype)
    return Model(model.SerializeToString(), g), [x, y], [x + y]


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
