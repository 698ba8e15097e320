"""What scoping the oracle's excuses changes, on real compilers.

    python bench/scoped_excuses.py [--models 2000] [--seed scoped-1] [--backends onnxruntime tvm] [--out DIR]

A fixed batch of extreme-value models (every case carries NaN, Inf, huge values or integer
limits in its inputs and constants) is generated, and each backend runs each case once. Its
outputs are then judged twice, on the same numbers:

* **scoped** (today): the oracle's rules (``dlgate.oracle.rules``), each excuse covering the
  outputs and elements it explains, what is left compared on its own scale;
* **whole-case** (before): one undefined value or undefined special value anywhere in the
  reference run excuses the case, whatever differs; rounding and instability as today.

Every case whose verdict differs is printed with both details and saved under ``--out``
(``changed/<backend>/<case>/``, a bundle ``dlgate check`` runs again) for hand-checking: a
finding the whole-case excuse hid, or dlgate's own mistake. The scoped policy may only turn
an ``undefined`` or a ``pass`` into a finding; any other change is reported as an error.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from dlgate.backends.base import BackendSpec, Model  # noqa: E402
from dlgate.case import make_case  # noqa: E402
from dlgate.check import REFERENCE, prepare, save_bundle  # noqa: E402
from dlgate.exec import worker as W  # noqa: E402
from dlgate.graph.generator import GenConfig, Generator  # noqa: E402
from dlgate.oracle import rules, ub  # noqa: E402
from dlgate.oracle import verdict as V  # noqa: E402
from dlgate.oracle.compare import compare_each  # noqa: E402
from dlgate.oracle.rules import instability, rounding  # noqa: E402
from dlgate.oracle.rules.base import Context, Excuse  # noqa: E402


def whole_case(graph, inputs, candidate, reference):
    """The policy the scoped rules replace: an undefined value anywhere excuses the case."""
    ctx = Context(graph, inputs, None, candidate, reference)

    def run(ref, got, tol):
        failed = compare_each(ref, got, tol)
        if not failed:
            return rules.Settled([], [], False)
        why = ub.undefined_values(graph, inputs)
        if why:
            return rules.Settled([], [Excuse("undefined", why, {})], True)
        return rules.settle(ctx, ref, got, tol, rules=(rounding.RULE, instability.RULE))

    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=2000)
    ap.add_argument("--start", type=int, default=0, help="first case index (to run a batch in parts)")
    ap.add_argument("--seed", default="scoped-1")
    ap.add_argument("--backends", nargs="+", default=["onnxruntime", "tvm"])
    ap.add_argument("--max-nodes", type=int, default=10)
    ap.add_argument("--out", default=None, help="where changed cases are saved (default: a temporary folder)")
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="dlgate-scoped-")
    gen = Generator(GenConfig(min_nodes=1, max_nodes=args.max_nodes, extreme_share=1.0))
    specs = [BackendSpec(b) for b in args.backends]
    counts = {b.label(): collections.Counter() for b in specs}
    changed, wrong_way = [], []
    t0 = time.perf_counter()
    with W.Pool(60) as pool:
        for i in range(args.start, args.start + args.models):
            c = make_case(gen, args.seed, "scoped", i)
            case = prepare(c.meta(), c.graph, c.model_bytes)
            if not case.search["valid"]:
                for b in specs:
                    counts[b.label()]["invalid", "invalid"] += 1
                continue
            model = Model(case.model, case.graph)
            ref = pool.execute(REFERENCE, model, case.inputs)
            if not ref.ok:
                for b in specs:
                    counts[b.label()]["reference_error", "reference_error"] += 1
                continue
            for b in specs:
                got = pool.execute(b, model, case.inputs)
                new = V.judge(b.name, b.label(), got, ref.outputs, recheck=True,
                              explain=rules.explain(case.graph, case.inputs, None, got.outputs, ref.outputs, True))
                old = V.judge(b.name, b.label(), got, ref.outputs,
                              explain=whole_case(case.graph, case.inputs, got.outputs, ref.outputs))
                counts[b.label()][old.verdict, new.verdict] += 1
                if old.verdict != new.verdict:
                    row = (b.label(), case.id, case.graph.op_names(), old.verdict, old.detail, new.verdict, new.detail)
                    (changed if old.verdict in (V.UNDEFINED, V.PASS) and new.failed else wrong_way).append(row)
                    save_bundle(out, case, subdir=os.path.join("changed", b.name, case.id.replace("/", "_")))
            if (i + 1 - args.start) % 100 == 0:
                print(f"  {i + 1 - args.start} of {args.models} models, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    print(f"{args.models} extreme-value models (seed {args.seed}, cases {args.start} to {args.start + args.models - 1}), "
          f"{time.perf_counter() - t0:.0f} s")
    for label, cnt in counts.items():
        old = collections.Counter()
        new = collections.Counter()
        for (o, n), k in cnt.items():
            old[o] += k
            new[n] += k
        print(f"\n{label}")
        print(f"  whole-case: {dict(sorted(old.items()))}")
        print(f"  scoped:     {dict(sorted(new.items()))}")
        print(f"  changed:    {sum(k for (o, n), k in cnt.items() if o != n)}")
    for title, rows in (("findings the whole-case excuse hid", changed), ("other changes (errors)", wrong_way)):
        print(f"\n{title}: {len(rows)}")
        for label, cid, ops, ov, od, nv, nd in rows:
            print(f"- {label} {cid} [{', '.join(ops)}]\n    before: {ov}: {od[:300]}\n    after:  {nv}: {nd[:300]}")
    print(f"\nchanged cases saved under {os.path.join(out, 'changed')}")
    return 1 if wrong_way else 0


if __name__ == "__main__":
    sys.exit(main())
