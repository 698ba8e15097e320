"""ort-qdq-mixed-scale-types: onnxruntime's QDQ pair check compared the Q scale's type with itself and threw on a float32/float16 scale pair.

IsQDQPairSupported (qdq_util.cc) tested q_scale.data_type() != q_scale.data_type() instead of
the DQ scale's type, so a QuantizeLinear with a float32 scale feeding a DequantizeLinear with a
float16 scale (valid since opset 19) passed the check and the QDQ optimizers then read the float16
scale as float: session creation failed.
Exit 1 if the bug shows, 0 if not, 3 if the script could not run the case at all.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness

KIND = 'error'
SIGNATURE = 'Exception during initialization'


def build():
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "q_scale"),
             numpy_helper.from_array(np.array(128, np.uint8), "zero_point"),
             numpy_helper.from_array(np.array(0.05, np.float16), "dq_scale")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "q_scale", "zero_point"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "dq_scale", "zero_point"], ["d"]),
             helper.make_node("Relu", ["d"], ["y"])]
    graph = helper.make_graph(
        nodes, "qdq_mixed_scale_types",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 3])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


def feeds():
    rng = np.random.default_rng(0)
    return {"x": rng.standard_normal((2, 3)).astype(np.float32)}


if __name__ == "__main__":
    sys.exit(harness.main("onnxruntime", KIND, SIGNATURE, build, feeds))
