"""Sections a stop signal must not cut in two.

A run's stop handler (:func:`dlgate.gate.run.lifecycle.stopped_by_signals`) raises in the
main thread wherever it happens to be. Between writing a case's journal line and counting
it in memory, that would leave a case on disk that the interrupted run's own reports do not
count (its summary says 50 cases ran, its journal and the resumed run say 51). Inside
:func:`uninterrupted`, the handler only records the signal; the stop is raised as the
outermost section ends, so a section runs whole or not at all. Blocking the signals would
not do: Python runs its handlers in the main thread whichever thread the kernel picks.
"""
from __future__ import annotations

from contextlib import contextmanager

_depth = 0
_deferred: list = []


def deferring() -> bool:
    """Whether the main thread is inside an :func:`uninterrupted` section."""
    return _depth > 0


def defer(stop: BaseException) -> None:
    """Raise ``stop`` when the outermost section ends."""
    _deferred.append(stop)


@contextmanager
def uninterrupted():
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _deferred:
            stop = _deferred[0]
            _deferred.clear()
            raise stop
