"""The refusal table (dlgate/backends/refusals.py), without the compilers: every entry
recognizes a message of the form its compiler gives, near misses (internal errors that
mention support, codes that are not refusals, refusal words outside the parser's codes)
stay findings, and every backend's ``unsupported()`` consults the table."""
import pytest

from dlgate.backends import refusals as R
from dlgate.backends.tensorrt import TensorRTParseError


def exc_of(qualified: str, message: str) -> BaseException:
    """An exception whose class has the module and name ``qualified`` (what the compiler's
    own class is called), without importing the compiler."""
    module, _, name = qualified.rpartition(".")
    cls = type(name, (RuntimeError,), {"__module__": module, "__qualname__": name})
    return cls(message)


def parse_error(*codes: str, desc: str = "") -> TensorRTParseError:
    lines = "; ".join(f"{c} (node 0 X): {desc or 'error'}" for c in codes)
    return TensorRTParseError(f"TensorRT ONNX parser failed: {lines}", list(codes))


ORT_FAIL = "[ONNXRuntimeError] : 1 : FAIL : "
ORT_NOT_IMPL = "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : "
TVM_CONVERTER = "tvm.error.OpNotImplemented"

#: (backend, entry value) -> an exception of the form the compiler gives for it.
SAMPLES = {
    ("onnxruntime", "builtins.NotImplementedError"): NotImplementedError("no kernel"),
    ("onnxruntime", "onnxruntime.capi.onnxruntime_pybind11_state.NotImplemented"):
        exc_of("onnxruntime.capi.onnxruntime_pybind11_state.NotImplemented",
               ORT_NOT_IMPL + "Could not find an implementation for Erf(13) node with name 'n0'"),
    ("onnxruntime", "NOT_IMPLEMENTED"):
        exc_of("onnxruntime.capi.onnxruntime_pybind11_state.Fail",
               ORT_NOT_IMPL + "Could not find an implementation for ConvInteger(10) node with name 'n3'"),
    ("onnxruntime", "does not support double yet"):
        exc_of("onnxruntime.capi.onnxruntime_pybind11_state.Fail", ORT_FAIL + "Gelu does not support double yet"),
    ("onnxruntime", "Batchwise recurrent operations (layout == 1) are not supported"):
        exc_of("onnxruntime.capi.onnxruntime_pybind11_state.Fail",
               ORT_FAIL + "Batchwise recurrent operations (layout == 1) are not supported. If you need support "
                          "create a github issue with justification."),
    ("onnxruntime", "InsertedPrecisionFreeCast"):
        exc_of("onnxruntime.capi.onnxruntime_pybind11_state.Fail",
               ORT_FAIL + "Load model failed: Type Error: Type (tensor(float16)) of output arg "
                          "(InsertedPrecisionFreeCast_t1) of node () does not match expected type (tensor(float))."),
    ("tvm", "builtins.NotImplementedError"): NotImplementedError("Sequence inputs are not implemented"),
    ("tvm", TVM_CONVERTER): exc_of(TVM_CONVERTER, "The following operators are not supported for frontend ONNX: "
                                                  "Col2Im"),
    ("tvm", "OpNotImplemented"): exc_of("tvm.error.TVMError", "OpNotImplemented: Col2Im"),
    ("tvm", "not supported for frontend"):
        exc_of("tvm.error.TVMError", "The following operators are not supported for frontend ONNX: DFT"),
    ("tvm", "operators are not supported"): exc_of("tvm.error.TVMError", "Some operators are not supported: DFT"),
    ("tvm", "not supported yet"): ValueError("blocked quantization is not supported yet"),
    ("tvm", "is not supported"): ValueError("Resize: mode cubic with exclude_outside=1 is not supported"),
    ("tvm", "are not supported"): ValueError("Dynamic pads are not supported"),
    ("tvm", "currently only supports"): ValueError("LayerNormalization currently only supports stash_type=1"),
    ("tvm", "Unsupported "): ValueError("Unsupported coordinate_transformation_mode: tf_crop_and_resize"),
    ("tensorrt", "builtins.NotImplementedError"):
        NotImplementedError("TensorRT I/O data type DataType.FP8 has no torch equivalent here"),
    **{("tensorrt", code): parse_error(code, desc="importer declines")
       for code in ("UNSUPPORTED_NODE", "UNSUPPORTED_NODE_ATTR", "UNSUPPORTED_NODE_INPUT", "UNSUPPORTED_NODE_DATATYPE",
                    "UNSUPPORTED_NODE_DYNAMIC", "UNSUPPORTED_NODE_SHAPE", "UNSUPPORTED_GRAPH")},
    ("inductor", "builtins.NotImplementedError"): NotImplementedError("aten::_fft_r2c has no lowering"),
    ("inductor", "torch._dynamo.exc.Unsupported"):
        exc_of("torch._dynamo.exc.Unsupported", "Dynamic control flow is not supported at the moment."),
    ("torch", "builtins.NotImplementedError"): NotImplementedError("The operator 'aten::x' is not implemented"),
    ("onnx-reference", "builtins.NotImplementedError"): NotImplementedError("not implemented"),
    ("onnx-reference", "is not implemented"): RuntimeError("Operator 'DFT' with onesided=1 is not implemented."),
    ("onnx-reference", "not implemented yet"): ValueError("mode='cubic' not implemented yet"),
}

