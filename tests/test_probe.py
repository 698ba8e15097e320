"""Support probing: declared gaps are excluded, crashes/hangs/errors are kept as findings,
workers are isolated, and generation honours the probed set."""
from __future__ import annotations

import json

from dlgate.graph.generator import GenConfig, Generator
from dlgate.probe import support
from dlgate.seeds import case_seed

FAKE = "tests.fake_runner:FakeRunner"


def test_probe_classifies_and_survives_crashes_and_hangs():
    doc = support.probe(FAKE, opsets=[17, 19], ops=["Relu", "Sigmoid", "Tanh", "Abs", "Neg"], jobs=2, deadline=8)
    unsupported = {(n, o) for n, _, o, _ in doc["unsupported"]}
    supported = {(n, o) for n, _, o in doc["supported"]}
    assert {("Relu", 17), ("Relu", 19)} <= unsupported
    for op in ("Sigmoid", "Tanh", "Abs", "Neg"):
        assert (op, 17) in supported and (op, 19) in supported
    notes = {n: why for n, _, _, why in doc["findings"]}
    assert "crashes" in notes["Sigmoid"] and "hangs" in notes["Tanh"] and "internal compiler error" in notes["Abs"]
    assert "Neg" not in notes
    json.dumps(doc)  # the cache document is plain JSON

    sup = support.support_set(doc)
    assert ("Neg", ("float32",), 18) in sup  # filled from the nearest lower probed opset
    assert not any(n == "Relu" for n, _, _ in sup)
    gen = Generator(GenConfig(ops=("Relu", "Neg", "Abs"), support=sup, opset=18))
    for i in range(20):
        assert "Relu" not in gen.generate(case_seed("p", "p", i)).op_names()


def test_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("DLGATE_CACHE", str(tmp_path))
    calls = []
    real = support.probe

    def fake_probe(system, **kw):
        calls.append(system)
        return real(system, opsets=[18], ops=["Neg", "Relu"], jobs=1)

    monkeypatch.setattr(support, "probe", fake_probe)
    a = support.load_or_probe(FAKE)
    b = support.load_or_probe(FAKE)
    assert a == b and calls == [FAKE]
    assert (tmp_path / "support").is_dir()
    support.load_or_probe(FAKE, refresh=True)
    assert len(calls) == 2


def test_probing_an_unknown_or_unavailable_backend_is_a_clear_error(capsys):
    import pytest

    from dlgate.cli import main

    assert main(["probe", "--system", "nosuch"]) == 2
    assert "unknown backend 'nosuch'" in capsys.readouterr().err
    assert main(["gen", "--seed", "s", "--count", "1", "--out", "x", "--support", "tests.nosuchmodule:X"]) == 2
    assert "cannot load backend" in capsys.readouterr().err
    with pytest.raises(support.ProbeError, match="needs a GPU"):
        support.load_or_probe("tests.fake_backends:NoGpu")
