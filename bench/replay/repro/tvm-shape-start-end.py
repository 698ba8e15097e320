"""tvm-shape-start-end: Relax's ONNX importer ignored Shape's start and end attributes (opset 15).

Shape-15 returns dims[start:end]; the importer reused the opset-13 converter and returned
the whole shape, [2, 3, 4, 5] instead of [3, 4] for start=1, end=-1.
Exit 1 if the bug shows, 0 if not, 3 if the script could not run the case at all.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness

KIND = 'wrong'
SIGNATURE = ''


def build():
    node = helper.make_node("Shape", ["x"], ["y"], start=1, end=-1)
    graph = helper.make_graph(
        [node], "shape_start_end",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    return model


def feeds():
    return {"x": np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)}


if __name__ == "__main__":
    sys.exit(harness.main("tvm", KIND, SIGNATURE, build, feeds))
