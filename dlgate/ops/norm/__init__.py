"""Normalization: BatchNormalization (inference), LayerNormalization, InstanceNormalization,
GroupNormalization, LRN, LpNormalization. Floating-point types
only; all inputs share X's dtype, except BatchNormalization's from opset 15 (scale and B of
one float type T1, mean and var of one float type T2, either possibly other than X's T)."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("batch_normalization", "instance_normalization", "group_normalization", "layer_normalization", "lrn",
             "lp_normalization", "mean_variance_normalization")
