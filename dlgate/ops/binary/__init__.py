"""Binary (and variadic) element-wise maths with NumPy-style multidirectional broadcasting.

Variadic operators have one spec per input count (a spec's arity is fixed): Max and Min
(two inputs), Max4 and Min4, Sum and Mean (three), Sum5 and Mean5."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("add", "sub", "mul", "div", "mod", "div_int", "mod_int", "pow", "max", "min", "sum", "mean", "max4",
             "min4", "sum5", "mean5")
