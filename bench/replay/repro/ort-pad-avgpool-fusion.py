"""ort-pad-avgpool-fusion: onnxruntime's PadFusion merged a Pad into an AveragePool that excludes padding from the count.

PadFusion (pad_fusion.cc) folds a constant zero Pad into the following pool's pads. For an
AveragePool with its own non-zero pads and count_include_pad=0 the merged pads are then excluded
from the divisor although the explicit Pad's zeros must be counted: the averages at the border
are wrong.
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
    pads = numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"]),
             helper.make_node("AveragePool", ["p"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                              count_include_pad=0)]
    graph = helper.make_graph(
        nodes, "pad_avgpool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 7, 7])],
        initializer=[pads])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 8
    return model


def feeds():
    rng = np.random.default_rng(0)
    return {"x": rng.standard_normal((1, 1, 5, 5)).astype(np.float32)}


if __name__ == "__main__":
    sys.exit(harness.main("onnxruntime", KIND, SIGNATURE, build, feeds))
