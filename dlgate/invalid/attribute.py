"""An attribute out of its range: an axis past the rank of the tensor it indexes (``axis``
of Softmax, Concat, Gather, ArgMax, Flatten..., set or added where the schema has it), an
entry of ``perm`` or ``axes`` past it. The value is the rank plus 2, or minus the rank
minus 2: outside ``[-r-1, r]``, the widest range any of them allows."""
from __future__ import annotations

import random

from onnx import AttributeProto, helper

from dlgate.invalid.base import Known, Rule, Site


class AttributeOutOfRange(Rule):
    name = "attribute"
    breaks = "an axis attribute lies past the rank"

    def sites(self, model, known: Known) -> list:
        out = []
        for i, node in enumerate(model.graph.node):
            schema = known.schema(node)
            if schema is None or not node.input or not node.input[0] or known.shape(node.input[0]) is None:
                continue
            have = {a.name: a for a in node.attribute}
            formal = schema.attributes.get("axis")
            if formal is not None and formal.type == AttributeProto.INT:
                out.append(Site(i, ("axis",)))
            for key in ("perm", "axes"):
                if key in have and have[key].type == AttributeProto.INTS and have[key].ints:
                    out.append(Site(i, (key,)))
        return out

    def apply(self, model, known: Known, site: Site, rng: random.Random) -> dict:
        node = model.graph.node[site.node]
        key = site.what[0]
        rank = len(known.shape(node.input[0]))
        value = rng.choice((rank + 2, -rank - 2))
        old = next((a for a in node.attribute if a.name == key), None)
        if key == "axis":
            was = old.i if old is not None else "its default"
            if old is not None:
                node.attribute.remove(old)
            node.attribute.append(helper.make_attribute("axis", value))
            return {"detail": f"axis {was} -> {value} on a rank-{rank} input", "attribute": key, "value": value}
        k = rng.randrange(len(old.ints))
        was = list(old.ints)
        old.ints[k] = value
        return {"detail": f"{key} {was} -> {list(old.ints)} on a rank-{rank} input", "attribute": key,
                "value": value}
