"""ort-matmul-scale-fusion-rank: onnxruntime's MatMulScaleFusion folded a scale whose extra leading dims broadcast the output rank.

MatMulScaleFusion (matmul_scale_fusion.cc) accepted any one-element constant as a scalar; a
scale of shape [1, 1, 1] after a 2-D MatMul broadcasts the output to rank 3, and the fused
FusedMatMul dropped that, returning [2, 4] instead of [1, 2, 4].
Exit 1 if the bug shows, 0 if not, 3 if the script could not run the case at all.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness

KIND = 'wrong'
SIGNATURE = ''


def build():
    scale = numpy_helper.from_array(np.full((1, 1, 1), 0.5, np.float32), "scale")
    nodes = [helper.make_node("MatMul", ["a", "b"], ["t"]), helper.make_node("Mul", ["t", "scale"], ["y"])]
    graph = helper.make_graph(
        nodes, "matmul_scale_rank",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4])],
        initializer=[scale])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def feeds():
    rng = np.random.default_rng(0)
    return {"a": rng.standard_normal((2, 3)).astype(np.float32), "b": rng.standard_normal((3, 4)).astype(np.float32)}


if __name__ == "__main__":
    sys.exit(harness.main("onnxruntime", KIND, SIGNATURE, build, feeds))
