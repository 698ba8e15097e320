"""Generation speed and validity: seed -> serialized ONNX bytes for 10-node models.

    python bench/gen.py [--count 500] [--nodes 10] [--support onnxruntime] [--ops A,B,...]
    python bench/gen.py --compare [--count 500]

Prints the median and 90th-percentile milliseconds per model, models per second on one
core (this process), how often z3 was needed, and the share of models that pass ONNX's
full checker and run on onnxruntime (checked after timing, outside the measured path).

``--compare`` times the whole operator set against the 119 specs of before the operator
families of shape computation, transformers, quantization, recurrence, control flow,
sequences, spatial, signal, bitwise and loss operators were added (``BEFORE``), model by
model alternately in one run (the machine's noise falls on both), and prints the ratio of
the medians.
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


#: The operator specs before the families added for real deployed models (the comparison's
#: "today's operator set"; 119 specs).
BEFORE = tuple("""Abs Neg Sign Exp Log Sqrt Reciprocal Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh
Floor Ceil Round Erf IsNaN IsInf Add Sub Mul Div Mod Pow Max Min Sum Mean Relu LeakyRelu PRelu Elu Selu
Celu Sigmoid HardSigmoid HardSwish Gelu Softplus Softsign Tanh ThresholdedRelu Mish Softmax LogSoftmax
Hardmax Equal Greater Less GreaterOrEqual LessOrEqual And Or Xor Not Where Cast CastLike Clip Identity
ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSumExp ReduceSumSquare
ReduceLogSum ArgMax ArgMin MatMul Gemm GemmNoC Einsum EinsumUnary Conv ConvNoBias ConvTranspose
ConvTransposeNoBias MaxPool AveragePool LpPool GlobalAveragePool GlobalMaxPool BatchNormalization
InstanceNormalization GroupNormalization LayerNormalization LayerNormalizationNoB Reshape Flatten
Transpose Squeeze Unsqueeze Expand Tile Concat Concat3 Split Split3 DepthToSpace SpaceToDepth Slice Pad
Gather GatherElements TopK CumSum Trilu OneHot Resize""".split())


def compare(args) -> int:
    """Median ms per model of the whole operator set and of ``BEFORE``, alternating."""
    gens = {"all": Generator(GenConfig(min_nodes=args.nodes, max_nodes=args.nodes)),
            "before": Generator(GenConfig(min_nodes=args.nodes, max_nodes=args.nodes, ops=BEFORE))}
    times: dict = {k: [] for k in gens}
    for g in gens.values():
        make_case(g, "warmup", "bench", 0)
    for i in range(args.count):
        for k, g in gens.items():
            t0 = time.perf_counter()
            make_case(g, args.seed, "bench", i)
            times[k].append((time.perf_counter() - t0) * 1000)
    med = {k: statistics.median(v) for k, v in times.items()}
    n_all = len(gens["all"].specs)
    for k, v in times.items():
        v.sort()
        print(f"{k:7} ({len(gens[k].specs)} specs): median {med[k]:.2f} ms, p90 {v[int(0.9 * len(v)) - 1]:.2f} ms "
              f"per {args.nodes}-node model")
    print(f"ratio of medians, all {n_all} specs / the {len(BEFORE)} before: {med['all'] / med['before']:.2f} "
          f"(target: at most 1.5)")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--nodes", type=int, default=10)
    ap.add_argument("--seed", default="bench")
    ap.add_argument("--support", metavar="SYSTEM",
                    help="restrict generation to SYSTEM's probed support (e.g. onnxruntime)")
    ap.add_argument("--ops", help="comma-separated operator specs to draw from (default: all)")
    ap.add_argument("--compare", action="store_true",
                    help="time the whole operator set against the 119 specs before the new families")
    args = ap.parse_args()
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    except (AttributeError, OSError):
        pass
    support = None
    if args.support:
        from dlgate.probe.support import load_or_probe, support_set

        support = support_set(load_or_probe(args.support))
    if args.compare:
        return compare(args)
    ops = tuple(o for o in args.ops.split(",") if o) if args.ops else None
    gen = Generator(GenConfig(min_nodes=args.nodes, max_nodes=args.nodes, support=support, ops=ops))
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
