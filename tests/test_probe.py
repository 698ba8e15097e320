"""Support probing: declared gaps are excluded, crashes/hangs/errors are kept as findings,
workers are isolated, and generation honours the probed set."""
from __future__ import annotations

import json
import os

from dlgate.graph.generator import GenConfig, Generator
from dlgate.probe import support
from dlgate.seeds import case_seed

FAKE = "tests.fake_runner:FakeRunner"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_probe_classifies_and_survives_crashes_and_hangs():
    doc = support.probe(FAKE, opsets=[17, 19], ops=["Relu", "Sigmoid", "Tanh", "Abs", "Neg"], jobs=2, deadline=4)
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


def _entries(path) -> list:
    """The combinations a journal holds (its header left out)."""
    return [json.loads(line) for line in open(path).read().splitlines()[1:]]


def test_a_killed_probe_resumes_from_its_journal_and_gives_the_same_document(tmp_path):
    """onnxruntime probed in a child that is SIGKILLed once a few combinations are journalled;
    the probe resumed on that journal probes only the rest, and its document is byte for
    byte the one a probe in one go gives."""
    import os
    import signal
    import subprocess
    import sys
    import time

    ops, opsets = ["Add", "Sub", "Mul", "Relu", "Cast"], [13, 17, 21]
    journal = tmp_path / "ort.journal"
    code = ("import sys; from dlgate.probe import support\n"
            "if __name__ == '__main__':\n"
            f"    support.probe('onnxruntime', opsets={opsets}, ops={ops}, journal=sys.argv[1])\n")
    child = subprocess.Popen([sys.executable, "-c", code, str(journal)], cwd=REPO,
                             env={**os.environ, "PYTHONPATH": REPO}, start_new_session=True)
    try:
        t0 = time.monotonic()
        while not (journal.exists() and len(_entries(journal)) >= 10):
            assert child.poll() is None, "the probe ended before it could be killed"
            assert time.monotonic() - t0 < 120, "no combination journalled in 120 s"
            time.sleep(0.01)
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # the probe and its worker, as a cancelled CI job loses them
        child.wait()
    kept = _entries(journal)
    total = len([c for c in support.combos(opsets) if c[0] in ops])
    assert 10 <= len(kept) < total, "killed mid-way"

    seen = []
    resumed = support.probe("onnxruntime", opsets=opsets, ops=ops, journal=str(journal),
                            progress=lambda done, n, resumed=0, running=(): seen.append((done, n, resumed)))
    assert seen and all(r == len(kept) for _, _, r in seen) and seen[-1][:2] == (total, total)
    assert _entries(journal)[: len(kept)] == kept and len(_entries(journal)) == total  # only the rest was probed
    once = support.probe("onnxruntime", opsets=opsets, ops=ops)
    assert json.dumps(resumed, indent=0) == json.dumps(once, indent=0)


