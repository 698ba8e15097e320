"""IR-feature feedback, the recorded corpus and Tzer's loop: features name what a program
holds and novelty counts only what was not seen; a corpus's JSON state round-trips byte for
byte; after N_max IR mutations without new feedback an entry's pass sequence is mutated
instead; a program TVM rejects or whose execution fails never joins the pool; and any
step's program is regenerated from (seed, campaign, index, recorded state)."""
from __future__ import annotations

import json
import os

import pytest

tvm = pytest.importorskip("tvm")

from dlgate.tir import fuzz as FZ  # noqa: E402
from dlgate.tir.feedback import Corpus, features, pass_features  # noqa: E402
from dlgate.tir.seeds import hand_seeds  # noqa: E402

SEED, CAMPAIGN = "tir-test", "fuzz"


@pytest.fixture(scope="module")
def seeds():
    return hand_seeds()


def _seed(seeds, holding: str):
    return next(s for s in seeds if holding in s.program.text)


def test_features_name_what_a_program_holds(seeds):
    f = features(_seed(seeds, "T.vectorized(16)").program.func())
    assert {"loop:PARALLEL", "loop:VECTORIZED", "loop-nest:PARALLEL>VECTORIZED", "intrinsic:tirx.exp",
            "dtype:float32", "node:BufferStore", "param:float32:2d", "loop-depth:2"} <= f
    g = features(_seed(seeds, '"int8"').program.func())
    assert {"intrinsic:tirx.popcount", "dtype:int8", "node-dtype:Cast:int32"} <= g
    assert "loop:VECTORIZED" not in g
    h = features(_seed(seeds, "pragma_auto_unroll_max_step").program.func())
    assert "annotation:pragma_auto_unroll_max_step=16" in h
    assert pass_features(["A", "B", "A"]) == {"pass:A", "pass:B", "pass-pair:A>B", "pass-pair:B>A"}


def test_novelty_counts_only_unseen_features(seeds):
    c = Corpus()
    a = features(_seed(seeds, "T.vectorized(16)").program.func())
    b = features(_seed(seeds, '"int8"').program.func())
    assert c.observe(a) == a
    assert c.observe(a) == set()
    new = c.observe(b)
    assert new == b - a and "loop:PARALLEL" not in new and "intrinsic:tirx.popcount" in new
    assert c.novel(a | {"pass-pair:X>Y"}) == {"pass-pair:X>Y"}


def test_corpus_state_round_trips(seeds):
    corpus, failed = FZ.initial_corpus(seeds, FZ.LOCAL_REQUIRED, FZ.lower_execute)
    assert not failed and len(corpus.entries) == len(seeds)
    FZ.fuzz(corpus, SEED, CAMPAIGN, 6)
    text = corpus.to_json()
    assert Corpus.from_json(text).to_json() == text
    with pytest.raises(ValueError, match="version"):
        Corpus.from_json(json.dumps({"version": 0, "entries": [], "features": []}))


def test_pass_mutation_after_n_max_stalls(seeds):
    """An executor that never gives anything new stalls every entry: each is IR-mutated
    N_max times, then its pass sequence is mutated once (counter reset), and so on."""
    corpus, _ = FZ.initial_corpus(seeds[:2], FZ.LOCAL_REQUIRED, FZ.lower_execute)
    flat = FZ.Execution("ok", frozenset({"same"}))
    corpus.observe({"same"})
    res = FZ.fuzz(corpus, SEED, CAMPAIGN, 40, execute=lambda p, ps: flat, settings=FZ.Settings(n_max=2))
    kinds = [s["kind"] for s in res.steps]
    assert "pass" in kinds and kinds.count("ir") > kinds.count("pass")
    assert all(s["update"] in ("stalled", "invalid") for s in res.steps if s["kind"] == "ir")
    assert all(s["update"] == "reset" for s in res.steps if s["kind"] == "pass")
    assert len(corpus.entries) == 2  # nothing new: nothing joins
    assert all(e.stall <= 2 for e in corpus.entries)
    off = FZ.fuzz(corpus, SEED, CAMPAIGN, 20, execute=lambda p, ps: flat, settings=FZ.Settings(n_max=2, pass_mutation=False))
    assert {s["kind"] for s in off.steps} == {"ir"}


