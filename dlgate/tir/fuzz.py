"""Tzer's fuzz loop (Algorithm 1) over TIR programs and pass sequences.

The pool holds ``<program, passes, stall>``. A step draws an entry; if its stall count has
reached ``n_max`` (Tzer's ``N_max``, 4 by default: the best value of its sensitivity study)
it mutates the pass sequence instead of the program, once, and resets the count whether or
not the new sequence gave new feedback (a new sequence is adopted only where it did). Else
it mutates the program; a mutant TVM accepts (:func:`dlgate.tir.program.validate`) is
executed with the entry's passes; one with new feedback joins the pool and resets its
parent, one without raises the parent's stall count. A mutant TVM rejects, or whose
execution fails, never joins the pool; a failure is kept as a finding for the oracle.

Every step is a function of (seed, campaign, index, the corpus state before it): the step's
random stream comes from those three, and the state is the recorded corpus
(:meth:`dlgate.tir.feedback.Corpus.to_json`). The loop writes a snapshot of the state every
``snapshot_every`` steps and a journal line per step (what the step drew and which of its
features were new), so :func:`state_at` rebuilds the state before any step without running
TVM's passes again, and :func:`propose` regenerates the step's program byte for byte."""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import random
import select
import signal
import time
from dataclasses import dataclass, field

from dlgate.tir import mutators as M
from dlgate.tir import passes as P
from dlgate.tir.feedback import Corpus, Entry, features, pass_features
from dlgate.tir.mutators.base import Context
from dlgate.tir.program import Program

N_MAX = 4


def rng_for(seed: str, campaign: str, index: int) -> random.Random:
    """The random stream of step ``index``: SHA-256 of a fixed layout, as for graph cases."""
    blob = "\x00".join(("dlgate-tir", seed, campaign, str(index))).encode()
    return random.Random(int.from_bytes(hashlib.sha256(blob).digest()[:8], "big"))


# -- passes --------------------------------------------------------------------------------------
#: The shortest sequence that lowers a block program to loops in this process (no target
#: binding or packed API, which the isolated build adds): what the loop's tests and the
#: in-process executor start seeds with.
LOCAL_REQUIRED = ("LowerInitBlock", "ConvertBlocksToOpaque", "LowerOpaqueBlock", "FlattenBuffer", "VectorizeLoop")


def pass_hooks() -> tuple:
    """``(mutate, minimal, make)`` of :mod:`dlgate.tir.passes`: Tzer's pass mutation, the
    minimal sequence a build needs, and a pass by its name."""
    return P.mutate, P.minimal(), P.make


# -- execution -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Execution:
    """What running a program with a pass sequence gave: ``status`` "ok" or "error" (the
    passes raised: a finding for the oracle to judge, never a pool entry), the feedback
    ``features``, and ``detail`` (the error's last line)."""

    status: str
    features: frozenset = frozenset()
    detail: str = ""


def lower_execute(program: Program, passes: list, make=None) -> Execution:
    """The in-process executor: the program's features, the pass sequence's, and the
    features of the IR the passes produce (``after:``), with the target bound to ``llvm``
    first. Code generation and running are the build's (:mod:`dlgate.tir.build`), in an
    isolated worker; this one serves the loop's tests and the ablation."""
    import tvm  # local: optional compiler, imported where it runs
    from tvm import tirx  # local: optional compiler, imported where it runs

    make = make or pass_hooks()[2]
    feats = features(program.func()) | pass_features(passes)
    try:
        mod = tirx.transform.BindTarget(tvm.target.Target("llvm"))(program.module())
        with tvm.transform.PassContext(opt_level=3):
            for name in passes:
                mod = make(name)(mod)
        after = features(mod["main"], "after:")
    except Exception as e:  # noqa: BLE001 - TVM raises many classes; the oracle tells them apart
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        return Execution("error", frozenset(feats), f"{type(e).__name__}: {lines[-1] if lines else ''}"[:300])
    return Execution("ok", frozenset(feats | after))


