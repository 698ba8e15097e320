"""Each TIR mutator, over the seed programs: the programs it makes are valid (TVM parses
them, finds them well formed and prints them back) at a measured rate, each valid mutant has
the property the mutator claims (more nodes, fewer nodes, a different loop, more loads or
stores, more intrinsic calls, a thread binding), the same random stream gives the same
mutant, thread bindings appear only for GPU targets, and a loop bound is only ever shrunk."""
from __future__ import annotations

import random
from collections import Counter

import pytest

tvm = pytest.importorskip("tvm")

from dlgate.tir import mutators as M  # noqa: E402
from dlgate.tir.feedback import program_counts  # noqa: E402
from dlgate.tir.mutators.base import Context  # noqa: E402
from dlgate.tir.program import validate  # noqa: E402
from dlgate.tir.seeds import graph_seeds, hand_seeds  # noqa: E402

DRAWS = 30
#: The least share of a mutator's mutants (those it could make at all) TVM must accept.
MIN_VALID = 0.85
CUDA = Context("cuda")


@pytest.fixture(scope="module")
def seeds():
    return hand_seeds() + graph_seeds("tir-test", "mutators", 3)


def _ctx(m):
    return CUDA if getattr(m, "GPU_ONLY", False) else Context()


@pytest.mark.parametrize("name", [m.NAME for m in M.ALL])
def test_mutants_are_valid_and_change_what_the_mutator_says(seeds, name):
    m = M.BY_NAME[name]
    outcomes: Counter = Counter()
    for k in range(DRAWS):
        s = seeds[k % len(seeds)]
        r = M.apply(m, s.program, random.Random(k), _ctx(m))
        kind = r.outcome.split(":")[0]
        outcomes[kind] += 1
        if kind == "ok":
            validate(r.program)
            before, after = program_counts(s.program), program_counts(r.program)
            assert m.changed(before, after), (name, s.origin, r.program.text)
        else:
            assert r.program is None
    made = outcomes["ok"] + outcomes["invalid"] + outcomes["error"]
    assert outcomes["ok"] >= DRAWS // 2, outcomes
    assert outcomes["ok"] / made >= MIN_VALID, outcomes


def test_the_same_stream_gives_the_same_mutant(seeds):
    for m in M.ALL:
        for k in range(4):
            s = seeds[(3 * k) % len(seeds)]
            a = M.apply(m, s.program, random.Random(k), CUDA)
            b = M.apply(m, s.program, random.Random(k), CUDA)
            assert a == b


def test_thread_bindings_only_for_gpu_targets(seeds):
    for k, s in enumerate(seeds):
        assert M.apply(M.BY_NAME["threads"], s.program, random.Random(k), Context("llvm")).outcome == "inapplicable"
        r = M.mutate(s.program, random.Random(k), M.ALL, Context("llvm"))
        assert r.mutator != "threads"
        if r.program is not None:
            assert "T.thread_binding(" not in r.program.text or "T.thread_binding(" in s.program.text
    made = [M.apply(M.BY_NAME["threads"], s.program, random.Random(k), CUDA) for k, s in enumerate(seeds)]
    assert any(r.program is not None and "T.thread_binding(" in r.program.text for r in made)


def program_counts_extents(program) -> list:
    from tvm import tirx

    from dlgate.tir import ast as A

    return [s.node.extent.value for s in A.sites(program.func())
            if isinstance(s.node, tirx.For) and type(s.node.extent).__name__ == "IntImm"]


def test_replacement_only_shrinks_loop_ranges(seeds):
    shrunk = 0
    for k in range(DRAWS * 2):
        s = seeds[k % len(seeds)]
        r = M.apply(M.BY_NAME["replace"], s.program, random.Random(1000 + k))
        if r.program is None:
            continue
        before, after = program_counts_extents(s.program), program_counts_extents(r.program)
        assert len(after) == len(before) and all(a <= b for a, b in zip(after, before)), r.program.text
        shrunk += after != before
    assert shrunk > 0


def test_generated_indices_stay_in_bounds(seeds):
    """Every store or load a mutator adds indexes each dimension by a value taken modulo
    the dimension's extent, a constant inside it, or a loop variable whose loop runs over
    exactly that extent from 0."""
    from tvm import tirx

    from dlgate.tir import ast as A

    def safe(i, extent: int, loops) -> bool:
        name = type(i).__name__
        if name == "FloorMod":
            return type(i.b).__name__ == "IntImm" and int(i.b.value) == extent
        if name == "IntImm":
            return 0 <= int(i.value) < extent
        if name == "Var":
            return any(lp.loop_var.same_as(i) and type(lp.extent).__name__ == "IntImm" and int(lp.extent.value) == extent
                       and type(lp.min).__name__ == "IntImm" and int(lp.min.value) == 0 for lp in loops)
        return False

    def accesses(program) -> dict:
        out: dict = {}
        for s in A.sites(program.func()):
            is_store = isinstance(s.node, tirx.BufferStore)
            if not (is_store or type(s.node).__name__ == "TensorLoad"):
                continue
            buf = s.node.buffer if is_store else s.node.source
            if not all(type(d).__name__ == "IntImm" for d in buf.shape):
                continue
            key = (str(buf.name), tuple(i.script() for i in s.node.indices))
            out[key] = all(safe(i, int(d), s.scope.loops) for i, d in zip(s.node.indices, buf.shape))
        return out

    checked = 0
    for name in ("memory", "insert"):
        for k in range(DRAWS):
            s = seeds[k % len(seeds)]
            r = M.apply(M.BY_NAME[name], s.program, random.Random(k), Context())
            if r.program is None:
                continue
            before = accesses(s.program)
            for key, ok in accesses(r.program).items():
                if key not in before:
                    assert ok, (name, key, r.program.text)
                    checked += 1
    assert checked > 0
