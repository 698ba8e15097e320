"""Subgraphs drawn for control operators (an If branch, a Loop or Scan body): the graph
generator driven from given input types. The control operators choose what a body may hold
(``dlgate.ops.control``); they reach this drawing through the ``Ctx`` they sample with
(``Ctx.body_graph``, which the generator fills in), so the catalogue never imports the
generator."""
from __future__ import annotations

import random

import numpy as np

from dlgate.graph.bounds import _State
from dlgate.graph.ir import Graph, domain_spans, random_values
from dlgate.ops.registry import all_specs
from dlgate.seeds import sub_seed


class BodyDrawing:
    """``Generator.body``: a graph whose inputs are the first placeholders, with operators
    only inserted forward, so every input stays an input (a body may ignore one); further
    placeholders become constants. Uses the generator's ``cfg``, ``solver``, ``specs``,
    ``stats``, ``_sigs``, ``_forward`` and ``_ctx``."""

    def body(self, seed: int, in_types: list) -> Graph:
        cfg = self.cfg
        rng = random.Random(sub_seed(seed, "graph"))
        self.solver.reset()
        opset = self.opset = cfg.opset
        specs = [s for s in self.specs if s.available(opset) and self._sigs(s)]
        ctx = self._ctx(rng, opset)
        st = _State()
        for t in in_types:
            st.placeholders.append(st.add_tensor(t))
        target = rng.randint(cfg.min_nodes, cfg.max_nodes)
        budget = 40 * target + 40
        while specs and len(st.nodes) < target and budget > 0:
            budget -= 1
            if not self._forward(st, specs[rng.randrange(len(specs))], ctx, rng):
                self.stats["failed"] += 1
        k = len(in_types)
        consts = [p for p in st.placeholders[k:] if st.uses[p] > 0]
        g = Graph(tensors=list(st.tensors), nodes=list(st.nodes), inputs=list(range(k)), consts=consts,
                  outputs=[], opset=opset)
        vrng = np.random.Generator(np.random.PCG64(sub_seed(seed, "values")))
        spans = domain_spans(g, all_specs())
        g.values = {t: random_values(vrng, g.tensors[t], spans.get(t)) for t in consts}
        return g
