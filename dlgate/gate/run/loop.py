"""``dlgate run``: a campaign over a seeded batch, journaled case by case, then decided.

Order of work: the regression corpus (saved cases with stable names), then the fresh
batch, seeded by (root, campaign, index). Each case is generated, given numeric-valid
inputs, run on the reference and every backend in isolated workers, and judged; a failure
is triaged (:class:`dlgate.gate.triage.Triage`): in head-versus-base mode run on the base
build first, then, unless the base build shares it in a pull request's run, re-run to
confirm it (flaky otherwise) and reduced, or identified by a reduction of its cause made
earlier in the run. The record goes to the journal before the next case starts. The decision and the reports are a function of the journal, so a resumed run, a
merged set of shards and an uninterrupted run decide alike.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace

from dlgate.backends import relax_pair as RP
from dlgate.case import GuidedBatch, make_case
from dlgate.change.coverage import aims_of, case_row
from dlgate.check import check, load_bundle, prepare, save_bundle
from dlgate.coverage.features import graph_features
from dlgate.exec.worker import Pool, close_all
from dlgate.gate import baseline as B
from dlgate.gate import budget as BG
from dlgate.gate import multibug as M
from dlgate.gate import restrict
from dlgate.gate import triage as T
from dlgate.gate.config import Campaign
from dlgate.gate.journal import MANIFEST, Journal, OutLock, RunError, read_json, write_json
from dlgate.gate.progress import ACTIVITY, Progress, heartbeat_seconds, worker_phases
from dlgate.gate.run.finish import finish
from dlgate.gate.run.guidance import coverage_start, read_coverage_state, rewrite_coverage
from dlgate.gate.run.lifecycle import DeviceLost, Interrupted, lost, preflight, stopped_by_signals
from dlgate.gate.run.outdir import manifest_of, open_out, progress_of
from dlgate.gate.run.plan import (CaseRange, Shard, case_key, check_config, generator, labels, only, opset_range,
                                  optional_labels, plan)
from dlgate.gate.run.tir import TirMode, preflight_coverage
from dlgate.gate.run.tir import aimed as tir_aimed
from dlgate.gate.run.updates import ORIGIN
from dlgate.invalid import case as IC
from dlgate.invalid import oracle as IO
from dlgate.invalid import relax_case as RC
from dlgate.oracle import verdict as V
from dlgate.rewrite import oracle as EQ
from dlgate.rewrite.reduce import reduce_findings


#: What varies from run to run or machine to machine: timings, and the rewrites a compiler
#: applied (onnxruntime's layout and fusion choices follow the CPU's features).
_TIMING_KEYS = ("compile_s", "run_s", "wall_s", "rewrites")


@dataclass
class _Opened:
    """What an interrupted run needs to write its reports: this run's manifest, once the
    output folder is checked as this run's (None before), and what could not start."""

    manifest: dict | None = None
    cannot_run: dict | None = None


def run(cfg: Campaign, root: str, root_source: str, out: str, shard: Shard | None = None, fresh: bool = False,
        progress: bool | None = None, log=print, change=None, cases: CaseRange | None = None) -> int:
    """The campaign, holding ``out``'s lock from start to end (a second run there is refused,
    exit status 2). SIGTERM or SIGINT kills the workers, keeps the journal (the case in
    flight is not recorded), writes the reports of the cases journaled so far marked as
    interrupted (never a pass) and ends the run with 143 or 130 and a line saying how to
    resume; a rerun of the same command resumes. ``change``: the pull request's
    ``TargetSet`` (``dlgate.change``), aiming ``cfg.target_share`` of the batch at it.
    ``cases``: run that slice of the batch alone (``plan.CaseRange``)."""
    opened = _Opened()
    with OutLock(out), stopped_by_signals():
        try:
            return _run(cfg, root, root_source, out, shard, fresh, progress, log, opened, change, cases)
        except Interrupted as e:
            close_all()  # workers started outside a pool's `with` (preflight) too, and their logs
            _report_interrupted(cfg, out, opened, e, log)
            log(f"dlgate: interrupted by {e} after {progress_of(out)} cases; run the same command again to resume")
            return e.status


def _report_interrupted(cfg: Campaign, out: str, opened: _Opened, stop: Interrupted, log) -> None:
    """The reports (junit.xml, summary.md, verdict.json) of the cases journaled before
    ``stop``, marked as interrupted; none when the signal came before the output folder was
    checked as this run's (its reports, if any, are another run's or none). A report that
    cannot be written is said in the log: the status stays the interruption's."""
    if opened.manifest is None:
        return
    try:
        finish(out, cfg, opened.manifest, complete=False, log=log, cannot_run=opened.cannot_run,
               interrupted=stop)
    except (RunError, OSError) as e:
        log(f"dlgate: the reports of the interrupted run could not be written: {e}")


