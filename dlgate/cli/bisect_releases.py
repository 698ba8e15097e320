"""``dlgate bisect-releases``: a repro's regression range among the compiler's releases
(:mod:`dlgate.github.releases`)."""
from __future__ import annotations

from dlgate.cli.args import log
from dlgate.cli.parser import UsageError
from dlgate.github import releases


def add_parser(sub) -> None:
    releases.add_arguments(sub.add_parser("bisect-releases", help="the regression range of a reduced repro among the "
                                          "compiler's published releases: the newest without the bug, the oldest with it"))


def command(args) -> int:
    try:
        return releases.command(args, log=log)
    except releases.UsageProblem as e:
        raise UsageError(str(e)) from None
