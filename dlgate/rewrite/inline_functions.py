"""The inverse of :mod:`.wrap_function`: every model-local function call replaced by its
body (ONNX's own inliner), the plain graph. Applies to models that hold local functions:
a saved twin, or a case brought from elsewhere; dlgate's generator writes none."""
from __future__ import annotations

import onnx
from onnx import inliner

from dlgate.rewrite.base import Rewrite, Twin, validate


class InlineFunctions(Rewrite):
    name = "inline_functions"
    applies = "models with local functions (ONNX form only)"

    def apply(self, graph, model, rng, prefer=None):
        if not model.functions:
            return None
        m = plain(model)
        validate(m)
        where = {"functions": [f"{f.domain}.{f.name}" for f in model.functions]}
        return Twin(self.name, where, m.SerializeToString(), graph, graph_changed=False)


def plain(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` without local functions: each call inlined, and the domains only the
    functions defined dropped from the opset imports."""
    m = inliner.inline_local_functions(model)
    local = {f.domain for f in model.functions}
    used = {n.domain for n in m.graph.node}
    keep = [o for o in m.opset_import if o.domain not in local or o.domain in used]
    del m.opset_import[:]
    m.opset_import.extend(keep)
    del m.functions[:]
    return m


REWRITE = InlineFunctions()
