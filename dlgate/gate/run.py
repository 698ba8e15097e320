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
import shutil
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

from dlgate import GENERATOR_VERSION, __version__
from dlgate.backends.base import BackendSpec
from dlgate.check import CheckConfig, check, load_bundle, prepare, save_bundle
from dlgate.gate import baseline as B
from dlgate.gate import budget as BG
from dlgate.gate import decide as D
from dlgate.gate import multibug as M
from dlgate.gate import report
from dlgate.gate import restrict
from dlgate.gate import triage as T
from dlgate.gate.config import Campaign, ConfigError, backend_spec, build, is_optional
from dlgate.gate.journal import (MANIFEST, RESULTS, Journal, OutLock, RunError, read_json, read_manifest,
                                  read_records, read_timings, write_json, write_text)
from dlgate.gate.progress import ACTIVITY, Progress, heartbeat_seconds
from dlgate.oracle import verdict as V

#: What varies from run to run or machine to machine: timings, and the rewrites a compiler
#: applied (onnxruntime's layout and fusion choices follow the CPU's features).
_TIMING_KEYS = ("compile_s", "run_s", "wall_s", "rewrites")
#: In a corpus case: the failure it was added for.
ORIGIN = "origin.json"


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGINT during a run. Not an Exception, so that no ``except Exception`` on
    the way out takes it for the failure of a case (the case in flight is not journaled)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.status = 128 + signum  # the shell's convention: 143 for SIGTERM, 130 for SIGINT


#: What ends a run early but cleanly: a cancelled CI job sends SIGTERM (or SIGINT), Ctrl-C SIGINT.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@dataclass
class Shard:
    index: int  # 1-based
    count: int

    @staticmethod
    def parse(text: str) -> "Shard":
        try:
            i, n = (int(x) for x in text.split("/"))
        except ValueError:
            raise RunError(f"--shard: expected I/N (e.g. 2/3), got {text!r}") from None
        if not 1 <= i <= n:
            raise RunError(f"--shard: need 1 <= I <= N, got {text!r}")
        return Shard(i, n)

    def owns(self, position: int) -> bool:
        return position % self.count == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def _loadable(cases: list, skipped: dict | None) -> list:
    """The keys of ``cases`` ((key, case id, folder) triples) whose folder can be loaded (a
    readable meta.json and inputs.npz, a model that parses and is the one its meta.json
    records); the others go to ``skipped`` (case id -> why), so one bad folder cannot block
    every run."""
    from dlgate.check import CaseError, verify_bundle

    out = []
    for key, case_id, d in cases:
        try:
            verify_bundle(d)
        except CaseError as e:
            if skipped is not None:
                skipped[case_id] = str(e)
            continue
        out.append(key)
    return out


def corpus_cases(path: str | None, skipped: dict | None = None) -> list:
    """Sorted names of the corpus's loadable cases (folders holding model.onnx and
    meta.json); ``skipped`` receives ``corpus/<name>`` -> why for the others."""
    if not path or not os.path.isdir(path):
        return []
    found = [(n, f"corpus/{n}", os.path.join(path, n)) for n in sorted(os.listdir(path))]
    return _loadable([c for c in found if os.path.isfile(os.path.join(c[2], "meta.json"))
                      and os.path.isfile(os.path.join(c[2], "model.onnx"))], skipped)


def _loadable_repros(base: B.Baseline, names: set, skipped: dict | None) -> list:
    """The baseline's repro cases of backends ``names`` that can be loaded; the others go
    to ``skipped``."""
    return _loadable([(fp, f"baseline/{fp}", os.path.join(base.repros_dir(), base.fingerprints[fp]["repro"]))
                      for fp in base.repro_cases() if base.fingerprints[fp].get("backend") in names], skipped)


