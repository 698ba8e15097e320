"""``dlgate run``: the gate, a campaign over a seeded batch (:mod:`dlgate.gate.run`)."""
from __future__ import annotations

from dlgate.cli.args import change_args, log, out_dir, positive, read_change, seconds, share
from dlgate.cli.parser import UsageError, exit_status_lines
from dlgate.gate import config as C
from dlgate.gate.baseline import BaselineError
from dlgate.gate.baseline import load as load_baseline
from dlgate.gate.journal import RunError


def add_parser(sub) -> None:
    r = sub.add_parser("run", help="run a campaign: the gate; a rerun of an interrupted run resumes it "
                       "(exit statuses below)",
                       epilog="exit statuses:\n" + exit_status_lines())
    r.add_argument("--config", help="campaign YAML, e.g. configs/pr.yaml (default: the embedded default campaign, "
                   "20 models, TVM on CPU against the PyTorch reference)")
    r.add_argument("--commit", help="commit SHA seeding the batch (default: GITHUB_SHA, else git rev-parse HEAD)")
    r.add_argument("--seed", help="explicit seed text instead of a commit")
    r.add_argument("--shard", metavar="I/N", help="run only shard I of N (merge the outputs with `dlgate merge`)")
    r.add_argument("--out", default="dlgate-out", help="output folder (default dlgate-out); a rerun resumes it")
    r.add_argument("--fresh", action="store_true",
                   help="discard what dlgate wrote in --out (journal, reports, cases/, repros/) instead of resuming")
    r.add_argument("--no-progress", action="store_true", help="plain progress lines even on a terminal")
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
    from dlgate.gate.run.plan import Shard

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
        out_dir(args.out, "dlgate run: --out")
        load_baseline(cfg.baseline)  # checked before the output folder is touched (run() reads it again)
        change = read_change(args, cfg.backends, "dlgate run")
        status = run(cfg, root, source, args.out, shard, fresh=args.fresh,
                     progress=False if args.no_progress else None, log=log, change=change)
    except (C.ConfigError, RunError, BaselineError, CaseError) as e:  # a bad file: one line, exit status 2
        raise UsageError(f"dlgate run: {e}") from None
    if status in (130, 143):  # interrupted: no later signal changes the status
        hold_stop_signals()
    return status
