"""Misbehaving backends for the isolation tests (loaded by name in worker processes)."""
import ctypes
import os
import time

import numpy as np

from dlgate.backends.base import Backend
from dlgate.backends.tvm import TVM


class Good(Backend):
    """Returns zeros of the graph's output types."""

    name = "good"

    def version(self):
        return "1"

    def compile(self, model):
        return model.graph

    def run(self, graph, inputs):
        return [np.zeros(graph.tensors[t].shape, graph.tensors[t].dtype) for t in graph.outputs]


class Segfault(Good):
    name = "segfault"

    def run(self, graph, inputs):
        ctypes.string_at(0)  # reads address 0: SIGSEGV


class Abort(Good):
    name = "abort"

    def compile(self, model):
        os.abort()


class Hang(Good):
    name = "hang"

    def run(self, graph, inputs):
        time.sleep(3600)


class Hog(Good):
    name = "hog"

    def run(self, graph, inputs):
        blocks = []
        while True:  # touch every page so it is resident
            blocks.append(np.ones(32 * 2**20, dtype=np.uint8))
            time.sleep(0.01)


class Declines(Good):
    name = "declines"

    def compile(self, model):
        raise NotImplementedError("operator Foo is not implemented for int8")


class Raises(Good):
    name = "raises"

    def run(self, graph, inputs):
        raise RuntimeError("internal error at 0x7f3a12 in pass FuseOps")


class Broken(Good):
    name = "broken"

    def __init__(self, **kw):
        raise RuntimeError("cannot initialise")


class NoGpu(Good):
    name = "nogpu"

    @classmethod
    def unavailable_reason(cls, device):
        return "needs a GPU; none is visible"


class EnvBug(Backend):
    """onnxruntime's answers, plus one wherever the environment variable ``FAKE_BUG`` is
    "1" in the worker: a compiler whose build (environment) decides whether a bug is there,
    for the head-versus-base tests."""

    name = "envbug"

    def version(self):
        return "1"

    def compile(self, model):
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        return ort.InferenceSession(model.onnx, so, providers=["CPUExecutionProvider"])

    def run(self, sess, inputs):
        outs = sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs)})
        if os.environ.get("FAKE_BUG") == "1":
            outs = [o + 1 if o.dtype.kind == "f" else o for o in outs]
        return outs


class Flaky(EnvBug):
    """Wrong on every other call in a worker: a failure that a re-run does not reproduce."""

    name = "flaky"
    calls = 0

    def run(self, sess, inputs):
        type(self).calls += 1
        outs = sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs)})
        if type(self).calls % 2 == 1:
            outs = [o + 1 if o.dtype.kind == "f" else o for o in outs]
        return outs


class EnvTVM(TVM):
    """The real TVM, with a Relax pass that miscompiles Sigmoid added wherever ``FAKE_BUG``
    is "1" in the worker: a head build carrying a regression its base build lacks."""

    name = "envtvm"

    def compile(self, model):
        if os.environ.get("FAKE_BUG") == "1":
            self.options = dict(self.options, extra_passes=["dlgate.backends.testing:sigmoid_to_tanh"])
        return super().compile(model)
