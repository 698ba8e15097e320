"""tvm-minmax-constant-inputs: Relax's ONNX importer folded Min/Max/Sum/Mean over constant inputs with the wrong NumPy call.

When every input is a constant the importer folds the node in NumPy, but it called the
reduction (np.max, ...) with the operands as positional arguments, so the second constant was
taken as the axis argument: import fails instead of producing the elementwise maximum.
Exit 1 if the bug shows, 0 if not, 3 if the script could not run the case at all.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness

KIND = 'error'
SIGNATURE = 'only integer scalar arrays can be converted to a scalar index'


def build():
    a = helper.make_node("Constant", [], ["a"], value=numpy_helper.from_array(np.array([1.0, 5.0, -2.0], np.float32)))
    b = helper.make_node("Constant", [], ["b"], value=numpy_helper.from_array(np.array([3.0, 0.0, 4.0], np.float32)))
    node = helper.make_node("Max", ["a", "b"], ["m"])
    add = helper.make_node("Add", ["m", "x"], ["y"])
    graph = helper.make_graph(
        [a, b, node, add], "max_constant_inputs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def feeds():
    return {"x": np.arange(3, dtype=np.float32)}


if __name__ == "__main__":
    sys.exit(harness.main("tvm", KIND, SIGNATURE, build, feeds))
