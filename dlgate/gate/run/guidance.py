"""Coverage guidance across runs: the coverage state a run's batch is generated from (the
campaign's, or the one a resumed run recorded), and the state it ends with (each case's
features and the rewrite kinds the backends applied)."""
from __future__ import annotations

import os
from collections import Counter

from dlgate.coverage.features import criterion
from dlgate.coverage.state import CoverageState, StateError
from dlgate.gate.config import Campaign
from dlgate.gate.journal import RunError, json_line, read_timings, write_text

#: The coverage state a run starts from, the one it ends with, and each case's features.
C_START, C_END, C_CASES = "coverage-start.json", "coverage-state.json", "coverage.jsonl"

def read_coverage_state(cfg: Campaign):
    """The campaign's ``coverage_state`` (None when null or not there yet), read and checked
    before any work starts."""
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


def rewrite_coverage(out: str) -> dict:
    """Backend -> rewrite kind -> how many of the folder's cases it fired on (from the
    timings: the kinds the backends named, ``Backend.rewrites``), most frequent first."""
    seen: dict = {}
    for t in read_timings(out):
        for backend, b in (t.get("backends") or {}).items():
            seen.setdefault(backend, Counter()).update(set(b.get("rewrites") or ()))
    return {b: dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))) for b, c in sorted(seen.items())}


def write_coverage(out: str, records: list) -> dict:
    """``coverage.jsonl`` (each generated case's features, in index order) and the end
    state (the start, every case's features, every rewrite kind the backends applied);
    counts per criterion, for the stats."""
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
