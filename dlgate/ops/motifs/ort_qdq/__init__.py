"""onnxruntime's QDQ rewrites (``onnxruntime/core/optimizer/qdq_transformer``): a
QuantizeLinear -> DequantizeLinear pair (``FakeQuant``) is the unit they read. Level 1
removes a DQ -> Q pair between two Q -> DQ pairs (``double_qdq_pairs_remover.cc``; level 2
removes one left an identity by then, ``qdq_final_cleanup.cc``),
propagates a Q -> DQ pair past a Transpose or Reshape (``qdq_propagation.cc``), gives each
consumer of a DQ its own copy (``ensure_unique_dq_for_node_unit.cc``) and a Where of a
dequantized tensor and a constant a dummy DQ for the constant (``where_dummy_dq.cc``);
level 2's rules drop a Relu or Clip whose range the Q after it saturates to anyway
(``relu_quantizelinear.cc``, ``clip_quantizelinear.cc``), and its selector/action
transformer drops the DQ -> Q pair around a data-movement node with equal quantization
(``selectors_actions/qdq_selector_action_transformer.cc``; the QDQ idioms of
``dlgate.ops.quant`` cover its Conv, MatMul, Add and activation units); level 3's NHWC
transformer re-lays out QLinearConv (``nhwc_transformer.cc``).

Scales are powers of two, so every rewrite that keeps the meaning keeps the values
exactly (see ``dlgate.ops.quant``)."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("double_qdq_pairs_remover", "qdq_final_cleanup", "qdq_propagation", "ensure_unique_dq",
             "relu_quant_fusion", "clip_quant_fusion", "qdq_drop_pair", "where_dummy_dq", "nhwc_q_linear_conv",
             "qdqs8_to_u8", "weight_bias_quantization", "transpose_resize_nhwc")
