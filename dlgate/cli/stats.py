"""``dlgate stats``: diversity metrics of a generated batch."""
from __future__ import annotations

import json
import os

from dlgate import tables as T
from dlgate.cli.parser import UsageError


def add_parser(sub) -> None:
    s = sub.add_parser("stats", help="diversity metrics of a generated batch")
    s.add_argument("dir", metavar="DIR", help="a folder written by `dlgate gen`")
    s.add_argument("--json", dest="json_out", help="where to write the JSON (default DIR/stats.json)")


def command(args) -> int:
    from dlgate import stats  # local: imports torch; off the CLI start-up

    try:
        graphs = stats.load_graphs(args.dir)
    except FileNotFoundError as e:
        raise UsageError(f"dlgate stats: {e}") from None
    res = stats.compute(graphs)
    T.show(*stats.summary(res))
    path = args.json_out or os.path.join(args.dir, "stats.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {path}")
    return 0
