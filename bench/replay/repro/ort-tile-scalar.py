"""ort-tile-scalar: onnxruntime's CPU Tile refused a rank-0 input.

Tile of a scalar with an empty repeats tensor is the scalar itself (the spec asks for repeats of
the input's rank, here 0); the CPU kernel (tile.cc) rejected any input of rank below 1.
Exit 1 if the bug shows, 0 if not, 3 if the script could not run the case at all.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness

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
    return model


def feeds():
    return {"x": np.array(2.5, np.float32)}


if __name__ == "__main__":
    sys.exit(harness.main("onnxruntime", KIND, SIGNATURE, build, feeds))
