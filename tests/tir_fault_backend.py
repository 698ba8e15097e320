"""A TVM whose ``LoopPartition`` pass is faulty where the environment variable
``FAKE_TIR_FAULT`` is ``1``: the pass is followed by :func:`tests.tir_faults.short_vector_loop`
(a vectorized loop loses its last iteration). ``LoopPartition`` is in TVM's default TIR
sequence and not in the minimal one, so such a TVM builds a program with a vectorized loop
wrongly with its default sequence and rightly with the minimal one: what the TIR mode's
inconsistency oracle is for. The same patch, applied in a repro's process, makes the repro
run on the faulty TVM (:func:`patch`)."""
from __future__ import annotations

import os

from dlgate.backends.tvm import TVM
from dlgate.tir.build import TirBackend


def patch() -> None:
    """Make ``tvm.s_tir.transform.LoopPartition`` the faulty pass (once per process)."""
    import tvm
    from tvm import s_tir

    from tests.tir_faults import short_vector_loop

    t = s_tir.transform
    if getattr(t.LoopPartition, "faulty", False):
        return
    real = t.LoopPartition

    def faulty(*args):
        return tvm.transform.Sequential([real(*args), short_vector_loop], name="LoopPartition")

    faulty.faulty = True
    t.LoopPartition = faulty


class FaultyTir(TirBackend):
    """The TIR backend, on the faulty TVM where ``FAKE_TIR_FAULT`` is 1."""

    def compile(self, model):
        if os.environ.get("FAKE_TIR_FAULT") == "1":
            patch()
        return super().compile(model)


class FaultyTvm(TVM):
    """TVM whose TIR mode builds with :class:`FaultyTir`."""

    tir_backend = "tests.tir_fault_backend:FaultyTir"
