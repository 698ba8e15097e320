"""tvm-shape-of-scalar: Relax's ONNX importer lost the static (empty) shape of a rank-0 input to Shape.

Shape of a rank-0 tensor is the empty shape; an empty ShapeExpr is falsy, so the importer took
the runtime shape_of path meant for unknown shapes, and a following Slice, which needs a
static rank, failed to import.
Exit 1 if the bug shows, 0 if not, 3 if the script could not run the case at all.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness

KIND = 'error'
SIGNATURE = 'Slice requires a statically known input rank'


def build():
    st = numpy_helper.from_array(np.array([0], np.int64), "starts")
    en = numpy_helper.from_array(np.array([1], np.int64), "ends")
    shape = helper.make_node("Shape", ["x"], ["s"])
    sl = helper.make_node("Slice", ["s", "starts", "ends"], ["y"])
    graph = helper.make_graph(
        [shape, sl], "shape_of_scalar",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [0])],
        initializer=[st, en])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def feeds():
    return {"x": np.array(2.0, np.float32)}


if __name__ == "__main__":
    sys.exit(harness.main("tvm", KIND, SIGNATURE, build, feeds))
