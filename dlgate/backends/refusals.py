"""What each backend's refusals look like: the one table every backend's ``unsupported()``
consults, kept apart from the backends so that it is tested without the compilers
(``tests/test_refusals.py`` checks every entry against a message of the form the compiler
gives, and near misses that must stay findings).

A refusal is the compiler *declaring* that it does not handle something in a valid model
(an operator, an attribute, a dtype): a missing feature, verdict ``unsupported``, never a
finding on its own (against a base build that ran the model, head's refusal is still a
regression). Anything else a compiler raises is a ``compile_error`` or ``run_error``.

An entry is one of:

- ``type``: an exception class, by its module and qualified name (subclasses match too),
  so nothing is imported to test it;
- ``text``: a substring of ``"<exception type name>: <message>"``;
- ``code``: a TensorRT ONNX parser ``ErrorCode`` name, matched exactly against the codes
  of the parser's errors (``TensorRTParseError.codes``), never against message text.

Every entry says where the compiler says it.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mark:
    kind: str  # "type", "text" or "code"
    value: str
    where: str  # where the compiler says it


_NOT_IMPLEMENTED_ERROR = Mark("type", "builtins.NotImplementedError",
                              "Python's own \"not implemented\": raised by converters and by dlgate's "
                              "backends where they decline (an I/O dtype with no device buffer type)")

TABLE: dict = {
    "onnxruntime": (
        _NOT_IMPLEMENTED_ERROR,
        Mark("type", "onnxruntime.capi.onnxruntime_pybind11_state.NotImplemented",
             "the Python exception for a status with code NOT_IMPLEMENTED (onnxruntime_pybind_exceptions.cc)"),
        Mark("text", "NOT_IMPLEMENTED",
             "the status code in the message: '[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an "
             "implementation for Op(version) node' (session_state.cc, kernel lookup)"),
        Mark("text", "does not support double yet",
             "providers/cpu: kernels registered for float only, e.g. 'Erf does not support double yet'"),
        Mark("text", "Batchwise recurrent operations (layout == 1) are not supported",
             "providers/cpu/rnn/*.cc: LSTM/GRU/RNN with layout=1"),
        Mark("text", "InsertedPrecisionFreeCast",
             "insert_cast_transformer.cc: a node with no kernel for its types (DequantizeLinear-28 with "
             "output_dtype float16) wrapped in float32 Casts its own type constraints then reject"),
    ),
    "tvm": (
        _NOT_IMPLEMENTED_ERROR,
        Mark("type", "tvm.error.OpNotImplemented",
             "relax/frontend/onnx: no converter for an operator (a NotImplementedError subclass)"),
        Mark("text", "OpNotImplemented", "the same, when it crosses the FFI as text"),
        Mark("text", "not supported for frontend",
             "from_onnx: 'The following operators are not supported for frontend ONNX: ...'"),
        Mark("text", "operators are not supported", "the same message, other versions' wording"),
        Mark("text", "not supported yet", "converters: 'blocked quantization is not supported yet'"),
        Mark("text", "is not supported", "converters and legalization: 'mode X is not supported'"),
        Mark("text", "are not supported", "converters: 'dynamic shapes are not supported'"),
        Mark("text", "currently only supports", "converters: 'currently only supports stash_type=1'"),
        Mark("text", "Unsupported ", "converters: 'Unsupported coordinate_transformation_mode: ...'"),
    ),
    "tensorrt": (
        _NOT_IMPLEMENTED_ERROR,
        # NvOnnxParser.h ErrorCode: the parser's own verdict on each error it reports
        Mark("code", "UNSUPPORTED_NODE", "NvOnnxParser.h: 'No importer registered for op: X' (no importer)"),
        Mark("code", "UNSUPPORTED_NODE_ATTR", "NvOnnxParser.h: an attribute value the importer does not handle"),
        Mark("code", "UNSUPPORTED_NODE_INPUT", "NvOnnxParser.h: an input form the importer does not handle "
                                               "(e.g. a non-constant input it needs constant)"),
        Mark("code", "UNSUPPORTED_NODE_DATATYPE", "NvOnnxParser.h: a data type the importer does not handle "
                                                  "(float64, some integer widths)"),
        Mark("code", "UNSUPPORTED_NODE_DYNAMIC", "NvOnnxParser.h: dynamic shapes the importer does not handle"),
        Mark("code", "UNSUPPORTED_NODE_SHAPE", "NvOnnxParser.h: a shape (rank, size) the importer does not handle"),
        Mark("code", "UNSUPPORTED_GRAPH", "NvOnnxParser.h: a graph-level feature (e.g. an unsupported opset "
                                          "or IR version)"),
    ),
    "inductor": (
        _NOT_IMPLEMENTED_ERROR,
        Mark("type", "torch._dynamo.exc.Unsupported",
             "torch._dynamo: a graph break where fullgraph=True asks for none (unimplemented())"),
    ),
    "torch": (
        _NOT_IMPLEMENTED_ERROR,
    ),
    "onnx-reference": (
        _NOT_IMPLEMENTED_ERROR,
        Mark("text", "is not implemented", "onnx/reference/ops: 'Operator X is not implemented' style checks"),
        Mark("text", "not implemented yet", "onnx/reference/ops: 'mode=... not implemented yet'"),
    ),
}


#: The backends' own words for "this model's symbolic dimensions are more than I take":
#: regular expressions (case-insensitive) over ``"<type>: <message>"``, led by ``"[<phase>] "``
#: where the backend said which phase raised it (``rules.symbolic.declared``). A compile error on a
#: model with symbolic input dimensions that matches one is a refusal, and so is one the
#: backend's importer raised on a static model (a size it made symbolic itself, a NonZero
#: count: ``rules.symbolic.judge_unknown_sizes``); any other is a
#: finding when the same model compiles with static shapes (``dlgate.oracle.rules.symbolic``;
#: a backend reads its row as ``Backend.symbolic_refusals``).
SYMBOLIC: dict = {
    "tvm": (
        Mark("regex", r"requires a statically (known|typed)",
             "relax/frontend/onnx/onnx_frontend.py: 'Unsqueeze requires a statically known input rank', "
             "'GroupNormalization requires a statically typed input with rank >= 2'"),
        Mark("regex", r"\b(symbolic|dynamic)\b[^.]*\bnot (yet )?supported",
             "onnx_frontend.py: 'Squeeze with symbolic axes not supported', 'Dynamic Split not yet supported'"),
        Mark("regex", r"\bdynamic\b[^.]*\brequires\b",
             "onnx_frontend.py: 'Dynamic Tile requires known input rank and repeats length', 'Squeeze with "
             "dynamic axes requires a statically known input rank'"),
        Mark("regex", r"Dynamic size of type", "onnx_frontend.py: 'Dynamic size of type X is not supported'"),
        Mark("regex", r"(?s)^\[import\] .*only supports Tensor that has ShapeExpr shape",
             "relax/block_builder.py emit_te, raised in the importer: 'emit_te now only supports Tensor that has "
             "ShapeExpr shape', a converter's tensor whose shape symbolic dimensions left without an expression "
             "(raised by LegalizeOps after an import that took the model, the same words are a finding)"),
        Mark("regex", r"(?s)^\[import\] .*symbolic extent that cannot be proven",
             "onnx_frontend.py _check_squeeze_axes_are_unit_dims, raised in the importer: 'Squeeze axis 0 has a "
             "symbolic extent that cannot be proven to be 1 at import time'"),
        Mark("regex", r"(?s)^\[import\] .*Cannot broadcast symbolic dimension",
             "onnx_frontend.py compute_broadcast_shape, raised in the importer: 'Cannot broadcast symbolic "
             "dimension X with non-1 constant N: runtime value ... unknown at compile time'"),
    ),
    "tensorrt": (
        Mark("regex", r"UNSUPPORTED_NODE_DYNAMIC", "NvOnnxParser.h: dynamic shapes the importer does not handle"),
    ),
}


def symbolic_patterns(backend: str) -> tuple:
    """``backend``'s row of ``SYMBOLIC``, as regular expressions."""
    return tuple(m.value for m in SYMBOLIC.get(backend, ()))


def _type_names(exc: BaseException) -> set:
    return {f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__}


def matching(backend: str, exc: BaseException) -> Mark | None:
    """The first entry of ``backend``'s table that ``exc`` matches, or None."""
    types = _type_names(exc)
    text = f"{type(exc).__name__}: {exc}"
    codes = set(getattr(exc, "codes", None) or ()) if _is_parse_error(exc) else set()
    for mark in TABLE[backend]:
        if mark.kind == "type" and mark.value in types or mark.kind == "text" and mark.value in text \
                or mark.kind == "code" and mark.value in codes:
            return mark
    return None


def refused(backend: str, exc: BaseException) -> bool:
    """Whether ``exc`` is ``backend`` declaring that it does not handle something."""
    return matching(backend, exc) is not None


def _is_parse_error(exc: BaseException) -> bool:
    """Parser error codes count only on the parser's own error (dlgate.backends.tensorrt)."""
    return "dlgate.backends.tensorrt.TensorRTParseError" in _type_names(exc)
