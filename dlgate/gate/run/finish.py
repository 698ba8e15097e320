"""The end of a run (or a merge): the decision from the journal, the reports, and what a
complete run changes beyond its folder (the corpus, the issues); the exit status."""
from __future__ import annotations

import os

from dlgate import GENERATOR_VERSION, __version__
from dlgate.change.coverage import rewrites_of, table
from dlgate.gate import baseline as B
from dlgate.gate import budget as BG
from dlgate.gate import decide as D
from dlgate.gate import report
from dlgate.gate.config import Campaign
from dlgate.gate.journal import read_json, read_records, read_timings, write_json
from dlgate.gate.run.guidance import write_coverage
from dlgate.gate.run.lifecycle import Interrupted
from dlgate.gate.run.plan import labels, optional_labels
from dlgate.gate.run.publish import publish_issues
from dlgate.gate.run.updates import grow_corpus


def finish(out: str, cfg: Campaign, manifest: dict, complete: bool, log=print, cannot_run: dict | None = None,
           interrupted: Interrupted | None = None) -> int:
    """Decide from the journal, write the reports, grow the corpus; the exit status.
    ``interrupted``: the signal that stopped the run; the reports cover the cases journaled
    so far, marked as interrupted (the status is the signal's, the verdict never a pass),
    and neither the corpus nor the issues change."""
    records = read_records(os.path.join(out, "results.jsonl"))
    base = B.load(cfg.baseline)
    decision = D.decide(records, base, manifest["root"], cfg.campaign, labels(cfg.backends), complete,
                        mode="base" if cfg.base else "baseline", optional=optional_labels(cfg.backends),
                        cannot_run=cannot_run)
    attach_repros(out, decision)
    timings, logs = {}, {}
    timing_lines = read_timings(out)
    for t in timing_lines:
        for label, x in t.get("backends", {}).items():
            timings[(t["case"], label)] = sum(x.get(k, 0.0) for k in ("compile_s", "run_s"))
        for label, text in (t.get("logs") or {}).items():
            logs[(t["case"], label)] = text if isinstance(text, str) else str(text)
    props = {"dlgate": __version__, "generator": GENERATOR_VERSION, "root": manifest["root"],
             "root_source": manifest["root_source"], "campaign": cfg.campaign, "reference": cfg.reference}
    shard = manifest.get("shard")
    shard_text = f"{shard[0]}/{shard[1]}" if shard else None
    decision.unloadable = dict(manifest.get("skipped") or {})
    decision.planned, decision.budget = manifest.get("planned"), cfg.budget
    decision.stopped_by_budget = bool(manifest.get("stopped_by_budget"))
    decision.baseline_missing = bool(cfg.baseline) and not os.path.exists(cfg.baseline)
    if manifest.get("change"):
        decision.change = table(manifest["change"], records, rewrites_of(timing_lines))
    if interrupted is not None:
        decision.interrupted = {"signal": str(interrupted), "exit_code": interrupted.status,
                                "cases": decision.cases, "planned": decision.planned}
    covered = write_coverage(out, records)
    stats_path = os.path.join(out, "stats.json")
    if os.path.exists(stats_path):
        write_json(stats_path, dict(read_json(stats_path), coverage=covered))
    paths = report.write_all(out, records, decision, base, timings, props, cfg.fail_on, shard_text, logs)
    if complete and cfg.corpus:
        for name in grow_corpus(out, cfg.corpus, decision):
            log(f"dlgate: added corpus case {name} to {cfg.corpus}")
    if complete and cfg.issues:
        publish_issues(out, cfg.issues, log)
    code = decision.exit_code(cfg.fail_on)
    if not complete and code == D.EXIT_FAIL:
        log("dlgate: this shard has failures; the check is decided when the shards are merged (dlgate merge)")
        code = D.EXIT_OK  # shards report; only the merge decides the check
    for cls in (D.NEW, D.REGRESSION):
        for g in decision.of(cls):
            log(f"dlgate: {cls} failure [{g['cluster']}] {g['backend']} {g['verdict']} in "
                f"{g.get('reduced_to') or g.get('typed') or g['pattern'] or '?'}, {len(g['cases'])} case(s), e.g. {g['cases'][0]}: "
                f"{g['detail'][:200]}")
    for b, why in sorted(decision.unavailable.items()):
        log(f"dlgate: {b} cannot run here, skipped (optional): {why}")
    if decision.cannot_run:
        log(f"dlgate: the gate fails: {', '.join(sorted(decision.cannot_run))} could not run "
            f"(exit status {D.EXIT_CANNOT_RUN}); fix the installation and run the same command again to resume")
    if decision.baseline_missing:
        log(f"dlgate: warning: {report.missing_baseline_text(decision)}")
    counts = {c: len(decision.of(c)) for c in D.CLASSES}
    if decision.stopped_by_budget:
        log(f"dlgate: {BG.stop_line(decision.cases, decision.planned, decision.budget)}; "
            "the verdict is decided on the cases that ran")
    log(f"dlgate: {decision.cases} cases; {counts[D.NEW]} new, {counts[D.REGRESSION]} regressions, "
        f"{counts[D.PRE_EXISTING]} pre-existing, {counts[D.KNOWN]} known, {counts[D.FLAKY]} flaky, "
        f"{len(decision.fixed)} fixed; {len(decision.clusters)} distinct cause(s); reports: {paths['junit']}, {paths['summary']}, {paths['verdict']}")
    if decision.internal:
        log(f"dlgate: internal error: the reference failed on {len(decision.internal)} case(s) "
            f"(a dlgate defect, not a compiler failure), e.g. {decision.internal[0]['case']}")
    return code


def attach_repros(out: str, decision: D.Decision) -> None:
    """Link each failure group to its reduced repro, when there is one."""
    for g in decision.failure_groups():
        p = os.path.join(out, "repros", g["fingerprint"], "repro.json")
        if os.path.exists(p):
            g["repro"] = os.path.join("repros", g["fingerprint"])
