"""The importer path and the direct Relax path of TVM on the same graphs: how often each is
refused, and on which side of TVM each disagreement arises (``dlgate.backends.relax_pair``).

    python bench/relax_pair.py [--models 20] [--seed relax-pair] [--dynamic 0.5] [--case DIR]

Draws ``--models`` graphs restricted to the operators the direct path lowers (every dtype,
a share with symbolic dimensions), searches their inputs as a campaign does, runs both paths
at TVM's zero and default pipelines in this process against the PyTorch reference, and
prints one line per case that is not ``agree`` and the count of each side. ``--case DIR``
classifies one saved case folder instead and prints the full result as JSON. Runs in one
process with TVM imported: a crash of TVM ends it (the gate's workers isolate that).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dlgate.backends.base import Model  # noqa: E402
from dlgate.backends.relax_pair import compare_paths  # noqa: E402
from dlgate.case import make_case  # noqa: E402
from dlgate.check import CaseError, load_bundle, prepare  # noqa: E402
from dlgate.graph.generator import GenConfig, Generator  # noqa: E402
from dlgate.materialize.torch_model import run_numpy  # noqa: E402


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--seed", default="relax-pair")
    ap.add_argument("--dynamic", type=float, default=0.5, help="share of cases with symbolic dimensions")
    ap.add_argument("--case", help="classify one saved case folder and print the result as JSON")
    args = ap.parse_args(argv)
    if args.models < 1 or not 0.0 <= args.dynamic <= 1.0:
        print("relax_pair: --models must be at least 1 and --dynamic within 0-1", file=sys.stderr)
        return 2
    if args.case:
        try:
            case = load_bundle(args.case)
        except (CaseError, OSError) as e:
            print(f"relax_pair: {e}", file=sys.stderr)
            return 2
        res = compare_paths(Model(case.model, case.graph), case.inputs, run_numpy(case.graph, case.inputs))
        print(json.dumps(res, indent=2, sort_keys=True))
        return 0
    from dlgate.materialize.relax.lowerings import covered  # local: imports TVM, an optional compiler

    gen = Generator(GenConfig(ops=covered(), max_nodes=8, dynamic_share=args.dynamic))
    sides: collections.Counter = collections.Counter()
    t0 = time.time()
    for i in range(args.models):
        c = make_case(gen, args.seed, "pair", i)
        p = prepare(c.meta(), c.graph, c.model_bytes)
        if not p.search["valid"]:
            sides["no valid input"] += 1
            continue
        res = compare_paths(Model(p.model, p.graph), p.inputs, run_numpy(p.graph, p.inputs))
        sides[res["side"]] += 1
        if res["side"] != "agree":
            details = "; ".join(f"{k}: {v['detail'][:120]}" for k, v in sorted(res["runs"].items()) if not v["agrees"])
            print(f"{c.id} {res['side']}: {res['why']} [{details}]")
    print(f"{args.models} models in {time.time() - t0:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(sides.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
