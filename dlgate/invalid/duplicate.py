"""A duplicated edge: a second node produces the same tensors as one node of the graph (a
copy of it, right after it), so a name has two producers and the graph is not in single
static assignment form."""
from __future__ import annotations

import random

from onnx import NodeProto

from dlgate.invalid.base import PREFIX, Known, Rule, Site, insert_before


class DuplicatedEdge(Rule):
    name = "duplicate"
    breaks = "a tensor has two producers"

    def sites(self, model, known: Known) -> list:
        return [Site(i) for i, node in enumerate(model.graph.node) if any(node.output)]

    def apply(self, model, known: Known, site: Site, rng: random.Random) -> dict:
        node = model.graph.node[site.node]
        twin = NodeProto()
        twin.CopyFrom(node)
        twin.name = f"{PREFIX}again_{site.node}"
        insert_before(model, site.node + 1, twin)
        outs = [o for o in node.output if o]
        return {"detail": f"a copy of the node produces {', '.join(outs)} a second time"}
