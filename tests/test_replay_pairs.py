"""Rows per root cause on real release pairs: messages that one kernel's bug prints in two
dtypes are one cluster, and what the masking must not merge stays apart.

The two messages are onnxruntime 1.31.1's QuantizeLinear with an input and a scale of
different float types (float32 input and float16 scale, float16 input and float32 scale),
fixed in 1.32.0; they were two causes in the onnxruntime 1.31.1 -> 1.32.0 replay.
"""
from __future__ import annotations

from dlgate.oracle.signature import cluster, template

_MISMATCH = ("Non-zero status code returned while running QuantizeLinear node. Name:'{node}' Status Message: "
             "/onnxruntime_src/include/onnxruntime/core/framework/tensor.h:230 const T* onnxruntime::Tensor::Data() "
             "const [with T = {t}] utils::IsPrimitiveDataType<T>(dtype_) was false. Tensor {what} mismatch. "
             "T !={mangled}\n")
_PREFIX = "[ONNXRuntimeError] : 1 : FAIL : "
F32_X_F16_SCALE = _PREFIX + _MISMATCH.format(node="n8_QuantizeLinear", t="float", what="type",
                                             mangled="N11onnxruntime17PrimitiveDataTypeINS_9MLFloat16EEE")
F16_X_F32_SCALE = _PREFIX + _MISMATCH.format(node="n5_QuantizeLinear", t="onnxruntime::MLFloat16", what="type",
                                             mangled="N11onnxruntime17PrimitiveDataTypeIfEE")


def _cl(message: str) -> str:
    return cluster("run_error", "onnxruntime", {"type": "Fail", "message": message, "frames": []})["id"]


def test_one_kernel_error_in_two_cpp_dtype_spellings_is_one_cluster():
    """Catch: ``float`` against ``onnxruntime::MLFloat16`` and two mangled type names, with a
    longer spelling moving where a 300-character cut falls, are one cluster."""
    assert _cl(F32_X_F16_SCALE) == _cl(F16_X_F32_SCALE)
    assert template(F16_X_F32_SCALE).endswith("T !=<dtype>")
    bf16 = F32_X_F16_SCALE.replace("[with T = float]", "[with T = onnxruntime::BFloat16]")
    assert _cl(bf16) == _cl(F32_X_F16_SCALE)


def test_other_words_beside_a_cpp_dtype_stay_another_cluster():
    """Silent: masking dtypes merges nothing else. Other words after the dtype (a shape
    mismatch, not a type mismatch) stay apart, a text that ends past the cut is compared on
    its masked first 300 characters alone, and a word that only starts like a mangled name
    (N2 with no closing E) is kept."""
    shape = _PREFIX + _MISMATCH.format(node="n8_QuantizeLinear", t="onnxruntime::MLFloat16", what="shape",
                                       mangled="N11onnxruntime17PrimitiveDataTypeIfEE")
    assert _cl(shape) != _cl(F16_X_F32_SCALE)
    assert "N2" in template("expected N2 nodes")
    long_a = "x " * 200 + "first"
    long_b = "x " * 200 + "second"
    assert template(long_a) == template(long_b) and len(template(long_a)) <= 300


def test_a_node_name_that_normalizes_longer_does_not_move_the_cut():
    """Catch: onnxruntime 1.30.0's DequantizeLinear (float16 scale, output_dtype float32)
    failed in two models whose node names differ (``n0_DequantizeLinear`` and one an
    optimizer duplicated, ``n0_DequantizeLinear/duplicated_token_1``); the name is a quoted
    literal, masked, and must not decide where the template is cut."""
    msg = ("[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running DequantizeLinear node. "
           "Name:'{}' Status Message: /onnxruntime_src/include/onnxruntime/core/framework/tensor.h:210 "
           "T* onnxruntime::Tensor::MutableData() [with T = onnxruntime::MLFloat16] "
           "utils::IsPrimitiveDataType<T>(dtype_) was false. Tensor type mismatch. "
           "T !=N11onnxruntime17PrimitiveDataTypeIfEE\n")
    assert _cl(msg.format("n0_DequantizeLinear")) == _cl(msg.format("n0_DequantizeLinear/duplicated_token_1"))


def test_the_reducer_never_probes_a_negative_gathernd_batch_dims():
    """Catch: reducing a GatherND failure (TVM 0.26.0 -> 0.27.0.post1 replay), the attribute
    probes tried batch_dims=-2; ONNX's checker dies by SIGSEGV on it and took the run with it
    (exit 139). The spec rejects it, so the probe is never built. Silent: batch_dims 0 and 1
    of another regime stay candidates."""
    from dlgate.graph.ir import Graph, Node
    from dlgate.ops.base import TensorType
    from dlgate.reduce.candidates import reattributed

    x, y = TensorType("float16", (1, 1)), TensorType("float16", (1,))
    g = Graph(tensors=[x, y], nodes=[Node("GatherND", {"batch_dims": 0, "indices": [[0]]}, [0], [1])],
              inputs=[0], consts=[], outputs=[1], opset=21)
    assert reattributed(g, 0, {"batch_dims": -2, "indices": [[0]]}) is None
    assert reattributed(g, 0, {"batch_dims": -1, "indices": [[0]]}) is None
    assert reattributed(g, 0, {"batch_dims": 0, "indices": [[0]]}) is not None
    x2, y2 = TensorType("float16", (2, 3)), TensorType("float16", (2,))
    g2 = Graph(tensors=[x2, y2], nodes=[Node("GatherND", {"batch_dims": 1, "indices": [[1], [2]]}, [0], [1])],
               inputs=[0], consts=[], outputs=[1], opset=21)
    assert reattributed(g2, 0, {"batch_dims": 1, "indices": [[1], [2]]}) is not None
