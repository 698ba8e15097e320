"""Single-operator models: what support probing runs and what spec tests check."""
from __future__ import annotations

from dlgate.graph.generator import GenConfig, GenerationError, Generator
from dlgate.graph.ir import Graph
from dlgate.materialize.onnx_model import to_onnx
from dlgate.ops.base import Limits
from dlgate.seeds import case_seed, sub_seed

SMALL = Limits(max_rank=4, max_dim=8, max_elems=512)


def single_op_graph(name: str, sig: tuple, opset: int, index: int = 0,
                    limits: Limits = SMALL, tries: int = 8) -> Graph | None:
    """A one-node graph of operator ``name`` with input dtypes ``sig``, or None if the
    generator cannot instantiate it at this opset. The support set pins the signature;
    every dtype stays available to attributes such as Cast's target."""
    cfg = GenConfig(min_nodes=1, max_nodes=1, ops=(name,), opset=opset, limits=limits,
                    support=frozenset({(name, tuple(sig), opset)}),
                    const_prob=0.0, extra_output_prob=0.0)
    gen = Generator(cfg)
    for k in range(tries):
        try:
            # its own seeds are its redraws: the draw alone, never another operator's fallback
            g = gen.generate(case_seed(f"single/{name}/{'-'.join(sig)}", str(opset), index * tries + k), redraw=False)
        except GenerationError:
            continue
        if len(g.nodes) == 1 and tuple(g.tensors[t].dtype for t in g.nodes[0].inputs) == tuple(sig):
            return g
    return None


def single_op_model(g: Graph, index: int = 0) -> bytes:
    return to_onnx(g, sub_seed(index, "onnx")).SerializeToString()
