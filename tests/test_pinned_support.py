"""The pinned onnxruntime support (tests/pinned_support.py) that tests/test_validity.py draws
from instead of probing: its file reads back as written, and it agrees with a live probe of
the installed onnxruntime on a sample of supported and unsupported combinations."""
from __future__ import annotations

import os
import random

import pytest

from dlgate.backends.base import BackendSpec
from dlgate.exec import worker as W
from dlgate.probe.support import combos, probe_one
from tests import pinned_support


def test_a_pin_reads_back_as_written(tmp_path):
    support = frozenset({("Abs", ("float32",), o) for o in (13, 14, 15, 17, 19, 20)}
                        | {("Add", ("int8", "int8"), 28), ("Range", (), 13)})
    text = pinned_support.render(support, "a header\nof two lines")
    assert text.splitlines() == ["# a header", "# of two lines", "Abs|float32|13-15,17,19-20",
                                 "Add|int8,int8|28", "Range||13"]
    path = tmp_path / "pin.txt"
    path.write_text(text)
    assert pinned_support.read(str(path)) == support


def test_the_pin_agrees_with_a_live_probe_of_a_sample():
    path = pinned_support.pin_path("onnxruntime")
    if not os.path.exists(path):
        pytest.skip(f"no pin for this onnxruntime and generator ({os.path.basename(path)}): the tests probe it")
    pin = pinned_support.read(path)
    every = combos(sorted({o for _, _, o in pin}))
    rng = random.Random(0)
    sample = rng.sample([c for c in every if c in pin], 12) + rng.sample([c for c in every if c not in pin], 12)
    from dlgate.backends.onnxruntime import OnnxRuntime

    worker = W.Worker(BackendSpec("onnxruntime"), timeout_s=120)
    try:
        found = {c: probe_one(worker, OnnxRuntime.probe_tries, *c)[0] for c in sample}
    finally:
        worker.close()
    assert {c: c in pin for c in sample} == found
