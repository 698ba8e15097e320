"""Isolation: crashes, aborts, hangs and memory hogs are contained and classified, the
worker is replaced, and the batch goes on."""
from __future__ import annotations

import numpy as np
import pytest

from dlgate.backends.base import BackendSpec, Model
from dlgate.case import make_case
from dlgate.exec import worker as W
from dlgate.graph.generator import GenConfig, Generator


@pytest.fixture(scope="module")
def model():
    case = make_case(Generator(GenConfig(max_nodes=3, dtypes=("float32",))), "w", "w", 0)
    return Model(case.model_bytes, case.graph)


def spec(name):
    return BackendSpec(f"tests.fake_backends:{name}")


def feeds(model):
    g = model.graph
    return [np.zeros(g.tensors[t].shape, g.tensors[t].dtype) for t in g.inputs]


def test_failures_are_classified_and_the_batch_goes_on(model):
    with W.Pool(timeout_s=3, memory_mb=400) as pool:
        good = pool.execute(spec("Good"), model, feeds(model))
        assert good.ok and len(good.outputs) == len(model.graph.outputs)
        seg = pool.execute(spec("Segfault"), model, feeds(model))
        assert seg.status == W.CRASH and seg.error["signal"] == "SIGSEGV"
        ab = pool.execute(spec("Abort"), model, feeds(model))
        assert ab.status == W.CRASH and ab.error["signal"] == "SIGABRT"
        hang = pool.execute(spec("Hang"), model, feeds(model))
        assert hang.status == W.TIMEOUT and hang.wall_s < 10
        hog = pool.execute(spec("Hog"), model, feeds(model))
        assert hog.status == W.OOM
        dec = pool.execute(spec("Declines"), model, feeds(model))
        assert dec.status == W.UNSUPPORTED and dec.error["stage"] == "compile"
        err = pool.execute(spec("Raises"), model, feeds(model))
        assert err.status == W.RUN_ERROR and "FuseOps" in err.error["message"] and err.error["frames"]
        # the crashed worker is replaced on the next case
        again = pool.execute(spec("Segfault"), model, feeds(model))
        assert again.status == W.CRASH and pool.get(spec("Segfault")).restarts == 2
        assert pool.execute(spec("Good"), model, feeds(model)).ok


def test_unavailable_and_broken_backends_say_why(model):
    with W.Pool() as pool:
        out = pool.execute(spec("NoGpu"), model, feeds(model))
        assert out.status == W.UNAVAILABLE and "needs a GPU" in out.error["message"]
        out = pool.execute(spec("Broken"), model, feeds(model))
        assert out.status == W.UNAVAILABLE and "cannot initialise" in out.error["message"]
        out = pool.execute(BackendSpec("no-such-backend"), model, feeds(model))
        assert out.status == W.UNAVAILABLE and "unknown backend" in out.error["message"]


def test_worker_is_reused_across_cases(model):
    with W.Worker(spec("Good")) as w:
        for _ in range(5):
            assert w.execute(model, feeds(model)).ok
        assert w.restarts == 0 and w._jobs == 5
