"""A wrong number of inputs: one node gets one input more than its schema's most (its
first input again, after empty names for the optional ones it omits), or one fewer than
its schema's least (its trailing inputs from the last required one dropped)."""
from __future__ import annotations

import random

from dlgate.invalid.base import UNBOUNDED, Known, Rule, Site


class WrongInputCount(Rule):
    name = "arity"
    breaks = "a node has more or fewer inputs than its schema allows"

    def sites(self, model, known: Known) -> list:
        out = []
        for i, node in enumerate(model.graph.node):
            schema = known.schema(node)
            if schema is None or not node.input or not node.input[0]:
                continue
            if schema.max_input < UNBOUNDED:
                out.append(Site(i, ("more",)))
            if schema.min_input >= 1:
                out.append(Site(i, ("fewer",)))
        return out

    def apply(self, model, known: Known, site: Site, rng: random.Random) -> dict:
        node = model.graph.node[site.node]
        schema = known.schema(node)
        was = len(node.input)
        if site.what[0] == "more":
            while len(node.input) < schema.max_input:
                node.input.append("")
            node.input.append(node.input[0])
            bound = f"at most {schema.max_input}"
        else:
            del node.input[schema.min_input - 1:]
            bound = f"at least {schema.min_input}"
        return {"detail": f"{was} inputs -> {len(node.input)} ({node.op_type} takes {bound})",
                "inputs": len(node.input)}
