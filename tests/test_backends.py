"""The backend plug-ins: CPU backends agree with PyTorch eager on generated models, every
optimization level runs, GPU-only backends say why they cannot run here, an injected TVM
miscompilation is caught, and the registry finds them all."""
from __future__ import annotations

import os
import subprocess
import sys
from functools import lru_cache

import numpy as np
import pytest

from dlgate.backends import registry
from dlgate.backends.base import Backend, BackendSpec, Model, Unavailable
from dlgate.case import make_case
from dlgate.graph.generator import GenConfig, Generator
from dlgate.graph.ir import random_values

ALL = ["inductor", "onnx-reference", "onnxruntime", "tensorrt", "torch", "tvm", "tvm-relax", "tvm-relax-invalid"]
COMMON_OPS = ("Add", "Sub", "Mul", "Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "MatMul", "Transpose",
              "Reshape", "Concat", "ReduceSum", "ReduceMean", "Softmax", "Max", "Min")
RTOL, ATOL = 1e-3, 1e-4
GPU_DEVICES = [("tensorrt", "cuda"), ("onnxruntime", "cuda"), ("onnxruntime", "tensorrt"),
               ("tvm", "cuda"), ("torch", "cuda"), ("inductor", "cuda")]


@lru_cache(maxsize=None)
def cases(ops: tuple = COMMON_OPS, n: int = 6, campaign: str = "backends", dtypes: tuple = ("float32",)) -> tuple:
    gen = Generator(GenConfig(max_nodes=5, dtypes=dtypes, ops=ops))
    return tuple(make_case(gen, "root", campaign, i) for i in range(n))


def feeds(case) -> list:
    rng = np.random.default_rng(case.index)
    return [random_values(rng, t) for t in case.graph.input_types()]


def model(case) -> Model:
    return Model(onnx=case.model_bytes, graph=case.graph)


_REFERENCE: dict = {}


def reference(case) -> tuple:
    if case.id not in _REFERENCE:
        torch = registry.load("torch")()
        _REFERENCE[case.id] = tuple(torch.run(torch.compile(model(case)), feeds(case)))
    return _REFERENCE[case.id]


def disagreement(outs, ref) -> str | None:
    if len(outs) != len(ref):
        return f"{len(outs)} outputs vs {len(ref)}"
    for k, (a, b) in enumerate(zip(outs, ref)):
        if not isinstance(a, np.ndarray):
            return f"output {k} is a {type(a).__name__}, not a NumPy array"
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"output {k}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        if not np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True):
            return f"output {k}: max abs difference {np.nanmax(np.abs(a.astype(np.float64) - b)):.3g}"
    return None


def check(backend: Backend, case) -> None:
    outs = backend.run(backend.compile(model(case)), feeds(case))
    ref = reference(case)
    assert [str(o.dtype) for o in ref] == [t.dtype for t in case.graph.output_types()]
    problem = disagreement(outs, ref)
    assert problem is None, f"{backend.name}@{backend.opt_level} on {case.graph.op_names()}: {problem}"


# -- CPU backends agree with the reference ----------------------------------------------------
@pytest.mark.parametrize("name", ["onnxruntime", "tvm", "onnx-reference", "torch"])
def test_cpu_backend_agrees_with_torch(name):
    backend = registry.load(name)()
    assert backend.device == "cpu" and backend.opt_level == backend.opt_levels[-1]
    assert backend.describe()["version"]
    for case in cases():
        check(backend, case)


