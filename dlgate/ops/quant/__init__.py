"""Quantization: QuantizeLinear, DequantizeLinear (per tensor, per axis, blocked), their
variants with the scale a graph tensor, DynamicQuantizeLinear, MatMulInteger,
ConvInteger, QLinearMatMul, QLinearConv, and the QDQ idioms exporters write around float
operators (QDQConv, QDQMatMul, QDQAdd, QDQRelu, QDQSigmoid, and the Q -> DQ round trip
FakeQuant).

ONNX semantics, followed exactly by each ``torch``:

* Quantization ``y = saturate(round(x / y_scale) + y_zero_point)``: the division in the
  scale's precision from opset 23 (or the ``precision`` attribute's, sometimes written), in
  the common type of ``x`` and the scale before (float32 for an int32 ``x``: see the gaps),
  rounding half to even, saturation to the integer type's range; a missing zero point
  means 0 and a uint8 result unless ``output_dtype`` (opset 21+) says otherwise.
* Dequantization ``y = (x - x_zero_point) * x_scale`` in the output's precision.

Rounding ties are generated on purpose: power-of-two scales make ``x / scale`` exact in
every precision, so float16 inputs (whose steps are coarse), int32 inputs and the values
inside the QDQ idioms (sums of multiples of one scale, requantized to a scale twice as
large) land exactly on .5 boundaries often. Scales that are not powers of two are
generated only where ONNX defines the division's precision (float32 ``x`` with a float32
scale, or any float types from opset 23), so an implementation is never asked for a
result that only the precision of an unspecified intermediate decides.

Scales and zero points are constants the lowering writes (attributes hold their values,
or, where their length depends on a shape sampled later, a short list repeated along it);
``QuantizeLinearScaleInput`` and ``DequantizeLinearScaleInput`` take the scale as a graph
tensor instead. The idioms' weights are int8/uint8 constants drawn from a seed in the
attributes, as exporters store quantized weights.

Requantization (QLinearMatMul, QLinearConv, the QDQ idioms): all scales are powers of two,
so ``acc * a_scale * b_scale / y_scale`` is exact in float32 whenever the result is not
saturated (multipliers are at least 2^-14, so an accumulator beyond 2^24 saturates
anyway); onnxruntime's fused integer kernels and the float graphs then agree bit for bit
with the ONNX formula. QDQSigmoid chooses its scales so that no input the quantized grid
can hold maps within 1/500 of a step of a rounding boundary (Sigmoid's own last-bit
accuracy is left open by ONNX); ``undefined`` reports any element that still does.
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("quantize_linear", "dequantize_linear", "quantize_linear_scale_input", "dequantize_linear_scale_input",
             "dynamic_quantize_linear", "matmul_integer", "conv_integer", "q_linear_matmul", "q_linear_conv",
             "fake_quant", "qdq_conv", "qdq_matmul", "qdq_add", "qdq_relu", "qdq_sigmoid")
