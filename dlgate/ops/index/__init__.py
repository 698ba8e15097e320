"""Indexing and index-like operators: Gather, GatherElements, TopK, CumSum, Trilu, OneHot
and Resize.

Index tensors that must hold in-range values (Gather, GatherElements) are sampled into the
attributes as nested int lists and emitted as int64 constants, so no out-of-range index is
ever generated; those two operators are concrete-only (the index list's shape cannot be a
z3 term) and invert directly in ``backward``. K, axis, k, depth, scales and sizes are
attributes emitted as constants.
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("gather", "gather_arange", "gather_elements", "top_k", "cum_sum", "trilu", "one_hot", "resize",
             "eye_like", "gather_nd", "scatter_nd", "scatter_elements", "reverse_sequence", "tf_idf_vectorizer")
