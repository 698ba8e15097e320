"""ONNX Runtime: CPU, CUDA and TensorRT execution providers."""
from __future__ import annotations

import contextlib
import os
import tempfile
from collections import Counter
from typing import Any

import numpy as np

from dlgate.backends._cuda import NO_CUDA, cuda_device_count, missing
from dlgate.backends.base import Backend, Model, Unavailable
from dlgate.backends.ort_log import Fd2Capture, modified
from dlgate.backends.refusals import refused
from dlgate.backends.selftest import check_outputs, probe_model

PROVIDERS = {
    "cpu": ["CPUExecutionProvider"],
    "cuda": ["CUDAExecutionProvider", "CPUExecutionProvider"],
    "tensorrt": ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"],
}
LEVELS = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC",
          "extended": "ORT_ENABLE_EXTENDED", "all": "ORT_ENABLE_ALL"}
#: Session configuration every session gets. The DequantizeLinear -> MatMul fusion into
#: MatMulNBits quantizes the activations to int8 by default (accuracy level 4, about 0.5%
#: off on purpose, a result no ONNX specification defines); level 1 keeps them float32,
#: so the fused kernel must give the specification's result.
CONFIG = {"session.qdq_matmulnbits_accuracy_level": "1"}


class OnnxRuntime(Backend):
    """``onnxruntime.InferenceSession`` on the ONNX bytes.

    Options: ``intra_op_threads`` (default 1, for determinism), ``cpu_fallback`` (default
    True: on cuda/tensorrt, nodes the provider lacks run on the CPU provider; False makes
    ORT refuse the model instead), ``record_rewrites`` (default True: on the CPU provider
    with optimizations on, the optimized model onnxruntime saves is compared with the input
    and the transformers its session log names to name the rewrites applied, see
    ``rewrites``). Every session gets ``CONFIG`` (float32 activations in MatMulNBits).
    """

    name = "onnxruntime"
    package = "onnxruntime"
    opt_levels = tuple(LEVELS)
    devices = tuple(PROVIDERS)
    #: Sessions are cheap, so more instances: support can hinge on an attribute (Gelu's
    #: exact form needs Erf, which onnxruntime lacks for float64).
    probe_tries = 8
    option_kinds = {"intra_op_threads": "positive int", "cpu_fallback": "bool", "record_rewrites": "bool"}
    #: Session configuration entries (``CONFIG``), written into repros too.
    session_config: dict = CONFIG

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

    def _session_options(self):
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[self.opt_level])
        so.intra_op_num_threads = int(self.options.get("intra_op_threads", 1))
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        for key, value in self.session_config.items():
            so.add_session_config_entry(key, value)
        so.log_severity_level = 3
        if self.device != "cpu" and not self.options.get("cpu_fallback", True):
            so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        return so

    def _check_provider(self, sess) -> None:
        """onnxruntime drops a listed provider it cannot load (its CUDA, cuDNN or TensorRT
        libraries missing or mismatched) with a warning and runs on the next one, down to
        the CPU: the session's own providers say whether it did."""
        want = PROVIDERS[self.device][0]
        if want not in sess.get_providers():
            raise Unavailable(f"{self.name} on {self.device}: {want} failed to load; onnxruntime fell back to "
                              f"{', '.join(sess.get_providers())} (are the CUDA/cuDNN/TensorRT libraries "
                              f"this onnxruntime build needs installed and on the library path?)")

    def self_test(self) -> None:
        """The start-up probe (``dlgate.backends.selftest``) in a session on this device's
        providers: the provider must be among the session's, and the profile onnxruntime
        writes must show the probe's node ran on it."""
        import onnxruntime as ort

        model, inputs, expected = probe_model()
        so = self._session_options()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        want = PROVIDERS[self.device][0]
        with tempfile.TemporaryDirectory(prefix="dlgate-ort-probe-") as tmp:
            so.enable_profiling = True
            so.profile_file_prefix = os.path.join(tmp, "probe")
            sess = ort.InferenceSession(model.onnx, so, providers=PROVIDERS[self.device])
            self._check_provider(sess)
            outs = sess.run(model.output_names, dict(zip(model.input_names, inputs)))
            ran = node_providers(sess.end_profiling())
        if ran != {want}:
            raise Unavailable(f"{self.name} on {self.device}: the start-up probe's node ran on "
                              f"{', '.join(sorted(ran)) or 'no provider onnxruntime profiled'}, not on {want}")
        check_outputs(f"{self.name} on {self.device}", [np.asarray(o) for o in outs], expected)

    def compile(self, model: Model) -> Any:
        import onnxruntime as ort

        so = self._session_options()
        record = self._records_rewrites()
        # INFO names the transformers that changed the graph (see ort_log); ERROR otherwise
        so.log_severity_level = 1 if record else 3
        providers = PROVIDERS[self.device]
        with tempfile.TemporaryDirectory(prefix="dlgate-ort-") as tmp:
            if record:
                so.optimized_model_filepath = os.path.join(tmp, "optimized.onnx")
            log = Fd2Capture()
            with log if record else contextlib.nullcontext():
                sess = ort.InferenceSession(model.onnx, so, providers=providers)
            self._check_provider(sess)  # lost since start-up: cannot run (exit 4), not a compile error
            self._rewrites = rewrite_kinds(model.onnx, so.optimized_model_filepath, log.text) if record else None
        return sess, model.input_names, model.output_names

    def _records_rewrites(self) -> bool:
        return self.device == "cpu" and self.opt_level != "disable" and self.options.get("record_rewrites", True)

    def rewrites(self, compiled: Any) -> list | None:
        return getattr(self, "_rewrites", None)

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
            *(f"    so.add_session_config_entry({k!r}, {v!r})" for k, v in cls.session_config.items()),
            "    sess = ort.InferenceSession(model_bytes, so, providers=PROVIDERS)",
            "    return sess.run(output_names, dict(zip(input_names, inputs)))",
        ]) + "\n"

    #: MatMulIntegerToFloatFusion makes a node with no int8 x uint8 kernel
    refusals_by_level = True

    def unsupported(self, exc: BaseException) -> bool:
        return refused("onnxruntime", exc)  # dlgate.backends.refusals: what onnxruntime says where it declines


