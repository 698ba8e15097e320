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

from dlgate.ops.registry import get
from dlgate.oracle.rules.base import Context, Rule
from dlgate.oracle.rules.scope import node_excuses


class UndefinedValues(Rule):
    name = "undefined"
    scoping = True

    def excuses(self, ctx: Context) -> list:
        def find(node, ins, outs):
            spec = get(node.op)
            types = [ctx.graph.tensors[t] for t in node.outputs]
            why = spec.undefined(node.attrs, ins, types)
            if not why:
                return None
            masks = spec.undefined_elements(node.attrs, ins, types)
            if masks is not None and not any(m.any() for m in masks):
                masks = None  # a reason without the elements it concerns: all of them
            return why, masks

        return node_excuses(ctx, self.name, find)


RULE = UndefinedValues()
