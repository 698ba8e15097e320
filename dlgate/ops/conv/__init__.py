"""Convolutions: Conv and ConvTranspose, 1-D, 2-D and 3-D, with groups, dilations, strides
and explicit (possibly asymmetric) pads or, for Conv, ``auto_pad`` (SAME_UPPER, SAME_LOWER,
VALID: the pads then follow from the input's shape, see ``auto_pads``); ConvTranspose also
with ``output_shape`` (the pads then follow from it: an even total padding per axis, split
evenly, since onnxruntime gives an odd one's extra pixel to the end where ONNX gives it to
the beginning).

Weights and bias are ordinary inputs whose shapes follow from the sampled attributes.
The output size is an arithmetic function of input size, kernel, stride, padding and
dilation, so backward insertion is left to z3 (no closed-form ``backward``).

The bias is optional in ONNX, but a spec's arity is fixed, so each operator has a
bias-free twin registered under its own name (``ConvNoBias``, ``ConvTransposeNoBias``).
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("conv", "conv_transpose")
