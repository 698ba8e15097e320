"""A stand-in backend for probing tests: declares Relu unimplemented, aborts on Sigmoid,
hangs on Tanh, raises an ordinary error on Abs, runs everything else."""
import os
import time

import onnx

from dlgate.backends.base import Backend


class FakeRunner(Backend):
    name = "fake"
    probe_tries = 2

    def unsupported(self, exc):
        return "NOT_IMPLEMENTED" in str(exc)

    def version(self):
        return "0.0-test"

    def compile(self, model):
        ops = {n.op_type for n in onnx.load_from_string(model.onnx).graph.node}
        if "Relu" in ops:
            raise RuntimeError("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : no Relu here")
        if "Sigmoid" in ops:
            os.abort()
        if "Tanh" in ops:
            time.sleep(60)
        if "Abs" in ops:
            raise RuntimeError("internal compiler error")
        return model

    def run(self, compiled, inputs):
        return []


class Weary(FakeRunner):
    """FakeRunner whose worker process aborts on every compile after its third: state a
    long-lived worker accumulates (memory, a corrupted heap), not the model's doing."""

    name = "weary"
    served = 0

    def compile(self, model):
        Weary.served += 1
        if Weary.served > 3:
            os.abort()
        return super().compile(model)
