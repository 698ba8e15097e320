"""Reducing a TIR finding: the planted dropped-lane fault reduces to its own pass and a
short PrimFunc, the same way every time, and the repro script rebuilds it with TVM and
NumPy alone in an isolated interpreter."""
from __future__ import annotations

import subprocess
import sys

import pytest

from dlgate.exec.worker import Pool
from dlgate.tir import oracle as O
from dlgate.tir import passes as P
from dlgate.tir import reduce as R
from tests.tir_seeds import SEEDS
from tests.tir_faults import with_fault

pytest.importorskip("tvm")




@pytest.fixture(scope="module")
def pool():
    with Pool(timeout_s=120) as p:
        yield p


@pytest.fixture(scope="module")
def reduced(pool):
    """The longest seed the fault changes, its verdict and its reduction (by property)."""
    from tests.tir_faults import loses_a_lane

    text = max((t for t in SEEDS.values() if loses_a_lane(t)), key=lambda t: len(R.body_lines(t)))
    seq = with_fault(P.default())
    v = O.check(pool, text, seq, seed=4).verdict
    assert v.kind == O.INCONSISTENT
    return text, seq, v, R.reduce(pool, text, seq, v, seed=4)


def test_the_fault_reduces_to_its_own_pass_and_a_short_program(reduced):
    text, seq, v, red = reduced
    assert red.passes == with_fault(P.minimal())
    assert red.verdict.key() == v.key()
    assert not red.hit_limit
    lines = R.body_lines(red.text)
    assert len(lines) <= 4 < len(R.body_lines(text))
    assert "T.vectorized(" in red.text


def test_reduction_is_deterministic(pool, reduced):
    text, seq, v, red = reduced
    again = R.reduce(pool, text, seq, v, seed=4)
    assert (again.text, again.passes, again.log) == (red.text, red.passes, red.log)


def _repro(tmp_path, source: str) -> subprocess.CompletedProcess:
    path = tmp_path / "repro.py"
    path.write_text(source)
    # -I: no PYTHONPATH, no current folder, no user site: TVM and NumPy from the environment only
    return subprocess.run([sys.executable, "-I", str(path)], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300)


def test_repro_reproduces_standalone_and_not_without_the_fault(tmp_path, reduced):
    text, seq, v, red = reduced
    src = R.repro_source(red.text, red.passes, red.verdict, seed=4)
    assert "import dlgate" not in src and "from dlgate" not in src
    assert R.repro_source(red.text, red.passes, red.verdict, seed=4) == src
    done = _repro(tmp_path, src)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("reproduced:")
    healthy = R.repro_source(red.text, P.minimal(), red.verdict, seed=4)
    done = _repro(tmp_path, healthy)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("not reproduced")


def test_candidates_are_smaller_and_in_a_fixed_order():
    text = next(iter(SEEDS.values()))
    first = list(R.candidates(text))
    assert first == list(R.candidates(text))
    assert first and all(c != text for c, _ in first)
    n = len(R.body_lines(text))
    for cand, what in first:
        assert len(R.body_lines(cand)) <= n, what


def test_a_crash_reduces_to_the_crashing_pass(pool):
    """A crash's reduction keeps the crash: the segfaulting pass alone with the required ones."""
    text = next(iter(SEEDS.values()))
    seq = P.default()
    seq.insert(3, "tests.tir_faults:segfault")
    v = O.check(pool, text, seq, seed=1).verdict
    assert v.kind == O.CRASH_KIND
    red = R.reduce(pool, text, seq, v, seed=1, max_probes=60)
    assert red.passes == ["tests.tir_faults:segfault"] + P.minimal() or \
        [n for n in red.passes if n not in P.REQUIRED] == ["tests.tir_faults:segfault"]
    assert red.verdict.kind == O.CRASH_KIND


