"""tvm-squeeze-v11-axes: Relax's ONNX importer ignored Squeeze's axes attribute at opsets below 13.

Before opset 13 the axes of Squeeze are an attribute, not an input; the importer only
read the input, so Squeeze-11 with axes=[0] on a [1, 3, 1, 2] tensor squeezed every
size-1 axis and returned [3, 2] instead of [3, 1, 2].
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
    node = helper.make_node("Squeeze", ["x"], ["y"], axes=[0])
    graph = helper.make_graph(
        [node], "squeeze_v11_axes",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 1, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 8
    return model


def feeds():
    return {"x": np.random.default_rng(0).standard_normal((1, 3, 1, 2)).astype(np.float32)}


if __name__ == "__main__":
    sys.exit(harness.main("tvm", KIND, SIGNATURE, build, feeds))
