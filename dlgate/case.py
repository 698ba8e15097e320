"""A generated case: the graph, its ONNX bytes and its metadata, derived from a seed."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass

from dlgate import GENERATOR_VERSION, __version__
from dlgate.graph.generator import Generator
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


def make_case(gen: Generator, root: str, campaign: str, index: int) -> Case:
    seed = case_seed(root, campaign, index)
    graph = gen.generate(seed)
    model = to_onnx(graph, sub_seed(seed, "onnx"), doc=f"dlgate case {root}/{campaign}/{index}")
    return Case(case_id(root, campaign, index), root, campaign, index, seed, graph, model.SerializeToString())
