"""Every graph transformer onnxruntime registers on the CPU, and what reaches each.

``registered()`` asks the installed onnxruntime: it opens a session on a one-node model
at ``ORT_ENABLE_ALL`` with VERBOSE logging and reads the transformers it applies per
level (``dlgate.backends.ort_log``). That is the denominator of rewrite coverage: every
transformer that can fire on a model of the standard ONNX domain on the CPU should fire
on some generated model.

``TRANSFORMERS`` says, per transformer, which spec reaches it (a motif of
``dlgate/ops/motifs/ort_*/`` whose ``expects`` names it, or an idiom spec), or why none
does: ``UNREACHABLE`` reasons (it cannot fire on a standard-domain model on the CPU: it
matches only nodes placed on another execution provider, only contrib operators that no
CPU rewrite makes, or needs a session option dlgate does not set) and ``GAP`` reasons
(it can fire, but dlgate does not generate what it needs). ``RULES`` does the same for the
rewrite rules inside ``Level1_RuleBasedTransformer`` and ``Level2_RuleBasedTransformer``,
which the session log does not name apart (their operator kinds do). Checked against
onnxruntime 1.32 on x86-64; ``registered()`` on another build may differ, which the
tests report.
"""
from __future__ import annotations

from functools import lru_cache

from dlgate.backends.ort_log import Fd2Capture
from dlgate.backends.ort_log import registered as parse

#: Entry kinds.
COVERED, UNREACHABLE, GAP = "covered", "unreachable", "gap"

_CUDA = "registered for the CUDA execution provider only: on the CPU it skips every node"
_CONTRIB_ONLY = "matches only the contrib operator {op}, which no CPU rewrite of a standard-domain model makes"

#: Transformer name -> (kind, the spec that reaches it or the reason none does).
TRANSFORMERS: dict = {
    # run by the session itself, around the levels (level 0 here)
    "EnsureUniqueDQForNodeUnit": (COVERED, "EnsureUniqueDQ"),
    "CastFloat16Transformer": (COVERED, "Float16Fallback"),
    "RemoveDuplicateCastTransformer": (COVERED, "RemoveDuplicateCast"),
    "MemcpyTransformer": (UNREACHABLE, "inserts copies between execution providers; a CPU-only session has one"),
    # level 1
    "Level1_RuleBasedTransformer": (COVERED, "the level-1 rules (RULES)"),
    "DoubleQDQPairsRemover": (COVERED, "DoubleQDQPairsRemover"),
    "ConstantSharing": (COVERED, "ConstantSharing"),
    "CommonSubexpressionElimination": (COVERED, "CommonSubexpression"),
    "ConstantFolding": (COVERED, "ConstantFolding"),
    "MatMulAddFusion": (COVERED, "MatMulAddFusion"),
    "ReshapeFusion": (COVERED, "ReshapeFromShape (an idiom; fires on cases with symbolic dims, where Shape is "
                               "not constant-folded first)"),
    "FreeDimensionOverrideTransformer": (UNREACHABLE, "needs the session option free_dimension_overrides, which "
                                                      "dlgate does not set"),
    "SliceConcatToSpaceToDepthFusion": (COVERED, "SliceConcatSpaceToDepth"),
    "GeluFusionL1": (COVERED, "GeluErfFusion (and the idiom GeluErfIdiom)"),
    "LayerNormFusionL1": (COVERED, "LayerNormFusion"),
    "QDQPropagationTransformer": (COVERED, "QDQPropagation"),
    "WeightBiasQuantization": (COVERED, "WeightBiasQuantization"),
    "WhereDummyDq": (COVERED, "WhereDummyDq"),
    "TransposeOptimizer": (COVERED, "TransposeCancel"),
    # level 2
    "Level2_RuleBasedTransformer": (COVERED, "the level-2 rules (RULES)"),
    "TransposeOptimizer_CPUExecutionProvider": (COVERED, "TransposeResizeNhwc"),
    "QDQS8ToU8Transformer": (COVERED, "QDQS8ToU8 (registered only where int8 QDQ is not preferred: x86-64 "
                                      "without VNNI)"),
    "QDQSelectorActionTransformer": (COVERED, "QDQDropPair (and the QDQ idioms QDQConv, QDQMatMul, QDQAdd)"),
    "GemmActivationFusion": (COVERED, "GemmActivationFusion"),
    "MatMulIntegerToFloatFusion": (COVERED, "MatMulIntegerToFloat"),
    "DynamicQuantizeMatMulFusion": (COVERED, "DynamicQuantizeMatMul"),
    "ConvActivationFusion": (COVERED, "ConvActivationFusion"),
    "GeluFusionL2": (COVERED, "GeluErfFusion (and the idiom GeluErfIdiom)"),
    "LayerNormFusionL2": (COVERED, "LayerNormFusion (before opset 17)"),
    "SimplifiedLayerNormFusion": (COVERED, "SimplifiedLayerNormFusion"),
    "AttentionFusion": (COVERED, "AttentionFusionClip (its vision-block spelling, fused into MultiHeadAttention at "
                                 "every opset; BERT's spelling, fused into Attention, needs opsets 11-12, or the "
                                 "DistilBert one at opset 13, with symbolic batch and sequence dims)"),
    "EmbedLayerNormFusion": (COVERED, "EmbedLayerNormAttention (embeddings, a layer norm and DistilBert's attention "
                                      "block at opset 13, in a model with symbolic dims: the fusion takes only a "
                                      "layer norm that feeds a com.microsoft Attention, which AttentionFusion makes "
                                      "of that spelling only with symbolic batch and sequence dims)"),
    "GatherSliceToSplitFusion": (COVERED, "GatherSliceToSplit"),
    "GatherToSliceFusion": (COVERED, "GatherToSlice (a Range whose limit is Size of a graph input: ConstantFolding "
                                     "folds a Range of constants first)"),
    "MatmulTransposeFusion": (COVERED, "MatMulTransposeFusion"),
    "BiasGeluFusion": (COVERED, "BiasGeluFusion"),
    "GroupQueryAttentionFusion": (UNREACHABLE, _CUDA),
    "SkipLayerNormFusion": (COVERED, "SkipLayerNormFusion"),
    "BiasSkipLayerNormFusion": (COVERED, "BiasSkipLayerNormFusion"),
    "FastGeluFusion": (COVERED, "FastGeluFusion"),
    "QuickGeluFusion": (COVERED, "QuickGeluFusion (and SiluIdiom)"),
    "SwiGluFusion": (UNREACHABLE, _CUDA),
    "BiasSoftmaxFusion": (UNREACHABLE, "takes only Add/Softmax nodes placed on CUDA or ROCm "
                                       "(bias_softmax_fusion.cc); on the CPU it skips every node"),
    "BiasDropoutFusion": (UNREACHABLE, "registered for CUDA and ROCm only"),
    "MatMulScaleFusion": (COVERED, "MatMulScaleFusion"),
    "MatMulActivationFusion": (UNREACHABLE, "registered for DirectML only"),
    "MatMulNBitsFusion": (COVERED, "MatMulNBitsBias (a MatMulNBits, which QDQSelectorActionTransformer makes of a "
                                   "4-bit DequantizeLinear -> MatMul: DQMatMulNBits, with a [N] bias Add that "
                                   "MatMulAddFusion left: an attention block's projections)"),
    "GroupQueryAttentionPreNormFusion": (UNREACHABLE, _CONTRIB_ONLY.format(op="GroupQueryAttention") +
                                         " (GroupQueryAttentionFusion, CUDA only, does)"),
    "QDQFinalCleanupTransformer": (COVERED, "QDQFinalCleanup (where QDQS8ToU8Transformer is registered: with the "
                                            "default session.enable_quant_qdq_cleanup=0 it removes only DQ -> Q "
                                            "pairs that level 1 left and level 2 made identities)"),
    # level 3 (layout)
    "NchwcTransformer": (COVERED, "NchwcConv (registered where MLAS has an NCHWc block size: AVX2, AVX-512)"),
    "NhwcTransformer": (COVERED, "NhwcQLinearConv"),
    "ConvAddActivationFusion": (COVERED, "ConvAddActivationFusion"),
    # level 4
    "FuseFp16InitializerToFp32NodeTransformer": (COVERED, "Float16Initializer"),
}

