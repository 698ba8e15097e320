"""``dlgate init``: dlgate's workflows, campaigns and an empty baseline written into a compiler's repository."""
from __future__ import annotations

from dlgate.cli.parser import UsageError
from dlgate.init import InitError, add_arguments
from dlgate.init import run as init_run


def add_parser(sub) -> None:
    add_arguments(sub.add_parser("init", help="write dlgate's pull-request and weekly workflows, campaigns and an "
                                 "empty baseline into a compiler's repository (docs/adding-to-ci.md)"))


def command(args) -> int:
    try:
        return init_run(args)
    except InitError as e:
        raise UsageError(str(e)) from None
