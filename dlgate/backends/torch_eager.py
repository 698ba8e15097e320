"""PyTorch eager: the generated graph's own ``GraphModule``, the trusted reference."""
from __future__ import annotations

from typing import Any

import numpy as np

from dlgate.backends._cuda import missing
from dlgate.backends.base import Backend, Model, Unavailable
from dlgate.backends.refusals import refused
from dlgate.backends.selftest import check_outputs, probe_model


def torch_cuda_reason() -> str | None:
    reason = missing("torch")
    if reason:
        return reason
    import torch

    if not torch.cuda.is_available():
        build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
        return f"torch.cuda.is_available() is False (torch {torch.__version__}, {build}; no CUDA device is visible)"
    return None


def to_torch(inputs: list, device: str) -> list:
    import torch

    return [torch.from_numpy(np.array(x, copy=True)).to(device) for x in inputs]


def to_numpy(outs) -> list:
    return [np.array(o.detach().cpu().numpy(), copy=True) for o in outs]


class TorchEager(Backend):
    """``GraphModule(model.graph)`` under ``torch.no_grad()``, one intra-op thread."""

    name = "torch"
    package = "torch"
    opt_levels = ("eager",)
    devices = ("cpu", "cuda")
    reference = True

    @classmethod
    def unavailable_reason(cls, device: str) -> str | None:
        return torch_cuda_reason() if device == "cuda" else missing("torch")

    def self_test(self) -> None:
        """On cuda: the start-up probe (one Add) runs on the GPU with the right sum."""
        if self.device != "cuda":
            return
        model, inputs, expected = probe_model()
        try:
            outs = self.run(self.compile(model), inputs)
        except Exception as e:  # a driver or runtime that does not work: cannot run
            raise Unavailable(f"{self.name} on cuda: the start-up probe (one Add) failed: "
                              f"{type(e).__name__}: {str(e).strip()[:500]}") from None
        check_outputs(f"{self.name} on cuda", outs, expected)

    def version(self) -> str:
        import torch

        return torch.__version__

    def compile(self, model: Model) -> Any:
        import torch

        torch.set_num_threads(1)
        # local: the PyTorch module imports torch, which listing or loading a backend must not
        from dlgate.materialize.torch_model import GraphModule

        return GraphModule(model.graph).to(self.device).eval()

    def run(self, compiled: Any, inputs: list) -> list:
        import torch

        with torch.no_grad():
            outs = compiled(*to_torch(inputs, self.device))
        if self.device == "cuda":
            torch.cuda.synchronize()
        return to_numpy(outs)

    def unsupported(self, exc: BaseException) -> bool:
        return refused("torch", exc)
