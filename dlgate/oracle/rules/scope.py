"""Where a value reaches: from the elements a rule names at one node to the model's outputs.

An operator whose every output element depends only on its inputs' elements at the same
(broadcast) position (``OpSpec.is_pointwise``: element-wise functions, broadcasting
arithmetic, comparisons, Where) carries the marked elements as they are; any other
operator (a reduction, a MatMul, a Reshape whose shape is computed, control flow) carries
them to the whole of its outputs, shape included (``WHOLE``)."""
from __future__ import annotations

import numpy as np
import torch

from dlgate.graph.ir import Graph
from dlgate.ops.registry import get
from dlgate.oracle.compare import WHOLE
from dlgate.oracle.rules.base import Excuse, union


def _shape(y) -> tuple | None:
    return tuple(y.shape) if isinstance(y, (torch.Tensor, np.ndarray)) else None


def _carry(marks: list, y):
    """A pointwise node's output ``y``'s marked elements, from its inputs' ``marks``."""
    shape = _shape(y)
    if shape is None:
        return WHOLE
    acc = np.zeros(shape, bool)
    for m in marks:
        if m is None:
            continue
        if isinstance(m, str):
            return WHOLE
        try:
            acc |= np.broadcast_to(m, shape)
        except ValueError:  # an input that does not broadcast to the output (CastLike's target)
            return WHOLE
    return acc


def reach(graph: Graph, steps: list, sources: dict) -> dict:
    """``{output index: WHOLE or mask}``: the outputs' elements that the marked values reach.
    ``sources`` maps a node's index to one entry per node output: a boolean mask of the
    elements marked there, or None (the whole output). ``steps`` is the reference's
    node-by-node trace, for the shapes."""
    marked: dict = {}
    for i, node in enumerate(graph.nodes):
        outs = steps[i][1]
        ins = [marked.get(t) for t in node.inputs]
        new = [None] * len(node.outputs)
        if any(m is not None for m in ins):
            if get(node.op).is_pointwise():
                new = [_carry(ins, y) for y in outs]
            else:
                new = [WHOLE] * len(node.outputs)
        for k, m in enumerate(sources.get(i, ())):
            if k >= len(new):
                break
            if m is not None and _shape(outs[k]) != np.shape(m):
                m = None  # a mask that does not fit the value: the whole output
            new[k] = union(new[k], WHOLE if m is None else np.asarray(m, bool))
        for t, m in zip(node.outputs, new):
            if m is not None and (isinstance(m, str) or m.any()):
                marked[t] = m
    return {k: marked[t] for k, t in enumerate(graph.outputs) if t in marked}


def node_excuses(ctx, rule: str, find) -> list:
    """One excuse per node of the reference run where ``find(node, ins, outs)`` gives
    ``(reason, masks)`` (one boolean mask per node output, or None for its whole outputs):
    the reason names the node, the scope is what its marked elements reach."""
    _, steps = ctx.trace
    found = []
    for i, (node, (ins, outs)) in enumerate(zip(ctx.graph.nodes, steps)):
        hit = find(node, ins, outs)
        if not hit:
            continue
        why, masks = hit
        scope = reach(ctx.graph, steps, {i: masks if masks is not None else [None] * len(outs)})
        if scope:
            found.append(Excuse(rule, f"{node.op} (node {i}): {why}", scope))
    return found
