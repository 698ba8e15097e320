"""Special values the specification does not define: a NaN or an infinity that reaches, or
is made by, an operator whose ONNX specification gives no result for it (``OpSpec.nonfinite``:
Relu or Max of NaN, a comparison with NaN, inf through a reduction whose order decides
between inf and NaN, overflow to inf inside MatMul); see :mod:`dlgate.ops.nonfinite`.
The excuse covers, for a pointwise operator, the elements where such a value stands or is
made (``nonfinite.violation_elements``), otherwise its whole outputs, and what they reach.
A NaN through Add, an inf out of Exp are defined: IEEE 754 says what they give."""
from __future__ import annotations

from dlgate.ops import nonfinite
from dlgate.ops.registry import get
from dlgate.oracle.rules.base import Context, Rule
from dlgate.oracle.rules.scope import node_excuses


class SpecialValues(Rule):
    name = "nonfinite"
    scoping = True

    def excuses(self, ctx: Context) -> list:
        def find(node, ins, outs):
            spec = get(node.op)
            in_types = [ctx.graph.tensors[t] for t in node.inputs]
            why = nonfinite.violation(spec, node.attrs, in_types, ins, outs)
            return (why, nonfinite.violation_elements(spec, node.attrs, in_types, ins, outs)) if why else None

        return node_excuses(ctx, self.name, find)


RULE = SpecialValues()
