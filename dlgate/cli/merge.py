"""``dlgate merge``: shard outputs combined into one run, decided as ``dlgate run`` decides."""
from __future__ import annotations

from dlgate.cli.args import log, out_dir
from dlgate.cli.parser import UsageError
from dlgate.gate.journal import RunError


def add_parser(sub) -> None:
    m = sub.add_parser("merge", help="combine shard outputs into one results file and report")
    m.add_argument("dirs", nargs="+", metavar="DIR", help="output folders of `dlgate run --shard`")
    m.add_argument("--out", required=True, help="the merged output folder (results, verdict, reports)")


def command(args) -> int:
    from dlgate.gate.run.merge import merge  # local: imports torch; off the CLI start-up

    out_dir(args.out, "dlgate merge: --out")
    try:
        return merge(args.dirs, args.out, log=log)
    except RunError as e:
        raise UsageError(f"dlgate merge: {e}") from None