#: Rewrite rule -> (level, kind, spec or reason).
RULES: dict = {
    "EliminateIdentity": (1, COVERED, "EliminateIdentity"),
    "EliminateSlice": (1, COVERED, "EliminateSlice"),
    "UnsqueezeElimination": (1, COVERED, "UnsqueezeElimination"),
    "EliminateDropout": (1, COVERED, "EliminateDropout"),
    "ExpandElimination": (1, COVERED, "ExpandElimination"),
    "CastElimination": (1, COVERED, "CastElimination"),
    "CastChainElimination": (1, UNREACHABLE, "registered only with the session option "
                                             "session.enable_cast_chain_elimination"),
    "PreShapeNodeElimination": (1, GAP, "with static shapes ConstantFolding folds the Shape and its producers away "
                                        "all the same, so the rule's effect cannot be told apart"),
    "NoopElimination": (1, COVERED, "NoopElimination"),
    "DivMulFusion": (1, COVERED, "DivMulFusion"),
    "FuseReluClip": (1, COVERED, "FuseReluClip"),
    "GemmSumFusion": (1, GAP, "needs a Sum of exactly two inputs; dlgate's Sum specs take 3 or 5"),
    "GemmTransposeFusion": (1, COVERED, "GemmTransposeFusion"),
    "NotWhereFusion": (1, COVERED, "NotWhereFusion"),
    "ConvAddFusion": (1, COVERED, "ConvAddFusion"),
    "ConvMulFusion": (1, COVERED, "ConvMulFusion"),
    "ConvBNFusion": (1, COVERED, "ConvBnFusion"),
    "PadFusion": (1, COVERED, "PadConvFusion, PadAveragePoolFusion"),
    "MatmulBNFusion": (1, COVERED, "MatMulBnFusion"),
    "LabelEncoderFusion": (1, UNREACHABLE, "matches ai.onnx.ml LabelEncoder, not a standard-domain operator"),
    "ClipQuantFusion": (2, COVERED, "ClipQuantFusion"),
    "ReluQuantFusion": (2, COVERED, "ReluQuantFusion"),
}


def covering_specs(entry: tuple) -> list:
    """The spec names a COVERED entry's text names (its leading words before any note)."""
    text = entry[-1]
    head = text.split(" (")[0]
    return [w.strip() for w in head.split(",") if w.strip() and w.strip()[0].isupper() and " " not in w.strip()]


@lru_cache(maxsize=None)
def registered() -> dict:
    """Transformer name -> the levels the installed onnxruntime registers it at on the CPU
    (0: run by the session around the levels), from a VERBOSE session on a one-node model."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 0
    so.log_verbosity_level = 0
    with Fd2Capture() as log:
        ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return parse(log.text)