@pytest.mark.parametrize("name", ["onnxruntime", "tvm", "onnx-reference"])
def test_mixed_dtypes_agree_or_are_declared_unsupported(name):
    """int64/bool inputs and outputs come back with the ONNX dtypes (or the backend refuses
    the model: declared unsupported, e.g. onnxruntime has no Where kernel for bool values, or
    a compiler's own bug, e.g. TVM 0.27's LLVM verification failure on Equal of booleans,
    which the gate reports as a compile error). Most models must run and be checked."""
    backend = registry.load(name)()
    ops = ("Add", "Mul", "Equal", "Greater", "Where", "Cast", "Relu", "Not", "And", "ReduceSum", "Concat", "Abs", "Max")
    checked = 0
    for case in cases(ops, 8, "mixed", ("float32", "int64", "bool")):
        try:
            compiled = backend.compile(model(case))
        except Exception as e:
            assert backend.unsupported(e) or "LLVM module verification failed" in str(e), \
                f"{name} failed on {case.graph.op_names()}: {e}"
            continue
        check_outputs = backend.run(compiled, feeds(case))
        problem = disagreement(check_outputs, reference(case))
        assert problem is None, f"{name} on {case.graph.op_names()}: {problem}"
        checked += 1
    assert checked >= 4, f"{name} ran only {checked} of 8 mixed-dtype models"


def test_references_are_marked():
    assert {n for n in ALL if registry.load(n).reference} == {"torch", "onnx-reference"}


@pytest.mark.parametrize("name", ["onnxruntime", "tvm"])
def test_every_opt_level_runs(name):
    cls = registry.load(name)
    for level in cls.opt_levels:
        backend = registry.create(BackendSpec(name, "cpu", level))
        assert backend.opt_level == level
        for case in cases()[:2]:
            check(backend, case)


def test_inductor_compiles_in_compile_and_agrees():
    import time

    case = cases()[0]
    eager = registry.load("inductor")(opt_level="eager")
    check(eager, case)
    backend = registry.load("inductor")()  # max-autotune-no-cudagraphs: the highest level
    compiled = backend.compile(model(case))  # compiles here, on random inputs of the right types
    t = time.perf_counter()
    outs = backend.run(compiled, feeds(case))
    assert time.perf_counter() - t < 2.0, "run recompiled: compile did not warm the compiled module"
    assert disagreement(outs, reference(case)) is None


def test_onnxruntime_threads_option():
    backend = registry.load("onnxruntime")(intra_op_threads=2)
    sess = backend.compile(model(cases()[0]))[0]
    assert sess.get_session_options().intra_op_num_threads == 2
    check(backend, cases()[0])


# -- unsupported vs failure -----------------------------------------------------------------------
def test_unsupported_declarations():
    from dlgate.backends.onnxruntime import OnnxRuntime
    from dlgate.backends.tvm import TVM

    celu = make_case(Generator(GenConfig(max_nodes=1, dtypes=("float32",), ops=("Celu",))), "r", "c", 0)
    tvm = TVM()
    with pytest.raises(Exception) as e:
        tvm.compile(model(celu))
    assert tvm.unsupported(e.value), e.value
    acos64 = make_case(Generator(GenConfig(max_nodes=1, dtypes=("float64",), ops=("Acos",))), "r", "c", 0)
    ort = OnnxRuntime(opt_level="disable")
    with pytest.raises(Exception) as e:
        ort.compile(model(acos64))
    assert ort.unsupported(e.value), e.value
    for backend in (tvm, ort, registry.load("onnx-reference")(), registry.load("inductor")()):
        assert not backend.unsupported(ValueError("wrong result")), backend.name


# -- GPU-only backends and devices --------------------------------------------------------------
@pytest.mark.parametrize("name,device", GPU_DEVICES)
def test_gpu_backend_says_why_it_cannot_run(name, device):
    cls = registry.load(name)
    reason = cls.unavailable_reason(device)
    if reason is None:  # a machine with a GPU: it must construct
        cls(device=device)
        return
    assert isinstance(reason, str) and len(reason) > 10
    assert any(k in reason for k in ("CUDA", "GPU", "not installed", "Provider", "onnxruntime-gpu")), reason
    with pytest.raises(Unavailable, match="cannot|CUDA|GPU|installed|Provider"):
        cls(device=device)


