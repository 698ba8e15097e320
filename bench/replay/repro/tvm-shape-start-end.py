"""tvm-shape-start-end: Relax's ONNX importer ignored Shape's start and end attributes (opset 15).

Shape-15 returns dims[start:end]; the importer reused the opset-13 converter and returned
the whole shape, [2, 3, 4, 5] instead of [3, 4] for start=1, end=-1.
Exit 1 if the bug shows, 0 if not, 3 if the script could not run the case at all.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator


def build():
    node = helper.make_node("Shape", ["x"], ["y"], start=1, end=-1)
    graph = helper.make_graph(
        [node], "shape_start_end",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
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


def main():
    model = build()
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)}
    expected = ReferenceEvaluator(model).run(None, feeds)
    try:
        got = run_tvm(model, feeds)
    except Exception as e:  # not this bug: the case did not run
        print(f"could not run: {type(e).__name__}: {e}")
        return 3
    for g, r in zip(got, expected):
        if g.shape != r.shape or g.dtype != r.dtype or not np.allclose(g, r, rtol=1e-3, atol=1e-3):
            print(f"wrong result: tvm {g.dtype}{list(g.shape)} {g.ravel()[:6]} vs reference {r.dtype}{list(r.shape)} {r.ravel()[:6]}")
            return 1
    print(f"matches the reference: {[(g.dtype.name, list(g.shape)) for g in got]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