def _run(cfg: Campaign, root: str, root_source: str, out: str, shard: Shard | None, fresh: bool,
         progress: bool | None, log, opened: _Opened, change=None, cases: CaseRange | None = None) -> int:
    try:
        every_s = heartbeat_seconds()  # a bad DLGATE_HEARTBEAT_S is said before any work
    except ValueError as e:
        raise RunError(str(e)) from None
    if change is not None:  # a change to TIR passes or code generation raises the TIR mode's share
        cfg = tir_aimed(cfg, change.to_json())
    base = B.load(cfg.baseline)
    given_state = read_coverage_state(cfg)
    skipped: dict = {}  # corpus cases (or baseline repros) that cannot be loaded: reported, not run
    items = plan(cfg, shard, base, skipped, cases)
    manifest = manifest_of(cfg, root, root_source, shard, len(items), cases)
    aims = ()
    if change is not None:
        manifest["change"] = dict(change.to_json(), target_share=cfg.target_share)
        aims, gaps = aims_of(manifest["change"])
        manifest["change"]["gaps"] = gaps
        log(f"dlgate: the change ({change.source}) touches {_touches(manifest['change'])}")
    if skipped:
        manifest["skipped"] = skipped  # the run's record (run.json) keeps what was left out, and why
        for case, why in skipped.items():
            log(f"dlgate: skipped {case}: it cannot be loaded: {why}")
    recorded = open_out(out, manifest, fresh)
    opened.manifest = manifest  # from here on, an interrupted run reports on its journal
    ccfg = check_config(cfg)
    optional = optional_labels(cfg.backends)
    pairs = RP.pairs_of([s for s in ccfg.backends if s.label() not in optional])  # the Relax pair's specs
    support = restrict.resolve(cfg, recorded, manifest, log)  # probe errors come before any work
    if support is not None:
        write_json(os.path.join(out, MANIFEST), manifest)
    journal = Journal(out)
    todo = [it for it in items if case_key(it, cfg, root) not in journal.done]
    if journal.done:
        log(f"dlgate: resuming {out}: {len(items) - len(todo)} of {len(items)} cases already done")
    where = (f" shard {shard}" if shard else "") + (f" cases {cases}" if cases else "")
    log(f"dlgate: campaign {cfg.campaign!r}{where}: {len(items)} cases (seed {root_source} {root[:12]}), "
        f"backends {', '.join(labels(cfg.backends))} vs {cfg.reference}")
    bar = Progress(len(todo), cfg.campaign, progress, every_s=every_s, budget_s=cfg.budget)
    pool = base_pool = None
    try:  # the heartbeat and the workers run from here: a set-up step that raises must stop them too
        if todo:
            ACTIVITY.begin(f"starting the workers ({', '.join([cfg.reference] + labels(cfg.backends))})")
        t_run = time.perf_counter()
        ref = ccfg.reference.label()  # each job's phase goes to the heartbeat ("compiling on tvm[cpu]")
        base_pool = Pool(cfg.timeout_s, cfg.memory_mb, python=cfg.base["python"], env=cfg.base["env"],
                         on_phase=worker_phases(ref, base=True)) if cfg.base else None
        pool = Pool(cfg.timeout_s, cfg.memory_mb, on_phase=worker_phases(ref))
        cannot = opened.cannot_run = preflight(pool, base_pool, ccfg, cfg) if todo else {}
        if not cannot and any(k == "tir" for k, _ in todo):
            cannot = opened.cannot_run = preflight_coverage(pool, cfg)
        for what, why in cannot.items():
            log(f"dlgate: cannot run {what}: {why}")
        if cannot:
            todo = []  # nothing is judged without the backends it needs; a rerun resumes
        # The opset range guides generation: recorded in the manifest, kept by a resumed run.
        if todo and not recorded.get("opset_range"):
            ACTIVITY.begin("probing the opsets the backends load")
        opsets = recorded.get("opset_range") or (opset_range(cfg, pool, ccfg, log) if todo else None)
        if opsets is not None and manifest.get("opset_range") != opsets:
            manifest["opset_range"] = opsets
            write_json(os.path.join(out, MANIFEST), manifest)
        gen = _native_split(cfg, generator(cfg, opsets, support, tuple(aims)), pairs,
                            lambda ops: generator(replace(cfg, operators=list(ops)), opsets, support, tuple(aims)))
        start = coverage_start(cfg, given_state, out, recorded, manifest, log)
        write_json(os.path.join(out, MANIFEST), manifest)
        batch = None
        if cfg.guidance:
            batch = GuidedBatch(gen, root, cfg.campaign, start)
        triage = T.Triage.of(cfg, pool, base_pool, ccfg, out, root, log, journal.records)
        finder = M.Search.of(cfg, triage)
        tir = TirMode(cfg, pool, base_pool, out, root, log, journal.records, manifest.get("change")) \
            if any(k == "tir" for k, _ in todo) else None
        budget = BG.Budget(cfg.budget)
    except BaseException:
        _release(bar, pool, base_pool)
        raise
    resumed = len(journal.records)
    device_lost = None
    try:
        with pool, journal:
            for kind, key in todo:
                if not budget.allows():  # only the tail is cut: the cases before it all ran
                    break
                budget.ran += 1
                bar.case_started()
                t0 = time.perf_counter()
                if kind == "tir":  # a step of the TIR mode: its own oracles and triage
                    ACTIVITY.begin(f"TIR step {key} on {tir.spec.label()}")
                    rec = tir.step(key)
                    _stop_if_lost(pool, base_pool, ccfg, cfg, rec["case"])
                    failing = any(v["verdict"] in V.FAILURES for v in rec["verdicts"])
                    timing = _split_timing(rec)
                    timing["case_s"] = time.perf_counter() - t0
                    journal.append(rec, timing)
                    bar.advance(failing)
                    continue
                ACTIVITY.begin(f"generating case {case_key((kind, key), cfg, root)}")
                case, feats = _load(kind, key, gen, cfg, root, base, batch, pairs)
                ref_out: list = []
                invalid = case.meta.get("invalid")  # a model made invalid on purpose: its own oracle
                kcfg, native = _case_config(ccfg, cfg, pairs, kind, key, case, base)
                names = ", ".join(s.label() for s in kcfg.backends)
                ACTIVITY.begin(f"running case {case.id} on {names} (reference {cfg.reference})")
                outcomes: dict = {}
                rec = IO.check_invalid(pool, case, kcfg) if invalid else check(pool, case, kcfg, ref_out, outcomes)
                if native:  # the importer path against the direct one on a Relax-native case
                    RP.judge_pairs(rec, pairs, outcomes, kcfg.tolerances)
                _stop_if_lost(pool, base_pool, ccfg, cfg, case.id)
                rec["kind"] = kind
                if feats is not None:
                    rec["features"] = feats
                if aims:
                    rec["change"] = case_row(aims, case.graph, case.meta)
                if "not_invalid" in case.meta:
                    rec["not_invalid"] = case.meta["not_invalid"]
                if kind == "baseline":
                    rec["baseline_entry"] = key
                if kind == "corpus":
                    rec["corpus_name"] = key
                    origin = os.path.join(cfg.corpus, key, ORIGIN)
                    if os.path.exists(origin):
                        rec["corpus_origin"] = read_json(origin)
                failing = False
                for v, spec in zip(rec["verdicts"], kcfg.backends):
                    reduced = None
                    if RP.shares_finding(v):  # the importer path's finding, seen from the direct path
                        continue
                    if invalid:  # nothing to reduce or cut: the base build, a confirmation, its identity
                        if v["verdict"] in V.FAILURES:
                            failing = True
                            IO.triage(pool, base_pool, case, spec, v, cfg.confirm_runs, out)
                        continue
                    if v["verdict"] in V.FAILURES:  # confirmed, reduced, run on the base build (triage)
                        failing = True
                        reduced = triage.failure(case, spec, ref_out, v)
                    elif base_pool is not None and v["verdict"] in T.BASE_CHECKED:
                        # head refuses a model the base build runs: a regression, reduced to the refused operator
                        reduced = triage.refusal(case, spec, ref_out, v)
                        failing = T.support_regression(v) or failing
                    if v["verdict"] in V.FAILURES + (V.UNSUPPORTED,) and finder.limit > 1 and kind != "baseline":
                        ACTIVITY.begin(f"looking behind case {case.id}'s {v['verdict']} on {spec.label()} (cut cases)")
                    failing = M.search(finder, case, spec, v, reduced, kind) or failing  # what it hides
                if native:  # a defect one path met in the whole case and the other behind a failure
                    RP.pair_behind(rec, pairs)
                _stop_if_lost(pool, base_pool, ccfg, cfg, case.id)  # triage ran it again, on the base build too
                twinned = EQ.findings(rec)  # the equivalence oracle's, never mixed with the verdicts
                if twinned and base_pool is not None and kind != "baseline":  # shared by the base build?
                    EQ.base_check(base_pool, case, kcfg, rec)
                if failing or twinned or any(v["verdict"] == V.REFERENCE_ERROR for v in rec["verdicts"]):
                    d = save_bundle(out, case)
                    rec["bundle"] = os.path.relpath(d, out)
                    if twinned:
                        EQ.save_twin(d, case)
                        reduce_findings(pool, case, kcfg, rec, out, cfg.reduce, cfg.reduce_seconds)
                failing = failing or bool(twinned)
                timing = _split_timing(rec)
                timing["case_s"] = time.perf_counter() - t0
                journal.append(rec, timing)
                triage.journaled(rec)  # its reductions stand for later cases
                bar.advance(failing)
            ACTIVITY.clear()
            bar.close("deciding the verdict and writing the reports")
    except Interrupted:
        ACTIVITY.clear()
        bar.close("interrupted: writing the reports of the cases run")
        if base_pool is not None:
            base_pool.close(kill=True)
        ran = len(journal.records) - resumed  # the case in flight is not recorded, nor counted
        _write_stats(out, ran, t_run, [p for p in (pool, base_pool) if p is not None])
        raise
    except DeviceLost as e:  # the case in flight is not journaled: a rerun resumes at it
        ACTIVITY.clear()
        bar.close(f"{e}: writing the reports of the cases run")
        _write_stats(out, len(journal.records) - resumed, t_run, [p for p in (pool, base_pool) if p is not None])
        log(f"dlgate: cannot run: {e}; the reports cover the {len(journal.records)} case(s) before it; "
            "run the same command again to resume once the device is back")
        opened.cannot_run = device_lost = e.cannot_run
    finally:
        _release(bar, base_pool)  # the head's pool is closed by its `with`
    if device_lost:
        return finish(out, cfg, manifest, complete=False, log=log, cannot_run=device_lost)
    pools = [p for p in (pool, base_pool) if p is not None]
    if budget.stopped:  # recorded for finish and merge; the next invocation's manifest drops it
        manifest["stopped_by_budget"] = {"seconds": cfg.budget, "ran": len(journal.records), "planned": len(items)}
        write_json(os.path.join(out, MANIFEST), manifest)
        log(f"dlgate: {BG.stop_line(len(journal.records), len(items), cfg.budget)} ({budget.ran} in this run, "
            f"{budget.spent():.0f} s); run the same command again to continue")
    _write_stats(out, budget.ran, t_run, pools)
    return finish(out, cfg, manifest, complete=shard is None, log=log, cannot_run=cannot)


