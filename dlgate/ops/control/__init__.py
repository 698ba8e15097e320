"""Control flow with generated subgraphs: If, Loop and Scan.

Each body (an If branch, a Loop or Scan body) is a small graph made by dlgate's own
generator (``dlgate.graph.generator.body_graph``, which the ``Ctx`` a spec samples with
carries: the graph generator driven from given input types, forward insertion only) over a modest set of bounded element-wise operators, with a few
shape-changing ones whose outputs can feed scan outputs. The body is kept in the node's
attributes as ``{"graph": Graph.to_json(), "values": [[tensor, value], ...]}`` (its
constants' values as nested lists), so a case regenerates byte for byte from its JSON and
the reducer can shrink the node's plain attributes (a trip count halves, the scan outputs
follow). The reference runs the bodies node by node with each operator's own PyTorch
implementation; the lowering writes them as ``GraphProto`` attributes
(:func:`dlgate.materialize.onnx_model.lower_graph`), adding the adapters a construct needs
(the iteration number cast to the data type, Identity where a body output is one of its
inputs, the Loop's condition output).

A body's outputs are picked among the tensors its operators produce that have the type
the construct needs (a loop-carried value keeps its type; both If branches give the
outputs the types of the If's inputs); where no operator produced one, the output is an
input passed through (an Identity written by the lowering). Operators no output depends
on are pruned. Bodies that are iterated (Loop, Scan) use no operator that grows its input
geometrically (Mul, Exp...), and a body whose value bounds, carried through every
iteration, leave a safe range for its dtype is generated again.
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("if_", "loop", "scan")
