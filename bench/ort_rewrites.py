"""What naming onnxruntime's rewrites costs a compile, and which transformers a batch of
generated models reaches.

    python bench/ort_rewrites.py [--count 50] [--nodes 10] [--level all] [--repeat 3] [--motifs-only]

Per model (the same generated models for every setting, each compiled ``--repeat`` times
per setting in rotated order, the best kept, so the machine's noise falls on all of
them), the session creation time with:

* **off**: no rewrite record (``record_rewrites=False``: ERROR-severity log, no saved model);
* **op diff**: the record before the session log was read (the optimized model saved and
  its operator types compared with the input's, ERROR severity), as ``rewrite_kinds``
  without a log;
* **op diff + log**: the backend's record today (the same, plus INFO severity with fd 2
  captured around session creation and the ``transformer:`` kinds parsed).

Prints the median and 90th-percentile milliseconds of each, the added median per compile,
and the transformers named over the batch against those the installed onnxruntime
registers (``dlgate.backends.ort_transformers``).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from dlgate.backends.base import Model  # noqa: E402
from dlgate.backends.onnxruntime import LEVELS, rewrite_kinds  # noqa: E402
from dlgate.backends.ort_transformers import TRANSFORMERS, registered  # noqa: E402
from dlgate.backends.registry import load  # noqa: E402
from dlgate.graph.generator import GenConfig, GenerationError, Generator  # noqa: E402
from dlgate.materialize.onnx_model import to_onnx  # noqa: E402
from dlgate.ops.motif import Motif  # noqa: E402
from dlgate.ops.registry import all_specs  # noqa: E402


def _op_diff_only(model: bytes, level: str) -> float:
    """Seconds to create a session and name rewrites by the operator diff alone."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[level])
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    so.log_severity_level = 3
    with tempfile.TemporaryDirectory(prefix="dlgate-bench-") as tmp:
        t = time.perf_counter()
        so.optimized_model_filepath = os.path.join(tmp, "optimized.onnx")
        ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        rewrite_kinds(model, so.optimized_model_filepath)
        return time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--nodes", type=int, default=10)
    ap.add_argument("--level", default="all", choices=("basic", "extended", "all"))
    ap.add_argument("--repeat", type=int, default=3, help="compiles per model and setting (the best is kept)")
    ap.add_argument("--motifs-only", action="store_true", help="draw from the onnxruntime motifs (and a few "
                                                                "plain operators) only")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    ops = None
    if args.motifs_only:
        ops = tuple(n for n, s in all_specs().items() if isinstance(s, Motif) and s.optimizer == "onnxruntime")
        ops += ("Relu", "Add", "Neg", "Cast", "Identity")
    gen = Generator(GenConfig(min_nodes=max(1, args.nodes // 2), max_nodes=args.nodes, ops=ops, dynamic_share=0.0))
    off = load("onnxruntime")(opt_level=args.level, record_rewrites=False)
    on = load("onnxruntime")(opt_level=args.level)
    times: dict = {"off": [], "op diff": [], "op diff + log": []}
    named: Counter = Counter()
    seed = made = 0
    while made < args.count and seed < 20 * args.count:
        seed += 1
        try:
            g = gen.generate(seed)
        except GenerationError:
            continue
        model = Model(to_onnx(g, 1).SerializeToString(), g)
        runs = {"off": lambda m=model: off.compile(m), "op diff": lambda m=model: _op_diff_only(m.onnx, args.level),
                "op diff + log": lambda m=model: on.compile(m)}
        best = {k: float("inf") for k in runs}
        try:
            for rep in range(args.repeat):  # each setting in turn, rotated; the best of the repeats
                order = list(runs)[rep % 3:] + list(runs)[:rep % 3]
                for k in order:
                    t = time.perf_counter()
                    runs[k]()
                    best[k] = min(best[k], time.perf_counter() - t)
        except Exception:  # noqa: BLE001 - a model onnxruntime refuses is not timed
            continue
        made += 1
        for k, v in best.items():
            times[k].append(v)
        named.update(k.split(":", 1)[1] for k in on.rewrites(None) or () if k.startswith("transformer:"))
    print(f"{made} models ({args.nodes} nodes at most, onnxruntime@{args.level}"
          f"{', motifs only' if args.motifs_only else ''}): session creation, ms")
    for k, v in times.items():
        ms = sorted(1e3 * x for x in v)
        print(f"  {k:14s} median {statistics.median(ms):7.2f}   p90 {ms[int(0.9 * (len(ms) - 1))]:7.2f}")
    med = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    print(f"  log reading adds {med['op diff + log'] - med['op diff']:+.2f} ms a compile (median), "
          f"the whole record {med['op diff + log'] - med['off']:+.2f} ms")
    reg = registered()
    print(f"transformers named: {len(named)} of the {len(reg)} registered "
          f"({sum(1 for k in reg if TRANSFORMERS.get(k, ('',))[0] == 'covered')} reachable)")
    for name, n in named.most_common():
        print(f"  {n:4d}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
