"""``dlgate probe``: which operator x dtype x opset combinations a backend supports."""
from __future__ import annotations

import sys
import time

from dlgate.cli.args import positive, probe_doc, seconds


def add_parser(sub) -> None:
    pr = sub.add_parser("probe", help="probe which operator x dtype combinations a system supports")
    pr.add_argument("--system", required=True, help="a backend name (see `dlgate backends`), e.g. onnxruntime, tvm")
    pr.add_argument("--refresh", action="store_true", help="ignore the cache and its journal and probe again")
    pr.add_argument("--jobs", type=positive, default=1, help="probes run in parallel (default 1)")
    pr.add_argument("--deadline", type=seconds, default=None, metavar="SECONDS",
                    help="seconds a single-operator instance may take before it is called a hang (kept, a "
                         "potential finding; the combination's other instances are skipped); default 30")


def progress_printer(system: str, out=sys.stderr, every: float = 10.0, clock=time.monotonic):
    """The probe's progress as a line every ``every`` seconds and at the end: what is done
    (and how much of it a journal already held), the rate and time left at this run's own
    pace, and a combination that has run for a while, so a slow one is not taken for a stall."""
    start = clock()
    last = [None]

    def progress(done, total, resumed=0, running=()):
        now = clock()
        if done == total and last[0] == "end":
            return
        if last[0] is not None and done != total and now - last[0] < every:
            return
        last[0] = now
        line = f"probing {system}: {done}/{total} combinations"
        if resumed:
            line += f" ({resumed} from the journal)"
        fresh, spent = done - resumed, now - start
        if fresh and done < total and spent > 0:
            line += f", {fresh / spent:.1f}/s, ~{(total - done) * spent / fresh / 60:.0f} min left"
        slow = [(c, s) for c, s in running if s >= every]
        if slow:
            (name, sig, opset), s = slow[0]
            line += f"; {name}({','.join(sig)}) at opset {opset} running for {s:.0f} s"
        print(line, file=out, flush=True)
        if done == total:
            last[0] = "end"

    return progress


def command(args) -> int:
    from dlgate.probe.support import cache_path  # local: imports torch; off the CLI start-up

    t0 = time.monotonic()
    doc = probe_doc(args.system, "dlgate probe: --system", refresh=args.refresh, jobs=args.jobs,
                    progress=progress_printer(args.system), deadline=args.deadline)
    ops = sorted({n for n, _, _ in doc["supported"]})
    print(f"{args.system} {doc['version']}: {len(doc['supported'])} supported and "
          f"{len(doc['unsupported'])} unsupported operator x dtype x opset combinations "
          f"({len(ops)} operators usable; {len(doc['findings'])} potential findings kept); "
          f"{time.monotonic() - t0:.0f} s")
    print(f"cache: {cache_path(args.system, doc['version'])}")
    return 0
