"""Mutators over TIR PrimFuncs, one per file: Tzer's general-purpose three (``insert``,
``delete``, ``replace``) and the tensor-compiler-specific ones (``loop``, ``memory``,
``threads`` for GPU targets only, ``intrinsics``). Each is ``apply(func, rng, ctx)`` (a new
PrimFunc, or None where it has nothing to act on) and ``changed(before, after)``, the
property its mutation has (over :func:`dlgate.tir.feedback.counts`). :func:`mutate` applies
one and keeps the result only where TVM accepts it."""
from __future__ import annotations

from dataclasses import dataclass

from dlgate.tir.mutators import delete, insert, intrinsics, loop, memory, replace, threads
from dlgate.tir.mutators.base import Context
from dlgate.tir.program import InvalidProgram, Program, from_func, validate

#: Every mutator, in the order a draw indexes them.
ALL = (insert, delete, replace, loop, memory, threads, intrinsics)
GENERAL = tuple(m for m in ALL if m.FAMILY == "general")
SPECIFIC = tuple(m for m in ALL if m.FAMILY == "specific")
BY_NAME = {m.NAME: m for m in ALL}


@dataclass(frozen=True)
class Mutation:
    """What one mutation gave: ``program`` (None unless ``outcome`` is "ok"), the mutator's
    name, and ``outcome``: "ok", "inapplicable" (nothing to act on), "unchanged" (the same
    text), "invalid: <reason>" (TVM rejected it) or "error: <reason>" (building the mutant
    failed before TVM could check it)."""

    program: Program | None
    mutator: str
    outcome: str


def usable(mutators, ctx: Context) -> tuple:
    """The mutators a context can use: GPU-only ones only for a GPU target."""
    return tuple(m for m in mutators if ctx.gpu or not getattr(m, "GPU_ONLY", False))


def mutate(program: Program, rng, mutators=ALL, ctx: Context = Context()) -> Mutation:
    """One mutation of ``program`` by a mutator drawn from ``mutators`` with ``rng``."""
    ms = usable(mutators, ctx)
    m = ms[rng.randrange(len(ms))]
    return apply(m, program, rng, ctx)


def apply(m, program: Program, rng, ctx: Context = Context()) -> Mutation:
    """``program`` mutated by mutator ``m``; kept only where TVM accepts it."""
    try:
        func = m.apply(program.func(), rng, ctx)
        if func is None:
            return Mutation(None, m.NAME, "inapplicable")
        new = from_func(func)
    except Exception as e:  # noqa: BLE001 - TVM's constructors and printer reject with many classes
        return Mutation(None, m.NAME, f"error: {type(e).__name__}: {_line(e)}")
    try:
        # The parser folds what the printer writes out (a constant operation, say): the
        # program is what its text defines, so the text is taken as parsed and printed.
        again = from_func(new.func())
    except Exception as e:  # noqa: BLE001 - the parser's errors are many classes
        return Mutation(None, m.NAME, f"invalid: does not parse: {_line(e)}")
    new = again
    if new.text == program.text:
        return Mutation(None, m.NAME, "unchanged")
    try:
        validate(new)
    except InvalidProgram as e:
        return Mutation(None, m.NAME, f"invalid: {e}")
    return Mutation(new, m.NAME, "ok")


def _line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return (lines[-1] if lines else "")[:200]
