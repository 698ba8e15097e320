"""``dlgate probe``: which operator x dtype x opset combinations a backend supports."""
from __future__ import annotations

import sys
import time

from dlgate.cli.args import positive, probe_doc


def add_parser(sub) -> None:
    pr = sub.add_parser("probe", help="probe which operator x dtype combinations a system supports")
    pr.add_argument("--system", required=True, help="a backend name (see `dlgate backends`), e.g. onnxruntime, tvm")
    pr.add_argument("--refresh", action="store_true", help="ignore the cache and probe again")
    pr.add_argument("--jobs", type=positive, default=1, help="probes run in parallel (default 1)")


def command(args) -> int:
    from dlgate.probe.support import cache_path  # local: imports torch; off the CLI start-up

    last = [0.0]

    def progress(done, total):  # a line every 10 seconds, and at the end
        now = time.monotonic()
        if now - last[0] >= 10 or done == total:
            last[0] = now
            print(f"probing {args.system}: {done}/{total} combinations", file=sys.stderr, flush=True)

    doc = probe_doc(args.system, "dlgate probe: --system", refresh=args.refresh, jobs=args.jobs, progress=progress)
    ops = sorted({n for n, _, _ in doc["supported"]})
    print(f"{args.system} {doc['version']}: {len(doc['supported'])} supported and "
          f"{len(doc['unsupported'])} unsupported operator x dtype x opset combinations "
          f"({len(ops)} operators usable)")
    print(f"cache: {cache_path(args.system, doc['version'])}")
    return 0