def test_tensorrt_reason_without_gpu():
    import torch

    from dlgate.backends.tensorrt import NO_GPU, TensorRT

    with pytest.raises(Unavailable, match="does not run on 'cpu'"):
        TensorRT(device="cpu")
    if not torch.cuda.is_available():
        assert TensorRT.unavailable_reason("cuda") == NO_GPU
        with pytest.raises(Unavailable, match=NO_GPU):
            TensorRT(device="cuda")


@pytest.mark.parametrize("name,device", GPU_DEVICES)
def test_gpu_backend_agrees_with_torch(name, device):
    reason = registry.load(name).unavailable_reason(device)
    if reason:
        pytest.skip(f"{name} on {device}: {reason}")
    backend = registry.load(name)(device=device)
    for case in cases()[:2]:
        check(backend, case)


def test_bad_device_and_level():
    with pytest.raises(Unavailable, match="does not run on 'tpu'"):
        registry.load("tvm")(device="tpu")
    with pytest.raises(ValueError, match="unknown optimization level 'O9'"):
        registry.load("onnxruntime")(opt_level="O9")


# -- TVM miscompilation injection -------------------------------------------------------------------
def _with_and_without(op_name: str):
    pool = cases(("Sigmoid", "Add", "Mul", "Relu", "Tanh"), 12, "inject")
    with_op = next(c for c in pool if op_name in c.graph.op_names())
    without = next(c for c in pool if op_name not in c.graph.op_names())
    return with_op, without


def test_tvm_extra_passes_inject_a_miscompilation():
    from dlgate.backends.testing import rewrite_op_pass

    with_sigmoid, without = _with_and_without("Sigmoid")
    good = registry.load("tvm")()
    check(good, with_sigmoid)
    forms = [lambda: rewrite_op_pass("relax.sigmoid", "relax.tanh"),  # a callable returning a pass
             rewrite_op_pass("relax.sigmoid", "relax.tanh"),  # a pass
             "dlgate.backends.testing:sigmoid_to_tanh"]  # a name, for options that travel as text
    for form in forms:
        bad = registry.load("tvm")(extra_passes=[form])
        outs = bad.run(bad.compile(model(with_sigmoid)), feeds(with_sigmoid))
        assert disagreement(outs, reference(with_sigmoid)) is not None, f"{form!r} changed nothing"
        check(bad, without)  # models without the operator still agree


def test_tvm_add_to_subtract():
    with_add, without = _with_and_without("Add")
    bad = registry.load("tvm")(opt_level="zero", extra_passes=["dlgate.backends.testing:add_to_subtract"])
    outs = bad.run(bad.compile(model(with_add)), feeds(with_add))
    assert disagreement(outs, reference(with_add)) is not None
    check(bad, without)


# -- registry -------------------------------------------------------------------------------------------
def test_registry_names():
    assert registry.names() == ALL


def test_registry_unknown_name_lists_known():
    with pytest.raises(KeyError) as e:
        registry.load("nope")
    msg = str(e.value)
    assert "unknown backend 'nope'" in msg and all(n in msg for n in ALL)


def test_registry_module_class_path():
    from dlgate.backends.onnxruntime import OnnxRuntime

    assert registry.load("dlgate.backends.onnxruntime:OnnxRuntime") is OnnxRuntime
    with pytest.raises(KeyError, match="cannot load backend"):
        registry.load("dlgate.backends.nothere:X")
    with pytest.raises(KeyError, match="not a dlgate.backends.base.Backend subclass"):
        registry.load("dlgate.backends.base:Model")