def isolated(execute, timeout_s: float = 60.0):
    """``execute`` run in a forked child per call, as Tzer's executor does: a TVM crash
    (a signal) or hang kills the child, not the loop, and comes back as status "crash"
    (``detail`` names the signal) or "timeout", a finding like "error". POSIX only; the
    campaign's build runs in dlgate's own isolated workers instead."""
    def run(program: Program, passes: list) -> Execution:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: run, send the result, leave without cleanup
            os.close(r)
            try:
                data = pickle.dumps(execute(program, passes))
                with os.fdopen(w, "wb") as f:
                    f.write(data)
            finally:
                os._exit(0)
        os.close(w)
        chunks, deadline = [], time.monotonic() + timeout_s
        with os.fdopen(r, "rb") as f:
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([f], [], [], left)[0]:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    return Execution("timeout", frozenset(), f"no result in {timeout_s:g} s")
                chunk = os.read(f.fileno(), 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            return Execution("crash", frozenset(), f"killed by {signal.Signals(sig).name}")
        if not chunks:
            return Execution("crash", frozenset(), f"exited with status {os.WEXITSTATUS(status)} without a result")
        return pickle.loads(b"".join(chunks))

    return run


# -- the loop ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Proposal:
    """Step ``index``: the pool entry drawn (``parent``), ``kind`` ("ir" or "pass"), the
    candidate program and passes (None when the mutation gave nothing valid), the mutator
    (or the pass mutation's kind) and the mutation's outcome."""

    index: int
    parent: int
    kind: str
    program: Program | None
    passes: tuple
    mutator: str
    outcome: str


@dataclass(frozen=True)
class Settings:
    """The loop's knobs: the mutators IR mutation draws from, the target, ``n_max``, and
    whether pass mutation happens at all (the ablation turns it off)."""

    mutators: tuple = M.ALL
    target: str = "llvm"
    n_max: int = N_MAX
    pass_mutation: bool = True
    size: int = 4


def propose(corpus: Corpus, seed: str, campaign: str, index: int, settings: Settings = Settings(),
            mutate_passes=None) -> Proposal:
    """Step ``index``'s candidate, from the state ``corpus`` holds before it (not changed)."""
    if not corpus.entries:
        raise ValueError("the TIR corpus is empty: no seed program was accepted")
    rng = rng_for(seed, campaign, index)
    k = rng.randrange(len(corpus.entries))
    e = corpus.entries[k]
    if settings.pass_mutation and e.stall >= settings.n_max:
        mutate_passes = mutate_passes or pass_hooks()[0]
        seq, kind = mutate_passes(list(e.passes), rng)
        return Proposal(index, k, "pass", e.program, tuple(seq), kind, "ok")
    m = M.mutate(e.program, rng, settings.mutators, Context(settings.target, settings.size))
    return Proposal(index, k, "ir", m.program, e.passes, m.mutator, m.outcome)


def update(corpus: Corpus, p: Proposal, status: str | None, new: set) -> str:
    """Algorithm 1's update for proposal ``p`` whose execution gave ``status`` (None: not
    executed, the mutant was not valid) and the feature set ``new`` (already recorded as
    seen); returns what happened: "kept", "adopted", "stalled", "reset", "invalid", "failed"."""
    e = corpus.entries[p.parent]
    if p.kind == "pass":
        if status == "ok" and new:
            corpus.entries[p.parent] = Entry(e.program, p.passes, 0, e.origin)
            return "adopted"
        corpus.entries[p.parent] = Entry(e.program, e.passes, 0, e.origin)
        return "reset" if status == "ok" else "failed"
    if status is None:
        corpus.entries[p.parent] = Entry(e.program, e.passes, e.stall + 1, e.origin)
        return "invalid"
    if status != "ok":
        return "failed"
    if new:
        corpus.add(Entry(p.program, p.passes, 0, f"{p.index}:{p.mutator}"))
        corpus.entries[p.parent] = Entry(e.program, e.passes, 0, e.origin)
        return "kept"
    corpus.entries[p.parent] = Entry(e.program, e.passes, e.stall + 1, e.origin)
    return "stalled"


@dataclass
class Result:
    """A run's corpus and its figures: per step the proposal's kind, mutator, outcome and
    what the update did, the feature count after it (``growth``), the failures (findings
    for the oracle: program text, passes, detail) and the time."""

    corpus: Corpus
    steps: list = field(default_factory=list)
    growth: list = field(default_factory=list)
    failures: list = field(default_factory=list)
    seconds: float = 0.0


def initial_corpus(seeds: list, passes: list, execute) -> tuple:
    """The pool of the seed programs (``dlgate.tir.seeds.Seed``) with ``passes``, each one's
    feedback recorded; seeds whose execution fails are left out (and returned)."""
    corpus, failed = Corpus(), []
    for s in seeds:
        ex = execute(s.program, list(passes))
        if ex.status != "ok":
            failed.append((s.origin, ex.detail))
            continue
        corpus.observe(set(ex.features))
        corpus.add(Entry(s.program, tuple(passes), 0, s.origin))
    return corpus, failed


def fuzz(corpus: Corpus, seed: str, campaign: str, steps: int, *, start: int = 0, settings: Settings = Settings(),
         execute=None, record_dir: str | None = None, snapshot_every: int = 50) -> Result:
    """Steps ``start``..``start + steps - 1`` of Algorithm 1 on ``corpus`` (changed in
    place). ``execute(program, passes)`` gives an :class:`Execution` (default
    :func:`lower_execute`). With ``record_dir``, the state before step ``start`` and every
    ``snapshot_every`` steps is written there (``state-<index>.json``) and a journal line
    per step to ``journal.jsonl``."""
    mutate_passes, _, make = pass_hooks()
    execute = execute or (lambda prog, ps: lower_execute(prog, ps, make))
    res = Result(corpus)
    journal = None
    if record_dir:
        os.makedirs(record_dir, exist_ok=True)
        journal = open(os.path.join(record_dir, "journal.jsonl"), "a")
    t0 = time.perf_counter()
    try:
        for index in range(start, start + steps):
            if record_dir and (index - start) % snapshot_every == 0:
                _write(os.path.join(record_dir, f"state-{index}.json"), corpus.to_json())
            p = propose(corpus, seed, campaign, index, settings, mutate_passes)
            status, new, detail = None, set(), ""
            if p.program is not None:
                ex = execute(p.program, list(p.passes))
                status, detail = ex.status, ex.detail
                new = corpus.observe(set(ex.features)) if ex.status == "ok" else set()
                if ex.status != "ok":
                    res.failures.append({"index": index, "text": p.program.text, "passes": list(p.passes),
                                         "detail": detail})
            what = update(corpus, p, status, new)
            res.steps.append({"index": index, "kind": p.kind, "mutator": p.mutator, "outcome": p.outcome.split(":")[0],
                              "update": what, "new": len(new)})
            res.growth.append(len(corpus.seen))
            if journal:
                journal.write(json.dumps({"index": index, "kind": p.kind, "parent": p.parent, "mutator": p.mutator,
                                          "outcome": p.outcome, "status": status, "new": sorted(new),
                                          "digest": p.program.digest() if p.program else None,
                                          "update": what, "detail": detail}, sort_keys=True) + "\n")
    finally:
        res.seconds = time.perf_counter() - t0
        if journal:
            journal.close()
    return res


def state_at(record_dir: str, seed: str, campaign: str, index: int, settings: Settings = Settings()) -> Corpus:
    """The corpus state before step ``index``, from the newest snapshot at or before it and
    the journal's recorded feedback for the steps between (no pass is run again)."""
    snaps = sorted(int(n[len("state-"):-len(".json")]) for n in os.listdir(record_dir)
                   if n.startswith("state-") and n.endswith(".json"))
    base = max((s for s in snaps if s <= index), default=None)
    if base is None:
        raise ValueError(f"no recorded TIR state at or before step {index} in {record_dir}")
    with open(os.path.join(record_dir, f"state-{base}.json")) as f:
        corpus = Corpus.from_json(f.read())
    lines = {}
    with open(os.path.join(record_dir, "journal.jsonl")) as f:
        for ln in f:
            d = json.loads(ln)
            lines[d["index"]] = d
    mutate_passes = pass_hooks()[0]
    for k in range(base, index):
        d = lines[k]
        p = propose(corpus, seed, campaign, k, settings, mutate_passes)
        if (p.program.digest() if p.program else None) != d["digest"]:
            raise ValueError(f"step {k} does not regenerate the recorded program (another dlgate or TVM?)")
        new = corpus.observe(set(d["new"]))
        update(corpus, p, d["status"], new)
    return corpus


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)