def test_a_fault_both_builds_share_reproduces_against_the_expected_outputs(tmp_path, pool):
    """The dropped lane in the reference build too: the two builds agree, only the
    interpreter sees the fault. The repro carries the interpreter's outputs exactly and
    holds the builds to them: 1 naming the element, expected against actual, with the fault;
    0 with the healthy minimal sequence on the same expected outputs."""
    from tests.tir_faults import loses_a_lane

    text = min((t for t in SEEDS.values() if loses_a_lane(t)), key=lambda t: len(R.body_lines(t)))
    faulty = with_fault(P.minimal())
    v = O.check(pool, text, faulty, seed=6, reference=faulty).verdict
    assert v.kind == O.INCONSISTENT and v.mismatch["against"] == "interp", v.to_json()
    assert R.against_interp(v)
    expected = R.expected_outputs(pool, text, seed=6)
    assert expected is not None and O.compare(expected, expected) is None
    src = R.repro_source(text, faulty, v, seed=6, expected=expected, reference=faulty)
    assert "import dlgate" not in src and "from dlgate" not in src
    assert "computed by dlgate's TIR interpreter" in src and "EXPECTED = [" in src
    done = _repro(tmp_path, src)
    assert done.returncode == 1, done.stdout + done.stderr
    first, where = done.stdout.splitlines()[:2]
    assert first.startswith("reproduced: the build of the minimal sequence differs from the expected outputs")
    m = v.mismatch
    assert f"argument {m['arg']} at {m['index']}: {m['got']!r}, expected {m['want']!r}" in first, (first, m)
    assert where.startswith("expected outputs: the program's semantics per TIR")
    healthy = _repro(tmp_path, R.repro_source(text, P.minimal(), v, seed=6, expected=expected))
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert healthy.stdout.startswith("not reproduced: both builds give the expected outputs")


def test_expected_outputs_round_trip_exactly_and_slowdowns_keep_the_build_comparison():
    """EXPECTED decodes to the same bytes, dtype and shape (bfloat16 and a 0-d array too);
    a finding not against the interpreter (a slowdown) carries none."""
    import ml_dtypes
    import numpy as np

    arrays = [np.arange(6, dtype=np.float32).reshape(2, 3) / 7, np.array([1.5, -2.25], dtype=ml_dtypes.bfloat16),
              np.array(-3, dtype=np.int8), np.array([True, False])]
    v = O.Verdict(O.INCONSISTENT, "compare", "minimal", "x", mismatch={"against": "interp"})
    src = R.repro_source(next(iter(SEEDS.values())), P.minimal(), v, expected=arrays)
    scope: dict = {}
    exec(src.replace('if __name__ == "__main__":', "if False:"), scope)  # noqa: S102 - the script's own text
    back = scope["decode"](scope["EXPECTED"])
    for a, b in zip(arrays, back):
        assert (a.dtype, a.shape, a.tobytes()) == (b.dtype, b.shape, b.tobytes())
    slow = O.Verdict(O.SLOW, "time", "mutated", "3x", ratio=3.0)
    assert not R.against_interp(slow)
    plain = R.repro_source(next(iter(SEEDS.values())), P.minimal(), slow)
    assert "EXPECTED = None" in plain and "EXPECTED = [" not in plain


def test_the_gates_bundle_carries_the_expected_outputs_of_a_finding_against_the_interpreter(tmp_path, pool):
    """``write_bundle`` asks for the interpreter's outputs only for a finding against it; its
    ``repro.py`` then holds the builds to them (here the faulty sequence under test, against
    the healthy minimal one) and ``repro.json`` says so."""
    import json
    import os

    from dlgate.gate.run.tir import write_bundle
    from tests.tir_faults import loses_a_lane

    text = min((t for t in SEEDS.values() if loses_a_lane(t)), key=lambda t: len(R.body_lines(t)))
    faulty = with_fault(P.minimal())
    v = O.check(pool, text, faulty, seed=6, reference=faulty).verdict
    asked: list = []

    def interp(t):
        asked.append(t)
        return R.expected_outputs(pool, t, 6)

    rec = {"campaign": "tir", "root": "r", "case": "tir/00000", "index": 0}
    for fp, verdict in (("a" * 16, v), ("b" * 16, O.Verdict(O.SLOW, "time", "mutated", "3x", ratio=3.0))):
        ident = {"fingerprint": fp, "pattern": "p", "cluster": "c", "typed": "t", "text": "t"}
        rel = write_bundle(str(tmp_path), rec, {"verdict": "tir_inconsistent", "backend": "tvm", "identity": ident},
                           text, faulty, None, verdict, 6, interp=interp)
        doc = json.load(open(os.path.join(tmp_path, rel, "repro.json")))
        assert doc["tir"]["expected"] == ("interp" if verdict is v else None)
    assert asked == [text]  # the slowdown asked nothing
    done = subprocess.run([sys.executable, "-I", os.path.join(tmp_path, "repros", "a" * 16, "repro.py")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("reproduced: the build of the sequence under test differs from the expected outputs")
