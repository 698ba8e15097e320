"""onnxruntime's eliminations and small algebraic rewrites (``onnxruntime/core/optimizer``):
the level-1 rules of ``Level1_RuleBasedTransformer`` that drop a node computing nothing
(``identity_elimination.cc``, ``slice_elimination.cc``, ``unsqueeze_elimination.cc``,
``dropout_elimination.cc``, ``expand_elimination.cc``, ``cast_elimination.cc``,
``noop_elimination.cc``, ``pre_shape_node_elimination.cc``) or merge two
(``div_mul_fusion.cc``, ``relu_clip_fusion.cc``, ``not_where_fusion.cc``); the level-1
graph transformers ``ConstantFolding``, ``CommonSubexpressionElimination``,
``ConstantSharing`` and ``TransposeOptimizer``; ``GatherSliceToSplitFusion`` (level 2);
and the float16 fallback the session always applies (``insert_cast_transformer.cc``: Casts
around float16 nodes without a CPU kernel, duplicate Casts removed) with level 4's storing
of such a node's float16 initializers as float32.

An eliminated node sits between two Negs (Unsqueezes for the Cast rules: onnxruntime's
CPU Neg has no float16 kernel, and the Casts it would put around it would blur a count
of Casts): the rules leave a node alone whose input is a graph input or whose output is
a graph output (``graph_utils::CanRemoveNode``)."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("eliminate_identity", "eliminate_slice", "unsqueeze_elimination", "eliminate_dropout",
             "expand_elimination", "cast_elimination", "remove_duplicate_cast", "noop_elimination", "div_mul_fusion",
             "fuse_relu_clip", "not_where_fusion", "constant_folding", "common_subexpression", "constant_sharing",
             "transpose_cancel", "gather_slice_to_split", "float16_fallback", "float16_initializer", "gather_to_slice")