def _stop_if_lost(pool, base_pool, ccfg, cfg: Campaign, case_id: str) -> None:
    """DeviceLost when a worker the gate needs lost its device while running ``case_id``."""
    gone = lost(pool, base_pool, ccfg, cfg)
    if gone:
        raise DeviceLost(case_id, gone)


def _touches(doc: dict) -> str:
    targets, files = doc.get("targets") or [], doc.get("files") or []
    if not targets:
        return (f"no target ({len(files)} changed file(s): tests, docs, build files or paths no table maps); "
                "the batch is the ordinary one")
    gaps = doc.get("gaps") or {}
    return (f"{len(targets)} target(s) in {len(files)} changed file(s); {doc.get('target_share', 0):.0%} of the "
            f"batch is aimed at them" + (f"; {len(gaps)} cannot be reached (listed in the summary)" if gaps else ""))


def _native_split(cfg: Campaign, gen, pairs: list, make):
    """The campaign's generator, or with a ``tvm`` backend and ``relax_share`` or
    ``invalid_share``, it and the Relax-native one (``make(operators)``) behind one
    generator: a Relax-native case (:func:`dlgate.backends.relax_pair.selected`) or a
    Relax-level invalid one (:func:`dlgate.invalid.relax_case.chosen`) is drawn from the
    operators the direct path lowers. A RunError when ``relax_share`` asks for such cases and
    none of the campaign's operators can be lowered; without ``relax_share`` the invalid
    models then all break ONNX rules."""
    if not pairs or not (cfg.relax_share or cfg.invalid_share):
        return gen
    ops = RP.native_operators(cfg.operators)
    try:
        if not ops:
            raise RunError(f"{cfg.campaign}: no operator of the campaign has a Relax lowering "
                           "(dlgate.materialize.relax.COVERED)")
        native = make(ops)
    except RunError as e:
        if cfg.relax_share:
            raise RunError(f"relax_share: {e}") from None
        return gen
    return RP.NativeSplit(gen, native, lambda seed: RP.selected(seed, cfg.relax_share)
                          or RC.chosen(seed, cfg.invalid_share))


