"""``dlgate report``: a static HTML page, with PNG plots, describing a run's output folder."""
from __future__ import annotations

import os

from dlgate.cli.args import log, out_dir
from dlgate.cli.parser import UsageError


def add_parser(sub) -> None:
    rp = sub.add_parser("report", help="write a static HTML page, with PNG plots, describing a run's output folder")
    rp.add_argument("dir", metavar="DIR", help="output folder of `dlgate run` or `dlgate merge`")
    rp.add_argument("--out", metavar="FILE", help="the page to write (default DIR/report.html); its plots go to the "
                    "folder named like it without .html (DIR/report/)")


def command(args) -> int:
    from dlgate.report import ReportError, write_report  # local: imports torch; off the CLI start-up

    if args.out:  # the page's folder (its plots go next to it, in a folder of its name)
        out_dir(os.path.dirname(os.path.abspath(args.out)), f"dlgate report: --out {args.out}")
    try:
        paths = write_report(args.dir, args.out)
    except ReportError as e:
        raise UsageError(f"dlgate report: {e}") from None
    log(f"dlgate report: wrote {paths['html']} and {len(paths['plots'])} plot(s) in {paths['plots_dir']}")
    return 0
