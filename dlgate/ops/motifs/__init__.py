"""Motif families: one folder per optimizer rewrite family, one file per motif (see
:mod:`dlgate.ops.motif`), laid out like the operator families; ``ort_common`` and
``tvm_common`` hold what the onnxruntime and the TVM motifs share."""

#: The motif families, in the order the registry lists and draws their specs (part of generation's
#: determinism; see registry.py). Each is a folder here.
FAMILIES = ("ort_conv", "ort_matmul", "ort_elim", "ort_block", "ort_qdq", "ort_nbits", "ort_attention", "tvm_anchor",
            "tvm_reduce", "tvm_injective", "tvm_frontend", "tvm_fold", "tvm_lower")
