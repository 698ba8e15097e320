"""``dlgate gen``: a deterministic batch of models, coverage-guided as ``dlgate run`` generates it."""
from __future__ import annotations

import os
import time

from dlgate.cli.args import opset, out_dir, positive, probe_doc, recorded_aims, share
from dlgate.cli.parser import UsageError
from dlgate.coverage.state import CoverageState, StateError


def add_parser(sub) -> None:
    g = sub.add_parser("gen", help="generate a deterministic batch of models")
    g.add_argument("--seed", required=True, help="root seed text (a commit SHA in CI)")
    g.add_argument("--count", type=positive, required=True, help="number of models")
    g.add_argument("--out", required=True, help="output directory")
    g.add_argument("--campaign", default="default", help="campaign name (part of the seed)")
    g.add_argument("--start", type=int, default=0, help="index of the first case")
    g.add_argument("--max-nodes", type=positive, default=10, help="most operators per model (default 10)")
    g.add_argument("--min-nodes", type=positive, default=1, help="fewest operators per model (default 1)")
    g.add_argument("--opset", type=opset, help="fixed ONNX opset (default: drawn per case from 13-28)")
    g.add_argument("--ops", help="comma-separated operator names to draw from (default: all)")
    g.add_argument("--dynamic-share", type=share, default=0.25,
                   help="share of models with symbolic batch/sequence input dimensions (default 0.25)")
    g.add_argument("--extreme-share", type=share, default=0.2,
                   help="share of models whose inputs and constants carry extreme values: NaN, +/-Inf, "
                        "huge magnitudes, subnormals, signed zeros, ties, integer limits (default 0.2)")
    g.add_argument("--support", metavar="SYSTEM", help="restrict to what backend SYSTEM was probed to support (e.g. onnxruntime, tvm)")
    g.add_argument("--no-guidance", action="store_true",
                   help="draw every case independently (default: coverage-guided, in index order from case 0, "
                        "as `dlgate run` generates its batch)")
    g.add_argument("--coverage-state", metavar="FILE",
                   help="the coverage state guidance starts from (a run's coverage-start.json, to regenerate "
                        "its cases); default: empty")
    g.add_argument("--targets", metavar="FILE",
                   help="aim the batch at a change's targets: a run's run.json (its recorded change) or the "
                        "output of `dlgate targets --json`")
    g.add_argument("--target-share", type=share, default=0.8,
                   help="share of the batch aimed at the targets (default 0.8, as `dlgate run`)")


def command(args) -> int:
    from dlgate.case import make_case  # local: imports torch; off the CLI start-up
    from dlgate.graph.generator import GenConfig, GenerationError, Generator
    from dlgate.ops.registry import select

    ops = tuple(o.strip() for o in args.ops.split(",") if o.strip()) if args.ops else None
    if ops is not None:
        try:
            select(ops)
        except KeyError as e:
            raise UsageError(f"dlgate gen: --ops: {e.args[0]}") from None
    if args.min_nodes > args.max_nodes:
        raise UsageError("dlgate gen: --min-nodes must not exceed --max-nodes")
    if args.start < 0:
        raise UsageError("dlgate gen: --start must be non-negative")
    out_dir(args.out, "dlgate gen: --out")
    support = None
    if args.support:
        from dlgate.cli.probe import progress_printer
        from dlgate.probe.support import support_set  # local: imports torch; off the CLI start-up

        # probed here when not cached yet (a journal resumes a probe cut short): say how it goes
        support = support_set(probe_doc(args.support, "dlgate gen: --support", progress=progress_printer(args.support)))
    aims = ()
    if args.targets:
        aims = recorded_aims(args.targets, "dlgate gen: --targets")
    cfg = GenConfig(min_nodes=args.min_nodes, max_nodes=args.max_nodes, ops=ops, opset=args.opset, support=support,
                    dynamic_share=args.dynamic_share, extreme_share=args.extreme_share, aims=aims,
                    aim_share=args.target_share)
    gen = Generator(cfg)
    try:
        gen.drawable()
    except GenerationError as e:
        raise UsageError(f"dlgate gen: {e}") from None
    batch = None
    if not args.no_guidance:
        from dlgate.case import GuidedBatch  # local: imports torch; off the CLI start-up

        try:
            start = CoverageState.load(args.coverage_state) if args.coverage_state else CoverageState()
        except StateError as e:
            raise UsageError(f"dlgate gen: --coverage-state: {e}") from None
        batch = GuidedBatch(gen, args.seed, args.campaign, start)
    elif args.coverage_state:
        raise UsageError("dlgate gen: --coverage-state needs guidance (drop --no-guidance)")
    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    for i in range(args.start, args.start + args.count):
        c = batch.case(i)[0] if batch is not None else make_case(gen, args.seed, args.campaign, i)
        c.write(args.out)
    dt_ms = (time.perf_counter() - t0) * 1000 / args.count
    print(f"wrote {args.count} models to {args.out} ({dt_ms:.1f} ms per model)")
    return 0
