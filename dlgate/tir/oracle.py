"""Tzer's three oracles on a TIR program and a pass sequence.

A program is built and run twice in isolated workers (:mod:`dlgate.tir.build`): with the
minimal sequence (:func:`dlgate.tir.passes.minimal`, the reference) and with the sequence
under test, on the same deterministic inputs. Where the NumPy interpreter
(:mod:`dlgate.tir.interp`) takes the program, it is a third, pass-free reference.

**What is a finding** (the rule, in the order it is applied):

1. *Invalid program* (``invalid``): the text does not parse, is not one PrimFunc ``main``,
   or TVM's well-formedness verifiers reject it (stage ``validate``): a proper rejection
   while validating, not a finding, the program never counts. Also a program whose
   behaviour is undefined (stage ``undefined``: the interpreter saw an access outside a
   buffer, a read of an element never written, an integer division by zero), looked for
   whenever the two builds differ: such builds may legally differ. Where the interpreter
   gives no word (it does not take the program or runs out of steps), the minimal build
   runs again, and one that gives other values than its first run (stage
   ``nondeterministic``: it reads what the program never wrote) is invalid as well.
2. *Rejected pair* (``rejected``): TVM raises an error while applying the mutated sequence.
   Tzer's two causes of an invalid pair, a missing pass dependency and a pass that does not
   take that IR, both show this way (on TVM 0.27 as ``InternalError: Check failed``, the
   same class a real bug raises, so the error's class cannot tell them apart): not a
   finding, the pair is not kept. So is any error of a sequence that lacks a required
   pass (:func:`dlgate.tir.passes.complete`; a mutation never makes one, a hand-given
   sequence may): code generation then meets IR it was never meant to see. Such a sequence's
   different result is a rejected pair as well (``float8`` without ``FP8ComputeLegalize``
   builds to other values without an error).
3. *Crash* (``crash``, gating): a signal, a hang past the timeout or the memory cap, in any
   stage of either build or run. No input makes a compiler crash legitimately; a built
   program may crash when it runs only where its behaviour is undefined (a ``%`` by a loaded
   zero traps with SIGFPE): a crash while running is ``invalid`` (stage ``undefined``) where
   the interpreter says so.
4. *Exception* (``exception``, gating): an error while applying the *minimal* sequence to
   a well-formed program (every program TVM's verifiers accept must take the passes its
   build requires), or an error in finalization, code generation or the run of either build
   of a complete sequence (it was applied without complaint and holds every pass the build
   requires, so what follows must work).
5. *Inconsistency* (``inconsistent``, gating): the two builds' arguments after the run
   differ, integers and booleans bit for bit, floats beyond :func:`float_tolerance`; or the
   interpreter's result differs from the minimal build's (``inconsistent`` with
   ``against="interp"``, build ``minimal``), which is also the verdict where the builds
   differ and the interpreter agrees with the mutated one (the minimal build is the wrong
   one: on TVM 0.27, ``FlattenBuffer`` under-sizes an allocation with column-major strides
   unless ``CompactBufferAllocation`` first rewrote it).
6. *Performance* (``slow``, not gating unless a campaign asks): the median of ``repeats``
   timed runs of the mutated build exceeds ``margin`` (default 2) times the minimal
   build's, with both medians above ``floor_s``, and again, in medians and in minimums,
   when both builds are measured in alternation in one worker (the smallest of the three
   ratios is reported). Load only adds time: a burst of it moves a median, while a
   slowdown of the build itself moves the minimum too. Each timed run lasts at least a millisecond
   (TVM's ``time_evaluator`` repeats the call), and the worker runs TVM's parallel loops on
   one thread: on a shared two-core machine a parallel loop's time otherwise varied from 2
   to 37 microseconds between runs of the same build.

**Float tolerance.** TIR passes do not reassociate floating-point arithmetic on purpose,
but the builds legitimately differ in what LLVM sees: unrolling, vectorization and
simplification change which multiply-adds LLVM contracts into fused multiply-adds (one
rounding instead of two) and in which order a vectorized reduction's lanes are added. Both
change the last bits of each operation, and the error grows with the number of chained
operations. So floats compare with ``|a - b| <= atol + rtol * |b|`` (``rtol`` 1e-5 for
float32, 1e-12 for float64, 1e-2 for float16 and bfloat16, a unit in the last place for
the float8 types (0.125 for e4m3, 0.25 for e5m2); ``atol`` the same as ``rtol``
over inputs of magnitude below 2), NaN equal to NaN and an infinity only to itself. No
float is held to a tighter tolerance than the loosest float dtype the program computes in
(:func:`loosest`): a float64 result cast from a float32 or bfloat16 computation differs in
that computation's last bits (a sigmoid of a bfloat16 value, legalized to float32, by one
float32 unit between LLVM's and NumPy's).
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

import numpy as np

from dlgate.exec.outcome import CRASH, OK, OOM, RUN_ERROR, TIMEOUT, UNAVAILABLE, UNSUPPORTED
from dlgate.tir import passes as P
from dlgate.tir.build import SPEC, Job, check_sequence

#: Verdict kinds, and which of them fail a gate by default.
OK_KIND, INVALID, REJECTED, CRASH_KIND, EXCEPTION, INCONSISTENT, SLOW, UNAVAILABLE_KIND = (
    "ok", "invalid", "rejected", "crash", "exception", "inconsistent", "slow", "unavailable")
GATING = frozenset({CRASH_KIND, EXCEPTION, INCONSISTENT})


@dataclass
class Verdict:
    """What the oracles said. ``kind``: one of the kinds above; ``stage``: where (``validate``,
    ``passes``, ``lower``, ``run``, ``compare``, ``time``); ``build``: which build showed it
    (``minimal``, ``mutated``, ``interp``); ``detail``: one line; ``ratio``: the performance
    ratio where measured."""

    kind: str
    stage: str = ""
    build: str = ""
    detail: str = ""
    ratio: float | None = None
    mismatch: dict = field(default_factory=dict)

    @property
    def finding(self) -> bool:
        return self.kind not in (OK_KIND, INVALID, REJECTED, UNAVAILABLE_KIND)

    def gating(self, slow_gates: bool = False) -> bool:
        return self.kind in GATING or (slow_gates and self.kind == SLOW)

    def key(self) -> tuple:
        """What two verdicts share when they are the same failure (a reduction keeps it)."""
        return (self.kind, self.stage, self.build, self.mismatch.get("against", ""))

    def to_json(self) -> dict:
        d = {"kind": self.kind, "stage": self.stage, "build": self.build, "detail": self.detail}
        if self.ratio is not None:
            d["ratio"] = round(self.ratio, 3)
        if self.mismatch:
            d["mismatch"] = self.mismatch
        return d


def float_tolerance(dtype: str) -> tuple:
    """``(rtol, atol)`` for a float dtype (see the module's text)."""
    if dtype in ("float16", "bfloat16"):
        return 1e-2, 1e-2
    if dtype.startswith("float8"):  # a unit in the last place: 3 mantissa bits (e4m3), 2 (e5m2)
        return (0.25, 0.25) if dtype.startswith("float8_e5m2") else (0.125, 0.125)
    if dtype == "float64":
        return 1e-12, 1e-12
    return 1e-5, 1e-5


def loosest(text: str) -> str | None:
    """The float dtype of widest tolerance (:func:`float_tolerance`) that program ``text``
    (TVMScript) computes in anywhere: its buffers, casts and constants; None when it has
    no float. A float64 output cast from a float32 or bfloat16 computation carries that
    computation's rounding, which the float64 tolerance would call a difference."""
    found = set(re.findall(r'"((?:b?float)\d+(?:_\w+)?)"', text)) | set(re.findall(r"T\.((?:b?float)\d+(?:_\w+)?)\(", text))
    if not found:
        return None
    return max(sorted(found), key=lambda d: float_tolerance(d)[0])


def compare(got: list, want: list, floor: str | None = None) -> dict | None:
    """None when ``got`` matches ``want`` argument by argument, else where they first differ:
    ``{"arg", "index", "got", "want", "count"}``. ``floor``: the program's loosest float
    dtype (:func:`loosest`): no float argument is held to a tighter tolerance than its."""
    if len(got) != len(want):
        return {"arg": -1, "detail": f"{len(got)} arguments, expected {len(want)}"}
    for k, (a, b) in enumerate(zip(got, want)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return {"arg": k, "detail": f"{a.dtype}{list(a.shape)} against {b.dtype}{list(b.shape)}"}
        if a.dtype.kind == "f" or str(a.dtype) == "bfloat16" or str(a.dtype).startswith("float8"):
            rtol, atol = float_tolerance(str(a.dtype))
            if floor is not None:
                rtol, atol = max(rtol, float_tolerance(floor)[0]), max(atol, float_tolerance(floor)[1])
            x, y = a.astype(np.float64), b.astype(np.float64)
            both_nan = np.isnan(x) & np.isnan(y)
            with np.errstate(invalid="ignore"):
                finite = np.isfinite(x) & np.isfinite(y)  # an infinity only equals itself
                close = (x == y) | both_nan | (finite & (np.abs(x - y) <= atol + rtol * np.abs(y)))
        else:
            close = a == b
        if not close.all():
            bad = np.argwhere(~close)
            first = tuple(int(i) for i in bad[0])
            return {"arg": k, "index": list(first), "got": a[first].item(), "want": b[first].item(),
                    "count": int(len(bad))}
    return None


def _failed(out, build: str, phases: list) -> Verdict | None:
    """The verdict of a worker outcome that is not OK (None when it is). A refusal
    (``unsupported``) is an invalid program (stage ``validate``), a rejected pair (stage
    ``passes``: only a mutated sequence's errors are raised as refusals) or, from the
    interpreter, a program it does not take or a failure of its own (``ok``: no reference,
    no finding; the outcome keeps what happened). ``phases``:
    what the worker reported reaching (``run`` once the build was done), a crash's stage."""
    if out.status == OK:
        return None
    err = out.error or {}
    msg = [ln for ln in str(err.get("message", "")).strip().splitlines() if ln.strip()]
    line = msg[-1] if msg else ""
    if out.status == UNAVAILABLE:  # TVM does not start here: nothing was tested
        return Verdict(UNAVAILABLE_KIND, "init", build, line)
    if build == "interp":
        # no third reference: the interpreter does not take the program, or ran out of
        # time or failed (dlgate's own limit or defect, never the compiler's finding);
        # "undefined: ..." is read by the caller
        return Verdict(OK_KIND, "interp", build, line if out.status == UNSUPPORTED else f"{out.status}: {line}")
    if out.status == UNSUPPORTED:
        stage = line.partition(":")[0]
        return Verdict(INVALID if stage == "validate" else REJECTED, stage, build, line)
    if out.status in (CRASH, TIMEOUT, OOM):
        stage = "run" if "run" in phases else "compile"
        return Verdict(CRASH_KIND, stage, build, f"{out.status}: {err.get('message', '')}")
    stage = "run" if out.status == RUN_ERROR else "compile"
    return Verdict(EXCEPTION, stage, build, f"{err.get('type', '')}: {line}")


@dataclass
class Checked:
    """A verdict with the runs behind it (their outcomes, for a report and for reduction)."""

    verdict: Verdict
    outcomes: dict = field(default_factory=dict)


def check(pool, text: str, passes, seed: int = 0, margin: float = 2.0, repeats: int = 0,
          floor_s: float = 1e-9, interp: bool = True, reference=None, coverage: bool = False,
          gpu: bool = False) -> Checked:
    """The oracles' verdict on ``text`` built with ``passes`` (see the module's text), in
    ``pool``'s TIR worker. ``repeats`` > 0 measures performance (``margin``, ``floor_s``).
    ``reference``: the reference build's sequence (default the minimal one). ``coverage``:
    the build with ``passes`` measures its coverage (a worker with a coverage library;
    ``outcomes["mutated"].feedback``). ``gpu``: ``pool``'s TIR worker builds for a GPU
    target, whose minimal sequence and required passes are the GPU's
    (:data:`dlgate.tir.passes.GPU_REQUIRED`). ValueError for a pass name that is neither in the
    table nor ``package.module:function``."""
    check_sequence(passes)
    if reference is not None:
        check_sequence(reference)
    outs = {}
    phases: list = []  # what the worker said it reached: a crash's stage
    had = pool.on_phase

    def heard(label, stage):
        phases.append(stage)
        if had is not None:
            had(label, stage)

    pool.on_phase = heard
    try:
        return _check(pool, text, passes, seed, margin, repeats, floor_s, interp, reference, outs, phases, coverage,
                      gpu)
    finally:
        pool.on_phase = had


def _check(pool, text, passes, seed, margin, repeats, floor_s, interp, reference, outs, phases, coverage,
           gpu=False) -> Checked:
    minimal = tuple(P.minimal(gpu) if reference is None else reference)
    phases.clear()
    ref = pool.execute(SPEC, Job(text, minimal, seed, False, repeats).model(), [])
    outs["minimal"] = ref
    bad = _failed(ref, "minimal", phases)
    if bad is not None:
        return Checked(_excused(pool, text, seed, bad, outs), outs)
    phases.clear()
    mut = pool.execute(SPEC, Job(text, tuple(passes), seed, True, repeats, coverage=coverage).model(), [])
    outs["mutated"] = mut
    bad = _failed(mut, "mutated", phases)
    if bad is not None:
        return Checked(_excused(pool, text, seed, bad, outs), outs)
    want, got = ref.outputs[:-1], mut.outputs[:-1]
    floor = loosest(text)
    diff = compare(got, want, floor)
    ip = None
    if interp or diff is not None:  # a difference needs the interpreter's word on undefined behaviour
        phases.clear()
        ip = pool.execute(SPEC, Job(text, (), seed, False, 0, "interp").model(), [])
        outs["interp"] = ip
        bad = _failed(ip, "interp", phases)
        if bad is not None and bad.detail.startswith("undefined:"):
            # the program's behaviour is undefined: builds may differ, the program never counts
            return Checked(Verdict(INVALID, "undefined", "interp", bad.detail), outs)
    if diff is not None and (ip is None or ip.status != OK):
        # no third reference (the interpreter does not take the program or ran out of steps):
        # a minimal build that gives other values on a second run reads what the program never
        # wrote (an index out of its buffer), and the difference says nothing of the passes
        phases.clear()
        again = pool.execute(SPEC, Job(text, minimal, seed, False, 0).model(), [])
        outs["minimal again"] = again
        if again.status == OK:
            drift = compare(again.outputs[:-1], want, floor)
            if drift is not None:
                return Checked(Verdict(INVALID, "nondeterministic", "minimal",
                                       "the minimal build gives other values on a second run: "
                                       + _describe(dict(drift, against="minimal"))), outs)
    if diff is not None and not P.complete(passes, gpu):
        # a sequence without a required pass may build to other values (float8 without its
        # compute legalization does): an invalid pair, as its errors are
        return Checked(Verdict(REJECTED, "passes", "mutated", "the sequence lacks required passes: "
                               + _describe(dict(diff, against="minimal"))), outs)
    if diff is not None and ip is not None and ip.status == OK and compare(got, ip.outputs[:-1], floor) is None:
        # the interpreter sides with the mutated build: the minimal one is wrong (a pass the
        # minimal sequence runs miscompiles what a pass of the mutated one first rewrote away)
        diff = compare(want, ip.outputs[:-1], floor)
        diff["against"] = "interp"
        return Checked(Verdict(INCONSISTENT, "compare", "minimal", _describe(diff), mismatch=diff), outs)
    if diff is not None:
        diff["against"] = "minimal"
        return Checked(Verdict(INCONSISTENT, "compare", "mutated", _describe(diff), mismatch=diff), outs)
    if ip is not None and ip.status == OK:
        diff = compare(want, ip.outputs[:-1], floor)
        if diff is not None:
            diff["against"] = "interp"
            return Checked(Verdict(INCONSISTENT, "compare", "minimal", _describe(diff), mismatch=diff), outs)
    if repeats > 0:
        ratio = slowdown(ref.outputs[-1], mut.outputs[-1], floor_s)
        if ratio is not None and ratio > margin:
            # confirmed by the two builds measured in alternation in one worker (the smaller
            # ratio counts): load on a shared machine that came and went between the two
            # jobs is not a slowdown
            paired = outs["paired"] = pool.execute(SPEC, Job(text, tuple(passes), seed, True, repeats, "time",
                                                             minimal).model(), [])
            if paired.status == OK:
                first, second = paired.outputs[0], paired.outputs[1]
                ratio = min(ratio, slowdown(first, second, floor_s) or 0.0,
                            slowdown(first, second, floor_s, statistic=min) or 0.0)
            else:
                ratio = 0.0
        if ratio is not None and ratio > margin:
            return Checked(Verdict(SLOW, "time", "mutated", f"{ratio:.2f}x the minimal build's median",
                                   ratio=ratio), outs)
    return Checked(Verdict(OK_KIND), outs)


def _excused(pool, text: str, seed: int, bad: Verdict, outs: dict) -> Verdict:
    """``bad``, or ``invalid`` (stage ``undefined``) where it is a crash while the built
    program ran and the interpreter finds the program's behaviour undefined on the same
    inputs: an integer division by zero traps (SIGFPE), a store outside a buffer may take
    the process down (SIGSEGV), and neither is the compiler's fault. A crash while
    compiling is never excused."""
    if bad.kind != CRASH_KIND or bad.stage != "run":
        return bad
    ip = pool.execute(SPEC, Job(text, (), seed, False, 0, "interp").model(), [])
    outs["interp"] = ip
    said = _failed(ip, "interp", [])
    if said is not None and said.detail.startswith("undefined:"):
        return Verdict(INVALID, "undefined", "interp", f"{said.detail} ({bad.build} build: {bad.detail})")
    return bad


def slowdown(ref_s, mut_s, floor_s: float, statistic=statistics.median) -> float | None:
    """The ratio of ``statistic`` (the median; the minimum for the confirmation) of the
    mutated build's times over the minimal build's, or None when either has no timing or is
    below ``floor_s``."""
    if len(ref_s) == 0 or len(mut_s) == 0:
        return None
    a, b = statistic(float(x) for x in ref_s), statistic(float(x) for x in mut_s)
    if a < floor_s or b < floor_s:
        return None
    return b / a


def _describe(diff: dict) -> str:
    if "index" not in diff:
        return f"argument {diff['arg']}: {diff.get('detail', '')}"
    return (f"argument {diff['arg']} at {diff['index']}: {diff['got']!r}, expected {diff['want']!r} "
            f"({diff['count']} elements differ; against the {diff['against']} build)")
