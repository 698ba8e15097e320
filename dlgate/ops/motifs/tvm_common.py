"""Shared pieces of the TVM (Relax) motifs: their base class, element-wise epilogues and
the fusion-breaking second consumer.

TVM's ``FuseOps`` (``src/relax/transform/fuse_ops.cc`` over the graph partitioner of
``src/relay/analysis/graph_partitioner.cc``) groups bindings by the operator pattern
``AnnotateTIROpPattern`` gives each legalized PrimFunc (element-wise, broadcast,
injective, comm-reduce, out-element-wise-fusable, opaque). A node fuses into its
immediate post-dominator only when every path between them satisfies the node's rule:
an out-element-wise-fusable anchor (conv2d, matmul, pooling, softmax...) takes
element-wise and broadcast consumers; element-wise and broadcast ops go into an
injective or reduction consumer; injective ops into injective ones. A fused function is
named ``fused_`` plus its PrimFuncs' names in binding order, which the backend's rewrite
record reports as ``fused:<names>`` (numbering dropped)."""
from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops import motif as M
from dlgate.ops.motif import Motif

#: ONNX activation -> the PrimFunc names its Relax lowering contributes to a fused
#: function's name (HardSigmoid is written as multiply, add, clip by the importer; Clip
#: with both bounds becomes maximum, minimum after legalization).
ACTIVATIONS = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "LeakyRelu": "leaky_relu",
               "HardSigmoid": "multiply_add_clip", "Clip": "maximum_minimum"}


class TvmMotif(Motif):
    """A TVM motif: same-dtype float signatures unless it says otherwise (``types``,
    ``arity``, or ``dtypes`` itself)."""

    optimizer = "tvm"
    types = dt.FLOATS


def activation(ctx, x, names=tuple(ACTIVATIONS)) -> tuple:
    """(spec name, attrs) of an element-wise activation of ``x``; Clip gets both bounds,
    float16-representable on a float16 ``x``, so they compare alike in any precision."""
    return M.activation(ctx, x, names, half_bounds=x.dtype == dt.FLOAT16)


def named(prefixes, suffixes=tuple(ACTIVATIONS.values())) -> tuple:
    """Every ``fused:<prefix>_<suffix>`` kind."""
    return tuple(f"fused:{p}_{s}" for p in prefixes for s in suffixes)


def second_consumer(steps: list, src: int, last: int, rank: int) -> list:
    """Steps that read step ``src``'s output a second time through a reduction
    (ReduceMean over the last axis, kept) and add it to step ``last``'s output: ``src``'s
    post-dominator is then the Add, reached through a path that is not element-wise, so
    an anchor at ``src`` does not fuse its epilogue."""
    return M.reread(steps, src, last, "ReduceMean", {"keepdims": 1, "axes": [rank - 1]})
