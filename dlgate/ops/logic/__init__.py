"""Comparisons and boolean logic: element-wise with multidirectional broadcasting, bool
outputs; ``Not``; and ``Where``, which broadcasts its condition and both branches together."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("equal", "greater", "less", "greater_or_equal", "less_or_equal", "and_", "or_", "xor", "not_", "where")
