"""tvm-topk-indices-dtype: Relax's ONNX importer returned TopK's indices as int32.

ONNX TopK's second output (Indices) is int64; the importer called relax.op.topk without
dtype="int64", so the indices came back int32.
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
    k = numpy_helper.from_array(np.array([2], np.int64), "k")
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=1)
    graph = helper.make_graph(
        [node], "topk_indices_dtype",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
        [helper.make_tensor_value_info("values", TensorProto.FLOAT, [3, 2]),
         helper.make_tensor_value_info("indices", TensorProto.INT64, [3, 2])],
        initializer=[k])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 8
    return model


def feeds():
    return {"x": np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)}


if __name__ == "__main__":
    sys.exit(harness.main("tvm", KIND, SIGNATURE, build, feeds))