def plan(cfg: Campaign, shard: Shard | None, base: B.Baseline | None = None, skipped: dict | None = None) -> list:
    """(kind, name or index) of every case this run (or shard) owns, in order: the corpus,
    the baseline entries' reduced repros of the backends under test, the fresh batch.
    Saved cases that cannot be loaded are left out (``skipped``: case id -> why)."""
    names = {backend_spec(b).name for b in cfg.backends}
    fixed = [("corpus", n) for n in corpus_cases(cfg.corpus, skipped)]
    fixed += [("baseline", fp) for fp in (_loadable_repros(base, names, skipped) if base else [])]
    items = [it for k, it in enumerate(fixed) if shard is None or shard.owns(k)]
    items += [("batch", i) for i in range(cfg.models) if shard is None or shard.owns(i)]
    return items


def labels(entries: list) -> list:
    return [backend_spec(b).label() for b in entries]


def check_config(cfg: Campaign) -> CheckConfig:
    return CheckConfig([backend_spec(b) for b in cfg.backends], BackendSpec.parse(cfg.reference),
                       tolerances=dict(cfg.tolerances), timeout_s=cfg.timeout_s, memory_mb=cfg.memory_mb,
                       search_steps=cfg.search_steps, crosscheck=cfg.crosscheck)


def rewrite_coverage(out: str) -> dict:
    """Backend -> rewrite kind -> how many of the folder's cases it fired on (from the
    timings: the kinds the backends named, ``Backend.rewrites``), most frequent first."""
    from collections import Counter

    seen: dict = {}
    for t in read_timings(out):
        for backend, b in (t.get("backends") or {}).items():
            seen.setdefault(backend, Counter()).update(set(b.get("rewrites") or ()))
    return {b: dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))) for b, c in sorted(seen.items())}


def opset_range(cfg: Campaign, pool, ccfg: CheckConfig, log=print) -> list:
    """The opsets this run draws from: a fixed ``opset``; else 13 up to ``max_opset``, or
    when that is null, up to the newest opset every backend under test that started loads
    (probed in its warm worker)."""
    from dlgate.graph.generator import NEWEST_OPSET, OLDEST_OPSET
    from dlgate.probe.support import opset_ceiling

    if cfg.opset is not None:
        return [cfg.opset, cfg.opset]
    if cfg.max_opset is not None:
        return [OLDEST_OPSET, cfg.max_opset]
    hi = NEWEST_OPSET
    for spec in ccfg.backends:
        w = pool.get(spec)
        if w.unavailable is not None or not w.start():
            continue
        got = opset_ceiling(lambda m, xs, spec=spec: pool.execute(spec, m, xs))
        if got["opset"] < hi:
            log(f"dlgate: {spec.label()} loads models up to opset {got['opset']}; generating up to it")
        hi = min(hi, got["opset"])
    return [OLDEST_OPSET, hi]


def _touches(doc: dict) -> str:
    targets, files = doc.get("targets") or [], doc.get("files") or []
    if not targets:
        return (f"no target ({len(files)} changed file(s): tests, docs, build files or paths no table maps); "
                "the batch is the ordinary one")
    gaps = doc.get("gaps") or {}
    return (f"{len(targets)} target(s) in {len(files)} changed file(s); {doc.get('target_share', 0):.0%} of the "
            f"batch is aimed at them" + (f"; {len(gaps)} cannot be reached (listed in the summary)" if gaps else ""))


def _generator(cfg: Campaign, opsets: list | None = None, support=None, aims: tuple = ()):
    """The campaign's generator; a RunError when its restriction leaves no operator to draw."""
    from dlgate.graph.generator import GenConfig, GenerationError, Generator

    ops = tuple(cfg.operators) if cfg.operators is not None else None
    kw = {"dtypes": tuple(cfg.dtypes)} if cfg.dtypes is not None else {}
    if opsets is not None:
        kw["opset_range"] = tuple(opsets)
    gen = Generator(GenConfig(min_nodes=cfg.min_nodes, max_nodes=cfg.max_nodes, ops=ops, opset=cfg.opset,
                              support=support, dynamic_share=cfg.dynamic_share,
                              extreme_share=cfg.extreme_share, aims=aims, aim_share=cfg.target_share, **kw))
    try:
        gen.drawable()
    except GenerationError as e:
        raise RunError(f"{cfg.campaign}: {e}") from None
    return gen


