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


# -- TVM 0.26.0 -> 0.27.0.post1: one failure the two releases print differently -------------------
def _share(a: str, b: str) -> bool:
    from dlgate.oracle.signature import share_key

    return share_key("compile_error", "tvm", {"message": a}) == share_key("compile_error", "tvm", {"message": b})


AND_026 = ("Check failed: (lhs.ty().MatchesCode(DLDataTypeCode::kDLBool)) is false: Expected boolean argument as "
           "LHS of && operator (logical AND), but received lv18[ax0] of type T.float16")
AND_027 = ("Check failed: (lhs.ty().MatchesCode(DLDataTypeCode::kDLBool)) is false: Expected boolean argument as "
           "LHS of && operator (logical AND), but received T.te.tensor_load(metadata[\"te.Tensor\"][0], ax0)\n"
           "# Metadata omitted. Use show_meta=True in script() method to show it. of type T.float16")
CONV = ("Binary operators must have the same datatype for both operands.  However, R.nn.conv1d(lv4, "
        "metadata[\"{}\"][0], strides=[1], padding=[0, 0], dilation=[1], groups=1, data_layout=\"NCW\", "
        "kernel_layout=\"OIW\", out_layout=\"NCW\", out_dtype=None)\n# Metadata omitted. Use show_meta=True in "
        "script() method to show it. uses datatype T.float32 on the LHS (Type of R.Tensor((35, 8, 6), "
        "dtype=\"float32\")), and datatype T.float16 on the RHS (Type of R.Tensor((13, 8, 1), dtype=\"float16\")).")
SHAPE_TYPE = "'ShapeType' object has no attribute 'shape'"
SYMBOLIC = "fails only with symbolic input dimensions (the same model with static shapes compiles): "


def test_a_failure_the_base_release_prints_otherwise_is_shared():
    """Catch: three `new` causes of the TVM 0.26 -> 0.27 replay that the base build fails
    identically on the reduced repro: a TE tensor element printed as ``lv18[ax0]`` or as
    ``T.te.tensor_load(metadata["te.Tensor"][0], ax0)`` with the printer's metadata note; a
    constant printed as ``metadata["relax.expr.Constant"][0]`` or ``metadata["ir.GenericConst"][0]``;
    one compiler message that dlgate noted on base only as failing with symbolic dimensions
    alone (the base build compiles the static form, head does not)."""
    assert _share(AND_026, AND_027)
    assert _share(CONV.format("relax.expr.Constant"), CONV.format("ir.GenericConst"))
    assert _share(SHAPE_TYPE, SYMBOLIC + SHAPE_TYPE)


def test_what_the_base_release_words_otherwise_stays_new():
    """Silent: other words stay another failure. TVM 0.26's empty IndexError against 0.27's
    bounds check on a split tuple; 0.26's broadcast message against 0.27's reworded one; a
    tensor element at another index; another dtype on the left of a conv1d."""
    assert not _share("IndexError", "Check failed: index >= 0 (-3 vs. 0) : Index out of bounds: Tuple "
                      "R.split(metadata[\"ir.GenericConst\"][0], indices_or_sections=[1, 2, 3], axis=-1)\n# Metadata "
                      "omitted. Use show_meta=True in script() method to show it. cannot be accessed with negative "
                      "index -3")
    assert not _share("Cannot broadcast num_nonzero and T.int64(3)",
                      "Cannot broadcast symbolic dimension num_nonzero with non-1 constant 3: runtime value of "
                      "symbolic dimension is unknown at compile time.")
    assert not _share(AND_026, AND_027.replace("ax0)", "ax1)"))
    assert not _share(CONV.format("ir.GenericConst"), CONV.format("ir.GenericConst").replace("T.float32", "T.int32"))
    assert not _share(SHAPE_TYPE, SYMBOLIC + "'TupleType' object has no attribute 'shape'")


