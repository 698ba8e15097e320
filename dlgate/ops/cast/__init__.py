"""Type conversions and value-preserving element-wise ops: Cast, CastLike, Clip, Identity,
inference-mode Dropout, and Constant (a Constant node combined with a graph tensor)."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("cast", "cast_like", "clip", "identity", "dropout", "constant", "bit_cast", "bit_cast_exp2_idiom")
