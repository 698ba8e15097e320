"""tvm-lppool-odd-p: Relax's ONNX importer computed LpPool as (sum x^p)^(1/p) without |x|.

ONNX LpPool is (sum |x|^p)^(1/p); the default p=2 hides the missing absolute value, an odd p
(here p=1) on inputs with negative values does not. Exit 1 if the bug shows, 0 if not,
3 if the script could not run the case at all.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness

KIND = 'wrong'
SIGNATURE = ''


def build():
    node = helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], p=1)
    graph = helper.make_graph(
        [node], "lppool_p1",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model


def feeds():
    return {"x": np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)}


def check(got, expected):
    """The evidence is the size of the error and the first row, where the missing |x| turns
    negative windows' sums into wrong values; a tolerance of 1e-4 on float32 sums of four."""
    err = float(np.max(np.abs(got[0] - expected[0])))
    return err <= 1e-4, (f"max |tvm - reference| = {err:.4g}; tvm[0,0,0,:3]={got[0][0, 0, 0, :3]}, "
                         f"ref={expected[0][0, 0, 0, :3]}")


if __name__ == "__main__":
    sys.exit(harness.main("tvm", KIND, SIGNATURE, build, feeds, check))
