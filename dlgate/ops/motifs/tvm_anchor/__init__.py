"""TVM Relax ``FuseOps``, phase 0: an out-element-wise-fusable anchor (convolution, matrix
product, pooling, softmax, normalization) absorbs the element-wise and broadcast ops that
follow it into one fused function, ``fused:<anchor>_<epilogue>``, when every path from the
anchor to its post-dominator is element-wise (see :mod:`dlgate.ops.motifs.tvm_common`).
The condition each motif may break, ``elementwise_consumers``, reads the anchor's output
a second time through a reduction that rejoins the epilogue: the post-dominator is then
reached through a path that is not element-wise, and the activation is not fused (the
importer's own bias add still is)."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("tvm_conv_bias_activation", "tvm_conv_transpose_bias_activation", "tvm_matmul_bias_activation",
             "tvm_diamond_fusion", "tvm_softmax_epilogue", "tvm_layer_norm_epilogue", "tvm_pool_epilogue",
             "tvm_batch_norm_activation", "tvm_matmul_activation", "tvm_attention_scores")
