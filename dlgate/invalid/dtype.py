"""A dtype the operator does not take: one input of one node is cast, just before it, to an
element type outside its type constraint in the operator's ONNX schema (Relu of a bool,
Exp of an int32). The Cast itself is valid; the node that reads it is not."""
from __future__ import annotations

import random

from onnx import helper

from dlgate.invalid.base import DTYPES, PREFIX, Known, Rule, Site, allowed, input_type_param, insert_before, type_name


def _cast_takes(known: Known, src: int, dst: int) -> bool:
    """Whether Cast at the model's opset converts ``src`` to ``dst`` (so only the node
    after it is invalid)."""
    schema = known.schema(helper.make_node("Cast", ["x"], ["y"], to=dst))
    return schema is not None and src in allowed(schema, "T1") and dst in allowed(schema, "T2")


class WrongDtype(Rule):
    name = "dtype"
    breaks = "an input's element type is outside the operator's type constraint"

    def _bad(self, known: Known, node, position: int) -> list:
        schema = known.schema(node)
        name = node.input[position]
        param = input_type_param(schema, position) if schema is not None else None
        src = known.elem(name)
        if param is None or src is None:
            return []
        ok = allowed(schema, param)
        return [d for d in DTYPES if d not in ok and _cast_takes(known, src, d)]

    def sites(self, model, known: Known) -> list:
        return [Site(i, (j,)) for i, node in enumerate(model.graph.node) for j, name in enumerate(node.input)
                if name and self._bad(known, node, j)]

    def apply(self, model, known: Known, site: Site, rng: random.Random) -> dict:
        node = model.graph.node[site.node]
        j = site.what[0]
        bad = rng.choice(self._bad(known, node, j))
        src = node.input[j]
        cast_out = f"{PREFIX}{type_name(bad)}_{site.node}_{j}"
        insert_before(model, site.node, helper.make_node("Cast", [src], [cast_out], name=f"{PREFIX}cast_{site.node}",
                                                         to=bad))
        model.graph.node[site.node + 1].input[j] = cast_out
        return {"detail": f"input {j} ({src}, {type_name(known.elem(src))}) cast to {type_name(bad)}, which "
                          f"{node.op_type} does not take", "input": j, "dtype": type_name(bad)}
