"""Unary element-wise maths: one input, one output of the same shape."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("abs", "neg", "sign", "exp", "log", "sqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan",
             "sinh", "cosh", "asinh", "acosh", "atanh", "floor", "ceil", "round", "erf", "is_nan", "is_inf")
