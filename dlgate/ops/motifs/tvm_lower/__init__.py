"""Target-specific Relax passes of TVM's default llvm pipeline
(``python/tvm/relax/backend/cpu_generic/pipeline.py``): ``DispatchSortScan`` rewrites
sort, argsort, top-k, cumsum and cumprod into the target's TOPI kernels before
legalization (``backend/dispatch_sort_scan.py``), and ``RewriteDataflowReshape``
(``src/relax/transform/rewrite_dataflow_reshape.cc``) turns a reshape kernel left
standalone inside a dataflow block into a view (``R.reshape``, no copy) when its result
is not a function output."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("tvm_sort_scan_dispatch", "tvm_dataflow_reshape")
