"""ort-rotary-4d-no-num-heads: onnxruntime's RotaryEmbedding demanded num_heads whenever rotary_embedding_dim was set.

RotaryEmbedding-23 needs num_heads only for a 3-D input; for a 4-D input (batch, heads, sequence,
head size) it is implied. The CPU kernel (llm/rotary_embedding.cc) enforced num_heads > 0 whenever
rotary_embedding_dim > 0, so a valid partial-rotary model failed at session creation.
Exit 1 if the bug shows, 0 if not, 3 if the script could not run the case at all.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness

KIND = 'error'
SIGNATURE = 'num_heads must be provided'


def build():
    node = helper.make_node("RotaryEmbedding", ["x", "cos", "sin"], ["y"], rotary_embedding_dim=4)
    graph = helper.make_graph(
        [node], "rotary_4d",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 8]),
         helper.make_tensor_value_info("cos", TensorProto.FLOAT, [1, 3, 2]),
         helper.make_tensor_value_info("sin", TensorProto.FLOAT, [1, 3, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


def feeds():
    rng = np.random.default_rng(0)
    return {"x": rng.standard_normal((1, 2, 3, 8)).astype(np.float32), "cos": rng.standard_normal((1, 3, 2)).astype(np.float32), "sin": rng.standard_normal((1, 3, 2)).astype(np.float32)}


if __name__ == "__main__":
    sys.exit(harness.main("onnxruntime", KIND, SIGNATURE, build, feeds))
