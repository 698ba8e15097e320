"""Generation speed and validity: seed -> serialized ONNX bytes for 10-node models.

    python bench/gen.py [--count 500] [--nodes 10] [--support onnxruntime]

Prints the median and 90th-percentile milliseconds per model, models per second on one
core (this process), how often z3 was needed, and the share of models that pass ONNX's
full checker and run on onnxruntime (checked after timing, outside the measured path).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
import onnx  # noqa: E402

from dlgate.case import make_case  # noqa: E402
from dlgate.graph.generator import GenConfig, Generator  # noqa: E402
from dlgate.graph.ir import random_values  # noqa: E402
from dlgate.backends.base import BackendSpec, Model  # noqa: E402
from dlgate.backends.registry import create  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--nodes", type=int, default=10)
    ap.add_argument("--seed", default="bench")
    ap.add_argument("--support", metavar="SYSTEM",
                    help="restrict generation to SYSTEM's probed support (e.g. onnxruntime)")
    args = ap.parse_args()
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    except (AttributeError, OSError):
        pass
    support = None
    if args.support:
        from dlgate.probe.support import load_or_probe, support_set

        support = support_set(load_or_probe(args.support))
    gen = Generator(GenConfig(min_nodes=args.nodes, max_nodes=args.nodes, support=support))
    make_case(gen, "warmup", "bench", 0)  # imports, caches
    times, cases = [], []
    t_all = time.perf_counter()
    for i in range(args.count):
        t0 = time.perf_counter()
        case = make_case(gen, args.seed, "bench", i)
        times.append((time.perf_counter() - t0) * 1000)
        cases.append(case)
    wall = time.perf_counter() - t_all
    times.sort()
    nodes = [len(c.graph.nodes) for c in cases]
    ok_checker = ok_ort = 0
    ort = create(BackendSpec("onnxruntime", opt_level="disable"))
    unsupported = 0
    for c in cases:
        try:
            onnx.checker.check_model(onnx.load_from_string(c.model_bytes), full_check=True)
            ok_checker += 1
        except Exception as e:
            print(f"checker rejects {c.id}: {str(e).splitlines()[0][:200]}")
            continue
        feeds = [random_values(np.random.default_rng(0), c.graph.tensors[t]) for t in c.graph.inputs]
        try:
            ort.run(ort.compile(Model(c.model_bytes, c.graph)), feeds)
            ok_ort += 1
        except Exception as e:
            if ort.unsupported(e):
                unsupported += 1
            else:
                print(f"onnxruntime rejects {c.id}: {str(e).splitlines()[0][:200]}")
    n = args.count
    print(f"models: {n} of {args.nodes} nodes (mean {statistics.mean(nodes):.2f} nodes)"
          + (f", restricted to {args.support}'s probed support" if args.support else ""))
    print(f"ms per model, seed to serialized ONNX: median {statistics.median(times):.2f}, "
          f"p90 {times[int(0.9 * n) - 1]:.2f}, max {times[-1]:.2f}")
    print(f"models per second on one core: {n / wall:.1f}")
    print(f"insertions: {gen.stats}; z3 solver calls: {gen.solver.calls} ({gen.solver.calls / n:.2f} per model)")
    print(f"valid (ONNX full checker): {100 * ok_checker / n:.1f}%")
    print(f"runs on onnxruntime CPU: {100 * ok_ort / n:.1f}% "
          f"({unsupported} hit an operator x dtype onnxruntime does not implement; "
          f"generation restricted with --support avoids these)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
