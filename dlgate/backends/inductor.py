"""PyTorch Inductor: ``torch.compile`` of the graph's ``GraphModule``."""
from __future__ import annotations

from typing import Any

import numpy as np

from dlgate.backends.base import Model
from dlgate.backends.torch_eager import TorchEager, to_torch

#: opt level -> ``torch.compile`` mode; "eager" compiles nothing (the plain module).
MODES = {"eager": None, "default": "default", "max-autotune-no-cudagraphs": "max-autotune-no-cudagraphs"}


class Inductor(TorchEager):
    """``torch.compile(GraphModule(graph), backend="inductor", mode=..., dynamic=False)``.

    ``compile`` forces the compilation by running the compiled module once on random
    inputs of the graph's input types and shapes, so compile time (seconds on the first
    graph) is accounted to ``compile`` and ``run`` costs milliseconds. Compilation guards
    only on shapes and dtypes, so the real inputs reuse that code; a value-dependent guard
    would recompile in ``run``. Each ``compile`` first calls ``torch._dynamo.reset()``
    so caches do not grow across many models: only the latest compiled model stays fast.

    Options: ``fullgraph`` (default False: a graph break falls back to eager for that part;
    True makes a break an error that ``unsupported`` recognizes).
    """

    name = "inductor"
    opt_levels = tuple(MODES)
    devices = ("cpu", "cuda")
    reference = False
    option_kinds = {"fullgraph": "bool"}

    def compile(self, model: Model) -> Any:
        import torch

        from dlgate.graph.ir import random_values

        module = super().compile(model)
        mode = MODES[self.opt_level]
        if mode is None:
            return module
        torch._dynamo.reset()
        fn = torch.compile(module, backend="inductor", mode=mode, dynamic=False,
                           fullgraph=bool(self.options.get("fullgraph", False)))
        rng = np.random.default_rng(0)
        warm = [random_values(rng, t) for t in model.graph.input_types()]
        with torch.no_grad():
            fn(*to_torch(warm, self.device))
        return fn

    def unsupported(self, exc: BaseException) -> bool:
        if isinstance(exc, NotImplementedError):
            return True
        try:
            from torch._dynamo.exc import Unsupported
        except ImportError:
            return False
        return isinstance(exc, Unsupported)
