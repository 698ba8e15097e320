"""Tzer's three oracles on hand-written TIR programs: no false alarm on TVM's own sequences,
the planted faults (a dropped vector lane, a segfaulting pass, a pessimizing pass) each
caught as its own class, and the rules for invalid programs and rejected pairs."""
from __future__ import annotations

import numpy as np
import pytest

from dlgate.exec.worker import Pool
from dlgate.tir import oracle as O
from dlgate.tir import passes as P
from tests.tir_seeds import SEEDS
from tests.tir_faults import with_fault

pytest.importorskip("tvm")




@pytest.fixture(scope="module")
def pool():
    with Pool(timeout_s=120) as p:
        yield p


@pytest.fixture(scope="module")
def lane_losing():
    """The seeds the planted fault changes, and those it leaves alone (by property)."""
    from tests.tir_faults import loses_a_lane

    hit = {k: t for k, t in SEEDS.items() if loses_a_lane(t)}
    assert hit and len(hit) < len(SEEDS)
    return hit


def test_no_false_alarm_and_the_interpreter_agrees(pool):
    """TVM's default sequence and the minimal one agree on every seed, and the interpreter
    takes every seed and agrees with the minimal build."""
    for name, text in SEEDS.items():
        c = O.check(pool, text, P.default(), seed=11, repeats=5)
        assert c.verdict.kind == O.OK_KIND, (name, c.verdict.to_json())
        assert c.outcomes["interp"].status == "ok", (name, c.outcomes["interp"].error)


def test_the_seeds_from_tvms_tests_build_with_the_default_sequence_as_the_interpreter_says(pool):
    """Every seed picked from TVM's own tests builds with TVM's default sequence, the two
    builds agree, and the interpreter takes it and agrees with the minimal build (on two
    input seeds: the scalar parameters change which branches run)."""
    from dlgate.tir.seeds import hand_seeds

    picked = [s for s in hand_seeds() if s.origin.startswith("tvm-tests/")]
    assert picked
    for s in picked:
        for seed in (0, 11):
            c = O.check(pool, s.program.text, P.default(), seed=seed)
            assert c.verdict.kind == O.OK_KIND, (s.origin, c.verdict.to_json())
            assert c.outcomes["interp"].status == "ok", (s.origin, c.outcomes["interp"].error)


def test_the_dropped_lane_is_caught_where_it_changes_the_program(pool, lane_losing):
    for name, text in SEEDS.items():
        v = O.check(pool, text, with_fault(P.default()), seed=5).verdict
        if name in lane_losing:
            assert v.kind == O.INCONSISTENT and v.gating(), (name, v.to_json())
            assert v.mismatch["against"] == "minimal" and v.build == "mutated"
        else:
            assert v.kind == O.OK_KIND, (name, v.to_json())


def test_a_fault_in_the_reference_build_is_caught_by_the_interpreter(pool, lane_losing):
    """With the fault in both builds they agree; the interpreter, which runs no pass, does not."""
    for text in lane_losing.values():
        v = O.check(pool, text, with_fault(P.default()), seed=5, reference=with_fault(P.minimal())).verdict
        assert v.kind == O.INCONSISTENT and v.mismatch["against"] == "interp", v.to_json()


def test_a_segfaulting_pass_is_a_crash_of_the_build_and_the_pool_goes_on(pool):
    text = next(iter(SEEDS.values()))
    v = O.check(pool, text, ["tests.tir_faults:segfault"] + P.minimal(), seed=1).verdict
    assert (v.kind, v.stage, v.build) == (O.CRASH_KIND, "compile", "mutated") and v.gating(), v.to_json()
    assert "SIGSEGV" in v.detail
    assert O.check(pool, text, P.default(), seed=1).verdict.kind == O.OK_KIND


