"""A generated case: the graph, its ONNX bytes and its metadata, derived from a seed; and a
batch of cases under coverage guidance, each generated from the coverage of those before."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass

from dlgate import GENERATOR_VERSION, __version__
from dlgate.coverage import features as F
from dlgate.coverage.guide import Guide
from dlgate.coverage.state import CoverageState
from dlgate.graph.generator import GenerationError, Generator
from dlgate.graph.ir import Graph
from dlgate.materialize.onnx_model import to_onnx
from dlgate.seeds import case_id, case_seed, sub_seed


@dataclass
class Case:
    id: str
    root: str
    campaign: str
    index: int
    seed: int
    graph: Graph
    model_bytes: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.model_bytes).hexdigest()

    def meta(self) -> dict:
        g = self.graph
        meta = {
            "id": self.id,
            "root": self.root,
            "campaign": self.campaign,
            "index": self.index,
            "seed": self.seed,
            "dlgate": __version__,
            "generator": GENERATOR_VERSION,
            "opset": g.opset,
            "nodes": len(g.nodes),
            "operators": sorted(set(g.op_names())),
            "inputs": [dict(name=g.name(t), **g.tensors[t].to_json()) for t in g.inputs],
            "outputs": [dict(name=g.name(t), **g.tensors[t].to_json()) for t in g.outputs],
            "sha256": self.sha256,
            "graph": g.to_json(),
        }
        if g.redrawn is not None:
            meta["redrawn"] = g.redrawn
        if g.aimed is not None:
            meta["aimed"] = g.aimed
        return meta

    def write(self, out_dir: str) -> str:
        d = os.path.join(out_dir, self.id)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(self.model_bytes)
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(self.meta(), f, indent=1, sort_keys=True)
            f.write("\n")
        return d


def model_bytes(graph: Graph, seed: int, root: str, campaign: str, index) -> bytes:
    """The ONNX model of case ``index``'s ``graph``, as the batch writes it (its spelling drawn
    from the case's seed): the generated model, or the valid one an invalid case was made from."""
    return to_onnx(graph, sub_seed(seed, "onnx"), doc=f"dlgate case {root}/{campaign}/{index}").SerializeToString()


def make_case(gen: Generator, root: str, campaign: str, index: int) -> Case:
    seed = case_seed(root, campaign, index)
    graph = gen.generate(seed)
    return Case(case_id(root, campaign, index), root, campaign, index, seed, graph,
                model_bytes(graph, seed, root, campaign, index))


class GuidedBatch:
    """The cases of one batch under coverage guidance, generated in index order (see
    :mod:`dlgate.coverage.guide`). ``start`` is the campaign's starting state; it is not changed."""

    def __init__(self, gen, root: str, campaign: str, start: CoverageState):
        self.gen, self.root, self.campaign, self.start = gen, root, campaign, start
        self._reset()

    def _reset(self) -> None:
        self.state = self.start.copy()
        self.gen.guide = Guide(self.state)
        self.next = 0

    def _observe(self, graph) -> list:
        feats = F.graph_features(graph)
        self.state.add_features(feats)
        return feats

    def _skip_to(self, index: int) -> None:
        if index < self.next:
            self._reset()
        while self.next < index:
            try:
                self._observe(self.gen.generate(case_seed(self.root, self.campaign, self.next)))
            except GenerationError:
                pass  # a case that cannot be generated adds nothing
            self.next += 1

    def case(self, index: int):
        """The case at ``index`` and its graph features."""
        self._skip_to(index)
        self.next = index + 1
        c = make_case(self.gen, self.root, self.campaign, index)
        return c, self._observe(c.graph)
