"""Numeric-valid input search: plain sampling versus NNSmith's gradient search.

    python bench/inputs.py [--count 500] [--nodes 10] [--steps 48]

On ``--count`` generated models (default generator config, all dtypes) that each contain
at least one restricted-domain operator, prints the share of numerically valid models
(every float intermediate and output finite) with plain re-sampling and with the search
dlgate runs (a few re-draws, then gradient steps) under the same step budget, both from
the same starting values; the mean and median search time per model, and the mean
generation time per model (seed to serialized ONNX, as ``bench/gen.py`` measures) with
the search time as a percentage of it; validity by dtype; the operators where the search
gave up. One core, one torch thread.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from dlgate.case import make_case  # noqa: E402
from dlgate.graph.generator import GenConfig, Generator  # noqa: E402
from dlgate.inputs.search import DEFAULT_MAX_STEPS, search  # noqa: E402
from dlgate.ops.registry import get  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--nodes", type=int, default=10)
    ap.add_argument("--seed", default="bench")
    ap.add_argument("--steps", type=int, default=DEFAULT_MAX_STEPS)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    except (AttributeError, OSError):
        pass
    gen = Generator(GenConfig(min_nodes=args.nodes, max_nodes=args.nodes))
    make_case(gen, "warmup", "bench", 0)
    cases, gen_ms = [], []
    i = 0
    while len(cases) < args.count:
        t0 = time.perf_counter()
        case = make_case(gen, args.seed, "inputs", i)
        gen_ms.append((time.perf_counter() - t0) * 1000)
        i += 1
        if any(get(op).restricted for op in case.graph.op_names()):
            cases.append(case)
    search(cases[0].graph, 0)  # warm-up
    rows = {}
    for name, grad in (("sampling", False), ("gradient", True)):
        res = [search(c.graph, c.seed, max_steps=args.steps, gradients=grad) for c in cases]
        rows[name] = res
    n = len(cases)
    g = statistics.mean(gen_ms)
    print(f"models: {n} of {args.nodes} nodes with a restricted operator (from {i} generated); "
          f"step budget {args.steps}")
    print(f"{'':22}{'sampling':>12}{'gradient':>12}")
    s, d = rows["sampling"], rows["gradient"]

    def row(label, f, fmt):
        print(f"{label:22}{fmt.format(f(s)):>12}{fmt.format(f(d)):>12}")

    row("valid %", lambda r: 100 * sum(x.valid for x in r) / n, "{:.1f}")
    row("valid initially %", lambda r: 100 * sum(x.method == "initial" for x in r) / n, "{:.1f}")
    row("mean search ms", lambda r: statistics.mean(x.seconds * 1000 for x in r), "{:.3f}")
    row("median search ms", lambda r: statistics.median(x.seconds * 1000 for x in r), "{:.3f}")
    row("mean steps", lambda r: statistics.mean(x.steps for x in r), "{:.2f}")
    row("search % of gen", lambda r: 100 * statistics.mean(x.seconds * 1000 for x in r) / g, "{:.1f}")
    row("wall-clock cap hit", lambda r: sum(x.hit_time_cap for x in r), "{}")
    print(f"mean generation ms per model (seed to ONNX bytes): {g:.3f} (median {statistics.median(gen_ms):.3f})")
    init = [x.seconds * 1000 for x in d if x.method == "initial"]
    if init:
        print(f"search ms when the initial values are valid (one forward pass): mean {statistics.mean(init):.3f}")
    groups = {}
    for c, x in zip(cases, d):
        floats = sorted({t.dtype for t in c.graph.tensors if t.dtype.startswith("float")})
        key = "with float16" if "float16" in floats else "float32/64 only"
        groups.setdefault(key, []).append(x.valid)
    for key, vals in sorted(groups.items()):
        print(f"gradient search valid %, models {key}: {100 * sum(vals) / len(vals):.1f} of {len(vals)}")
    fails = {}
    for x in d:
        if not x.valid:
            for _, op in x.failing:
                fails[op] = fails.get(op, 0) + 1
    print("gradient search failures by operator:", dict(sorted(fails.items(), key=lambda kv: -kv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
