"""Tzer's ablation of the TIR fuzz loop on a fixed budget.

    python bench/tir_ablation.py [--programs 200] [--graphs 4] [--seed tir-ablation] [--json FILE]

Four settings, each from the same initial pool (the hand-written seeds and the seeds of
``--graphs`` generated graphs, each with the minimal pass sequence) and the same seed, each
running ``--programs`` steps of :func:`dlgate.tir.fuzz.fuzz` with the lowering executor
(the passes run, code generation does not) in a forked child per program
(:func:`dlgate.tir.fuzz.isolated`: a pass that crashes TVM is a failure, not the end of
the run):

* **full**: every mutator usable on the CPU target, pass mutation after N_max = 4 stalls;
* **general only**: Tzer's three general-purpose mutators (insert, delete, replace);
* **no pass mutation**: every mutator, the pass sequences never change;
* **general, no pass**: both removed.

Prints per setting: the valid-program rate (of the IR mutations that made a program, the
share TVM accepted: parsed, well formed, printed back), the same over every IR step (a
mutator with nothing to act on counts as not valid), programs per second (steps over the
loop's wall time), the feedback growth (features seen at the end minus at the start, and at
a quarter, half and three quarters of the budget), the entries the pool gained, the pass
mutations made and the executions that failed.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from dlgate.tir import fuzz as FZ  # noqa: E402
from dlgate.tir import mutators as M  # noqa: E402
from dlgate.tir.seeds import graph_seeds, hand_seeds  # noqa: E402

SETTINGS = (("full", M.ALL, True), ("general only", M.GENERAL, True),
            ("no pass mutation", M.ALL, False), ("general, no pass", M.GENERAL, False))


def run(programs: int, graphs: int, seed: str) -> list:
    seeds = hand_seeds() + graph_seeds(seed, "seeds", graphs)
    _, minimal, make = FZ.pass_hooks()
    start, failed = FZ.initial_corpus(seeds, minimal, lambda p, ps: FZ.lower_execute(p, ps, make))
    rows = []
    for name, mutators, passes in SETTINGS:
        corpus = start.copy()
        execute = FZ.isolated(lambda p, ps: FZ.lower_execute(p, ps, make))
        res = FZ.fuzz(corpus, seed, "ablation", programs, execute=execute,
                      settings=FZ.Settings(mutators=mutators, pass_mutation=passes))
        ir = [s for s in res.steps if s["kind"] == "ir"]
        outcomes = Counter(s["outcome"] for s in ir)
        made = outcomes["ok"] + outcomes["invalid"] + outcomes["error"]
        marks = [res.growth[max(0, programs * q // 4 - 1)] - len(start.seen) for q in (1, 2, 3)]
        rows.append({
            "setting": name, "programs": programs, "seeds": len(start.entries), "seeds_failed": len(failed),
            "valid_rate": outcomes["ok"] / made if made else 0.0,
            "valid_rate_all_steps": outcomes["ok"] / len(ir) if ir else 0.0,
            "programs_per_s": programs / res.seconds if res.seconds else 0.0,
            "features_start": len(start.seen), "feature_growth": len(corpus.seen) - len(start.seen),
            "growth_quarters": marks, "pool_gain": len(corpus.entries) - len(start.entries),
            "pass_mutations": sum(s["kind"] == "pass" for s in res.steps),
            "passes_adopted": sum(s["update"] == "adopted" for s in res.steps),
            "failures": len(res.failures), "outcomes": dict(outcomes),
            "crashes": sorted({f["detail"] for f in res.failures if f["detail"].startswith("killed")}),
            "failure_details": sorted({f["detail"][:200] for f in res.failures}),
            "by_mutator": dict(Counter(s["mutator"] for s in ir if s["outcome"] == "ok")),
        })
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=200, help="steps per setting (default 200)")
    ap.add_argument("--graphs", type=int, default=4, help="generated graphs seeding the pool (default 4)")
    ap.add_argument("--seed", default="tir-ablation")
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    args = ap.parse_args()
    if args.programs < 4 or args.graphs < 0:
        print("tir_ablation: --programs must be at least 4 and --graphs not negative", file=sys.stderr)
        return 2
    rows = run(args.programs, args.graphs, args.seed)
    print(f"{rows[0]['seeds']} seed programs ({rows[0]['seeds_failed']} failed to lower), "
          f"{rows[0]['features_start']} features at the start, {args.programs} steps per setting")
    print(f"{'setting':<18} {'valid':>6} {'valid/all':>9} {'prog/s':>7} {'growth':>7} {'(1/4,1/2,3/4)':>14} "
          f"{'pool+':>6} {'pass mut':>8} {'adopted':>7} {'failed':>6}")
    for r in rows:
        q = ",".join(str(x) for x in r["growth_quarters"])
        print(f"{r['setting']:<18} {r['valid_rate']:>6.1%} {r['valid_rate_all_steps']:>9.1%} {r['programs_per_s']:>7.1f} "
              f"{r['feature_growth']:>7} {q:>14} {r['pool_gain']:>6} {r['pass_mutations']:>8} {r['passes_adopted']:>7} "
              f"{r['failures']:>6}")
    for r in rows:
        if r["crashes"]:
            print(f"{r['setting']}: TVM crashed: {', '.join(r['crashes'])}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1, sort_keys=True)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