def _split_timing(rec: dict) -> dict:
    """Move what varies from run to run out of the record: timings, and the tail of the
    worker's output attached to errors (both go to timings.jsonl)."""
    t = {"search_s": rec.get("search", {}).pop("seconds", 0.0), "backends": {}}
    ref = rec.get("reference") or {}
    t["reference"] = {k: ref.pop(k) for k in _TIMING_KEYS if k in ref}
    logs = {}
    if (ref.get("error") or {}).get("log"):
        logs["reference"] = ref["error"].pop("log")
    for v in rec["verdicts"]:
        t["backends"][v["backend"]] = {k: v.pop(k) for k in _TIMING_KEYS if k in v}
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


def _manifest(cfg: Campaign, root: str, root_source: str, shard: Shard | None, planned: int) -> dict:
    return {"dlgate": __version__, "generator": GENERATOR_VERSION, "root": root, "root_source": root_source,
            "campaign": cfg.campaign, "config": cfg.to_json(), "config_source": cfg.source,
            "fingerprint": cfg.fingerprint(), "shard": [shard.index, shard.count] if shard else None,
            "planned": planned}


#: What a run writes in its output folder, and so what --fresh removes (with each file's
#: ``.tmp``, written on the way to it); anything else in the folder is left alone.
#: The coverage state a run starts from, the one it ends with, and each case's features.
C_START, C_END, C_CASES = "coverage-start.json", "coverage-state.json", "coverage.jsonl"


OUT_FILES = (RESULTS, "timings.jsonl", MANIFEST, "junit.xml", "summary.md", "verdict.json", "stats.json",
             C_START, C_END, C_CASES, "report.html")
OUT_DIRS = ("cases", "repros", "report")  # report: dlgate report's plots


def _open_out(out: str, manifest: dict, fresh: bool) -> dict:
    """Check (or, with ``fresh``, empty of what dlgate wrote) the output folder, whose lock
    the caller holds, and write the manifest."""
    path = os.path.join(out, MANIFEST)
    if fresh and os.path.isdir(out):
        for f in OUT_FILES:
            for p in (os.path.join(out, f), os.path.join(out, f + ".tmp")):
                if os.path.lexists(p):
                    os.unlink(p)
        for d in OUT_DIRS:
            shutil.rmtree(os.path.join(out, d), ignore_errors=True)
    os.makedirs(out, exist_ok=True)
    old = {}
    if os.path.exists(path):
        old = read_manifest(path)
        for key in ("root", "fingerprint", "shard", "generator"):
            if old.get(key) != manifest.get(key):
                raise RunError(f"{out} holds a different run ({key}: {old.get(key)!r}, now {manifest.get(key)!r}); "
                               "use another --out, or --fresh to discard it")
        was, now = (old.get("change") or {}).get("digest"), (manifest.get("change") or {}).get("digest")
        if was != now:
            raise RunError(f"{out} holds a different run (the change's targets: {was or 'none'}, now {now or 'none'}); "
                           "use another --out, or --fresh to discard it")
        for key in ("opset_range", "support", "coverage_start"):  # what guided generation stays as recorded
            if old.get(key):
                manifest[key] = old[key]
    write_json(path, manifest)
    return old


def _load(kind: str, key, gen, cfg: Campaign, root: str, base: B.Baseline, batch=None):
    """The case, and its coverage features (None for corpus and baseline cases)."""
    from dlgate.case import make_case
    from dlgate.coverage.features import graph_features

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
    return prepare(meta, c.graph, c.model_bytes, cfg.search_steps), feats


def read_coverage_state(cfg: Campaign):
    """The campaign's ``coverage_state`` (None when null or not there yet), read and checked
    before any work starts."""
    from dlgate.coverage.state import CoverageState, StateError

    if not cfg.coverage_state or not os.path.exists(cfg.coverage_state):
        return None
    try:
        return CoverageState.load(cfg.coverage_state)
    except StateError as e:
        raise RunError(str(e)) from None


