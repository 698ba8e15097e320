"""ort-batchnorm-1d: onnxruntime's CPU BatchNormalization read dims[1] of a 1-D input and aborted.

The ONNX spec lets X be 1-D of size N, with C taken as 1; the CPU kernel (batch_norm.h) read
the channel count from dims[1] unconditionally, out of range for a 1-D shape, and the process
aborted.
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
    inits = [numpy_helper.from_array(np.array([1.5], np.float32), "scale"),
             numpy_helper.from_array(np.array([0.25], np.float32), "bias"),
             numpy_helper.from_array(np.array([0.1], np.float32), "mean"),
             numpy_helper.from_array(np.array([2.0], np.float32), "var")]
    node = helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"])
    graph = helper.make_graph(
        [node], "batchnorm_1d",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    return model


def feeds():
    rng = np.random.default_rng(0)
    return {"x": rng.standard_normal(6).astype(np.float32)}


if __name__ == "__main__":
    sys.exit(harness.main("onnxruntime", KIND, SIGNATURE, build, feeds))
