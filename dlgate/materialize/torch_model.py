"""The same graph as a ``torch.nn.Module``: the reference, and what the input search differentiates."""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.graph.ir import Graph
from dlgate.ops.registry import get


class GraphModule(torch.nn.Module):
    """Runs the graph node by node with each spec's PyTorch implementation.

    Floating-point constants are parameters (so the input search can move them); the
    others are buffers. ``forward`` takes the graph inputs positionally and returns the
    graph outputs as a tuple; ``run`` exposes every intermediate through a hook.
    """

    def __init__(self, graph: Graph):
        super().__init__()
        self.graph = graph
        self.specs = [get(n.op) for n in graph.nodes]
        self.consts = torch.nn.ParameterDict()
        for t in graph.consts:
            arr = torch.from_numpy(np.array(graph.values[t], copy=True))
            key = graph.name(t)
            if dt.is_float(graph.tensors[t].dtype):
                self.consts[key] = torch.nn.Parameter(arr)
            else:
                self.register_buffer(f"buf_{key}", arr)

    def const(self, t: int) -> torch.Tensor:
        key = self.graph.name(t)
        return self.consts[key] if key in self.consts else getattr(self, f"buf_{key}")

    def run(self, inputs, hook: Callable | None = None) -> dict:
        """Execute; ``hook(index, node, ins, outs)`` may return True to stop early."""
        env = {t: x for t, x in zip(self.graph.inputs, inputs)}
        for t in self.graph.consts:
            env[t] = self.const(t)
        for i, (node, spec) in enumerate(zip(self.graph.nodes, self.specs)):
            ins = [env[t] for t in node.inputs]
            outs = spec.torch(node.attrs, *ins)
            if not isinstance(outs, (tuple, list)):
                outs = (outs,)
            for t, y in zip(node.outputs, outs):
                env[t] = y
            if hook is not None and hook(i, node, ins, outs):
                break
        return env

    def forward(self, *inputs):
        env = self.run(inputs)
        return tuple(env[t] for t in self.graph.outputs)


def run_numpy(graph: Graph, feeds: list) -> list:
    """Reference outputs as NumPy arrays for NumPy inputs."""
    mod = GraphModule(graph)
    with torch.no_grad():
        outs = mod(*[torch.from_numpy(np.array(x, copy=True)) for x in feeds])
    return [o.detach().numpy() for o in outs]
