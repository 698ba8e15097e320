"""Where a support probe's time went, from its journal (``dlgate probe`` writes one beside
its cache document: ``<cache>/support/<system>-<version>-gen<N>-p<M>.journal``).

    python bench/probe_time.py JOURNAL [--top 15]

Prints the combinations and their summed wall time (a combination's time includes a
worker restart after the previous one crashed or hung), the median and slowest, the time
per operator family (operator name) for the slowest families, the hangs (instances past
the deadline) and what they cost, and the verdict counts.
"""
from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys


def summary(path: str, top: int = 15) -> list:
    with open(path) as f:
        lines = f.read().splitlines()
    header = json.loads(lines[0])
    rows = [json.loads(x) for x in lines[1:] if x.strip()]
    secs = [r["seconds"] for r in rows]
    out = [f"{header['system']}: {len(rows)} combinations, {sum(secs) / 60:.1f} min in all "
           f"(deadline {header['deadline_s']:g} s, {header['tries']} instances each)"]
    if not rows:
        return out
    out.append(f"per combination: median {statistics.median(secs):.2f} s, mean {statistics.mean(secs):.2f} s, "
               f"slowest {max(secs):.1f} s")
    hangs = [r for r in rows if r["note"].startswith("hangs")]
    out.append(f"hangs: {len(hangs)} combinations, {sum(r['seconds'] for r in hangs) / 60:.1f} min")
    kinds = collections.Counter("unsupported" if not r["supported"] else
                                (r["note"].split(" (")[0] if r["note"] else "supported") for r in rows)
    out.append("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    per = collections.defaultdict(lambda: [0, 0.0])
    for r in rows:
        per[r["op"]][0] += 1
        per[r["op"]][1] += r["seconds"]
    out.append(f"slowest operators (of {len(per)}):")
    for op, (n, s) in sorted(per.items(), key=lambda kv: -kv[1][1])[:top]:
        out.append(f"  {op:32s} {n:4d} combinations {s:8.1f} s  {s / n:6.2f} s each")
    out.append("slowest combinations:")
    for r in sorted(rows, key=lambda r: -r["seconds"])[:top]:
        out.append(f"  {r['seconds']:7.1f} s  {r['op']}({','.join(r['sig'])}) at opset {r['opset']}  {r['note'][:80]}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("journal")
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args(argv)
    try:
        print("\n".join(summary(args.journal, args.top)))
    except (OSError, ValueError, KeyError, IndexError) as e:
        print(f"bench/probe_time.py: {args.journal}: not a probe journal ({e})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