def test_listing_and_loading_imports_nothing_heavy():
    code = ("import sys\nfrom dlgate.backends import registry\n"
            "classes = [registry.load(n) for n in registry.names()]\n"
            "print(sorted(m for m in ('torch', 'tvm', 'onnxruntime', 'tensorrt') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_onnxruntime_declined_features_are_unsupported_not_findings():
    from dlgate.backends.onnxruntime import OnnxRuntime

    ort_backend = OnnxRuntime.__new__(OnnxRuntime)
    for msg in ("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for Det(22)",
                "[ONNXRuntimeError] : 1 : FAIL : LSTM operator does not support double yet",
                "[ONNXRuntimeError] : 1 : FAIL : layout_ == 0 was false. Batchwise recurrent operations "
                "(layout == 1) are not supported. If you need support create a github issue with justification.",
                "[ONNXRuntimeError] : 1 : FAIL : Type Error: Type (tensor(float)) of output arg "
                "(InsertedPrecisionFreeCast_t1) of node (n0_DequantizeLinear) does not match expected type "
                "(tensor(float16))."):
        assert ort_backend.unsupported(RuntimeError(msg)), msg
    assert not ort_backend.unsupported(RuntimeError("[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned "
                                                    "while running Conv node"))


def test_tvm_returns_shape_outputs_as_int64_arrays():
    """An output computed by ONNX Shape comes back from Relax as a Shape object: the backend
    hands on its values as int64, like every other runtime."""
    from dlgate.probe.single import single_op_graph, single_op_model

    g = single_op_graph("Shape", ("float32",), 18, 0)
    xs = [np.zeros(g.tensors[t].shape, np.float32) for t in g.inputs]
    tvm = registry.load("tvm")()
    got = tvm.run(tvm.compile(Model(single_op_model(g, 0), g)), xs)
    want = g.tensors[g.inputs[0]].shape[g.nodes[0].attrs["lo"]:g.nodes[0].attrs["hi"]]
    assert got[0].dtype == np.int64 and got[0].tolist() == list(want)


def test_tvm_declined_features_are_unsupported_but_crashes_are_not():
    from dlgate.backends.tvm import TVM

    tvm_backend = TVM.__new__(TVM)
    for msg in ("DequantizeLinear blocked quantization is not supported yet.",
                "QuantizeLinear with non-default precision attribute is not supported yet.",
                "Unsupported coordinate_transformation_mode: half_pixel_symmetric",
                "GroupNormalization currently only supports stash_type=1."):
        assert tvm_backend.unsupported(ValueError(msg)), msg
    for msg in ("Binary operators must have the same datatype for both operands.",
                "Missing outputs during conversion. Expected 2 but Got 1 in MaxPool.",
                "unknown intrinsic tirx.cosh"):
        assert not tvm_backend.unsupported(TypeError(msg)), msg


def test_tvm_names_the_operators_it_lacks_in_one_order_whatever_the_hash_seed():
    """TVM's importer lists the operators it has no converter for in a Python set's order,
    which each process's string hash seed decides; the backend sorts them, so a model gets
    one message, one signature and one journal line in every run (a resumed run included)."""
    script = (
        "import onnx\n"
        "from onnx import TensorProto, helper\n"
        "from dlgate.backends import registry\n"
        "from dlgate.backends.base import Model\n"
        "x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [2, 3, 3])\n"
        "outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in 'abcd']\n"
        "nodes = [helper.make_node(op, ['x'], [n]) for op, n in zip(['Det', 'Celu', 'LpNormalization', 'Bernoulli'], "
        "'abcd')]\n"
        "m = helper.make_model(helper.make_graph(nodes, 'g', [x], outs), opset_imports=[helper.make_opsetid('', 18)])\n"
        "tvm = registry.load('tvm')()\n"
        "try:\n"
        "    tvm.compile(Model(m.SerializeToString(), None))\n"
        "except Exception as e:\n"
        "    print(tvm.unsupported(e), e)\n")
    got = set()
    for seed in ("0", "1", "2", "3"):
        res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                             env={**os.environ, "PYTHONHASHSEED": seed})
        assert res.returncode == 0, res.stderr
        got.add(res.stdout.strip())
    assert got == {"True The following operators are not supported for frontend ONNX: "
                   "Bernoulli, Celu, Det, LpNormalization"}