def coverage_start(cfg: Campaign, given, out: str, recorded: dict, manifest: dict, log=print):
    """The coverage state the batch is generated from: the one a resumed run recorded, else
    the campaign's (``given``, from ``read_coverage_state``; empty when there is none);
    saved in ``out`` with its digest in the manifest."""
    from dlgate.coverage.state import CoverageState, StateError

    path = os.path.join(out, C_START)
    want = recorded.get("coverage_start")
    if want:
        try:
            state = CoverageState.load(path)
        except StateError as e:
            raise RunError(str(e)) from None
        if state.digest() != want:
            raise RunError(f"{path}: changed since the run started (digest {state.digest()[:12]}, "
                           f"run.json says {want[:12]}); run with --fresh")
        manifest["coverage_start"] = want
        return state
    state = given or CoverageState()
    if given is not None:
        log(f"dlgate: coverage state from {cfg.coverage_state}: {len(state.features)} features, "
            f"{sum(len(k) for k in state.rewrites.values())} rewrite kinds")
    elif cfg.coverage_state:
        log(f"dlgate: coverage state {cfg.coverage_state} does not exist yet; starting empty")
    state.save(path)
    manifest["coverage_start"] = state.digest()
    return state


def write_coverage(out: str, records: list) -> dict:
    """``coverage.jsonl`` (each generated case's features, in index order) and the end
    state (the start, every case's features, every rewrite kind the backends applied);
    counts per criterion, for the stats."""
    from collections import Counter

    from dlgate.coverage.features import criterion
    from dlgate.coverage.state import CoverageState
    from dlgate.gate.journal import json_line

    start = os.path.join(out, C_START)
    state = CoverageState.load(start) if os.path.exists(start) else CoverageState()
    cases = sorted((r for r in records if r.get("features") is not None), key=lambda r: r["index"])
    lines = []
    for r in cases:
        lines.append(json_line({"index": r["index"], "case": r["case"], "features": r["features"]}))
        state.add_features(r["features"])
    write_text(os.path.join(out, C_CASES), "".join(lines))
    for backend, kinds in rewrite_coverage(out).items():
        state.add_rewrites(backend, kinds)
    state.save(os.path.join(out, C_END))
    counts = Counter(criterion(x) for x in state.features)
    return {"features": dict(sorted(counts.items())),
            "rewrite_kinds": {b: len(k) for b, k in sorted(state.rewrites.items())}}


@dataclass
class _Opened:
    """What an interrupted run needs to write its reports: this run's manifest, once the
    output folder is checked as this run's (None before), and what could not start."""

    manifest: dict | None = None
    cannot_run: dict | None = None


def run(cfg: Campaign, root: str, root_source: str, out: str, shard: Shard | None = None, fresh: bool = False,
        progress: bool | None = None, log=print, change=None) -> int:
    """The campaign, holding ``out``'s lock from start to end (a second run there is refused,
    exit status 2). SIGTERM or SIGINT kills the workers, keeps the journal (the case in
    flight is not recorded), writes the reports of the cases journaled so far marked as
    interrupted (never a pass) and ends the run with 143 or 130 and a line saying how to
    resume; a rerun of the same command resumes. ``change``: the pull request's
    ``TargetSet`` (``dlgate.change``), aiming ``cfg.target_share`` of the batch at it."""
    from dlgate.exec.worker import close_all

    opened = _Opened()
    with OutLock(out), _stopped_by_signals():
        try:
            return _run(cfg, root, root_source, out, shard, fresh, progress, log, opened, change)
        except Interrupted as e:
            close_all()  # workers started outside a pool's `with` (preflight) too, and their logs
            _report_interrupted(cfg, out, opened, e, log)
            log(f"dlgate: interrupted by {e} after {_progress_of(out)} cases; run the same command again to resume")
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


