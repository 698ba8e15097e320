"""How often the gate goes red on an unchanged compiler, in both novelty modes.

    python bench/novelty.py [--backend tvm] [--commits 10] [--models 60] [--weekly 300]

Every run uses the same compiler build as head (and, head versus base, as base), so
every failure it meets is pre-existing and a red check is a false red.

* **head versus base**: ``--commits`` PR-sized runs (``configs/pr.yaml`` settings, one
  backend, ``--models`` each), seeded by different commit texts, each with
  ``--base-python`` set to this same interpreter. Prints red runs (target 0) and how
  many failures were pre-existing.
* **baseline mode**: one weekly-sized run (``--weekly`` models) accepted with
  ``dlgate baseline update``, then the same PR-sized runs against that baseline. Prints
  the failures reported as new per run, and of those, how many share a cluster (one
  cause) with a baseline entry (target 0: those are what fingerprints and clusters are
  for) and how many are causes the baseline never saw (a fresh batch can always meet
  one; only the base build can rule them out).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PR = os.path.join(REPO, "configs", "pr.yaml")


def dlgate(*args, cwd: str) -> int:
    res = subprocess.run([sys.executable, "-m", "dlgate", *args, "--no-progress"] if args[0] == "run" else
                         [sys.executable, "-m", "dlgate", *args], cwd=cwd, capture_output=True, text=True)
    if res.returncode not in (0, 1):
        sys.stderr.write(res.stderr[-3000:])
        raise SystemExit(f"dlgate {' '.join(args)}: exit status {res.returncode}")
    return res.returncode


def verdict(out: str) -> dict:
    with open(os.path.join(out, "verdict.json")) as f:
        return json.load(f)


def pr_runs(scratch: str, args, extra: list, tag: str) -> list:
    rows = []
    for k in range(args.commits):
        out = os.path.join(scratch, f"{tag}-{k}")
        t0 = time.perf_counter()
        code = dlgate("run", "--config", PR, "--seed", f"novelty-commit-{k}", "--out", out, "--backend", args.backend,
                      "--models", str(args.models), "--corpus", os.path.join(scratch, f"corpus-{tag}-{k}"), *extra,
                      cwd=scratch)
        rows.append((code, verdict(out), time.perf_counter() - t0))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="tvm")
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--models", type=int, default=60)
    ap.add_argument("--weekly", type=int, default=300, help="models in the baseline run")
    ap.add_argument("--mode", choices=("both", "base", "baseline"), default="both")
    ap.add_argument("--keep", help="work in this folder and keep it (baseline, runs) for hand-checking")
    args = ap.parse_args()
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = os.path.abspath(args.keep) if args.keep else tmp
        if args.mode in ("both", "base"):
            rows = pr_runs(scratch, args, ["--base-python", sys.executable, "--baseline", "none.json"], "hvb")
            red = sum(code != 0 for code, _, _ in rows)
            pre = sum(len(v["pre_existing"]) for _, v, _ in rows)
            print(f"head versus base ({args.backend} as head and base): {red} of {len(rows)} runs red (target 0); "
                  f"{pre} pre-existing fingerprints; {sum(t for *_, t in rows) / len(rows):.0f} s per run")
            for k, (code, v, _) in enumerate(rows):
                print(f"  commit {k}: exit {code}, {v['cases']} cases, new {len(v['new'])}, "
                      f"pre-existing {len(v['pre_existing'])}, clusters {v['clusters']}")
        if args.mode in ("both", "baseline"):
            base_file = os.path.join(scratch, "baseline.json")
            week = os.path.join(scratch, "weekly")
            dlgate("run", "--config", PR, "--seed", "novelty-weekly", "--out", week, "--backend", args.backend,
                   "--models", str(args.weekly), "--baseline", base_file, "--corpus", os.path.join(scratch, "corpus-w"),
                   cwd=scratch)
            dlgate("baseline", "update", week, "--baseline", base_file, cwd=scratch)
            with open(base_file) as f:
                doc = json.load(f)
            clusters = set(doc["clusters"])
            print(f"baseline: {args.weekly} models, {len(doc['fingerprints'])} fingerprints in {len(clusters)} clusters")
            rows = pr_runs(scratch, args, ["--baseline", base_file], "bl")
            red = sum(code != 0 for code, _, _ in rows)
            known_cause = unseen = 0
            for k, (code, v, _) in enumerate(rows):
                a = sum(g["cluster"] in clusters for g in v["new"])
                known_cause += a
                unseen += len(v["new"]) - a
                print(f"  commit {k}: exit {code}, new {len(v['new'])} ({a} of a baseline cause), "
                      f"known {len(v['known'])}, fixed {len(v['fixed'])}")
                for g in v["new"]:
                    print(f"    new: {g['verdict']} in {g.get('typed') or g['pattern']}: {g['detail'][:120]}")
            print(f"baseline mode: {red} of {len(rows)} runs red; failures reported new whose cause is in the "
                  f"baseline: {known_cause} (target 0); causes the baseline never saw: {unseen}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