def _case_config(ccfg, cfg: Campaign, pairs: list, kind: str, key, case, base: B.Baseline) -> tuple:
    """``(check configuration, whether the case is Relax-native)`` of one case: a baseline
    repro runs on the backend it was found on (the direct path's too); a Relax-level invalid
    case on the direct path's invalid backend alone; a Relax-native case on every backend
    and the direct path beside each paired ``tvm`` one."""
    direct = [d for _, d in pairs]
    if kind == "baseline":
        return only(replace(ccfg, backends=list(ccfg.backends) + direct), base.fingerprints[key]["backend"]), False
    invalid = case.meta.get("invalid")
    if invalid:
        if invalid.get("level") == "relax":
            return replace(ccfg, backends=RC.specs_of([s for s, _ in pairs])), False
        return ccfg, False
    if pairs and RP.selected(int(case.meta.get("seed") or 0), cfg.relax_share):
        return replace(ccfg, backends=list(ccfg.backends) + direct), True
    return ccfg, False


def _load(kind: str, key, gen, cfg: Campaign, root: str, base: B.Baseline, batch=None, pairs: list = ()):
    """The case, and its coverage features (None for corpus and baseline cases)."""
    if kind == "corpus":
        return load_bundle(os.path.join(cfg.corpus, key), case_id=f"corpus/{key}"), None
    if kind == "baseline":
        return load_bundle(os.path.join(base.repros_dir(), base.fingerprints[key]["repro"]),
                           case_id=f"baseline/{key}"), None
    if batch is not None:
        c, feats = batch.case(key)
    else:
        c = make_case(gen, root, cfg.campaign, key)
        feats = graph_features(c.graph)
    meta = c.meta()
    if pairs and RC.chosen(c.seed, cfg.invalid_share):  # a Relax rule broken instead of an ONNX one
        bad = RC.make_invalid(c, meta)
        if bad is not None:
            return bad, feats
    if cfg.invalid_share and IC.chosen(c.seed, cfg.invalid_share):
        bad = IC.make_invalid(c, meta)  # None: no rule applies; meta says why and the case runs as generated
        if bad is not None:
            return bad, feats
    return prepare(meta, c.graph, c.model_bytes, cfg.search_steps), feats


