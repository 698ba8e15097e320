"""A dangling edge: one input of one node names a tensor that no node, graph input or
constant produces."""
from __future__ import annotations

import random

from dlgate.invalid.base import PREFIX, Known, Rule, Site


class DanglingEdge(Rule):
    name = "dangling"
    breaks = "an input names a tensor nothing produces"

    def sites(self, model, known: Known) -> list:
        return [Site(i, (j,)) for i, node in enumerate(model.graph.node) for j, name in enumerate(node.input) if name]

    def apply(self, model, known: Known, site: Site, rng: random.Random) -> dict:
        node = model.graph.node[site.node]
        j = site.what[0]
        was, node.input[j] = node.input[j], f"{PREFIX}unproduced_{site.node}_{j}"
        return {"detail": f"input {j} ({was}) renamed to {node.input[j]}, which nothing produces", "input": j}
