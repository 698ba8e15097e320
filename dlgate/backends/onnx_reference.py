"""ONNX's own reference evaluator (``onnx.reference.ReferenceEvaluator``), pure NumPy."""
from __future__ import annotations

from typing import Any

import numpy as np

from dlgate.backends._cuda import missing
from dlgate.backends.base import Backend, Model
from dlgate.backends.refusals import refused


class OnnxReference(Backend):
    name = "onnx-reference"
    package = "onnx.reference"
    opt_levels = ("reference",)
    devices = ("cpu",)
    reference = True

    @classmethod
    def unavailable_reason(cls, device: str) -> str | None:
        return missing("onnx.reference")

    def version(self) -> str:
        import onnx

        return onnx.__version__

    def compile(self, model: Model) -> Any:
        import onnx
        from onnx.reference import ReferenceEvaluator

        return ReferenceEvaluator(onnx.load_from_string(model.onnx)), model.input_names, model.output_names

    def run(self, compiled: Any, inputs: list) -> list:
        ev, in_names, out_names = compiled
        outs = ev.run(out_names, dict(zip(in_names, inputs)))
        return [np.asarray(o) for o in outs]

    def unsupported(self, exc: BaseException) -> bool:
        return refused("onnx-reference", exc)
