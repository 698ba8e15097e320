"""Symbolic dimensions: a compile error on a model whose inputs have symbolic dimensions is
a refusal only when the compiler says, in its own words, that it cannot take them
(``Backend.symbolic_refusals``: TVM's "requires a statically known input rank", TensorRT's
``UNSUPPORTED_NODE_DYNAMIC``...). Any other compile error is asked again of the same model
with static shapes (the graph's own first binding): when that compiles, the error is one
the symbolic dimensions alone provoke, a finding ("fails only with symbolic input
dimensions"); when it fails too, the static model's outcome is the verdict's (a refusal
stays a refusal, an error an error).

A model without symbolic input dimensions still has sizes an importer cannot know before run
time: those its data-dependent operators make (a NonZero count, a Range length). Where the
backend's importer (the error record's ``phase``) declines one in the words of its symbolic
refusals, that is a refusal too (:func:`judge_unknown_sizes`); a pass or a build after an
import that took the model is not covered."""
from __future__ import annotations

import re
from dataclasses import replace

from dlgate.exec import worker as W

NAME = "symbolic"


def declared(patterns: tuple, error: dict | None) -> bool:
    """Whether the compiler's message says it cannot take symbolic dimensions. The patterns
    read ``"<type>: <message>"``, led by ``"[<phase>] "`` where the backend said which of its
    phases raised it (TVM's importer: ``[import]``), so a pattern can hold only there."""
    err = error or {}
    text = f"{err.get('type', '')}: {err.get('message', '')}"
    if err.get("phase"):
        text = f"[{err['phase']}] {text}"
    return any(re.search(p, text, re.IGNORECASE) for p in patterns)


def judge_symbolic(out, patterns: tuple, run_static):
    """The outcome to judge for a compile error ``out`` on a model with symbolic dimensions:
    a refusal when the compiler declares it (``patterns``), else decided by ``run_static()``
    (the same model with static shapes)."""
    err = dict(out.error or {})
    if declared(patterns, err):
        err["message"] = f"the model with symbolic input dimensions is not accepted: {err.get('message', '')}"
        return replace(out, status=W.UNSUPPORTED, error=err)
    static = run_static()
    if static.status in (W.OK, W.RUN_ERROR):
        err["message"] = f"fails only with symbolic input dimensions (the same model with static shapes compiles): " \
                         f"{err.get('message', '')}"
        return replace(out, error=err)
    if static.status == W.UNSUPPORTED:
        return replace(static, wall_s=out.wall_s + static.wall_s)
    return out


def judge_unknown_sizes(out, patterns: tuple):
    """The outcome to judge for a compile error ``out`` on a model without symbolic input
    dimensions: a refusal where the backend's importer (an error record with a ``phase``)
    declines, in the words of ``patterns``, a size it cannot know before run time (one a
    data-dependent operator makes); ``out`` otherwise."""
    err = dict(out.error or {})
    if not err.get("phase") or not declared(patterns, err):
        return out
    err["message"] = f"a size the importer cannot know before run time is not accepted: {err.get('message', '')}"
    return replace(out, status=W.UNSUPPORTED, error=err)
