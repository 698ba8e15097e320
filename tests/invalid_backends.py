"""Backends with a known fault on invalid models, for tests/test_invalid.py's catch tests.

``SegfaultingOnnxRuntime`` dies by SIGSEGV when a node reads a dtype its schema does not take
(what a compiler that indexes a kernel table by dtype without checking does); any other
model, valid or invalid, goes to onnxruntime. ``AcceptingOnnxRuntime`` takes any model and
runs the valid graph dlgate generated it from, as a compiler that ignores what it cannot
make sense of would: an invalid model is accepted and runs to completion; with
``DLGATE_TEST_ACCEPT=0`` in the worker's environment (a base build's ``env``) it is plain
onnxruntime.
"""
from __future__ import annotations

import os
import signal

import onnx

from dlgate.backends.base import Model
from dlgate.backends.onnxruntime import OnnxRuntime
from dlgate.materialize.onnx_model import to_onnx


class SegfaultingOnnxRuntime(OnnxRuntime):
    name = "segfaulting-onnxruntime"

    def compile(self, model):
        try:
            onnx.checker.check_model(onnx.load_from_string(model.onnx), full_check=True)
        except Exception as e:  # noqa: BLE001 - onnx raises its own error types
            if "has unsupported type" in str(e):
                os.kill(os.getpid(), signal.SIGSEGV)
        return super().compile(model)


class AcceptingOnnxRuntime(OnnxRuntime):
    name = "accepting-onnxruntime"

    def compile(self, model):
        if os.environ.get("DLGATE_TEST_ACCEPT", "1") != "1":
            return super().compile(model)
        return super().compile(Model(to_onnx(model.graph, 0).SerializeToString(), model.graph))