# -- TVM 0.26.0: one negative-index bug, many models --------------------------------------------
def _gather(op: str, dtype: str, n: int, **attrs):
    from dlgate.graph.ir import Graph, Node
    from dlgate.ops.base import TensorType

    x, y = TensorType(dtype, (n, 1)), TensorType(dtype, (n, 1))
    return Graph(tensors=[x, y], nodes=[Node(op, dict(attrs), [0], [1])], inputs=[0], consts=[], outputs=[1],
                 opset=21)


def _wrong(pattern: str) -> dict:
    return {"kind": pattern.split(":")[0], "pattern": pattern}


def test_an_index_bug_met_in_dtypes_index_lists_and_data_is_one_cause():
    """Catch: TVM 0.26's GatherND with negative indices, reduced in four models to GatherND in
    float16, uint8 and int64 with 23 or 64 constant indices, read zeros in one, values far off
    in another, NaN in a third: one cause (each was its own row; all pass once the negative
    indices are made non-negative)."""
    from dlgate.reduce.identity import identity

    ids = [identity("mismatch", "tvm", None, _gather("GatherND", dt, n, batch_dims=0, indices=[[0]] * n),
                    comparison=_wrong(p))
           for dt, n, p in (("float16", 23, "values:zero"), ("uint8", 64, "values:far"),
                            ("int64", 15, "values:near"), ("float32", 9, "nonfinite:NaN:extra"))]
    assert len({i["cause"] for i in ids}) == 1
    assert len({i["fingerprint"] for i in ids}) == 4  # the fingerprints stay apart


def test_operators_that_compute_keep_their_wrong_value_pattern():
    """Silent: the pattern still parts causes where values are computed (ReduceMax off by one
    against ReduceMax giving zeros, as before), GatherND stays apart from GatherElements, and a
    short attribute list (probed by the reducer) still parts regimes."""
    from dlgate.reduce.identity import identity

    nd = identity("mismatch", "tvm", None, _gather("GatherND", "float16", 9, batch_dims=0, indices=[[0]] * 9),
                  comparison=_wrong("values:far"))
    el = identity("mismatch", "tvm", None, _gather("GatherElements", "float16", 9, axis=0, indices=[[0]] * 9),
                  comparison=_wrong("values:far"))
    assert nd["cause"] != el["cause"]
    short = [identity("mismatch", "tvm", None, _gather("GatherND", "float16", 2, batch_dims=0, indices=ix),
                      comparison=_wrong("values:far")) for ix in ([[0], [1]], [[0], [-1]])]
    assert short[0]["cause"] != short[1]["cause"]
    rm = [identity("mismatch", "tvm", None, _gather("ReduceMax", "float32", 3, axes=[0], keepdims=1),
                   comparison=_wrong(p)) for p in ("values:offset", "values:zero")]
    assert rm[0]["cause"] != rm[1]["cause"]


def test_tvm_025_and_026_spellings_of_one_failure_are_shared():
    """Catch: TVM 0.25 and 0.26 on one reduced repro (the 0.25 -> 0.26 replay): ``typebool``
    against ``typeT.bool``; Relax's struct info, a type from 0.26 (``TupleStructInfo``,
    ``struct info``, ``'TensorStructInfo' object``). Silent: another dtype, or another
    attribute missing, stays apart."""
    assert _share("Cannot decide min_value for typebool", "Cannot decide min_value for typeT.bool")
    assert not _share("Cannot decide min_value for typebool", "Cannot decide min_value for typeT.int8")
    tup = ("Check failed: (opt) is false: The struct info of Tuple must be TupleStructInfo, but expression lv has "
           "struct info R.Tensor((3, 9, 1, 7, 13), dtype=\"uint8\")")
    assert _share(tup, "Check failed: (opt) is false: The type of Tuple must be TupleType, but expression lv has "
                       "type R.Tensor((1, 1, 1, 1, 1), dtype=\"uint8\")")
    assert _share("'TensorStructInfo' object has no attribute 'fields'", "'TensorType' object has no attribute 'fields'")
    assert not _share("'TensorStructInfo' object has no attribute 'fields'",
                      "'TensorType' object has no attribute 'shape'")


