"""Transformer building blocks: ONNX's own operators (Attention 23/24/25, RMSNormalization
23, RotaryEmbedding 23, Swish 24, LinearAttention 27, SwiGLU 28) and the multi-node idioms
exporters write for them at older opsets (scaled-dot-product attention with masks and a
key/value cache, RMSNorm, Gelu and SiLU decompositions, rotary embeddings, MatMul with
transposed operands, a linear layer).

References follow the ONNX function bodies node by node: every intermediate tensor is
rounded to its declared type (float16 computed in float32 and rounded at each node
boundary), so a float16 model means what the ONNX graph says. The exceptions are said
where they are: Attention and LinearAttention compute float16 in float32 and round once
(as onnxruntime and, for LinearAttention, onnx.reference do). Sizes are kept small (heads
at most 8, sequence and head sizes at most 16) so float16 sums stay accurate.
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("attention", "rms_normalization", "rotary_embedding", "swish", "swi_glu", "attention_idiom",
             "attention_idiom_where_mask", "attention_idiom_past", "rms_norm_idiom", "gelu_erf_idiom",
             "gelu_tanh_idiom", "silu_idiom", "rotary_idiom", "matmul_transposed", "linear_transposed",
             "linear_attention", "tensor_scatter", "causal_conv_with_state")
