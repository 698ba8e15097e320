"""onnxruntime's MatMul and Gemm fusions (``onnxruntime/core/optimizer``): MatMul + Add
into Gemm (``matmul_add_fusion.cc``, levels 1 and 2), MatMul + BatchNormalization into
Gemm (``matmul_bn_fusion.cc``, a level-1 rule), a Transpose folded into Gemm's transA /
transB (``gemm_transpose_fusion.cc``, a rule at levels 1 and 2), and at level 2 Gemm +
activation into ``FusedGemm`` (``gemm_activation_fusion.cc``), a scalar scale or a
last-two-axes Transpose folded into ``FusedMatMul`` (``matmul_scale_fusion.cc``,
``matmul_transpose_fusion.cc``) and MatMulInteger -> Cast -> Mul into
``MatMulIntegerToFloat`` (``matmul_integer_to_float.cc``)."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("matmul_add_fusion", "matmul_bn_fusion", "gemm_transpose_fusion", "gemm_activation_fusion",
             "matmul_scale_fusion", "matmul_transpose_fusion", "matmul_integer_to_float", "dynamic_quantize_matmul")
