"""Slice and Pad: per-axis windows cut out of, or grown around, a tensor.

Both take their configuration (starts/ends/axes/steps, pads/constant_value/axes) as ONNX
tensor inputs; here they are attributes emitted as constants. ``sample``/``requires``/
``infer`` follow ONNX's clamping and padding rules with :mod:`dlgate.ops.sym`, so they
hold on z3 terms; ``backward`` inverts them directly. The PyTorch side uses plain index
arithmetic (``index_select``): PyTorch slicing rejects negative steps and its reflect/
replicate padding only covers the trailing 1-3 dims.
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("slice", "pad")
