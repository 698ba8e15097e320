"""ort-convinteger-absent-zero-point: onnxruntime's ConvInteger treated an omitted (empty-name) x_zero_point as present and crashed.

ConvInteger's optional inputs are skipped by an empty name; the CPU kernel (conv_integer.cc)
only counted the inputs, so with x_zero_point omitted and w_zero_point given it dereferenced
the missing tensor and the process died.
Exit 1 if the bug shows, 0 if not, 3 if the script could not run the case at all.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness

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
    return model


def feeds():
    rng = np.random.default_rng(0)
    return {"x": rng.integers(0, 255, (1, 1, 4, 4)).astype(np.uint8)}


if __name__ == "__main__":
    sys.exit(harness.main("onnxruntime", KIND, SIGNATURE, build, feeds))
