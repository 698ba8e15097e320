"""Finding power: distinct causes a weekly-style campaign finds, with and without the
generator's aim at the optimizers (motifs, coverage guidance, extreme values, several
findings per case), on the same models count per backend.

    python bench/finding_power.py --backend tvm [--models 2000] [--python PY] [--out DIR]
    python bench/finding_power.py --backend onnxruntime --python /path/venv-ort131/bin/python

Each setting is one ``dlgate run`` of ``configs/weekly.yaml``'s generation settings (5-30
operators, its search steps and confirmation runs) against the one backend, no baseline:

* **plain**: no motifs (every spec but them), ``guidance: false``, ``extreme_share: 0``,
  ``findings_per_case: 1``;
* **aimed**: every spec, the defaults (guidance, extreme values, several findings a case).

``--same-budget``: the settings run in the order given and every later one gets the first
one's wall time as its ``budget`` (seconds), with ten times the models so the budget, not the
count, stops it: distinct causes at the same CPU time (run ``aimed,plain``).

``--budget S``: every setting gets the same ``budget`` of S seconds, and ``--models`` still
caps it. Run the settings as two concurrent invocations on an otherwise equal machine to
give both arms the same CPU time when one arm alone would take hours (TVM).

``--python`` runs the gate in another environment (an older onnxruntime release installed
beside dlgate). Prints, per setting: cases, wall and backend seconds, verdict counts and
each distinct cause (cluster) with its verdict, operators and first case, to hand-check;
the run folders stay in ``--out`` (reports, repro bundles) for that.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)


def plain_ops() -> list:
    from dlgate.ops.motif import Motif
    from dlgate.ops.registry import all_specs

    return [n for n, s in all_specs().items() if not isinstance(s, Motif)]


def config(setting: str, backend: str, models: int, seed: str, budget: float | None = None,
           scale: int = 10) -> dict:
    weekly = yaml.safe_load(open(os.path.join(REPO, "configs", "weekly.yaml")))
    doc = {k: weekly[k] for k in ("min_nodes", "max_nodes", "timeout_s", "memory_mb", "search_steps", "confirm_runs")}
    doc.update(campaign=f"power-{seed}", models=models, backends=[backend], reference="torch")
    if budget is not None:
        doc.update(budget=round(budget, 1), models=models * scale)
    if setting == "plain":
        doc.update(operators=plain_ops(), guidance=False, extreme_share=0.0, findings_per_case=1)
    return doc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", required=True)
    ap.add_argument("--models", type=int, default=2000)
    ap.add_argument("--settings", default="plain,aimed")
    ap.add_argument("--seed", default="power")
    ap.add_argument("--python", default=sys.executable, help="interpreter of the environment to run the gate in")
    ap.add_argument("--out", default="power-out")
    ap.add_argument("--same-budget", action="store_true",
                    help="later settings run for the first one's wall time (budget), with 10x the models")
    ap.add_argument("--budget", type=float, default=None,
                    help="every setting's budget in seconds (--models still caps it)")
    args = ap.parse_args()
    if args.budget is not None and (args.same_budget or args.budget <= 0):
        ap.error("--budget takes a positive number of seconds and excludes --same-budget")
    os.makedirs(args.out, exist_ok=True)
    first_wall = None
    for setting in args.settings.split(","):
        d = os.path.join(args.out, f"{args.backend.replace(':', '_').replace('@', '_')}-{setting}")
        cfg = os.path.join(args.out, f"{os.path.basename(d)}.yaml")
        with open(cfg, "w") as f:
            if args.budget is not None:
                doc = config(setting, args.backend, args.models, args.seed, args.budget, scale=1)
            else:
                doc = config(setting, args.backend, args.models, args.seed, first_wall if args.same_budget else None)
            yaml.safe_dump(doc, f)
        t0 = time.perf_counter()
        rc = subprocess.run([args.python, "-m", "dlgate", "run", "--config", cfg, "--seed", args.seed, "--out", d,
                             "--no-progress"], cwd=REPO, check=False).returncode
        if not os.path.exists(os.path.join(d, "verdict.json")):  # a usage error, an interruption: said above
            print(f"\n== {args.backend} {setting}: no verdict (dlgate run exited {rc}); rerun to resume", flush=True)
            continue
        wall = time.perf_counter() - t0
        first_wall = wall if first_wall is None else first_wall
        v = json.load(open(os.path.join(d, "verdict.json")))
        st = json.load(open(os.path.join(d, "stats.json")))
        cut = " (stopped by its budget)" if v.get("stopped_by_budget") else ""
        print(f"\n== {args.backend} {setting}: {v['cases']} cases{cut}, {wall:.0f} s wall (this invocation), "
              f"{st.get('backend_s')} s in the backend; {v['clusters']} distinct causes")
        print(f"   verdicts: {json.dumps(v['counts'], sort_keys=True)}")
        for c in v["cluster_list"]:
            print(f"   [{c['cause']}] {c['verdict']:16} {c['cases']:3} case(s)  {c['text'][:140]}")


if __name__ == "__main__":
    main()
