"""Reference defects: where ONNX's own reference evaluator (``onnx.reference``) computes an
operator instance wrongly (``OpSpec.reference_defect``: onnx.reference's SAME_LOWER MaxPool,
its unit-stride MaxPool without indices...), its answer must not decide a finding's blame.

The oracle consults onnx.reference as a second opinion on a mismatch: when it sides with the
compiler against PyTorch, dlgate's reference is suspected (blame ``reference``). On a model
holding an instance it gets wrong, that second opinion is not asked, and the cross-check
records why; the mismatch itself is judged as always."""
from __future__ import annotations

from dlgate.ops.registry import get
from dlgate.oracle.rules.base import Context

NAME = "reference_defect"


def defect(ctx: Context) -> str | None:
    """Why onnx.reference cannot be trusted on this case (the first node it gets wrong, from
    the nodes' input types, as the spec tests ask), or None."""
    for i, node in enumerate(ctx.graph.nodes):
        types = [ctx.graph.tensors[t] for t in node.inputs]
        why = get(node.op).reference_defect(node.attrs, types, ctx.graph.opset)
        if why:
            return f"{node.op} (node {i}): {why}"
    return None
