"""Minimal ways to run a model on a system for support probing.

Each runner compiles and runs one model and raises on any failure. They are probes
only: the full backends (isolated workers, optimization levels, devices) build on them.
"""
from __future__ import annotations

from functools import lru_cache


class OnnxRuntimeRunner:
    name = "onnxruntime"

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

    @staticmethod
    def unsupported(exc: Exception) -> bool:
        text = f"{type(exc).__name__}: {exc}"
        return any(k in text for k in ("OpNotImplemented", "not supported", "not implemented",
                                        "NotImplementedError", "Unsupported"))

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
    try:
        return RUNNERS[name]()
    except KeyError:
        raise KeyError(f"unknown probe target {name!r}; known: {', '.join(RUNNERS)}") from None
