"""A digest of what the gate decides on a fixed batch, to compare two checkouts of dlgate
(before and after a restructuring that must not change behaviour).

    python bench/behaviour_digest.py [--models 500] [--backends tvm,onnxruntime]
                                     [--seed behaviour-digest] [--dump DIR] [--python PY] [--twice]

For each backend it runs ``dlgate run`` (the real pipeline, in a fresh process and a
scratch folder) on one fixed campaign, written here so the digest does not follow edits to
``configs/``, then prints the SHA-256 of that run's ``results.jsonl`` in a canonical form:
records sorted by case, keys sorted, and with what legitimately differs between two runs
of the same code left out (``VOLATILE``; found by running it twice and diffing). The same
code on the same machine gives the same digests; a behaviour-preserving change must too.
When two digests differ, ``--dump DIR`` on both sides writes the canonical records to diff.
``--twice`` runs each backend twice and names the keys that differed between the runs:
the way ``VOLATILE`` was found, and the check that the digest is stable on a machine.

What keeps the runs comparable: the batch is fixed (seed, models, settings); reductions,
the head-versus-base build and the baseline and corpus are left out (a reduction's result
depends on its wall-clock budget, and a baseline on history); the per-case timeout is far
above a case's time, so a slow, shared machine does not turn a verdict into a timeout.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The campaign, apart from its backend. The per-case timeout is generous on purpose (see
#: the module docstring); everything else is a pull request's campaign (configs/pr.yaml).
CAMPAIGN = {
    "campaign": "behaviour", "min_nodes": 1, "max_nodes": 10, "reference": "torch", "timeout_s": 600,
    "memory_mb": 4096, "confirm_runs": 1, "findings_per_case": 4, "restrict_to_support": False,
    "reduce": False, "fail_on": "new",
}

#: Keys (dotted paths; "*" for every key of a mapping, "[]" for every item of a list) of a
#: results.jsonl record that differ between two runs of the same code on the same machine.
#: dlgate already moves timings and worker logs to timings.jsonl (gate/run.py
#: ``_split_timing``), and records no path, host or clock there: ``--twice`` at 60 models
#: found no other key that differed (TVM 0.27 and onnxruntime 1.32, 2 cores), so none is
#: left out. The one machine-dependent outcome left is an input search stopped by its
#: wall-clock cap (``search.hit_time_cap``), which the script reports when it happens.
VOLATILE: tuple = ()


def _drop(rec, path: list):
    """Remove the value at ``path`` from ``rec`` wherever it occurs."""
    if not path:
        return
    head, rest = path[0], path[1:]
    if head == "[]":
        for x in rec if isinstance(rec, list) else []:
            _drop(x, rest)
    elif head == "*":
        for x in (rec.values() if isinstance(rec, dict) else []):
            _drop(x, rest)
    elif isinstance(rec, dict) and head in rec:
        if rest:
            _drop(rec[head], rest)
        else:
            del rec[head]


def canonical(path: str) -> list:
    """The records of a results.jsonl, without the volatile keys, sorted by case, as
    canonical JSON lines."""
    out = []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            for key in VOLATILE:
                _drop(rec, key.split("."))
            out.append(json.dumps(rec, sort_keys=True, separators=(",", ":")))
    return sorted(out, key=lambda s: (json.loads(s).get("case") or "", s))


def differing_keys(a, b, at: str = "") -> set:
    """The dotted paths where two JSON values differ (list items as "[]")."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = set()
        for k in sorted(set(a) | set(b)):
            out |= differing_keys(a.get(k), b.get(k), f"{at}.{k}" if at else k)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return set().union(set(), *(differing_keys(x, y, at + ".[]") for x, y in zip(a, b)))
    return set() if a == b else {at or "(record)"}


def run_one(backend: str, models: int, seed: str, python: str, scratch: str) -> tuple:
    """Run the campaign on one backend; returns (results.jsonl path, exit status, seconds)."""
    os.makedirs(scratch, exist_ok=True)
    cfg = dict(CAMPAIGN, models=models, backends=[backend])
    cfg_path = os.path.join(scratch, f"{backend}.json")  # YAML is a superset of JSON
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=1, sort_keys=True)
    out = os.path.join(scratch, f"out-{backend}")
    cmd = [python, "-m", "dlgate", "run", "--config", cfg_path, "--seed", seed, "--out", out, "--no-progress"]
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if res.returncode not in (0, 1):  # 1: the gate failed on a finding, which is a result like any other
        sys.stderr.write(res.stderr[-4000:])
        raise SystemExit(f"behaviour_digest: dlgate run on {backend} exited with status {res.returncode}")
    path = os.path.join(out, "results.jsonl")
    if not os.path.exists(path):
        sys.stderr.write(res.stderr[-4000:])
        raise SystemExit(f"behaviour_digest: dlgate run on {backend} wrote no results.jsonl")
    return path, res.returncode, took


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=500, help="batch size (default 500)")
    ap.add_argument("--backends", default="tvm,onnxruntime", help="comma-separated (default tvm,onnxruntime)")
    ap.add_argument("--seed", default="behaviour-digest", help="the batch's root seed (default behaviour-digest)")
    ap.add_argument("--dump", metavar="DIR", help="write each backend's canonical records to DIR/BACKEND.jsonl")
    ap.add_argument("--python", default=sys.executable, help="the interpreter that runs dlgate (default this one)")
    ap.add_argument("--twice", action="store_true", help="run each backend twice and name the keys that differed")
    args = ap.parse_args(argv)
    if args.models < 1:
        print("behaviour_digest: --models must be at least 1", file=sys.stderr)
        return 2
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if not backends:
        print("behaviour_digest: --backends names no backend", file=sys.stderr)
        return 2
    head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    print(f"behaviour digest: {args.models} models, seed {args.seed!r}, dlgate at {head.stdout.strip() or '?'}")
    with tempfile.TemporaryDirectory(prefix="behaviour-digest-") as scratch:
        stable = True
        for b in backends:
            runs = []
            for k in range(2 if args.twice else 1):
                path, rc, took = run_one(b, args.models, args.seed, args.python, os.path.join(scratch, str(k)))
                lines = canonical(path)
                digest = hashlib.sha256("".join(x + "\n" for x in lines).encode()).hexdigest()
                print(f"{b:12} {digest}  ({len(lines)} records, exit status {rc}, {took:.0f} s)", flush=True)
                capped = [r["case"] for r in map(json.loads, lines) if (r.get("search") or {}).get("hit_time_cap")]
                if capped:  # the one input-search outcome that depends on the machine's speed
                    print(f"{b:12} warning: the input search hit its wall-clock cap on {len(capped)} case(s) "
                          f"({', '.join(capped[:5])}): their records, and so this digest, depend on the "
                          "machine's load", flush=True)
                runs.append(lines)
            if args.dump:
                os.makedirs(args.dump, exist_ok=True)
                with open(os.path.join(args.dump, f"{b}.jsonl"), "w") as f:
                    f.writelines(x + "\n" for x in runs[0])
            if args.twice:
                a, c = ([json.loads(x) for x in r] for r in runs)
                keys = set().union(*(differing_keys(x, y) for x, y in zip(a, c))) if len(a) == len(c) else \
                    {"(the number of records)"}
                stable = stable and not keys
                print(f"{b:12} " + (f"differed between the two runs at: {', '.join(sorted(keys))}" if keys
                                     else "identical in both runs"), flush=True)
    return 0 if stable else 1


if __name__ == "__main__":
    sys.exit(main())