#: (backend, exception) that must stay findings: internal errors that mention support in
#: passing, codes that are not refusals, the right words in the wrong place.
NEAR_MISSES = [
    ("onnxruntime", exc_of("onnxruntime.capi.onnxruntime_pybind11_state.RuntimeException",
                           "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while running "
                           "Conv node. Name:'n1' Status Message: CUDNN failure 3: CUDNN_STATUS_NOT_SUPPORTED")),
    ("onnxruntime", exc_of("onnxruntime.capi.onnxruntime_pybind11_state.Fail",
                           ORT_FAIL + "Node (n2) Op (Reshape) [ShapeInferenceError] the supported rank is exceeded")),
    ("onnxruntime", exc_of("onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument",
                           "[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Unexpected input data type. Actual: "
                           "(tensor(double)) , expected: (tensor(float))")),
    ("onnxruntime", RuntimeError("double free or corruption; support bundle written")),
    ("tvm", exc_of("tvm.error.InternalError", "Check failed: (support_dims.size() == ndim) is false: ")),
    ("tvm", TypeError("'NoneType' object is not subscriptable")),
    ("tvm", AssertionError("the supported shapes differ: (2, 3) vs (3, 2)")),
    ("tvm", exc_of("tvm.error.TVMError", "CUDA: an illegal memory access was encountered")),
    ("tensorrt", parse_error("INVALID_NODE", desc="Assertion failed: axis is not supported in this range")),
    ("tensorrt", parse_error("INTERNAL_ERROR", desc="unsupported internal state")),
    ("tensorrt", parse_error("INVALID_GRAPH", desc="graph is not supported: cycle")),
    ("tensorrt", parse_error("MODEL_DESERIALIZE_FAILED")),
    ("tensorrt", RuntimeError("TensorRT failed to build an engine: UNSUPPORTED_NODE in a plugin")),  # not the parser's
    ("tensorrt", ValueError("UNSUPPORTED_GRAPH")),
    ("inductor", exc_of("torch._dynamo.exc.BackendCompilerFailed",
                        "backend='inductor' raised: LoweringException: unsupported dtype in a lowering")),
    ("inductor", exc_of("torch._dynamo.exc.TorchRuntimeError", "Unsupported: this is only a mention")),
    ("torch", RuntimeError("CUDA error: operation not supported on this device")),
    ("onnx-reference", ValueError("axis 3 is out of range; implemented axes are 0..2")),
    ("onnx-reference", RuntimeError("the implementation failed: shapes do not broadcast")),
]


def test_every_entry_has_a_sample_and_every_sample_an_entry():
    entries = {(b, m.value) for b, marks in R.TABLE.items() for m in marks}
    assert entries == set(SAMPLES), (entries - set(SAMPLES), set(SAMPLES) - entries)
    for b, marks in R.TABLE.items():
        for m in marks:
            assert m.kind in ("type", "text", "code") and m.where.strip(), (b, m)


