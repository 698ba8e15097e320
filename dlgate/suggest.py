"""The "did you mean" of every one-line error about a mistyped name: a command, an option, a
campaign key or choice, a backend, a device or an optimization level."""
from __future__ import annotations

import difflib


def did_you_mean(word, choices) -> str:
    """``; did you mean 'X'?`` for the choice closest to a mistyped ``word`` (difflib), or ""."""
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, [c for c in choices if isinstance(c, str)], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
