"""The TIR pass table against TVM 0.27's real default pipeline, the required passes, and
Tzer's pass-sequence mutation."""
from __future__ import annotations

import random

import pytest

from dlgate.exec.worker import Pool
from dlgate.tir import oracle as O
from dlgate.tir import passes as P
from tests.tir_seeds import NARROW_FLOATS, OFFSET_LOOPS, SEEDS

tvm = pytest.importorskip("tvm")


def _top_level_trace(mod) -> list:
    """The passes ``tvm.tirx.build(mod, "llvm")`` runs, as a pass instrument sees them, with
    their nesting: (depth, name)."""
    seen, depth = [], [0]

    @tvm.instrument.pass_instrument
    class Trace:
        def run_before_pass(self, _mod, info):
            seen.append((depth[0], info.name))
            depth[0] += 1

        def run_after_pass(self, _mod, _info):
            depth[0] -= 1

    with tvm.transform.PassContext(instruments=[Trace()]):
        tvm.tirx.build(mod, target="llvm")
    return seen


def test_default_matches_the_traced_pipeline():
    """The pipeline's own passes (depth 2: under its module pass and its Sequential) are the
    table's DEFAULT in order, and the build's finalization is FINALIZE."""
    from dlgate.tir.build import parse

    for text in SEEDS.values():
        trace = _top_level_trace(parse(text))
        start = [k for k, (d, n) in enumerate(trace) if d == 0 and n == "_pipeline"]
        assert len(start) == 1, trace
        inner = []
        for d, n in trace[start[0] + 1:]:
            if d == 0:
                break
            if d == 2:
                inner.append(n)
        assert inner == [P.info_name(n) for n in P.DEFAULT]
        after = [n for d, n in trace[start[0] + 1:] if d == 1 and n != "sequential"]
        assert [n.split(".")[-1] for n in after][-len(P.FINALIZE):] == list(P.FINALIZE)


def test_every_table_entry_makes_a_tvm_pass():
    for name in P.PASSES:
        assert isinstance(P.make(name), tvm.transform.Pass), name
    for name in P.DEFAULT:  # what the trace names them (ForceNarrowIndexToInt32 calls itself NarrowDataType)
        assert P.make(name).info.name == P.info_name(name)
    assert P.REQUIRED <= set(P.DEFAULT)
    assert P.minimal() == [n for n in P.default() if n in P.REQUIRED]


@pytest.fixture(scope="module")
def pool():
    with Pool(timeout_s=120) as p:
        yield p


def test_minimal_builds_and_each_required_pass_is_needed(pool):
    """The minimal sequence builds every seed and agrees with TVM's default sequence; for
    each required pass, some seed does not build without it, or builds to other values
    (rejected, or a crash), and no seed builds without it to a different result that counts
    (a sequence that lacks a required pass makes an invalid pair, not a finding). The
    legalization passes are needed by the bfloat16 and float8 programs, CanonicalizeLoop by a
    vectorized loop that does not start at 0."""
    programs = list(SEEDS.values()) + list(NARROW_FLOATS.values()) + list(OFFSET_LOOPS.values())
    for text in programs:
        v = O.check(pool, text, P.default(), seed=3, interp=False).verdict
        assert v.kind == O.OK_KIND, v.to_json()
    for name in sorted(P.REQUIRED - {"FP8StorageLegalize"}):
        without = [n for n in P.minimal() if n != name]
        kinds = [O.check(pool, t, without, seed=3, interp=False).verdict.kind for t in programs]
        assert set(kinds) & {O.REJECTED, O.CRASH_KIND}, (name, kinds)
        assert set(kinds) <= {O.REJECTED, O.CRASH_KIND, O.OK_KIND}, (name, kinds)
    # FP8StorageLegalize: TVM 0.27's llvm build of float8 works without it, but the compute
    # legalization after it builds to other values: the two keep their order
    late = [n for n in P.minimal() if n != "FP8ComputeLegalize"] + ["FP8ComputeLegalize"]
    assert not P.complete(late)
    kinds = [O.check(pool, t, late, seed=3, interp=False).verdict for t in programs if "float8" in t]
    assert kinds and {v.kind for v in kinds} == {O.REJECTED}, [v.to_json() for v in kinds]
    assert any("differ" in v.detail for v in kinds)


def test_mutate_is_deterministic_and_keeps_the_required_passes():
    kinds = set()
    for seed in range(200):
        a, b = random.Random(seed), random.Random(seed)
        seq = P.default() if seed % 2 else P.minimal()
        for _ in range(5):
            new, kind = P.mutate(seq, a)
            assert (new, kind) == P.mutate(seq, b)
            assert new != seq
            assert [n for n in new if n in P.REQUIRED] == P.minimal()
            assert all(n in P.PASSES for n in new)
            kinds.add(kind)
            seq = new
    assert kinds == set(P.KINDS)


def test_mutation_kinds_do_what_they_say():
    rng = random.Random(7)
    seq = P.default()
    for _ in range(300):
        new, kind = P.mutate(seq, rng)
        if kind == "insert":
            assert len(new) == len(seq) + 1
        elif kind == "remove":
            assert len(new) == len(seq) - 1
            assert all(new.count(n) <= seq.count(n) for n in new)
        elif kind == "repeat":
            assert len(new) == len(seq) + 1 and sorted(set(new)) == sorted(set(seq))
        else:
            assert sorted(new) == sorted(seq) and new != seq
        seq = new if len(new) < 80 else P.default()


def test_check_names():
    assert P.check_names(["FlattenBuffer"]) == ["FlattenBuffer"]
    with pytest.raises(ValueError, match="unknown TIR pass 'Nope'"):
        P.check_names(["Nope"])
    with pytest.raises(ValueError, match="expected a list"):
        P.check_names("FlattenBuffer")


def test_complete():
    assert P.complete(P.minimal()) and P.complete(P.default())
    assert not P.complete(P.minimal()[1:])
    assert not P.complete(list(reversed(P.minimal())))
    assert P.complete(["StorageRewrite"] + P.minimal() + ["FlattenBuffer"])


def test_a_sequence_of_unknown_passes_is_refused_before_any_build():
    from dlgate.tir.build import check_sequence

    assert check_sequence(["FlattenBuffer", "tests.tir_faults:segfault"]) == ["FlattenBuffer",
                                                                           "tests.tir_faults:segfault"]
    for bad in (["Nope"], "FlattenBuffer", ["pkg.mod:"], [3]):
        with pytest.raises(ValueError, match="TIR pass"):
            O.check(None, "", bad)
