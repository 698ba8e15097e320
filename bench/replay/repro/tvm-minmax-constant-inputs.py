"""tvm-minmax-constant-inputs: Relax's ONNX importer folded Min/Max/Sum/Mean over constant inputs with the wrong NumPy call.

When every input is a constant the importer folds the node in NumPy, but it called the
reduction (np.max, ...) with the operands as positional arguments, so the second constant was
taken as the axis argument: import fails instead of producing the elementwise maximum.
Exit 1 if the bug shows, 0 if not, 3 if the script could not run the case at all.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator


def build():
    a = helper.make_node("Constant", [], ["a"], value=numpy_helper.from_array(np.array([1.0, 5.0, -2.0], np.float32)))
    b = helper.make_node("Constant", [], ["b"], value=numpy_helper.from_array(np.array([3.0, 0.0, 4.0], np.float32)))
    node = helper.make_node("Max", ["a", "b"], ["m"])
    add = helper.make_node("Add", ["m", "x"], ["y"])
    graph = helper.make_graph(
        [a, b, node, add], "max_constant_inputs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def run_tvm(model, feeds):
    """The path dlgate's TVM backend takes: from_onnx, TVM's default pipeline for llvm, the VM."""
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    mod = from_onnx(model, keep_params_in_input=False)
    target = tvm.target.Target("llvm")
    ex = tvm.compile(mod, target=target, relax_pipeline=relax.get_default_pipeline(target))
    vm = relax.VirtualMachine(ex, tvm.cpu(0))
    out = vm["main"](*[tvm.runtime.tensor(feeds[i.name]) for i in model.graph.input])
    if hasattr(out, "numpy"):
        return [out.numpy()]
    if type(out).__name__ in ("Shape", "ShapeTuple"):  # an ONNX Shape output comes back as a shape
        return [np.array([int(d) for d in out], dtype=np.int64)]
    return [o.numpy() for o in out]


#: What the buggy importer raises; any other exception means the case did not run.
SIGNATURE = 'only integer scalar arrays can be converted to a scalar index'


def main():
    model = build()
    feeds = {"x": np.arange(3, dtype=np.float32)}
    expected = ReferenceEvaluator(model).run(None, feeds)
    try:
        got = run_tvm(model, feeds)
    except Exception as e:
        text = " ".join(f"{type(e).__name__}: {e}".split())
        if SIGNATURE in text:
            print(f"compile error: ...{text[max(0, text.index(SIGNATURE) - 60):][:300]}")
            return 1
        print(f"could not run: {text[:300]}")
        return 3
    for g, r in zip(got, expected):
        if g.shape != r.shape or g.dtype != r.dtype or not np.allclose(g, r, rtol=1e-3, atol=1e-3):
            print(f"compiled, but wrong result (another bug): {g.ravel()[:6]} vs {r.ravel()[:6]}")
            return 3
    print(f"compiles and matches the reference: {[(g.dtype.name, list(g.shape)) for g in got]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