@contextmanager
def _stopped_by_signals():
    """While a run works, SIGTERM and SIGINT raise Interrupted in the main thread, once. A
    second signal while the run stops (the workers are killed, the reports of the cases
    journaled so far are written) is ignored, so that the reports are finished: GitHub
    Actions, cancelling a job, sends SIGINT and 7.5 s later SIGTERM; only SIGKILL cuts the
    shutdown short, and every report is written atomically, so it leaves none half
    written. The previous handlers come back after a run that was not interrupted; after an
    interrupted one, which the process is about to leave with the first signal's status,
    the ignoring handler stays, and :func:`hold_stop_signals` blocks both signals on the way
    out. (Only the main thread can take signals.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired = []

    def handler(signum, frame):
        if not fired:
            fired.append(signum)
            raise Interrupted(signum)

    old = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        if not fired:
            for s, h in old.items():
                signal.signal(s, h if h is not None else signal.SIG_DFL)


def hold_stop_signals() -> None:
    """Ignore SIGTERM and SIGINT for the rest of the process: ``dlgate run``, interrupted,
    leaves with the first signal's status, and a later signal must not change it while the
    interpreter shuts down, which puts the default handlers back, except SIG_IGN. (Blocking
    them would not do: the process's other threads would still take them.) A signal that
    came before is taken, and ignored, by the handler that :func:`_stopped_by_signals` left
    in place, when ``signal.signal`` checks for pending signals. Only the process's last
    steps may call this: the processes it starts after would inherit SIG_IGN."""
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)


def _progress_of(out: str) -> str:
    """'N of M': cases in the folder's journal, of those its manifest plans."""
    try:
        done = str(len(read_records(os.path.join(out, RESULTS))))
    except RunError:
        done = "?"
    try:
        return f"{done} of {read_manifest(os.path.join(out, MANIFEST))['planned']}"
    except (RunError, KeyError):
        return done


def _run(cfg: Campaign, root: str, root_source: str, out: str, shard: Shard | None, fresh: bool,
         progress: bool | None, log, opened: _Opened, change=None) -> int:
    from dlgate.exec.worker import Pool

    try:
        every_s = heartbeat_seconds()  # a bad DLGATE_HEARTBEAT_S is said before any work
    except ValueError as e:
        raise RunError(str(e)) from None
    base = B.load(cfg.baseline)
    given_state = read_coverage_state(cfg)
    skipped: dict = {}  # corpus cases (or baseline repros) that cannot be loaded: reported, not run
    items = plan(cfg, shard, base, skipped)
    manifest = _manifest(cfg, root, root_source, shard, len(items))
    aims = ()
    if change is not None:
        from dlgate.change.coverage import aims_of

        manifest["change"] = dict(change.to_json(), target_share=cfg.target_share)
        aims, gaps = aims_of(manifest["change"])
        manifest["change"]["gaps"] = gaps
        log(f"dlgate: the change ({change.source}) touches {_touches(manifest['change'])}")
    if skipped:
        manifest["skipped"] = skipped  # the run's record (run.json) keeps what was left out, and why
        for case, why in skipped.items():
            log(f"dlgate: skipped {case}: it cannot be loaded: {why}")
    recorded = _open_out(out, manifest, fresh)
    opened.manifest = manifest  # from here on, an interrupted run reports on its journal
    ccfg = check_config(cfg)
    support = restrict.resolve(cfg, recorded, manifest, log)  # probe errors come before any work
    if support is not None:
        write_json(os.path.join(out, MANIFEST), manifest)
    journal = Journal(out)
    todo = [it for it in items if _case_id(it, cfg, root) not in journal.done]
    if journal.done:
        log(f"dlgate: resuming {out}: {len(items) - len(todo)} of {len(items)} cases already done")
    where = f" shard {shard}" if shard else ""
    log(f"dlgate: campaign {cfg.campaign!r}{where}: {len(items)} cases (seed {root_source} {root[:12]}), "
        f"backends {', '.join(labels(cfg.backends))} vs {cfg.reference}")
    bar = Progress(len(todo), cfg.campaign, progress, every_s=every_s, budget_s=cfg.budget)
    if todo:
        ACTIVITY.begin(f"starting the workers ({', '.join([cfg.reference] + labels(cfg.backends))})")
    t_run = time.perf_counter()
    base_pool = Pool(cfg.timeout_s, cfg.memory_mb, python=cfg.base["python"], env=cfg.base["env"]) if cfg.base else None
    pool = Pool(cfg.timeout_s, cfg.memory_mb)
    cannot = opened.cannot_run = preflight(pool, base_pool, ccfg, cfg) if todo else {}
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
    gen = _generator(cfg, opsets, support, tuple(aims))
    start = coverage_start(cfg, given_state, out, recorded, manifest, log)
    write_json(os.path.join(out, MANIFEST), manifest)
    batch = None
    if cfg.guidance:
        from dlgate.coverage.guide import GuidedBatch

        batch = GuidedBatch(gen, root, cfg.campaign, start)
    triage = T.Triage.of(cfg, pool, base_pool, ccfg, out, root, log, journal.records)
    finder = M.Search.of(cfg, triage)
    budget = BG.Budget(cfg.budget)
    resumed = len(journal.records)
    try:
        with pool, journal:
            for kind, key in todo:
                if not budget.allows():  # only the tail is cut: the cases before it all ran
                    break
                budget.ran += 1
                bar.case_started()
                t0 = time.perf_counter()
                ACTIVITY.begin(f"generating case {_case_id((kind, key), cfg, root)}")
                case, feats = _load(kind, key, gen, cfg, root, base, batch)
                ref_out: list = []
                kcfg = ccfg if kind != "baseline" else _only(ccfg, base.fingerprints[key]["backend"])
                names = ", ".join(s.label() for s in kcfg.backends)
                ACTIVITY.begin(f"running case {case.id} on {names} (reference {cfg.reference})")
                rec = check(pool, case, kcfg, ref_out)
                rec["kind"] = kind
                if feats is not None:
                    rec["features"] = feats
                if aims:
                    from dlgate.change.coverage import case_row

                    rec["change"] = case_row(aims, case.graph, case.meta)
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
                if failing or any(v["verdict"] == V.REFERENCE_ERROR for v in rec["verdicts"]):
                    d = save_bundle(out, case)
                    rec["bundle"] = os.path.relpath(d, out)
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
    finally:
        ACTIVITY.clear()
        bar.close()
        if base_pool is not None:
            base_pool.close()
    pools = [p for p in (pool, base_pool) if p is not None]
    if budget.stopped:  # recorded for finish and merge; the next invocation's manifest drops it
        manifest["stopped_by_budget"] = {"seconds": cfg.budget, "ran": len(journal.records), "planned": len(items)}
        write_json(os.path.join(out, MANIFEST), manifest)
        log(f"dlgate: {BG.stop_line(len(journal.records), len(items), cfg.budget)} ({budget.ran} in this run, "
            f"{budget.spent():.0f} s); run the same command again to continue")
    _write_stats(out, budget.ran, t_run, pools)
    return finish(out, cfg, manifest, complete=shard is None, log=log, cannot_run=cannot)


def _write_stats(out: str, ran: int, t_run: float, pools: list) -> None:
    write_json(os.path.join(out, "stats.json"), {
        "cases_run": ran, "wall_s": round(time.perf_counter() - t_run, 3),
        "backend_s": round(sum(p.busy_s for p in pools), 3), "worker_start_s": round(sum(p.start_s for p in pools), 3),
        "rewrites": rewrite_coverage(out)})


def optional_labels(entries: list) -> set:
    """Labels of the ``backends`` entries marked optional."""
    return {backend_spec(b).label() for b in entries if is_optional(b)}


def preflight(pool, base_pool, ccfg: CheckConfig, cfg: Campaign) -> dict:
    """Start, before any case, every worker the gate cannot do without: the reference, each
    backend not marked optional, and (head versus base) each one's base build. What cannot
    start (not installed, an import or constructor that raises, a crash while starting, a
    base interpreter that does not exist) -> why."""
    optional = optional_labels(cfg.backends)
    needed = [(pool, ccfg.reference, f"the reference {ccfg.reference.label()}")]
    needed += [(pool, s, s.label()) for s in ccfg.backends if s.label() not in optional]
    if base_pool is not None:
        needed += [(base_pool, s, f"{s.label()} (base build, {cfg.base['python']})")
                   for s in ccfg.backends if s.label() not in optional]
    out = {}
    for p, spec, what in needed:
        t0 = time.perf_counter()
        if not p.get(spec).start():
            out[what] = p.get(spec).unavailable
        p.start_s += time.perf_counter() - t0
    return out


def _only(ccfg: CheckConfig, backend_name: str) -> CheckConfig:
    """The check configuration restricted to one backend's specs (a baseline repro is
    re-run on the backend it was found on)."""
    from dataclasses import replace

    return replace(ccfg, backends=[s for s in ccfg.backends if s.name == backend_name])


def _case_id(item, cfg: Campaign, root: str) -> str:
    from dlgate.seeds import case_id

    kind, key = item
    return f"{kind}/{key}" if kind in ("corpus", "baseline") else case_id(root, cfg.campaign, key)


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
        from dlgate.change.coverage import rewrites_of, table

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


def publish_issues(out: str, conf: dict, log=print) -> None:
    """The config's ``issues``: open or update issues; a GitHub failure is reported, and
    does not change the gate's verdict (the run's findings are in the reports either way)."""
    from dlgate.github.client import GitHub, GitHubError
    from dlgate.github.issues import publish
    from dlgate.github.releases import publish_hook

    if not os.environ.get("GITHUB_TOKEN"):
        log("dlgate: issues: not published: GITHUB_TOKEN is not set")
        return
    try:
        stats = publish(out, GitHub(conf["repo"], api_url=conf["api_url"], log=log), conf["label"],
                        conf["max_per_run"], log=log, memory_safety=conf.get("memory_safety", "private"),
                        bisect=publish_hook(conf.get("bisect_releases"), log=log))
    except GitHubError as e:
        log(f"dlgate: issues: not published: GitHub: {e}")
        return
    log(f"dlgate: issues: {stats['opened']} opened, {stats['commented']} commented, {stats['reported']} reported "
        f"privately, {stats['withheld']} withheld, {stats['unchanged']} up to date, {stats['over_cap']} over the cap")


def attach_repros(out: str, decision: D.Decision) -> None:
    """Link each failure group to its reduced repro, when there is one."""
    for g in decision.failure_groups():
        p = os.path.join(out, "repros", g["fingerprint"], "repro.json")
        if os.path.exists(p):
            g["repro"] = os.path.join("repros", g["fingerprint"])


def grow_corpus(out: str, corpus: str, decision: D.Decision) -> list:
    """Copy the first case of each new failure into the corpus under a stable name."""
    added = []
    for g in decision.of(D.NEW):
        if not g["bundles"]:
            continue
        name = f"{g['backend_name']}-{g['verdict']}-{g['fingerprint']}"
        dst = os.path.join(corpus, name)
        if os.path.exists(dst):
            continue
        shutil.copytree(os.path.join(out, g.get("repro") or g["bundles"][0]), dst)
        write_json(os.path.join(dst, ORIGIN), {"signature": g["fingerprint"], "backend": g["backend"],
                                                "verdict": g["verdict"], "text": g["text"], "root": decision.root,
                                                "case": g["cases"][0]})
        added.append(name)
    return added


def merge(dirs: list, out: str, log=print) -> int:
    """Combine shard outputs into one journal, bundle set and report."""
    mans = []
    for d in dirs:
        p = os.path.join(d, MANIFEST)
        if not os.path.exists(p):
            raise RunError(f"{d}: not a dlgate run folder (no {MANIFEST})")
        mans.append(read_manifest(p))
    first = mans[0]
    for d, m in zip(dirs, mans):
        for key in ("root", "campaign", "fingerprint", "generator", "opset_range", "coverage_start", "support"):
            if m.get(key) != first.get(key):
                raise RunError(f"{d}: {key} {m.get(key)!r:.80} differs from {dirs[0]}'s {first.get(key)!r:.80}")
    shards = [tuple(m["shard"]) if m.get("shard") else None for m in mans]
    if any(s is not None for s in shards):
        n = {s[1] for s in shards if s}
        if None in shards or len(n) != 1:
            raise RunError("merge: all folders must be shards of one split (I/N with the same N)")
        got = sorted(s[0] for s in shards)
        if got != list(range(1, next(iter(n)) + 1)):
            raise RunError(f"merge: expected shards 1..{next(iter(n))} exactly once, got {got}")
    try:
        cfg = build(first["config"], first.get("config_source", "<merged>"))
    except ConfigError as e:
        raise RunError(f"merge: {e}") from None
    with OutLock(out):
        return _merge(dirs, mans, first, cfg, out, log)


def _merge(dirs: list, mans: list, first: dict, cfg: Campaign, out: str, log) -> int:
    records, timings, seen = [], [], set()
    for d, m in zip(dirs, mans):
        recs = read_records(os.path.join(d, "results.jsonl"))
        if len(recs) < m.get("planned", 0) and not m.get("stopped_by_budget"):  # a budget-cut shard is done
            raise RunError(f"{d}: unfinished ({len(recs)} of {m['planned']} cases); run it again to resume")
        for r in recs:
            if r["case"] in seen:
                raise RunError(f"merge: case {r['case']} appears in more than one folder")
            seen.add(r["case"])
            records.append(r)
            if r.get("bundle"):
                dst = os.path.join(out, r["bundle"])
                if not os.path.exists(dst):
                    shutil.copytree(os.path.join(d, r["bundle"]), dst)
        timings += read_timings(d)
        rdir = os.path.join(d, "repros")
        for name in sorted(os.listdir(rdir)) if os.path.isdir(rdir) else []:
            dst = os.path.join(out, "repros", name)
            if not os.path.exists(dst):
                shutil.copytree(os.path.join(rdir, name), dst)
    records.sort(key=D._order)
    if os.path.exists(os.path.join(dirs[0], C_START)):
        shutil.copyfile(os.path.join(dirs[0], C_START), os.path.join(out, C_START))
    manifest = dict(first, shard=None, planned=sum(m.get("planned", 0) for m in mans),
                    merged_from=[os.path.abspath(d) for d in dirs])
    manifest.pop("stopped_by_budget", None)
    if any(m.get("stopped_by_budget") for m in mans):
        manifest["stopped_by_budget"] = {"seconds": cfg.budget, "ran": len(records), "planned": manifest["planned"],
                                         "shards": [d for d, m in zip(dirs, mans) if m.get("stopped_by_budget")]}
    write_json(os.path.join(out, MANIFEST), manifest)
    from dlgate.gate.journal import json_line

    with open(os.path.join(out, "results.jsonl"), "w") as f:
        f.writelines(json_line(r) for r in records)
    with open(os.path.join(out, "timings.jsonl"), "w") as f:
        f.writelines(json_line(t) for t in timings)
    log(f"dlgate: merged {len(dirs)} folder(s), {len(records)} cases, into {out}")
    return finish(out, cfg, manifest, complete=True, log=log)


def update_baseline(run_dir: str, path: str, prune: bool = False, log=print) -> str:
    m = read_manifest(os.path.join(run_dir, MANIFEST))
    if m.get("shard"):
        raise RunError(f"{run_dir} is shard {m['shard'][0]}/{m['shard'][1]}; merge the shards first (dlgate merge)")
    records = read_records(os.path.join(run_dir, "results.jsonl"))
    if len(records) < (m.get("planned") or 0) and not m.get("stopped_by_budget"):  # interrupted, or killed
        raise RunError(f"{run_dir} is unfinished ({len(records)} of {m['planned']} cases); run the same command "
                       "again to finish it, then update the baseline")
    try:
        base = B.load(path)
    except B.BaselineError as e:
        raise RunError(str(e)) from None
    cfg = m["config"]
    decision = D.decide(records, base, m["root"], m["campaign"], labels(cfg["backends"]), complete=True,
                        optional=optional_labels(cfg["backends"]))
    new = B.update(base, decision, prune, run_dir)
    new.save(path)
    log(f"dlgate: baseline {path}: {len(new.fingerprints)} fingerprints "
        f"({len(new.fingerprints) - len(base.fingerprints):+d}) in {len(new.clusters)} clusters, "
        f"{len(new.corpus)} corpus cases")
    return path
