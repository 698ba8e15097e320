"""A run of consecutive nodes wrapped into an ONNX model-local function, called once.

A function call means its body (ONNX defines a call by inlining), so the model computes
the same. The wrapped nodes are consecutive in topological order, so no path leaves them
and comes back (the call stays acyclic); the function takes every name they read from
outside (constants and what their subgraphs read from the enclosing scope included) and
returns every name they write that is read after them or is a graph output. The function
lives in the ``dlgate.local`` domain and takes the model's opset imports; the model's IR
version is raised to 8 where it is lower (local functions came with IR 8). Applies to the
ONNX form only: the graph a PyTorch-based backend reads has no functions."""
from __future__ import annotations

import copy

import onnx
from onnx import helper

from dlgate.rewrite.base import LOCAL_DOMAIN, PREFIX, Rewrite, Twin, reads, validate

#: Local functions need this IR version or later.
MIN_IR = 8


class WrapFunction(Rewrite):
    name = "wrap_function"
    applies = "any model (ONNX form only)"

    def apply(self, graph, model, rng, prefer=None):
        nodes = list(model.graph.node)
        if not nodes or model.functions:
            return None
        n = len(nodes)
        i = rng.randrange(n)
        j = i + 1 + rng.randrange(n - i)
        m = wrap(model, i, j, f"{PREFIX}_f0")
        if m is None:
            return None
        validate(m)
        where = {"function": f"{PREFIX}_f0", "nodes": [nd.name for nd in nodes[i:j]], "first": i, "count": j - i}
        return Twin(self.name, where, m.SerializeToString(), graph, graph_changed=False)


def wrap(model: onnx.ModelProto, i: int, j: int, name: str) -> onnx.ModelProto | None:
    """``model`` with top-level nodes ``i..j-1`` replaced by a call of a new local function
    ``name``; None when they write nothing read later (no output to return)."""
    m = copy.deepcopy(model)
    nodes = list(m.graph.node)
    body, after = nodes[i:j], nodes[j:]
    written = [o for nd in body for o in nd.output if o]
    inside = set(written)
    ins: list = []
    for nd in body:
        for x in reads(nd):
            if x not in inside and x not in ins:
                ins.append(x)
    later = {x for nd in after for x in reads(nd)} | {o.name for o in m.graph.output}
    outs = [o for o in written if o in later]
    if not outs:
        return None
    opsets = [helper.make_opsetid(o.domain, o.version) for o in m.opset_import]
    fn = helper.make_function(LOCAL_DOMAIN, name, ins, outs, body, opset_imports=opsets)
    call = helper.make_node(name, ins, outs, name=f"{name}_call", domain=LOCAL_DOMAIN)
    del m.graph.node[:]
    m.graph.node.extend(nodes[:i] + [call] + after)
    keep = [v for v in m.graph.value_info if v.name not in inside or v.name in outs]
    del m.graph.value_info[:]
    m.graph.value_info.extend(keep)
    m.functions.append(fn)
    m.opset_import.append(helper.make_opsetid(LOCAL_DOMAIN, 1))
    m.ir_version = max(m.ir_version, MIN_IR)
    return m


REWRITE = WrapFunction()
