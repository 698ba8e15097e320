"""TVM Relax ``FuseOps`` around reductions. A comm-reduce PrimFunc (sum, max, min, prod)
takes the element-wise ops that produce its input (``<ew>_sum``) but never fuses forward;
a reduction legalized together with its element-wise finish (``mean``: sum then divide)
is out-element-wise-fusable and takes an epilogue (``mean_<act>``). The ONNX importer
writes ReduceL1, ReduceL2, ReduceSumSquare and ReduceLogSumExp as element-wise ops feeding
a sum, which the same rule fuses."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("tvm_elementwise_into_reduction", "tvm_reduce_decomposition", "tvm_mean_epilogue")