@pytest.mark.parametrize("key", sorted(SAMPLES), ids=lambda k: f"{k[0]}:{k[1][:40]}")
def test_each_entry_recognizes_its_compilers_refusal(key):
    backend, value = key
    exc = SAMPLES[key]
    assert R.refused(backend, exc), (key, exc)
    if R.matching(backend, exc).value != value:  # an earlier entry of the same table may match first
        earlier = [m.value for m in R.TABLE[backend]]
        assert earlier.index(R.matching(backend, exc).value) < earlier.index(value)


@pytest.mark.parametrize("backend, exc", NEAR_MISSES, ids=lambda x: x if isinstance(x, str) else type(x).__name__)
def test_near_misses_stay_findings(backend, exc):
    assert not R.refused(backend, exc), R.matching(backend, exc)


def test_tensorrt_codes_are_judged_by_the_parser_not_by_text():
    # every UNSUPPORTED_* code the parser can give, and only those, is a refusal
    codes = [m.value for m in R.TABLE["tensorrt"] if m.kind == "code"]
    assert sorted(codes) == sorted(["UNSUPPORTED_NODE", "UNSUPPORTED_NODE_ATTR", "UNSUPPORTED_NODE_INPUT",
                                    "UNSUPPORTED_NODE_DATATYPE", "UNSUPPORTED_NODE_DYNAMIC",
                                    "UNSUPPORTED_NODE_SHAPE", "UNSUPPORTED_GRAPH"])
    # one refusal among the parser's errors makes the model refused
    assert R.refused("tensorrt", parse_error("INVALID_NODE", "UNSUPPORTED_NODE_DATATYPE"))
    # a code is matched whole: an unknown code that starts like a refusal is not one
    assert not R.refused("tensorrt", parse_error("UNSUPPORTED_NODE_FUTURE_KIND"))


def test_subclasses_of_a_refusal_type_are_refusals():
    base = type("Unsupported", (RuntimeError,), {"__module__": "torch._dynamo.exc", "__qualname__": "Unsupported"})
    sub = type("UncapturedHigherOrderOpError", (base,), {"__module__": "torch._dynamo.exc"})
    assert R.refused("inductor", sub("higher-order op"))


def _unsupported(cls, exc) -> bool:
    """``cls.unsupported`` without constructing the backend (its compiler may be absent)."""
    return cls.unsupported(object.__new__(cls), exc)


def test_every_backend_consults_the_table():
    from dlgate.backends.inductor import Inductor
    from dlgate.backends.onnx_reference import OnnxReference
    from dlgate.backends.onnxruntime import OnnxRuntime
    from dlgate.backends.tensorrt import TensorRT
    from dlgate.backends.torch_eager import TorchEager
    from dlgate.backends.tvm import TVM

    classes = {"onnxruntime": OnnxRuntime, "tvm": TVM, "tensorrt": TensorRT, "inductor": Inductor,
               "torch": TorchEager, "onnx-reference": OnnxReference}
    assert set(classes) == set(R.TABLE)
    for (backend, _), exc in SAMPLES.items():
        assert _unsupported(classes[backend], exc), (backend, exc)
    for backend, exc in NEAR_MISSES:
        assert not _unsupported(classes[backend], exc), (backend, exc)


def test_the_real_compilers_exceptions_have_the_names_the_table_gives():
    """Where the compiler is installed here, its exception class is where the table says."""
    import importlib

    checked = 0
    for marks in R.TABLE.values():
        for m in marks:
            if m.kind != "type":
                continue
            module, _, name = m.value.rpartition(".")
            try:
                mod = importlib.import_module(module)
            except ImportError:
                continue  # a compiler not installed here (tensorrt)
            cls = getattr(mod, name)
            assert f"{cls.__module__}.{cls.__qualname__}" == m.value
            checked += 1
    assert checked >= 4  # onnxruntime, tvm, torch are installed on the development machines
