"""End-to-end timing of a gate campaign (default: ``configs/pr.yaml``, the per-PR check).

    python bench/gate.py [--config configs/pr.yaml] [--models N]

Runs ``dlgate run`` as CI would (a fresh output folder, the baseline and corpus paths of
the config resolved in a scratch directory), and prints the wall time and how it splits:
time inside the backends (the compilers' and the reference's own compile and run times,
as the workers measure them), starting the workers (interpreters and compiler imports),
and dlgate's own share (generation, input search, the oracle, IPC, journaling, reports).
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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default=os.path.join(REPO, "configs", "pr.yaml"))
    ap.add_argument("--models", type=int, help="override the config's batch size")
    ap.add_argument("--seed", default="bench-gate")
    args = ap.parse_args()
    cfg = os.path.abspath(args.config)
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "out")
        cmd = [sys.executable, "-m", "dlgate", "run", "--config", cfg, "--seed", args.seed, "--out", out,
               "--no-progress"]
        if args.models:
            cmd += ["--models", str(args.models)]
        t0 = time.perf_counter()
        res = subprocess.run(cmd, cwd=scratch, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if res.returncode not in (0, 1):
            print(res.stderr[-4000:], file=sys.stderr)
            return res.returncode
        with open(os.path.join(out, "stats.json")) as f:
            stats = json.load(f)
        with open(os.path.join(out, "verdict.json")) as f:
            verdict = json.load(f)
    backend, start = stats["backend_s"], stats["worker_start_s"]
    ours = stats["wall_s"] - backend - start
    print(f"config: {os.path.relpath(cfg, REPO)}; {verdict['cases']} cases; backends {', '.join(verdict['backends'])}; "
          f"exit status {res.returncode}")
    print(f"wall time, process start to exit: {wall:.1f} s ({wall / 60:.2f} min; target: under 10 min on 2 cores)")
    print(f"  campaign loop:                  {stats['wall_s']:.1f} s")
    print(f"  inside the backends:            {backend:.1f} s ({100 * backend / stats['wall_s']:.1f}%)")
    print(f"  starting workers (imports):     {start:.1f} s ({100 * start / stats['wall_s']:.1f}%)")
    print(f"  dlgate's own share:             {ours:.1f} s ({100 * ours / stats['wall_s']:.1f}%; target at most 15%)")
    print(f"  dlgate incl. worker starts:     {100 * (ours + start) / stats['wall_s']:.1f}%")
    for b, c in verdict["counts"].items():
        print(f"  {b:24} {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
