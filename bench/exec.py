"""Harness overhead: the time dlgate adds per case on top of the backends' own compile
and run, as a share of the total.

    python bench/exec.py [--count 60] [--backend tvm] [--nodes 10]
    python bench/exec.py --start-up [--count 5] [--backends onnxruntime,onnx-reference,torch,tvm]

Per case, "total" is the wall time of preparing (input search, re-materialization) and
checking it (reference run, candidate run, comparison, cross-checks on disagreement);
"backends" is the compile and run time the workers measured inside the backends (the
reference's, the candidate's and the cross-checks'). The rest is dlgate: search, process round trips,
pickling, comparison. One-off costs are kept out: both workers are started and warmed up on
cases of their own (imports, first-use initialization), the first timed case is reported
apart, and PyTorch's optimizer is warmed up before timing.

``--start-up`` measures that one-off instead: a worker's start (a fresh interpreter, its
imports, the backend's ``start``: the compiler's import and the start-up probe) until it
says it is ready, ``--count`` times per backend, one after another; with the median, which
heavy libraries the worker had loaded (read from ``/proc/PID/maps`` on Linux), since one it
does not need is the usual cause of a slow start. (A spawned worker re-runs its parent's
main script's top level: this script imports little there, as ``dlgate``'s own entry point
does.) Every gate run starts a reference and a
candidate worker, and a crash or a timeout starts another. Each backend is started cold (forked
from the server that imported no compiler, then importing its own) and warm (forked from its
compiler's warm server, :mod:`dlgate.exec.servers`), and the ratio of the medians is printed;
the first warm start, which waits for the server's own import, is reported apart.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from dlgate.backends.base import BackendSpec  # noqa: E402
from dlgate.backends.registry import load  # noqa: E402
from dlgate.exec.worker import Pool, Worker  # noqa: E402


class TimedPool(Pool):
    """Adds up the compile and run time measured inside the backends, for every call
    (reference, candidate and cross-checks)."""

    inside = 0.0

    def execute(self, spec, model, inputs):
        out = super().execute(spec, model, inputs)
        self.inside += out.compile_s + out.run_s
        return out


#: Shared libraries whose presence in a worker names what it imported (``--start-up``).
LIBRARIES = {"torch": "libtorch_cpu", "onnxruntime": "onnxruntime_pybind11_state", "tvm": "libtvm"}


def loaded(pid: int) -> list:
    """The ``LIBRARIES`` a live process has mapped (empty where /proc is missing)."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            maps = f.read()
    except OSError:
        return []
    return [name for name, lib in LIBRARIES.items() if lib in maps]


def starts(spec: BackendSpec, count: int, warm: bool) -> tuple:
    """``count`` start times of ``spec``'s worker (warm or cold), the libraries the last one had
    loaded, and why it could not start (None when it could)."""
    times, libs = [], []
    for _ in range(count):
        w = Worker(spec, warm=warm)
        t0 = time.perf_counter()
        ok = w.start()
        times.append(time.perf_counter() - t0)
        if not ok:
            w.close()
            return times, libs, w.unavailable
        libs = loaded(w._proc.pid)
        w.close()
    return times, libs, None


