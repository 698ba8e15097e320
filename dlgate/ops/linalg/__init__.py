"""Linear algebra: MatMul (NumPy matmul semantics), Gemm, Einsum and Det.

Contracted dimensions are kept small for float16 (``MAX_K``) so its sums stay accurate.
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("matmul", "gemm", "einsum", "det")
