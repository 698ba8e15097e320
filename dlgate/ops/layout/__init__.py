"""Layout operators: data movement without arithmetic (reshape, transpose, concat, split...).

Shape-like operator inputs (Reshape's and Expand's shape, Tile's repeats, Squeeze and
Unsqueeze axes, Split sizes) are attributes of the spec and constants in the model.
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("reshape", "flatten", "transpose", "squeeze", "unsqueeze", "expand", "tile", "concat", "split",
             "depth_to_space", "space_to_depth", "shape", "size")
