"""ort-einsum-reduce-transpose: onnxruntime's Einsum mishandled a lone operand that is reduced and then transposed.

With a single operand, a reduced subscript and a permuted output ('ijk->ki') the preprocessor
(einsum_compute_preprocessor.cc) kept the pre-reduction rank when mapping subscripts to output
axes, and finalizing the output failed.
Exit 1 if the bug shows, 0 if not, 3 if the script could not run the case at all.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness

KIND = 'error'
SIGNATURE = 'running Einsum node'


def build():
    node = helper.make_node("Einsum", ["x"], ["y"], equation="ijk->ki")
    graph = helper.make_graph(
        [node], "einsum_reduce_transpose",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def feeds():
    rng = np.random.default_rng(0)
    return {"x": rng.standard_normal((2, 3, 4)).astype(np.float32)}


if __name__ == "__main__":
    sys.exit(harness.main("onnxruntime", KIND, SIGNATURE, build, feeds))
