"""Change-aware batches: read what a pull request changed in the compiler, map it to
targets (operators, rewrites), aim most of the batch at them, and say what the batch
covered.

Data flow: :mod:`.diff` (a ``Change``) -> :mod:`.compilers` with the tables in
``tables/`` (a ``TargetSet``) -> :mod:`.aim` (the generator's ``Aim`` per target, or a
gap) -> the generator (``GenConfig.aims``) -> per case, what it exercised
(:func:`.coverage.case_row`, journaled) -> the coverage table (:func:`.coverage.table`)
that opens the summary and the HTML report. See docs/change-aware.md.
"""
from __future__ import annotations

import os

from dlgate.change import diff as D
from dlgate.change.compilers import NAMES, MappingError, for_backends, map_change


class ChangeError(ValueError):
    """The change cannot be read or mapped (bad diff, git failure, unknown compiler)."""


def read(changed_from: str | None = None, diff: str | None = None, repo: str = ".", head: str = "HEAD"):
    """The change: ``git diff changed_from...head`` in ``repo``, or the unified diff in ``diff``."""
    try:
        if diff:
            return D.from_file(diff, repo if repo and os.path.isdir(repo) else None)
        return D.from_git(repo, changed_from, head)
    except D.DiffError as e:
        raise ChangeError(str(e)) from None


def map_targets(change, compiler: str, table: str | None = None):
    """The change's :class:`~.targets.TargetSet` on ``compiler``."""
    try:
        return map_change(change, compiler, table)
    except MappingError as e:
        raise ChangeError(str(e)) from None


def compiler_of(backends, given: str | None = None) -> str:
    """The compiler a change is mapped on: ``given``, else the first backend's."""
    if given:
        if given not in NAMES:
            raise ChangeError(f"no change mapping for compiler {given!r} (known: {', '.join(NAMES)})")
        return given
    name = for_backends(backends)
    if name is None:
        raise ChangeError(f"none of the backends ({', '.join(map(str, backends))}) is a compiler with a change "
                          f"mapping ({', '.join(NAMES)}); name one with --compiler")
    return name
