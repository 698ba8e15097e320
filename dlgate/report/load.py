"""A run's output folder, read and checked for the report.

What the report needs is ``run.json`` and ``results.jsonl``; without them (or with one
that is damaged) the folder is not reported on: a :class:`ReportError`, one line naming the
file. The other files are optional and each is taken only when it is sound: a file the
run has not written (yet) is None, with the reason the page gives; a file that is there
and damaged is a ReportError too, never guessed at.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from dlgate.gate import decide as D
from dlgate.gate.journal import MANIFEST, RESULTS, RunError, read_manifest, read_records, read_timings

COVERAGE = "coverage.jsonl"
COVERAGE_START = "coverage-start.json"
STATS = "stats.json"
VERDICT = "verdict.json"


class ReportError(RuntimeError):
    """A folder the report cannot describe (exit status 2), said in one line."""


@dataclass
class RunFolder:
    path: str
    manifest: dict
    records: list  # results.jsonl, in run order: corpus, baseline repros, the batch by index
    timings: dict  # case -> its timings line (the last, when a redone case has two)
    coverage: list | None  # coverage.jsonl's lines in run order; None when not recorded
    coverage_start: int | None  # features of the coverage state the run started from
    stats: dict | None
    verdict: dict | None  # verdict.json, when it decides exactly these records
    verdict_note: str  # why ``verdict`` is None ("" when it is not)

    def position(self) -> dict:
        """Case id -> 1-based position in run order."""
        return {r["case"]: k for k, r in enumerate(self.records, 1)}


def _json_file(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ReportError(f"{path}: not readable JSON ({e})") from None
    if not isinstance(doc, dict):
        raise ReportError(f"{path}: a JSON {type(doc).__name__}, not an object")
    return doc


def _coverage(path: str, where: dict) -> list:
    """coverage.jsonl's lines ({"index", "case", "features"}), each checked, in run order;
    a line that is not one, or names a case results.jsonl does not hold, is a ReportError."""
    out, seen = [], set()
    try:
        with open(path, "rb") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise ReportError(f"{path}: not readable ({e.strerror or e})") from None
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            doc = json.loads(raw)
        except ValueError as e:
            raise ReportError(f"{path}: line {n} is not JSON ({e})") from None
        ok = isinstance(doc, dict) and isinstance(doc.get("case"), str) and isinstance(doc.get("features"), list) \
            and all(isinstance(x, str) for x in doc["features"]) and isinstance(doc.get("index"), int)
        if not ok:
            raise ReportError(f"{path}: line {n} is not a coverage record "
                              "(an object with an integer index, a case and a list of feature strings)")
        if doc["case"] not in where:
            raise ReportError(f"{path}: line {n} names case {doc['case']}, which results.jsonl does not hold")
        if doc["case"] in seen:
            raise ReportError(f"{path}: line {n} records case {doc['case']} again")
        seen.add(doc["case"])
        out.append(doc)
    return sorted(out, key=lambda d: where[d["case"]])


def _verdict(path: str, cases: int) -> tuple:
    if not os.path.exists(path):
        return None, ("no verdict.json: the gate has not decided this folder (the run was interrupted "
                      "or is still running)")
    doc = _json_file(path)
    if doc.get("cases") != cases:
        return None, (f"verdict.json decides {doc.get('cases')} case(s), results.jsonl holds {cases}: the gate "
                      "has not decided the current journal")
    return doc, ""


def _verdicts_ok(vs) -> bool:
    return isinstance(vs, list) and all(isinstance(v, dict) and isinstance(v.get("backend"), str)
                                        and isinstance(v.get("verdict"), str) for v in vs)


def load(path: str) -> RunFolder:
    if not os.path.exists(path):
        raise ReportError(f"{path}: no such folder")
    if not os.path.isdir(path):
        raise ReportError(f"{path}: not a folder")
    man = os.path.join(path, MANIFEST)
    if not os.path.isfile(man):
        raise ReportError(f"{path}: not a dlgate run folder (no {MANIFEST})")
    results = os.path.join(path, RESULTS)
    if not os.path.isfile(results):
        raise ReportError(f"{path}: no {RESULTS}: no case has been journaled there")
    try:
        manifest = read_manifest(man)
        records = sorted(read_records(results), key=D._order)
        timing_lines = read_timings(path)
    except RunError as e:
        raise ReportError(str(e)) from None
    except OSError as e:
        raise ReportError(f"{path}: not readable ({e.strerror or e})") from None
    for r in records:
        if not _verdicts_ok(r["verdicts"]) or not all(_verdicts_ok(v.get("more", [])) for v in r["verdicts"]):
            raise ReportError(f"{results}: case {r['case']} has verdicts that are not "
                              "objects with a backend and a verdict")
    where = {r["case"]: k for k, r in enumerate(records, 1)}
    timings = {t["case"]: t for t in timing_lines if t["case"] in where and isinstance(t.get("backends", {}), dict)}
    cov_path = os.path.join(path, COVERAGE)
    coverage = _coverage(cov_path, where) if os.path.exists(cov_path) else None
    start = None
    if os.path.exists(os.path.join(path, COVERAGE_START)):
        feats = _json_file(os.path.join(path, COVERAGE_START)).get("features")
        start = len(feats) if isinstance(feats, list) else None
    stats = _json_file(os.path.join(path, STATS)) if os.path.exists(os.path.join(path, STATS)) else None
    verdict, note = _verdict(os.path.join(path, VERDICT), len(records))
    return RunFolder(path, manifest, records, timings, coverage, start, stats, verdict, note)