def test_a_constant_printed_from_metadata_is_one_cluster_with_a_binding():
    """Catch: TVM 0.26's Range converter on ``R.size`` of a binding and of a constant (printed
    with the printer's metadata note) was two causes; one cluster. Silent: another call in
    the same words stays another cluster."""
    msg = "Cannot convert R.size({}) with type <class 'tvm.ir.expr.Call'> to `Expr`"
    meta = "metadata[\"relax.expr.Constant\"][0])\n# Metadata omitted. Use show_meta=True in script() method to show it."
    err = lambda m: {"type": "TypeError", "message": m, "frames": ["onnx_frontend.py:_impl_v12", "create.py:arange"]}  # noqa: E731
    one = cluster("compile_error", "tvm", err(msg.format("t4")))["id"]
    assert one == cluster("compile_error", "tvm", err(msg.replace("R.size({})", "R.size(" + meta)))["id"]
    assert one != cluster("compile_error", "tvm", err("Cannot convert R.shape(t4) to `Expr`"))["id"]


# -- rows per root cause: an attribute left out, twin checks named after their operator -----------
def _shape(start, end, dtype="float64"):
    from dlgate.graph.ir import Graph, Node
    from dlgate.ops.base import TensorType

    x, y = TensorType(dtype, (2, 3, 1, 4, 5)), TensorType("int64", (1,))
    return Graph(tensors=[x, y], nodes=[Node("Shape", {"start": start, "end": end, "lo": 0, "hi": 1}, [0], [1])],
                 inputs=[0], consts=[], outputs=[1], opset=21)


def test_shape_ignoring_start_and_end_is_one_cause():
    """Catch: TVM 0.25's Shape ignores ``start`` and ``end``. The 0.25 -> 0.26 replay reduced it
    to ``Shape(start=4)`` with ``end`` left out, ``Shape(end=2)`` with ``start`` left out, and
    ``Shape(start=-1, end=2)``; the reducer kept each left-out attribute as mattering only
    because it has no other regime to probe. Three rows for one converter bug: one now. The
    fingerprints stay apart (novelty is decided on them)."""
    from dlgate.reduce.identity import identity

    ids = [identity("shape_mismatch", "tvm", None, _shape(s, e, dt), matter=[m], comparison=_wrong("shape:dims"))
           for s, e, dt, m in ((4, None, "float64", {"end"}), (None, 2, "float64", {"start"}),
                               (-1, 2, "float64", set()), (1, 2, "int64", set()))]
    assert len({i["cause"] for i in ids}) == 1
    assert len({i["fingerprint"] for i in ids}) == 4


def test_a_probed_attribute_regime_still_parts_causes():
    """Silent: an attribute the reducer probed and found mattering still parts causes by its
    regime (a negative ``start`` against a positive one), and another wrong-value pattern or
    another class stays another cause."""
    from dlgate.reduce.identity import identity

    neg = identity("shape_mismatch", "tvm", None, _shape(-1, None), matter=[{"start"}], comparison=_wrong("shape:dims"))
    pos = identity("shape_mismatch", "tvm", None, _shape(4, None), matter=[{"start"}], comparison=_wrong("shape:dims"))
    assert neg["cause"] != pos["cause"]
    other = identity("shape_mismatch", "tvm", None, _shape(-1, None), matter=[{"start"}],
                     comparison=_wrong("shape:rank"))
    assert other["cause"] != neg["cause"]
    mism = identity("mismatch", "tvm", None, _shape(-1, None), matter=[{"start"}], comparison=_wrong("shape:dims"))
    assert mism["cause"] != neg["cause"]


_QDQ_FRAMES = ["block_builder.py:normalize", "function.pxi:tvm_ffi.core.Function.__call__",
               "qdq.cc:tvm::Type tvm::relax::{}(const tvm::Call&, const BlockBuilder&)"]


