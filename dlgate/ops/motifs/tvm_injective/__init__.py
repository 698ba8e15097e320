"""TVM Relax ``FuseOps``, phase 1: injective ops (reshape, transpose, strided_slice,
concatenate, broadcast_to, pad, tile...) fuse into an injective or element-wise consumer
when every path to their post-dominator is injective, giving one fused function per
chain (``reshape_transpose``, ``strided_slice_concatenate``, ``pad_relu``). Element-wise
ops likewise go into a following select. The condition each motif may break,
``injective_path``, reads the chain's first output a second time through a reduction
(ReduceMax over every axis) added to the motif's result: the path to the
post-dominator then holds a reduction and the chain does not fuse."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("tvm_reshape_transpose", "tvm_slice_concat", "tvm_layout_into_elementwise", "tvm_compare_select")
