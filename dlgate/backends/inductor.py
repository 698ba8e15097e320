"""PyTorch Inductor: ``torch.compile`` of the graph's ``GraphModule``."""
from __future__ import annotations

from typing import Any

import numpy as np

from dlgate.backends.base import Model, Unavailable
from dlgate.backends.refusals import refused
from dlgate.backends.selftest import X, Y
from dlgate.backends.torch_eager import TorchEager, to_torch
from dlgate.graph.ir import random_values

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
    package = "torch._inductor"
    opt_levels = tuple(MODES)
    devices = ("cpu", "cuda")
    reference = False
    option_kinds = {"fullgraph": "bool"}

    def compile(self, model: Model) -> Any:
        import torch

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

    def self_test(self) -> None:
        """On cuda (``torch.cuda.is_available()`` is checked before, by
        ``unavailable_reason``): a tiny function compiled by Inductor for the GPU (Triton
        kernels) runs there with the exact result. On the CPU the first case is the test
        (Inductor's first compile costs seconds)."""
        if self.device != "cuda":
            return
        import torch

        def probe(x, y):
            return x + y * 2.0

        try:
            torch._dynamo.reset()
            fn = torch.compile(probe, backend="inductor", dynamic=False, fullgraph=True)
            with torch.no_grad():
                got = fn(torch.from_numpy(X).cuda(), torch.from_numpy(Y).cuda())
            torch.cuda.synchronize()
            if got.device.type != "cuda":
                raise RuntimeError(f"the compiled function returned a tensor on {got.device}")
            got = got.cpu().numpy()
        except Exception as e:  # no Triton, no working toolchain or driver: cannot run
            raise Unavailable(f"{self.name} on cuda: the start-up probe (x + 2y compiled by Inductor) failed: "
                              f"{type(e).__name__}: {str(e).strip()[:500]}") from None
        finally:
            torch._dynamo.reset()
        want = X + Y * np.float32(2.0)
        if got.dtype != want.dtype or not np.array_equal(got, want):
            raise Unavailable(f"{self.name} on cuda: the start-up probe gave {got.ravel()}, expected {want.ravel()}")

    def unsupported(self, exc: BaseException) -> bool:
        return refused("inductor", exc)
