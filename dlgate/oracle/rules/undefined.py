"""Undefined values: a result the ONNX specification leaves open on the inputs it gets.

Signed integer overflow in integer arithmetic, a conversion from a floating-point type to
an integer type of NaN, Inf or a value out of the target's range, and what else an
operator's spec names (``OpSpec.undefined``: a zero quantization scale, a reinterpreted
NaN...). Compilers differ there legitimately, and so may everything computed from it, but
nothing else: the excuse covers the elements the operator names
(``OpSpec.undefined_elements``; its whole outputs when it cannot say) and what they reach
(``scope.reach``). Narrowing integer conversions (they discard the high bits) and float
conversions out of range (+/-inf) are defined, and not excused."""
from __future__ import annotations

from dlgate.oracle.rules.base import Context, Excuse, Rule
from dlgate.oracle.rules.scope import reach
from dlgate.spec.registry import get


class UndefinedValues(Rule):
    name = "undefined"
    scoping = True

    def excuses(self, ctx: Context) -> list:
        _, steps = ctx.trace
        found = []
        for i, (node, (ins, outs)) in enumerate(zip(ctx.graph.nodes, steps)):
            spec = get(node.op)
            types = [ctx.graph.tensors[t] for t in node.outputs]
            why = spec.undefined(node.attrs, ins, types)
            if not why:
                continue
            masks = spec.undefined_elements(node.attrs, ins, types)
            if masks is not None and not any(m.any() for m in masks):
                masks = None  # a reason without the elements it concerns: all of them
            scope = reach(ctx.graph, steps, {i: masks if masks is not None else [None] * len(outs)})
            if scope:
                found.append(Excuse(self.name, f"{node.op} (node {i}): {why}", scope))
        return found


RULE = UndefinedValues()
