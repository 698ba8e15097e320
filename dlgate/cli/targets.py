"""``dlgate targets``: what a change touches, its files mapped to operators and rewrites."""
from __future__ import annotations

import json

from dlgate import change as CH
from dlgate.change.aim import resolve
from dlgate.change.compilers import guess
from dlgate.cli.args import change_args
from dlgate.cli.parser import UsageError


def add_parser(sub) -> None:
    tg = sub.add_parser("targets", help="what a change touches: its files mapped to operators and rewrites "
                        "(what `dlgate run --changed-from` aims the batch at)")
    change_args(tg, "the change to map (one of --changed-from, --diff is required)")
    tg.add_argument("--json", action="store_true", help="print the target set as JSON (for `dlgate gen --targets`)")


def command(args) -> int:

    if not (args.changed_from or args.diff):
        raise UsageError("dlgate targets: give the change: --changed-from BASE (git) or --diff FILE")
    if args.changed_from and args.diff:
        raise UsageError("dlgate targets: give one of --changed-from, --diff, not several")
    try:
        change = CH.read(args.changed_from, args.diff, args.repo)
        compiler = args.compiler or guess(change)
        if compiler is None:
            raise CH.ChangeError("cannot tell whose source tree the change is in; name the compiler with --compiler")
        ts = CH.map_targets(change, CH.compiler_of([], compiler), args.change_table)
    except CH.ChangeError as e:
        raise UsageError(f"dlgate targets: {e}") from None
    aims, gaps = resolve(ts.targets, ts.compiler)
    if args.json:
        print(json.dumps(dict(ts.to_json(), gaps=gaps), indent=1, sort_keys=True))
        return 0
    tab = ts.table
    print(f"{ts.source}: {len(ts.files)} changed file(s) on {ts.compiler} (table {tab.get('version', '?')})")
    for f in ts.files:
        if f.targets:
            print(f"  {f.path}")
            for t in f.targets:
                print(f"    -> {t.key}" + (f"  ({t.why.split(': ', 1)[1]})" if ": " in t.why else ""))
        else:
            print(f"  {f.path}: {f.skipped}" + (f" ({f.note})" if f.note else ""))
    targets = ts.targets
    if not targets:
        print("no target: `dlgate run` draws the ordinary batch")
        return 0
    print(f"{len(targets)} target(s); {len(aims)} reachable by the generator" + (":" if gaps else ""))
    for k, why in sorted(gaps.items()):
        print(f"  gap {k}: {why}")
    return 0
