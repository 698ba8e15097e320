"""Activations: element-wise non-linearities (some with float attributes), PRelu with a
unidirectionally broadcast slope, and Softmax/LogSoftmax/Hardmax along one axis."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("relu", "leaky_relu", "p_relu", "elu", "selu", "celu", "sigmoid", "hard_sigmoid", "hard_swish", "gelu",
             "softplus", "softsign", "tanh", "thresholded_relu", "mish", "softmax", "log_softmax", "hardmax", "shrink")