def test_a_torn_journal_line_is_probed_again_and_a_changed_policy_starts_over(tmp_path):
    journal = tmp_path / "fake.journal"
    kw = dict(opsets=[17], ops=["Neg", "Relu"], journal=str(journal), deadline=8)
    first = support.probe(FAKE, **kw)
    whole = journal.read_text()
    lines = whole.splitlines(keepends=True)
    assert len(lines) == 1 + len(first["supported"]) + len(first["unsupported"])
    journal.write_text("".join(lines[:-1]) + lines[-1][:12])  # a kill in the middle of the last write
    assert support.probe(FAKE, **kw) == first
    after = journal.read_text().splitlines()
    assert len(after) == len(lines) and all(json.loads(x) for x in after)  # the torn line went; its combination came back
    assert {json.loads(x)["op"] for x in after[1:]} == {json.loads(x)["op"] for x in lines[1:]}

    # bench/probe_time.py reads where the time went from the journal
    import importlib.util

    spec = importlib.util.spec_from_file_location("probe_time", os.path.join(REPO, "bench", "probe_time.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    text = bench.summary(str(journal))
    assert text[0].startswith(f"{FAKE}: {len(after) - 1} combinations") and "deadline 8 s, 2 instances each" in text[0]
    assert f"unsupported {len(first['unsupported'])}" in text[3] and any(x.strip().startswith("Neg ") for x in text)

    # another deadline is another policy: the journal starts over rather than mixing answers
    again = support.probe(FAKE, **{**kw, "deadline": 9})
    header = json.loads(journal.read_text().splitlines()[0])
    assert header["deadline_s"] == 9 and again["deadline_s"] == 9
    assert len(journal.read_text().splitlines()) == len(lines)


def test_an_interrupted_probe_journals_only_real_answers(tmp_path):
    """Ctrl-C (here raised from the progress callback) while a hanging combination is in
    flight stops the probe and kills its worker; the kill is not journalled as the
    combination's crash, what the journal holds are the backend's own answers, and a rerun
    completes it."""
    import pytest

    journal = tmp_path / "fake.journal"
    kw = dict(opsets=[17], ops=["Neg", "Relu", "Abs", "Tanh"], journal=str(journal), deadline=4)

    def interrupt(done, total, resumed=0, running=()):
        if done >= 2 and any(c[0] == "Tanh" for c, _ in running):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        support.probe(FAKE, progress=interrupt, **kw)
    kept = _entries(journal)
    # what the fake backend answers (tests/fake_runner.py), whatever the order
    truth = {"Neg": (True, ""), "Relu": (False, "RuntimeError: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : no Relu here"),
             "Abs": (True, "fails (kept, a potential finding): RuntimeError: internal compiler error"),
             "Tanh": (True, "hangs (kept, a potential finding): Timeout: no answer within 4 s")}
    assert len(kept) >= 2 and all((r["supported"], r["note"]) == truth[r["op"]] for r in kept)
    doc = support.probe(FAKE, **kw)
    assert len(_entries(journal)) == len(doc["supported"]) + len(doc["unsupported"]) > len(kept)
    assert {n for n, _, _ in doc["supported"]} == {"Neg", "Abs", "Tanh"} and {n for n, *_ in doc["unsupported"]} == {"Relu"}
    assert {n: why for n, _, _, why in doc["findings"]} == {n: truth[n][1] for n in ("Abs", "Tanh")}


def test_a_crash_counts_only_when_a_fresh_worker_repeats_it():
    """A worker that aborts on every compile after its third (tests.fake_runner:Weary) does
    not make the later combinations crashes: each is run again in a fresh worker. Sigmoid,
    which aborts in any worker, stays a crash."""
    doc = support.probe("tests.fake_runner:Weary", opsets=[17], ops=["Neg", "Exp", "Sigmoid"], deadline=8)
    assert len(doc["supported"]) > 4 and not doc["unsupported"]
    notes = {(n, tuple(s)): why for n, s, _, why in doc["findings"]}
    assert {n for n, _ in notes} == {"Sigmoid"} and all(w.startswith("crashes") for w in notes.values())


def test_the_deadline_calls_a_hang_without_waiting_for_the_worker_timeout():
    """The fake backend sleeps 60 s on Tanh; a worker whose own timeout is 120 s calls it a
    hang at the 3 s deadline, once for both instances (the first hang ends the combination)."""
    import time

    from dlgate.backends.base import BackendSpec
    from dlgate.exec import worker as W

    with W.Worker(BackendSpec(FAKE), timeout_s=120) as w:
        assert w.start()
        t0 = time.monotonic()
        ok, note = support.probe_one(w, 2, "Tanh", ("float32",), 17, deadline=3)
        took = time.monotonic() - t0
        assert ok and note == "hangs (kept, a potential finding): Timeout: no answer within 3 s"
        assert 3 <= took < 6 + 3, took  # one deadline and a restart; two would be 6 s and more
        # the next combination gets a fresh worker and its whole deadline
        assert support.probe_one(w, 2, "Neg", ("float32",), 17, deadline=3) == (True, "")


def test_load_or_probe_resumes_its_journal_and_refresh_starts_over(tmp_path, monkeypatch):
    monkeypatch.setenv("DLGATE_CACHE", str(tmp_path))
    real = support.probe
    calls = []

    def small(system, **kw):
        calls.append(kw)
        return real(system, opsets=[18], ops=["Neg", "Relu"], **kw)

    monkeypatch.setattr(support, "probe", small)
    doc = support.load_or_probe(FAKE, deadline=5)
    journal = support.journal_path(FAKE, doc["version"])
    assert calls[-1]["journal"] == journal and calls[-1]["deadline"] == 5 and doc["deadline_s"] == 5
    assert len(_entries(journal)) == len(doc["supported"]) + len(doc["unsupported"])
    assert support.load_or_probe(FAKE) == doc and support.load_or_probe(FAKE, deadline=5) == doc and len(calls) == 1
    assert support.load_or_probe(FAKE, deadline=6)["deadline_s"] == 6 and len(calls) == 2  # another policy: probed
    stale = journal + ".stale"
    open(stale, "w").close()
    with open(journal, "a") as f:
        f.write(json.dumps({"op": "Neg", "sig": ["float32"], "opset": 18, "supported": False, "note": "stale"}) + "\n")
    support.load_or_probe(FAKE, deadline=6, refresh=True)
    assert "stale" not in open(journal).read()  # --refresh drops the journal too


def test_probe_cli_progress_names_resumed_and_slow_combinations(capsys):
    import io

    from dlgate.cli import main
    from dlgate.cli.probe import progress_printer

    now = [100.0]
    out = io.StringIO()
    p = progress_printer("tvm", out=out, every=10, clock=lambda: now[0])
    now[0] = 101
    p(40, 100, resumed=30, running=[(("Loop", ("int32", "int32"), 21), 2.0)])
    now[0] = 105
    p(41, 100, resumed=30)  # within 10 s of the last line: quiet
    now[0] = 121
    p(50, 100, resumed=30, running=[(("Loop", ("int32", "int32"), 21), 25.0)])
    now[0] = 122
    p(100, 100, resumed=30)  # the end is always said, once
    p(100, 100, resumed=30)
    lines = out.getvalue().splitlines()
    assert lines[0] == "probing tvm: 40/100 combinations (30 from the journal), 10.0/s, ~0 min left"
    assert lines[1] == ("probing tvm: 50/100 combinations (30 from the journal), 1.0/s, ~1 min left; "
                        "Loop(int32,int32) at opset 21 running for 25 s")
    assert lines[2] == "probing tvm: 100/100 combinations (30 from the journal)" and len(lines) == 3
    assert main(["probe", "--system", FAKE, "--deadline", "0"]) == 2
    assert "--deadline" in capsys.readouterr().err
