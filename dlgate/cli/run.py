"""``dlgate run``: the gate, a campaign over a seeded batch (:mod:`dlgate.gate.run`)."""
from __future__ import annotations

import os
import time

from dlgate.cli.args import change_args, log, out_dir, positive, read_change, seconds, share
from dlgate.cli.parser import UsageError, exit_status_lines
from dlgate.gate import config as C
from dlgate.gate.baseline import BaselineError
from dlgate.gate.baseline import load as load_baseline
from dlgate.gate.journal import RunError
from dlgate.gate.progress import live_section
from dlgate.github.checks import DEFAULT_EVERY_S, MODES, run_summary, start


def add_parser(sub) -> None:
    r = sub.add_parser("run", help="run a campaign: the gate; a rerun of an interrupted run resumes it "
                       "(exit statuses below)",
                       epilog="exit statuses:\n" + exit_status_lines())
    r.add_argument("--config", help="campaign YAML, e.g. configs/pr.yaml (default: the embedded default campaign, "
                   "20 models, TVM on CPU against the PyTorch reference)")
    r.add_argument("--commit", help="commit SHA seeding the batch (default: GITHUB_SHA, else git rev-parse HEAD)")
    r.add_argument("--seed", help="explicit seed text instead of a commit")
    r.add_argument("--shard", metavar="I/N", help="run only shard I of N (merge the outputs with `dlgate merge`)")
    r.add_argument("--cases", metavar="A-B", help="run only the batch's cases A to B (inclusive; no corpus or "
                   "baseline repros): a case's model depends on the seed, the campaign and its index alone, so a "
                   "long campaign can be run a slice at a time (on several machines or days) and merged with "
                   "`dlgate merge`; combines with --shard")
    r.add_argument("--out", default="dlgate-out", help="output folder (default dlgate-out); a rerun resumes it")
    r.add_argument("--fresh", action="store_true",
                   help="discard what dlgate wrote in --out (journal, reports, cases/, repros/) instead of resuming")
    r.add_argument("--no-progress", action="store_true", help="plain progress lines even on a terminal")
    r.add_argument("--check-run", choices=MODES, default="auto",
                   help="in GitHub Actions, show the progress live as a check run on the commit (needs GITHUB_TOKEN "
                        "with `checks: write`; a failure turns it off in one line): auto (default: when a token is "
                        "there), on (and say why not), off")
    r.add_argument("--check-run-every", type=seconds, metavar="SECONDS", default=DEFAULT_EVERY_S,
                   help=f"seconds between two updates of the check run (default {DEFAULT_EVERY_S:g})")
    for key, kind, hlp in (("models", positive, "number of models"), ("max-nodes", positive, "most operators per model"),
                           ("min-nodes", positive, "fewest operators per model"),
                           ("timeout", seconds, "seconds per compile+run"), ("memory-mb", positive, "worker memory cap"),
                           ("baseline", str, "baseline file"), ("corpus", str, "regression corpus folder"),
                           ("reference", str, "reference backend"), ("campaign", str, "campaign name"),
                           ("fail-on", str, "new | any | none"), ("confirm-runs", int, "re-runs of a failing case"),
                           ("findings-per-case", int, "most findings one case yields per backend (1: the first)"),
                           ("coverage-state", str, "coverage state file to start from (an earlier run's "
                            "coverage-state.json)")):
        r.add_argument(f"--{key}", type=kind, help=f"override the config: {hlp}")
    r.add_argument("--backend", action="append", metavar="NAME[:DEVICE][@LEVEL]", help="override the config's backends (repeatable)")
    r.add_argument("--base-python", help="head-versus-base: interpreter of the environment with the base build")
    r.add_argument("--budget", type=seconds, metavar="SECONDS",
                   help="override the config: seconds this invocation may spend running cases; the case in flight "
                        "finishes, the rest is left for a rerun, which resumes (the verdict covers the cases that ran)")
    change_args(r, "aim most of the batch at what the change touches (docs/change-aware.md)")
    r.add_argument("--targets", metavar="FILE", help="the change's targets as `dlgate targets --json` wrote them "
                   "(instead of --changed-from or --diff: one mapping shared by every shard)")
    r.add_argument("--target-share", type=share, help="override the config: share of the batch aimed at the "
                   "change's targets (default 0.8)")


_OVERRIDES = {"models": "models", "max_nodes": "max_nodes", "min_nodes": "min_nodes", "timeout": "timeout_s",
              "memory_mb": "memory_mb", "baseline": "baseline", "corpus": "corpus", "reference": "reference",
              "campaign": "campaign", "fail_on": "fail_on", "confirm_runs": "confirm_runs", "backend": "backends",
              "findings_per_case": "findings_per_case",
              "coverage_state": "coverage_state", "budget": "budget", "target_share": "target_share"}


def command(args) -> int:
    from dlgate.check import CaseError  # local: imports torch; off the CLI start-up
    from dlgate.gate.run.lifecycle import hold_stop_signals
    from dlgate.gate.run.loop import run
    from dlgate.gate.run.plan import CaseRange, Shard

    for flag, value in (("--seed", args.seed), ("--commit", args.commit)):
        if value is not None and not value.strip():
            raise UsageError(f"dlgate run: {flag}: must not be empty")
    over = {key: getattr(args, attr) for attr, key in _OVERRIDES.items()}
    # an error in a setting the command line gave names the flag as typed, not the file's key
    flags = {key: "--" + attr.replace("_", "-") for attr, key in _OVERRIDES.items() if getattr(args, attr) is not None}
    if args.backend:
        flags["backends"] = [f"--backend {b}" for b in args.backend]
    if args.reference is not None:
        flags["reference"] = f"--reference {args.reference}"
    if args.base_python:
        over["base"] = {"python": args.base_python}
        flags["base"] = "--base-python"
    try:
        cfg = C.load(args.config, over, flags) if args.config else C.embedded_default(over, flags)
        root, source = C.resolve_root(args.seed, args.commit)
        shard = Shard.parse(args.shard) if args.shard else None
        cases = CaseRange.parse(args.cases) if args.cases is not None else None
        if cases is not None:
            cases.check(cfg)
        out_dir(args.out, "dlgate run: --out")
        load_baseline(cfg.baseline)  # checked before the output folder is touched (run() reads it again)
        change = read_change(args, cfg.backends, "dlgate run")
    except (C.ConfigError, RunError, BaselineError, CaseError) as e:  # a bad file: one line, exit status 2
        raise UsageError(f"dlgate run: {e}") from None
    live = live_check(args, cfg.campaign)
    status = 3  # what the check run says if the run raises: dlgate's own error (main's exit status 3)
    t0 = time.time() - 1  # file times may be coarser than time.time()
    try:
        status = run(cfg, root, source, args.out, shard, fresh=args.fresh,
                     progress=False if args.no_progress else None, log=log, change=change, cases=cases)
    except (C.ConfigError, RunError, BaselineError, CaseError) as e:  # a bad file: one line, exit status 2
        status = 2
        raise UsageError(f"dlgate run: {e}") from None
    finally:
        if live is not None:
            live.complete(status, run_summary(args.out, t0))
    if status in (130, 143):  # interrupted: no later signal changes the status
        hold_stop_signals()
    return status


def live_check(args, campaign: str):
    """The run's live check run (:mod:`dlgate.github.checks`), following the job summary's
    live section; None when off or not possible."""
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    name = f"dlgate: {campaign}" + (f" {args.shard}" if args.shard else "")
    return start(args.check_run, name, lambda: live_section(step), args.check_run_every, log=log)
