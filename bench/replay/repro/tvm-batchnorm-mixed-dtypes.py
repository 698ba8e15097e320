"""tvm-batchnorm-mixed-dtypes: Relax's ONNX importer failed on BatchNormalization-15 with float16 X and float32 statistics.

BatchNormalization-15 types X (T), scale/B (T1) and mean/var (T2) separately, so float16 data
with float32 parameters is valid; the importer passed the float32 parameters to
relax.op.nn.batch_norm unchanged and the op's type check rejected the mix.
Exit 1 if the bug shows, 0 if not, 3 if the script could not run the case at all.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness

KIND = 'error'
SIGNATURE = 'requires all the input tensors to have the same dtype'


def build():
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), n) for n in ("scale", "bias", "mean")]
    inits.append(numpy_helper.from_array((rng.random(3) + 0.5).astype(np.float32), "var"))
    node = helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"])
    graph = helper.make_graph(
        [node], "batchnorm_mixed_dtypes",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 3, 4])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    return model


def feeds():
    return {"x": np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float16)}


if __name__ == "__main__":
    sys.exit(harness.main("tvm", KIND, SIGNATURE, build, feeds))