def test_failed_and_rejected_programs_never_join(seeds):
    """Executions that fail are findings, not pool entries; mutants TVM refuses are not run."""
    corpus, _ = FZ.initial_corpus(seeds, FZ.LOCAL_REQUIRED, FZ.lower_execute)
    known = {e.program.text for e in corpus.entries}

    def execute(p, ps):
        ex = FZ.lower_execute(p, ps)
        if "T.Select(" in p.text or "scratch" in p.text:  # stands for a build that fails
            return FZ.Execution("error", ex.features, "injected failure")
        return ex

    res = FZ.fuzz(corpus, SEED, CAMPAIGN, 40, execute=execute)
    pooled = {e.program.text for e in corpus.entries} - known
    assert pooled, "nothing new joined the pool"
    assert not any("T.Select(" in t or "scratch" in t for t in pooled)
    assert res.failures and all(f["detail"] == "injected failure" for f in res.failures)
    assert all(s["update"] == "failed" for s in res.steps if s["index"] in {f["index"] for f in res.failures})
    kept = sum(s["update"] == "kept" for s in res.steps)
    assert len(corpus.entries) == len(known) + kept
    assert res.growth == sorted(res.growth)  # features only accumulate


def test_any_step_is_regenerated_from_the_recorded_state(seeds, tmp_path):
    corpus, _ = FZ.initial_corpus(seeds, FZ.LOCAL_REQUIRED, FZ.lower_execute)
    rec = str(tmp_path / "rec")
    FZ.fuzz(corpus, SEED, CAMPAIGN, 30, record_dir=rec, snapshot_every=10)
    assert sorted(os.listdir(rec)) == ["journal.jsonl", "state-0.json", "state-10.json", "state-20.json"]
    journal = [json.loads(ln) for ln in open(os.path.join(rec, "journal.jsonl"))]
    for k in (0, 13, 29):
        state = FZ.state_at(rec, SEED, CAMPAIGN, k)
        p = FZ.propose(state, SEED, CAMPAIGN, k)
        assert (p.program.digest() if p.program else None) == journal[k]["digest"]
    with open(os.path.join(rec, "state-20.json")) as f:
        assert FZ.state_at(rec, SEED, CAMPAIGN, 20).to_json() == f.read()
    assert FZ.state_at(rec, SEED, CAMPAIGN, 30).to_json() == corpus.to_json()


def test_lcov_tracefile_features():
    """Covered lines and taken branches of an lcov tracefile become features; lines never
    run, branches never taken and records outside a source file do not."""
    from dlgate.tir.feedback import lcov_features

    text = ("TN:\nDA:1,1\nSF:src/tir/transforms/vectorize_loop.cc\nFN:10,Vectorize\nDA:10,3\nDA:11,0\n"
            "BRDA:12,0,0,2\nBRDA:12,0,1,-\nBRDA:13,1,0,0\nLF:2\nLH:1\nend_of_record\n"
            "SF:src/tir/transforms/unroll_loop.cc\nDA:5,1\nend_of_record\nDA:7,9\n")
    assert lcov_features(text) == {"cov:line:src/tir/transforms/vectorize_loop.cc:10",
                                   "cov:branch:src/tir/transforms/vectorize_loop.cc:12:0:0",
                                   "cov:line:src/tir/transforms/unroll_loop.cc:5"}
    c = Corpus()
    c.observe(lcov_features(text))
    assert c.novel(lcov_features(text.replace("DA:11,0", "DA:11,4"))) == {
        "cov:line:src/tir/transforms/vectorize_loop.cc:11"}


def test_an_isolated_execution_survives_a_crash(seeds):
    """A pass sequence that kills the process comes back as a crash; the loop goes on."""
    import os
    import signal

    p = seeds[0].program

    def dies(program, passes):
        if "crash" in passes:
            os.kill(os.getpid(), signal.SIGSEGV)
        return FZ.lower_execute(program, [n for n in passes if n != "crash"])

    run = FZ.isolated(dies)
    crashed = run(p, ["crash"])
    assert (crashed.status, crashed.detail) == ("crash", "killed by SIGSEGV")
    fine = run(p, list(FZ.LOCAL_REQUIRED))
    assert fine == FZ.lower_execute(p, list(FZ.LOCAL_REQUIRED))
    slow = FZ.isolated(lambda program, passes: __import__("time").sleep(30), timeout_s=0.5)(p, [])
    assert slow.status == "timeout"