def start_up(names: list, count: int) -> int:
    """Median wall time from starting a worker to its ready answer, per backend, cold and warm."""
    from dlgate.exec import servers

    for name in names:
        spec = BackendSpec.parse(name)
        cold, libs, why = starts(spec, count, warm=False)
        if why:
            print(f"{spec.label()}: cannot start: {why}")
            continue
        if servers.kind_of(spec) is None:  # warm or cold, the same start: one figure
            print(f"{spec.label():24s} median {statistics.median(cold):.3f} s ({count} starts; no warm server: "
                  f"forks from the cold server); loaded: {', '.join(libs) or '-'}")
            continue
        warm, warm_libs, why = starts(spec, count + 1, warm=True)
        if why:
            print(f"{spec.label()}: cannot start warm: {why}")
            continue
        first, warm = warm[0], warm[1:]
        kind = servers.kind_of(spec)
        how = (f"cold server instead: {servers.cold_reason(kind)}" if servers.cold_reason(kind) else
               f"the {kind} server; its first start {first:.2f} s, with the server's import")
        print(f"{spec.label():24s} cold median {statistics.median(cold):.3f} s, warm median "
              f"{statistics.median(warm):.3f} s: {statistics.median(cold) / statistics.median(warm):.1f}x "
              f"({count} starts each; warm: {how}); loaded: cold {', '.join(libs) or '-'}, "
              f"warm {', '.join(warm_libs) or '-'}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=None, help="cases (default 60), or starts per backend (default 5)")
    ap.add_argument("--backend", default="tvm")
    ap.add_argument("--nodes", type=int, default=10)
    ap.add_argument("--start-up", action="store_true", help="time worker start-up instead of cases")
    ap.add_argument("--backends", default="onnxruntime,onnx-reference,torch,tvm", help="with --start-up")
    args = ap.parse_args()
    if args.start_up:
        return start_up(args.backends.split(","), args.count or 5)
    args.count = 60 if args.count is None else args.count
    # local: a worker started by spawn re-runs this script's top level (as __mp_main__):
    # imported at the top, these (PyTorch with the operator specs) would load in every worker
    from dlgate.case import make_case
    from dlgate.check import CheckConfig, check, prepare
    from dlgate.graph.generator import GenConfig, Generator
    from dlgate.probe.support import load_or_probe, support_set

    warnings.filterwarnings("ignore")
    spec = BackendSpec.parse(args.backend)
    gen = Generator(GenConfig(min_nodes=args.nodes, max_nodes=args.nodes,
                              support=support_set(load_or_probe(spec.name))))
    cfg = CheckConfig([spec])
    import torch

    torch.optim.Adam([torch.zeros(1, requires_grad=True)])  # one-off: the optimizer's first use imports dynamo (~2 s)
    rows = []
    with TimedPool(timeout_s=120) as pool:
        # Warm up: start every worker a case may use (reference, candidate, and the
        # cross-checks: the candidate at its lowest level and onnx.reference), and run cases
        # until the candidate has compiled one: imports and first-use initialization happen
        # once per worker, not per case.
        lowest = BackendSpec(spec.name, spec.device, load(spec.name).opt_levels[0], spec.options)
        for s in (cfg.reference, spec, lowest, BackendSpec("onnx-reference")):
            pool.get(s).start()
        warm = 0
        while warm < 10:
            case = make_case(gen, "bench-exec-warmup", args.backend, warm)
            warm += 1
            rec = check(pool, prepare(case.meta(), case.graph, case.model_bytes), cfg)
            if rec["verdicts"][0]["verdict"] not in ("invalid", "reference_error"):
                break
        for i in range(args.count + 1):
            case = make_case(gen, "bench-exec", args.backend, i)
            meta = case.meta()
            t0 = time.perf_counter()
            prepared = prepare(meta, case.graph, case.model_bytes)
            t1 = time.perf_counter()
            pool.inside = 0.0
            rec = check(pool, prepared, cfg)
            t2 = time.perf_counter()
            rows.append({"total": t2 - t0, "search": t1 - t0, "backend": pool.inside,
                         "verdict": rec["verdicts"][0]["verdict"]})
    first, rows = rows[0], rows[1:]
    total = sum(r["total"] for r in rows)
    backend = sum(r["backend"] for r in rows)
    search = sum(r["search"] for r in rows)
    print(f"{len(rows)} cases of {args.nodes} nodes on {spec.label()} (first case, with worker start-up, "
          f"{first['total']:.2f} s, excluded)")
    print(f"per case: total {1000 * total / len(rows):.1f} ms, inside the backends {1000 * backend / len(rows):.1f} ms, "
          f"input search {1000 * search / len(rows):.1f} ms")
    print(f"dlgate's share of the total: {100 * (total - backend) / total:.1f}% "
          f"({100 * (total - backend - search) / total:.1f}% without the input search)")
    print(f"median case: {1000 * statistics.median(r['total'] for r in rows):.1f} ms")
    verdicts: dict = {}
    for r in rows:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    print(f"verdicts: {verdicts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
