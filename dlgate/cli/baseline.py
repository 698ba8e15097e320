"""``dlgate baseline``: the known-failure baseline, updated from a finished run."""
from __future__ import annotations

from dlgate.cli.args import log
from dlgate.cli.parser import Parser, UsageError
from dlgate.gate.journal import RunError


def add_parser(sub) -> None:
    b = sub.add_parser("baseline", help="manage the known-failure baseline")
    bsub = b.add_subparsers(dest="baseline_command", parser_class=Parser, required=True)
    bu = bsub.add_parser("update", help="accept a run's failures as known (run it on the default branch)")
    bu.add_argument("run_dir", metavar="RUN_DIR", help="output folder of `dlgate run` (or `dlgate merge`)")
    bu.add_argument("--baseline", required=True, help="the baseline file to write")
    bu.add_argument("--prune", action="store_true", help="drop entries this run did not see")


def command(args) -> int:
    from dlgate.gate.run.updates import update_baseline  # local: imports torch; off the CLI start-up

    try:
        update_baseline(args.run_dir, args.baseline, args.prune, log=log)
    except (RunError, OSError) as e:
        raise UsageError(f"dlgate baseline update: {e}") from None
    return 0
