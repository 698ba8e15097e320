"""tvm-batchnorm-mixed-dtypes: Relax's ONNX importer failed on BatchNormalization-15 with float16 X and float32 statistics.

BatchNormalization-15 types X (T), scale/B (T1) and mean/var (T2) separately, so float16 data
with float32 parameters is valid; the importer passed the float32 parameters to
relax.op.nn.batch_norm unchanged and the op's type check rejected the mix.
Exit 1 if the bug shows, 0 if not, 3 if the script could not run the case at all.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator


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
SIGNATURE = 'requires all the input tensors to have the same dtype'


def main():
    model = build()
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float16)}
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
