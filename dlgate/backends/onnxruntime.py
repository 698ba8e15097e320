"""ONNX Runtime: CPU, CUDA and TensorRT execution providers."""
from __future__ import annotations

from typing import Any

import numpy as np

from dlgate.backends._cuda import NO_CUDA, cuda_device_count, missing
from dlgate.backends.base import Backend, Model, Unavailable

PROVIDERS = {
    "cpu": ["CPUExecutionProvider"],
    "cuda": ["CUDAExecutionProvider", "CPUExecutionProvider"],
    "tensorrt": ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"],
}
LEVELS = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC",
          "extended": "ORT_ENABLE_EXTENDED", "all": "ORT_ENABLE_ALL"}


class OnnxRuntime(Backend):
    """``onnxruntime.InferenceSession`` on the ONNX bytes.

    Options: ``intra_op_threads`` (default 1, for determinism), ``cpu_fallback`` (default
    True: on cuda/tensorrt, nodes the provider lacks run on the CPU provider; False makes
    ORT refuse the model instead).
    """

    name = "onnxruntime"
    opt_levels = tuple(LEVELS)
    devices = tuple(PROVIDERS)
    #: Sessions are cheap, so more instances: support can hinge on an attribute (Gelu's
    #: exact form needs Erf, which onnxruntime lacks for float64).
    probe_tries = 8
    option_kinds = {"intra_op_threads": "positive int", "cpu_fallback": "bool"}

    @classmethod
    def unavailable_reason(cls, device: str) -> str | None:
        reason = missing("onnxruntime")
        if reason:
            return reason
        if device == "cpu":
            return None
        import onnxruntime as ort

        provider = PROVIDERS[device][0]
        available = ort.get_available_providers()
        if provider not in available:
            return (f"this onnxruntime build has no {provider} (available: {', '.join(available)}); "
                    f"install onnxruntime-gpu")
        if cuda_device_count() == 0:
            return NO_CUDA
        return None

    def version(self) -> str:
        import onnxruntime

        return onnxruntime.__version__

    def compile(self, model: Model) -> Any:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[self.opt_level])
        so.intra_op_num_threads = int(self.options.get("intra_op_threads", 1))
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 3
        if self.device != "cpu" and not self.options.get("cpu_fallback", True):
            so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        providers = PROVIDERS[self.device]
        sess = ort.InferenceSession(model.onnx, so, providers=providers)
        if providers[0] not in sess.get_providers():  # ORT drops a provider it cannot load, with a warning
            raise Unavailable(f"{self.name} on {self.device}: {providers[0]} failed to load "
                              f"(session providers: {', '.join(sess.get_providers())})")
        return sess, model.input_names, model.output_names

    def run(self, compiled: Any, inputs: list) -> list:
        sess, in_names, out_names = compiled
        outs = sess.run(out_names, dict(zip(in_names, inputs)))
        return [np.asarray(o) for o in outs]

    @classmethod
    def repro_source(cls, spec) -> str | None:
        level = spec.opt_level or cls.opt_levels[-1]
        return "\n".join([
            "import onnxruntime as ort",
            "",
            f"LEVEL = ort.GraphOptimizationLevel.{LEVELS[level]}  # optimization level {level}",
            f"PROVIDERS = {list(PROVIDERS[spec.device])!r}",
            "",
            "",
            "def run(model_bytes, input_names, inputs, output_names):",
            "    so = ort.SessionOptions()",
            "    so.graph_optimization_level = LEVEL",
            "    so.intra_op_num_threads = 1",
            "    sess = ort.InferenceSession(model_bytes, so, providers=PROVIDERS)",
            "    return sess.run(output_names, dict(zip(input_names, inputs)))",
        ]) + "\n"

    #: What onnxruntime says where it declares a feature unimplemented, though the status
    #: it raises with is not NOT_IMPLEMENTED (its recurrent kernels).
    DECLINES = ("does not support double yet", "Batchwise recurrent operations (layout == 1) are not supported")

    def unsupported(self, exc: BaseException) -> bool:
        text = str(exc)
        return "NOT_IMPLEMENTED" in text or type(exc).__name__ == "NotImplemented" or \
            any(d in text for d in self.DECLINES)
