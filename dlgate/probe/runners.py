"""Minimal ways to run a model on a system for support probing.

Each runner compiles and runs one model and raises on any failure. They are probes
only: the full backends (isolated workers, optimization levels, devices) build on them.
"""
from __future__ import annotations

from functools import lru_cache


class OnnxRuntimeRunner:
    name = "onnxruntime"
    probe_opsets = None  # every opset of the generator's range: sessions are cheap
    #: Sessions are cheap, so more instances: support can hinge on an attribute (Gelu's
    #: exact form needs Erf, which onnxruntime lacks for float64).
    probe_tries = 8

    @staticmethod
    def unsupported(exc: Exception) -> bool:
        """Whether the failure is the system declaring it does not implement something."""
        return "NOT_IMPLEMENTED" in str(exc) or type(exc).__name__ == "NotImplemented"

    def version(self) -> str:
        import onnxruntime

        return onnxruntime.__version__

    def run(self, model: bytes, feeds: dict) -> list:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        so.log_severity_level = 3
        sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        return sess.run(None, feeds)


class TvmRunner:
    name = "tvm"
    #: Compiling costs ~60 ms a model: probe three opsets, the others take the nearest lower.
    probe_opsets = (13, 17, 21)
    probe_tries = 2

    @staticmethod
    def unsupported(exc: Exception) -> bool:
        text = f"{type(exc).__name__}: {exc}"
        return any(k in text for k in ("OpNotImplemented", "not supported", "not implemented",
                                        "NotImplementedError", "Unsupported", "only supports"))

    def version(self) -> str:
        import tvm

        return tvm.__version__

    def run(self, model: bytes, feeds: dict) -> list:
        import onnx
        import tvm
        from tvm import relax
        from tvm.relax.frontend.onnx import from_onnx

        proto = onnx.load_from_string(model)
        mod = from_onnx(proto, keep_params_in_input=False)
        ex = tvm.compile(mod, target="llvm")
        vm = relax.VirtualMachine(ex, tvm.cpu())
        names = [i.name for i in proto.graph.input if i.name not in {t.name for t in proto.graph.initializer}]
        out = vm["main"](*[tvm.runtime.tensor(feeds[n]) for n in names])
        outs = out if isinstance(out, (list, tuple)) or not hasattr(out, "numpy") else [out]
        return [o.numpy() for o in outs]


RUNNERS = {"onnxruntime": OnnxRuntimeRunner, "tvm": TvmRunner}


@lru_cache(maxsize=None)
def get_runner(name: str):
    """A runner by name, or by ``package.module:Class`` for one defined elsewhere."""
    if ":" in name:
        import importlib

        mod, _, cls = name.partition(":")
        try:
            return getattr(importlib.import_module(mod), cls)()
        except (ImportError, AttributeError) as e:
            raise KeyError(f"cannot load probe target {name!r}: {e}") from None
    try:
        return RUNNERS[name]()
    except KeyError:
        raise KeyError(f"unknown probe target {name!r}; known: {', '.join(RUNNERS)}") from None
