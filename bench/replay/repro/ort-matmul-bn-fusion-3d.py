"""ort-matmul-bn-fusion-3d: onnxruntime's MatMulBnFusion fused a 3-D MatMul + BatchNormalization into a Gemm.

MatMulBnFusion (matmul_bn_fusion.cc) replaced MatMul -> BatchNormalization by a Gemm without
checking that the MatMul operands are 2-D; with a [2, 5, 4] x [4, 5] MatMul the Gemm fails shape
inference and session creation fails on a valid model.
Exit 1 if the bug shows, 0 if not, 3 if the script could not run the case at all.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness

KIND = 'error'
SIGNATURE = 'MatMulBnFusion_Gemm'


def build():
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 5)).astype(np.float32), "w")]
    inits += [numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), n) for n in ("scale", "bias", "mean")]
    inits.append(numpy_helper.from_array((rng.random(5) + 0.5).astype(np.float32), "var"))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t"]),
             helper.make_node("BatchNormalization", ["t", "scale", "bias", "mean", "var"], ["y"])]
    graph = helper.make_graph(
        nodes, "matmul_bn_3d",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 5])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    return model


def feeds():
    rng = np.random.default_rng(0)
    return {"x": rng.standard_normal((2, 5, 4)).astype(np.float32)}


if __name__ == "__main__":
    sys.exit(harness.main("onnxruntime", KIND, SIGNATURE, build, feeds))
