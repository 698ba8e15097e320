"""onnxruntime's own account of its graph transformers, read from its session log.

At INFO severity onnxruntime logs one line per graph transformer it ran,
``GraphTransformer ConvActivationFusion modified: 1 with status: OK``; at VERBOSE it also
logs ``Applying N graph transformer(s) for level L`` and ``Applying graph transformer X on
step 1.`` for each transformer the session registered. Both go to the process's standard
error (file descriptor 2) through onnxruntime's default log sink, so they are captured by
pointing fd 2 at a temporary file around session creation only (:class:`Fd2Capture`);
every other line (errors, anything not an onnxruntime INFO/VERBOSE/WARNING log line) is
written back to fd 2, so a worker's log still gets what went wrong. Warnings are dropped
with the rest: the backend logs at ERROR severity when it does not record rewrites.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile

#: An onnxruntime log line's head: ``2026-01-02 03:04:05.123456789 [I:onnxruntime:...]``.
_HEAD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \[([VIWEF]):onnxruntime:")
_MODIFIED = re.compile(r"GraphTransformer (\S+) modified: 1 with status")
_RAN = re.compile(r"GraphTransformer (\S+) modified: [01] with status")
_LEVEL = re.compile(r"Applying \d+ graph transformer\(s\) for level (\d+)")
_APPLY = re.compile(r"Applying graph transformer (\S+) on step \d+\.")
#: Severities that are swallowed (everything the backend's usual ERROR severity hides).
QUIET = frozenset("VIW")


class Fd2Capture:
    """Point file descriptor 2 at a temporary file inside the ``with`` block; ``text`` then
    holds what was written there. On exit, fd 2 is restored and every line that is not an
    onnxruntime log line of severity VERBOSE, INFO or WARNING (with the lines continuing
    such a message) is written back to it."""

    def __init__(self):
        self.text = ""

    def __enter__(self):
        sys.stderr.flush()
        self._saved = os.dup(2)
        self._tmp = tempfile.TemporaryFile()
        os.dup2(self._tmp.fileno(), 2)
        return self

    def __exit__(self, *exc):
        try:
            sys.stderr.flush()
        finally:
            os.dup2(self._saved, 2)
            os.close(self._saved)
        try:
            self._tmp.seek(0)
            self.text = self._tmp.read().decode("utf-8", "replace")
        finally:
            self._tmp.close()
        rest = passthrough(self.text)
        if rest:
            os.write(2, rest.encode())
        return False


def passthrough(text: str) -> str:
    """The lines of ``text`` that are not quiet onnxruntime log lines (see ``QUIET``); a
    line without a log head continues the message above it."""
    out, quiet = [], False
    for line in text.splitlines(keepends=True):
        m = _HEAD.match(line)
        if m:
            quiet = m.group(1) in QUIET
        if not quiet:
            out.append(line)
    return "".join(out)


def modified(text: str) -> list:
    """The transformers that reported changing the graph, in first-report order."""
    return list(dict.fromkeys(_MODIFIED.findall(text)))


def registered(text: str) -> dict:
    """Transformer name -> the optimization levels that run it (sorted), from a VERBOSE
    log: transformers logged under ``Applying ... for level L`` get L; those that report a
    result without being applied by the level manager (run by the session itself around
    the levels: ``EnsureUniqueDQForNodeUnit``, ``InsertCastTransformer``'s
    ``CastFloat16Transformer``, ``RemoveDuplicateCastTransformer``, ``MemcpyTransformer``)
    get 0."""
    seen: dict = {}
    level, applying = 0, None
    for line in text.splitlines():
        m = _LEVEL.search(line)
        if m:
            level = int(m.group(1))
            continue
        m = _APPLY.search(line)
        if m:
            applying = m.group(1)
            seen.setdefault(applying, set()).add(level)
            continue
        m = _RAN.search(line)
        if m:
            if m.group(1) != applying:
                seen.setdefault(m.group(1), set()).add(0)
            applying = None
    return {name: tuple(sorted(levels)) for name, levels in seen.items()}