def _qdq_error(op: str, frame: str, words: str = "axis param is out of range (0)") -> dict:
    return {"type": "ValueError", "message": f"relax.{op}: {words}",
            "frames": [f.format(frame) for f in _QDQ_FRAMES]}


def _one_op(op: str):
    from dlgate.graph.ir import Graph, Node
    from dlgate.ops.base import TensorType

    x, y = TensorType("float32", ()), TensorType("uint8", ())
    return Graph(tensors=[x, y], nodes=[Node(op, {}, [0], [1])], inputs=[0], consts=[], outputs=[1], opset=21)


def test_twin_checks_named_after_their_operator_are_one_cause():
    """Catch: TVM 0.26 rejects a rank-0 tensor's axis in ``InferTypeQuantize`` and in its twin
    ``InferTypeDequantize`` with one message naming ``relax.quantize`` or
    ``relax.dequantize`` (the TVM 0.26 -> 0.27 replay's two rows for one converter bug): one
    cause. The clusters (which novelty reads) stay apart."""
    from dlgate.reduce.identity import identity

    q = identity("compile_error", "tvm", _qdq_error("quantize", "InferTypeQuantize"), _one_op("Relu"))
    d = identity("compile_error", "tvm", _qdq_error("dequantize", "InferTypeDequantize"), _one_op("Relu"))
    assert q["cause"] == d["cause"]
    assert q["cluster"] != d["cluster"]
    assert "InferType<fn>" in q["cause_text"]


def test_a_frame_named_after_another_operator_stays_another_cause():
    """Silent: a message naming ``relax.quantize`` raised in ``InferTypeDequantize`` (the name
    is masked only as a whole part, ``Dequantize`` is not ``Quantize``), other words in the
    same twin frames, and a frame that differs beyond the operator's name stay apart; with
    no operator named, the cause is the cluster."""
    from dlgate.oracle.signature import cause, cluster

    base = cause("compile_error", "tvm", _qdq_error("quantize", "InferTypeQuantize"))
    assert cause("compile_error", "tvm", _qdq_error("quantize", "InferTypeDequantize"))["id"] != base["id"]
    assert cause("compile_error", "tvm", _qdq_error("dequantize", "InferTypeDequantize",
                                                    "scale must be a scalar"))["id"] != base["id"]
    assert cause("compile_error", "tvm", _qdq_error("dequantize", "InferShapeDequantize"))["id"] != base["id"]
    plain = {"type": "ValueError", "message": "axis param is out of range", "frames": _QDQ_FRAMES[:2]}
    assert cause("compile_error", "tvm", plain) == cluster("compile_error", "tvm", plain)


def test_a_word_the_message_names_is_not_masked_on_its_own():
    """Silent: TVM's dtype check printed ``R.const(...)`` in the message of one case and not
    of another (the TVM 0.25 -> 0.26 replay); masking ``const`` in ``(const Call&`` of the
    frame split one cluster into two rows. A name is masked only as a part of a longer
    identifier: ``InferTypeQuantize``, ``infer_quantize``, ``quantize_infer``."""
    from dlgate.oracle.signature import _named_frames, cause, cluster

    frame = ["op_common.h:tvm::DataType tvm::relax::InferBinaryArithOpOutDtype(const Call&, const BlockBuilder&)"]
    with_const = {"type": "TypeError", "message": "Binary operators must have the same datatype. However, "
                  "R.add(lv, R.const(1, \"float32\")) uses datatype float64", "frames": frame}
    assert cause("compile_error", "tvm", with_const) == cluster("compile_error", "tvm", with_const)
    assert _named_frames("relax.quantize: x", ["infer_quantize", "quantize_infer", "InferTypeQuantize",
                                               "quantize", "dequantize_infer"]) == \
        ["infer_<fn>", "<fn>_infer", "InferType<fn>", "quantize", "dequantize_infer"]
