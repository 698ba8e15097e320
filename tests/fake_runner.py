"""A stand-in system for probing tests: declares Relu unimplemented, aborts on Sigmoid,
hangs on Tanh, raises an ordinary error on Abs, runs everything else."""
import os
import time

import onnx


class FakeRunner:
    name = "fake"
    probe_opsets = None
    probe_tries = 2

    @staticmethod
    def unsupported(exc):
        return "NOT_IMPLEMENTED" in str(exc)

    def version(self):
        return "0.0-test"

    def run(self, model, feeds):
        ops = {n.op_type for n in onnx.load_from_string(model).graph.node}
        if "Relu" in ops:
            raise RuntimeError("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : no Relu here")
        if "Sigmoid" in ops:
            os.abort()
        if "Tanh" in ops:
            time.sleep(60)
        if "Abs" in ops:
            raise RuntimeError("internal compiler error")
        return []
