"""TVM Relax ``FoldConstant`` (``src/relax/transform/fold_constant.cc``): after
legalization, a ``call_tir`` whose arguments are all constants is evaluated at compile
time and replaced by its result. The ONNX importer evaluates some operators on
constants itself (Neg, Abs, Log, Reshape, Concat, Unsqueeze, Cast...), so FoldConstant
sees what it leaves: other element-wise operators of constants, and the Relax operators
it writes around constant weights (Gemm's transposed B and beta-scaled C, a convolution
bias reshaped to broadcast). Each motif expects ``pass:FoldConstant`` and breaks it by
making the folded operand live (a graph input) or by leaving the importer nothing to
write around the constants."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("tvm_constant_subexpression", "tvm_gemm_constant_weights", "tvm_conv_bias_fold")