def _split_timing(rec: dict) -> dict:
    """Move what varies from run to run out of the record: timings, and the tail of the
    worker's output attached to errors (both go to timings.jsonl)."""
    t = {"search_s": (rec.get("search") or {}).pop("seconds", 0.0), "backends": {}}
    ref = rec.get("reference") or {}
    t["reference"] = {k: ref.pop(k) for k in _TIMING_KEYS if k in ref}
    logs = {}
    if (ref.get("error") or {}).get("log"):
        logs["reference"] = ref["error"].pop("log")
    for v in rec["verdicts"]:
        t["backends"][v["backend"]] = {k: v.pop(k) for k in _TIMING_KEYS + ("ratio",) if k in v}
        if "ratio" in (v.get("tir") or {}):  # the TIR performance oracle's measured ratio
            t["backends"][v["backend"]]["tir_ratio"] = v["tir"].pop("ratio")
        if (v.get("error") or {}).get("log") is not None:
            logs[v["backend"]] = v["error"].pop("log")  # worker output: clock stamps, addresses
        for extra in ("confirm", "base"):
            for k in _TIMING_KEYS:
                (v.get(extra) or {}).pop(k, None)
        more = M.split_timings(v, _TIMING_KEYS)  # the findings behind this one
        if more:
            t.setdefault("more", {})[v["backend"]] = more
    if logs:
        t["logs"] = logs
    return t


def _write_stats(out: str, ran: int, t_run: float, pools: list) -> None:
    write_json(os.path.join(out, "stats.json"), {
        "cases_run": ran, "wall_s": round(time.perf_counter() - t_run, 3),
        "backend_s": round(sum(p.busy_s for p in pools), 3), "worker_start_s": round(sum(p.start_s for p in pools), 3),
        "rewrites": rewrite_coverage(out)})


def _release(bar, *pools) -> None:
    """The end of a run's live parts, however it ends: no step in progress, the heartbeat
    stopped, the given worker pools (None: not started) closed."""
    ACTIVITY.clear()
    bar.close()
    for p in pools:
        if p is not None:
            p.close()