def node_providers(profile_path: str) -> set:
    """The execution providers that ran the nodes of an onnxruntime profile (the JSON its
    ``end_profiling`` writes: one ``Node`` event per kernel run, ``args.provider``), the
    copies between host and device left out; the file is removed."""
    import json

    try:
        with open(profile_path) as f:
            events = json.load(f)
    finally:
        os.unlink(profile_path)
    return {e["args"]["provider"] for e in events
            if e.get("cat") == "Node" and "provider" in (e.get("args") or {})
            and not str(e["args"].get("op_name", "")).startswith("Memcpy")}


def _op_counts(graph) -> Counter:
    """(domain, op type) -> how many nodes, subgraphs (If/Loop/Scan bodies) included."""
    out: Counter = Counter()
    for n in graph.node:
        out[(n.domain if n.domain not in ("", "ai.onnx") else "", n.op_type)] += 1
        for a in n.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                out += _op_counts(g)
    return out


def rewrite_kinds(model_bytes: bytes, optimized_path: str, log: str = "") -> list | None:
    """The rewrites onnxruntime applied, named from the operator types of its optimized
    model against the input's: ``fused:T`` for a type it introduced or multiplied (a
    contrib-domain type is named ``domain:T``: ``fused:com.microsoft:FusedConv``,
    ``fused:com.microsoft.nchwc:Conv`` for the NCHWc layout), ``removed:T`` for a type it
    eliminated or reduced (constant folding, Identity/Transpose/Cast elimination, the
    operators a fusion absorbed); and from its session log (INFO severity), ``transformer:X``
    for each graph transformer that reported changing the graph (``ConvActivationFusion``,
    ``NchwcTransformer``; the rule-based ``Level1_RuleBasedTransformer`` holds many rewrite
    rules, which the operator kinds tell apart). None when no optimized model was written."""
    import onnx

    if not optimized_path or not os.path.exists(optimized_path):
        return None
    before = _op_counts(onnx.load_from_string(model_bytes).graph)
    after = _op_counts(onnx.load(optimized_path, load_external_data=False).graph)

    def name(key):
        return f"{key[0]}:{key[1]}" if key[0] else key[1]

    kinds = {f"fused:{name(k)}" for k in after if after[k] > before.get(k, 0)}
    kinds |= {f"removed:{name(k)}" for k in before if before[k] > after.get(k, 0)}
    kinds |= {f"transformer:{t}" for t in modified(log)}
    return sorted(kinds)
