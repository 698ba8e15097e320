"""tvm-lppool-odd-p: Relax's ONNX importer computed LpPool as (sum x^p)^(1/p) without |x|.

ONNX LpPool is (sum |x|^p)^(1/p); the default p=2 hides the missing absolute value, an odd p
(here p=1) on inputs with negative values does not. Exit 1 if the bug shows, 0 if not,
3 if the script could not run the case at all.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator


def build():
    node = helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], p=1)
    graph = helper.make_graph(
        [node], "lppool_p1",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def run_tvm(model, feeds):
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    mod = from_onnx(model, keep_params_in_input=False)
    target = tvm.target.Target("llvm")
    ex = tvm.compile(mod, target=target, relax_pipeline=relax.get_default_pipeline(target))
    vm = relax.VirtualMachine(ex, tvm.cpu(0))
    return vm["main"](*[tvm.runtime.tensor(feeds[i.name]) for i in model.graph.input]).numpy()


def main():
    model = build()
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
    expected = ReferenceEvaluator(model).run(None, {"x": x})[0]
    try:
        got = run_tvm(model, {"x": x})
    except Exception as e:  # not this bug: the case did not run
        print(f"could not run: {type(e).__name__}: {e}")
        return 3
    err = float(np.max(np.abs(got - expected)))
    print(f"max |tvm - reference| = {err:.4g}; tvm[0,0,0,:3]={got[0, 0, 0, :3]}, ref={expected[0, 0, 0, :3]}")
    return 1 if err > 1e-4 else 0


if __name__ == "__main__":
    sys.exit(main())
