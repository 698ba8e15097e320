"""Shape computation as data: operators whose outputs are shaped by values (ConstantOfShape,
Range, NonZero, Compress, Unique), CumProd, and the idioms exporters write to compute a
shape from another tensor at run time (Shape -> Gather/Slice -> Unsqueeze/Concat -> the
consumer).

dlgate's graphs have static shapes, so every value that decides a shape is fixed at
generation time by construction:

* ConstantOfShape and Range read only constants (made by the lowering). dlgate's generator
  gives every node at least one tensor input, so these two specs take an *anchor*: a graph
  tensor whose values (and shape) do not reach the output (``value_inputs = ()``) and that
  the ONNX node does not read (the model keeps it as an unused input, or a dead branch).
  The anchor's dtype is the one the ONNX schema checks against the operator's first formal
  input (``schema.allowed``): int64 for ConstantOfShape, Range's T for Range.
* The ``...FromShape`` specs (and ``TriluComputedK``) read the *shape* of a tensor ``y``
  (its values never reach the output) and assemble a shape tensor from its dims and
  constants, spelled as exporters do: ``Shape(y)``, ``Gather`` with a scalar int64 index
  then ``Unsqueeze`` (axes as an input), or ``Slice`` of the shape, and ``Concat`` along
  axis 0 with int64 constant pieces. ``requires``/``infer`` are written in terms of y's
  dims with :mod:`dlgate.ops.sym`; sampling is concrete (``symbolic_ok = False``) and
  every spec has a ``backward``. Pieces are JSON: ``{"all": 1}`` (the whole shape),
  ``{"dim": j}`` (one dim, j possibly negative), ``{"dims": [start, end], "lo": lo, "hi":
  hi}`` (a Slice of the shape, spelled ``start``/``end``, meaning dims ``lo:hi``), ``{"const":
  c}``. ``y_shape`` is the shape sampling chose for a fresh ``y`` (a reused tensor may have
  another shape that satisfies ``requires``).
* NonZero and Compress select with a mask whose number of nonzeros is known: a constant
  mask made by the lowering, or (NonZero, float inputs) the one-per-row mask exporters
  build from an arg-max, ``Equal(ArgMax(x, axis, keepdims=1), positions)``; NonZero is
  lowered as the boolean-mask indexing idiom ``x[mask]`` (NonZero -> Transpose ->
  GatherND). Unique reads labels built from the input whose set of distinct values is
  fixed by construction (arg-max labels along an axis of size n, concatenated with
  ``0..n-1``), so its output shapes are known while their values depend on the data.
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("constant_of_shape", "range", "cum_prod", "reshape_from_shape", "expand_from_shape",
             "constant_of_shape_from_shape", "range_from_shape", "trilu_computed_k", "compress", "non_zero", "unique")
