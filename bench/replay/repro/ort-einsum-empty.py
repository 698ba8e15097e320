"""ort-einsum-empty: onnxruntime's Einsum crashed on operands with a zero-size dimension.

For 'ab,ba->a' with shapes [1, 0] and [0, 1] the contraction is over an empty axis and the result
is [0.0]; the CPU Einsum (einsum_typed_compute_processor.cc) ran its MatMul/ReduceSum helpers
on empty buffers instead of zero-filling the output and the process died.
Exit 1 if the bug shows, 0 if not, 3 if the script could not run the case at all.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness

KIND = 'crash'
SIGNATURE = ''


def build():
    node = helper.make_node("Einsum", ["a", "b"], ["y"], equation="ab,ba->a")
    graph = helper.make_graph(
        [node], "einsum_empty",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 0]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [0, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def feeds():
    return {"a": np.zeros((1, 0), np.float32), "b": np.zeros((0, 1), np.float32)}


if __name__ == "__main__":
    sys.exit(harness.main("onnxruntime", KIND, SIGNATURE, build, feeds))
