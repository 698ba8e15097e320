"""The TIR program model: a program is TVMScript text that TVM accepts (parses, is well
formed, prints back to itself) and anything else is refused; seed programs from dlgate's
graphs and from hand-written TVMScript, their mutants and a fuzz run's recorded corpus are
byte-identical in any process."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

tvm = pytest.importorskip("tvm")

from dlgate.tir.program import InvalidProgram, Program, from_func, is_valid, validate  # noqa: E402
from dlgate.tir.seeds import graph_seeds, hand_seeds  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: What a fresh process computes and prints: the digest of every seed (hand-written, and of
#: the first generated graphs in both forms), of mutants of each, and of a short fuzz run's
#: recorded corpus.
SCRIPT = r"""
import hashlib, random
from dlgate.tir.seeds import hand_seeds, graph_seeds
from dlgate.tir import mutators as M, fuzz as FZ
seeds = hand_seeds() + graph_seeds("tir-test", "determinism", 3)
h = hashlib.sha256()
for s in seeds:
    h.update(s.origin.encode() + b"\0" + s.program.text.encode() + b"\0")
for k, s in enumerate(seeds):
    m = M.mutate(s.program, random.Random(k), M.ALL, M.Context("cuda"))
    h.update((m.mutator + m.outcome).encode() + (m.program.text.encode() if m.program else b"-"))
corpus, _ = FZ.initial_corpus(seeds, FZ.LOCAL_REQUIRED, FZ.lower_execute)
FZ.fuzz(corpus, "tir-test", "determinism", 12)
h.update(corpus.to_json().encode())
print(len(seeds), h.hexdigest())
"""


def _fresh(hashseed: str) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONHASHSEED=hashseed)
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]


def _here() -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(SCRIPT, {})  # noqa: S102 - the same text the fresh process runs
    return out.getvalue().strip().splitlines()[-1]


def test_seeds_mutants_and_corpus_are_the_same_in_any_process():
    """A fresh interpreter (its own hash seed, nothing cached) and this one, which has
    parsed and mutated other programs before, give the same bytes."""
    a, b = _fresh("1"), _here()
    assert a == b
    count = int(a.split()[0])
    assert count > len(hand_seeds())  # the graphs gave seeds too


def test_hand_seeds_hold_what_they_are_there_for():
    texts = "\n".join(s.program.text for s in hand_seeds())
    for what in ("T.parallel(", "T.vectorized(", "T.unroll(", "pragma_auto_unroll_max_step", "T.alloc_buffer(",
                 "while ", '"float16"', '"bfloat16"', '"int8"', "T.popcount(", "T.exp("):
        assert what in texts, what
    for s in hand_seeds():
        validate(s.program)


def test_graph_seeds_come_in_both_forms_and_name_what_they_skip():
    skipped: list = []
    seeds = graph_seeds("tir-test", "forms", 4, skipped=skipped)
    forms = {s.origin.rsplit("/", 1)[1] for s in seeds}
    assert forms == {"legalized", "lowered"}
    assert len({s.program.text for s in seeds}) == len(seeds)  # each text once
    for s in seeds:
        assert s.origin.startswith("tir-test/forms/")
        validate(s.program)
        assert ("T.sblock(" in s.program.text) == s.origin.endswith("legalized")
    assert all(": " in line for line in skipped)


def test_program_text_digest_and_function():
    p = hand_seeds()[0].program
    assert p.digest() == hashlib.sha256(p.text.encode()).hexdigest()
    assert from_func(p.func()) == p
    assert p.module()["main"].same_as(p.func())


def _broken(text: str, what: str) -> None:
    with pytest.raises(InvalidProgram, match=what):
        validate(Program(text))
    assert not is_valid(Program(text))


def test_invalid_programs_are_refused():
    from tvm import tirx

    p = [s for s in hand_seeds() if "T.parallel(8)" in s.program.text][0].program
    _broken(p.text.replace("T.parallel(8)", "T.parallel(8"), "does not parse")
    _broken(p.text.replace("def main(", "def other("), "not one PrimFunc named main")
    _broken(p.text + "\n", "does not print back")
    # a variable no scope binds: TVM's own well-formedness check refuses it
    f = p.func()
    outer, inner = f.body, f.body.body
    store = inner.body
    free = tirx.Var("free", "int32")
    bad = f.with_body(tirx.For(outer.loop_var, outer.min, outer.extent, outer.kind,
                               tirx.For(inner.loop_var, inner.min, inner.extent, inner.kind,
                                        tirx.BufferStore(store.buffer, store.value, [free, free]))))
    text = tvm.IRModule({"main": bad}).script()
    with pytest.raises(InvalidProgram):
        validate(Program(text))


def test_seeds_from_tvms_tests_name_their_source_and_hold_what_they_are_there_for():
    """Each PrimFunc picked from TVM's own tests is a seed of origin ``tvm-tests/<file>``
    after the hand-written ones, its file's header names the test file and the apache/tvm
    commit it came from and what it brings; together they hold the forms TVM's passes
    special-case that the hand-written seeds do not."""
    import re

    from dlgate.tir.seeds import TVM_TESTS_DIR

    seeds = hand_seeds()
    picked = [s for s in seeds if s.origin.startswith("tvm-tests/")]
    assert 6 <= len(picked) <= 10
    assert [s.origin.split("/")[0] for s in seeds] == ["hand"] * (len(seeds) - len(picked)) + ["tvm-tests"] * len(picked)
    for s in picked:
        head = open(os.path.join(TVM_TESTS_DIR, s.origin.split("/", 1)[1])).read().split("@T.prim_func")[0]
        assert re.search(r"From apache/tvm \(Apache-2\.0\), tests/python/\S+\.py", head), s.origin
        assert re.search(r"commit [0-9a-f]{40}\.", head) and "# Brings:" in head and "# Adapted:" in head, s.origin
        validate(s.program)
    texts = "\n".join(s.program.text for s in picked)
    hand = "\n".join(s.program.text for s in seeds if s.origin.startswith("hand/"))
    for what in ("pragma_loop_partition_hint", "T.let[", ".view(", "T.attr({",
                 '"tirx.noalias"', "range(n, n + "):
        assert what in texts and what not in hand, what
