"""onnxruntime's low-bit weight rewrites: a MatMul whose weights are a DequantizeLinear of a
constant 4-bit or 8-bit matrix, blocked along K, becomes ``com.microsoft:MatMulNBits``
(``qdq_selectors.cc``'s DQ -> MatMul selector, run by ``QDQSelectorActionTransformer`` at
level 2; a MatMul + Add that MatMulAddFusion made a Gemm first goes the same way, the Add
becoming its bias), and a MatMulNBits read only by an Add of a constant [N] bias takes
the bias in (``matmul_nbits_fusion.cc``, ``MatMulNBitsFusion``).

The weights are written as INT4/UINT4 initializers (``Const.bits``), or int8/uint8, from
the motif's seed; the scales are float32 constants, blocked along K with a power of two of
at least 16 as the block size. onnxruntime quantizes the activations to int8 inside
MatMulNBits unless told otherwise (its ``accuracy_level`` 4, the default of
``session.qdq_matmulnbits_accuracy_level``): a deliberate approximation of about 0.5% that
no ONNX result defines, so the onnxruntime backend asks for level 1 (float32 activations),
whose results are the specification's.
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("dq_matmul_nbits", "matmul_nbits_bias")
