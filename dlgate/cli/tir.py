"""``dlgate tir-step``: one step of a run's TIR mode (``tir_share``) regenerated from the run's
folder, as ``dlgate gen`` regenerates graph cases: its program (TVMScript) and pass sequence."""
from __future__ import annotations

import json
import os

from dlgate.cli.parser import UsageError


def add_parser(sub) -> None:
    g = sub.add_parser("tir-step", help="regenerate one TIR step of a run (its TVMScript program and passes)")
    g.add_argument("run_dir", metavar="RUN_DIR", help="the run's output folder (run.json, results.jsonl)")
    g.add_argument("index", metavar="STEP", type=int, help="the TIR step's index (`tir/NNNNN-...` cases)")
    g.add_argument("--json", action="store_true", help="print the step as JSON (program text, passes, parent, "
                                                       "mutation) instead of TVMScript and a passes line")


def command(args) -> int:
    from dlgate.gate.journal import RunError  # local: the gate's side imports torch
    from dlgate.gate.run.tir import show

    if not os.path.isfile(os.path.join(args.run_dir, "run.json")):
        raise UsageError(f"dlgate tir-step: {args.run_dir}: not a run's folder (no run.json)")
    if args.index < 0:
        raise UsageError("dlgate tir-step: STEP must be non-negative")
    try:
        step = show(args.run_dir, args.index)
    except (ValueError, RunError) as e:
        raise UsageError(f"dlgate tir-step: {e}") from None
    if args.json:
        print(json.dumps(step, indent=1, sort_keys=True))
    elif step["text"] is None:
        print(f"# {step['case']}: the mutation gave no valid program ({step['outcome']})")
    else:
        print(f"# {step['case']}: {step['step']} mutation ({step['mutator']}) of pool entry {step['parent']}")
        print(f"# passes: {', '.join(step['passes'])}")
        print(step["text"], end="" if step["text"].endswith("\n") else "\n")
    return 0