def test_a_pessimizing_pass_is_slow_and_not_gating(pool):
    """The body run 64 times: slower beyond the margin on a seed LLVM cannot fold the
    repetition away from (the same results: every seed's body is idempotent), never gating
    unless asked; a margin above the slowdown says nothing."""
    seq = with_fault(P.default(), "tests.tir_faults:repeat_body")
    verdicts = [O.check(pool, t, seq, seed=2, repeats=15).verdict for t in SEEDS.values()]
    assert {v.kind for v in verdicts} <= {O.OK_KIND, O.SLOW}, [v.to_json() for v in verdicts]
    slow = [v for v in verdicts if v.kind == O.SLOW]
    assert slow
    for v in slow:
        assert v.ratio > 2.0 and not v.gating() and v.gating(slow_gates=True) and v.finding
    text = [t for t, v in zip(SEEDS.values(), verdicts) if v.kind == O.SLOW][0]
    again = O.check(pool, text, seq, seed=2, repeats=15, margin=10_000.0).verdict
    assert again.kind == O.OK_KIND


def test_invalid_programs_and_rejected_pairs_are_not_findings(pool):
    text = next(t for t in SEEDS.values() if "T.sblock" not in t)
    broken = text.replace("def main(", "def main(undeclared, ")
    v = O.check(pool, broken, P.default()).verdict
    assert (v.kind, v.stage) == (O.INVALID, "validate") and not v.finding
    v = O.check(pool, text.replace("T.Buffer((", "T.Buffer((("), P.default()).verdict
    assert v.kind == O.INVALID and not v.finding
    # a storage legalization before MakePackedAPI: TVM refuses while applying the sequence
    v = O.check(pool, text, ["BF16StorageLegalize"] + P.minimal()).verdict
    assert (v.kind, v.stage, v.build) == (O.REJECTED, "passes", "mutated") and not v.finding, v.to_json()


def test_undefined_behaviour_is_not_a_finding(pool):
    """An out-of-bounds read: the builds may differ, the interpreter says why."""
    text = next(t for t in SEEDS.values() if "int32" in t and "T.vectorized" in t and "T.sblock" not in t)
    oob = text.replace("a[i, j] * 3", "a[i, j + 9] * 3")
    assert oob != text
    c = O.check(pool, oob, P.default(), seed=1)
    assert c.verdict.kind in (O.OK_KIND, O.INVALID), c.verdict.to_json()
    assert c.outcomes["interp"].status == "unsupported"
    assert "undefined" in c.outcomes["interp"].error["message"]


def test_compare_rules():
    a = np.array([1.0, np.nan, np.inf], dtype=np.float32)
    assert O.compare([a], [a.copy()]) is None
    assert O.compare([a * (1 + 1e-6)], [a]) is None  # within float32's tolerance
    d = O.compare([a + np.float32(1e-2)], [a])
    assert d["arg"] == 0 and d["index"] == [0] and d["count"] == 1
    assert O.compare([np.array([-np.inf], np.float32)], [np.array([np.inf], np.float32)]) is not None
    i = np.arange(4, dtype=np.int32)
    assert O.compare([i], [i.copy()]) is None
    assert O.compare([i + 1], [i])["count"] == 4  # integers bit for bit
    assert O.compare([i.astype(np.int64)], [i])["detail"].startswith("int64")


def test_slowdown_is_a_ratio_of_medians():
    assert O.slowdown([1.0, 1.0, 100.0], [3.0, 3.0, 3.0], 1e-7) == pytest.approx(3.0)
    assert O.slowdown([], [1.0], 1e-7) is None
    assert O.slowdown([1e-9], [1.0], 1e-7) is None


def test_a_hanging_pass_is_a_crash_by_timeout():
    text = next(iter(SEEDS.values()))
    with Pool(timeout_s=6) as short:
        v = O.check(short, text, P.minimal() + ["tests.tir_faults:hang"], seed=1).verdict
    assert (v.kind, v.stage, v.build) == (O.CRASH_KIND, "compile", "mutated"), v.to_json()
    assert v.detail.startswith("timeout")


def test_slowdown_can_use_the_minimum():
    assert O.slowdown([1.0, 5.0, 5.0], [2.0, 2.0, 9.0], 1e-7, statistic=min) == pytest.approx(2.0)
