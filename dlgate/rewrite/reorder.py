"""Another topological order of the nodes: independent operators computed in another order.

Nothing an operator computes depends on when it runs, only on what it reads, so any
topological order is the same model. Both forms are reordered (each by its own draw): the
graph's nodes for the backends that read the graph, the ONNX model's top-level nodes for
those that read ONNX, with what a subgraph reads from the enclosing scope counted as a
dependency. Applies to any model with two operators that do not depend on each other."""
from __future__ import annotations

import copy
import random

from dlgate.rewrite.base import Rewrite, Twin, copy_graph, reads, topo_order, validate
from dlgate.seeds import sub_seed


class Reorder(Rewrite):
    name = "reorder"
    applies = "any model with two independent operators"

    def apply(self, graph, model, rng, prefer=None):
        seed = rng.getrandbits(64)
        nodes = list(model.graph.node)
        writer = {o: i for i, n in enumerate(nodes) for o in n.output}
        deps = [sorted({writer[x] for x in reads(n) if x in writer and writer[x] != i}) for i, n in enumerate(nodes)]
        order = topo_order(deps, random.Random(sub_seed(seed, "onnx")))
        producer = graph.producers()
        gdeps = [sorted({producer[t] for t in n.inputs if t in producer}) for n in graph.nodes]
        gorder = topo_order(gdeps, random.Random(sub_seed(seed, "graph")))
        if order is None and gorder is None:
            return None
        m = copy.deepcopy(model)
        if order is not None:
            del m.graph.node[:]
            m.graph.node.extend(nodes[i] for i in order)
        g = graph
        if gorder is not None:
            g = copy_graph(graph)
            g.nodes = [g.nodes[i] for i in gorder]
        validate(m)
        where = {"onnx_order": order, "graph_order": gorder}
        return Twin(self.name, where, m.SerializeToString(), g, graph_changed=gorder is not None)


REWRITE = Reorder()
