"""What the report counts, as pure functions of a :class:`~dlgate.report.load.RunFolder`.

Curves are cumulative counts after each case, in run order (corpus cases, baseline
repros, then the batch by index): ``curve[k]`` is the count after the first ``k + 1``
cases. A case that adds nothing keeps the curve level, so every curve is monotone and
ends at the number of distinct items of the whole folder.

Findings are identified as the gate identifies them (:mod:`dlgate.gate.decide`): one per
fingerprint, its cause the fingerprint's cluster. A finding's class (new, known, ...) is
the gate's, from ``verdict.json``; without one the finding is *undecided* (only the
baseline the run was given could tell new from known).
"""
from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field

from dlgate.coverage.features import CRITERIA
from dlgate.gate import decide as D
from dlgate.gate.baseline import Baseline
from dlgate.ops.registry import get
from dlgate.oracle import verdict as V

#: verdict.json's key for each class's groups.
CLASS_KEYS = ((D.NEW, "new"), (D.REGRESSION, "regressions"), (D.PRE_EXISTING, "pre_existing"),
               (D.KNOWN, "known"), (D.FLAKY, "flaky"))
UNDECIDED = "undecided"


def criterion(feature: str) -> str:
    """A coverage feature's criterion: the text before its first ``:``."""
    return feature.split(":", 1)[0]


def backends(folder) -> list:
    """Backend labels in the order they first appear in the records."""
    out: dict = {}
    for r in folder.records:
        for v in r["verdicts"]:
            out.setdefault(v["backend"], None)
    return list(out)


def verdict_counts(folder) -> dict:
    """Backend label -> verdict -> how many cases had it."""
    counts: dict = {b: Counter() for b in backends(folder)}
    for r in folder.records:
        for v in r["verdicts"]:
            counts[v["backend"]][v["verdict"]] += 1
    return {b: dict(c) for b, c in counts.items()}


def verdict_columns(counts: dict) -> list:
    """The verdicts that occur, in the order of :data:`dlgate.oracle.verdict.VERDICTS` (others after)."""
    seen = {v for c in counts.values() for v in c}
    return [v for v in V.VERDICTS if v in seen] + sorted(seen - set(V.VERDICTS))


def _cumulative(folder, keys: list, items_of) -> dict:
    """key -> curve for each of ``keys``, where ``items_of(record)`` gives the (key, item)
    pairs of a case."""
    seen: dict = {k: set() for k in keys}
    curves: dict = {k: [] for k in keys}
    for r in folder.records:
        for key, item in items_of(r):
            seen[key].add(item)
        for key, c in curves.items():
            c.append(len(seen[key]))
    return curves


def feature_curves(folder) -> dict | None:
    """Criterion -> cumulative distinct coverage features (coverage.jsonl); None when the
    folder has no coverage record. Criteria in :data:`~dlgate.coverage.features.CRITERIA`
    order, others after, by name."""
    if folder.coverage is None:
        return None
    by_case = {d["case"]: d["features"] for d in folder.coverage}
    found = {criterion(x) for d in folder.coverage for x in d["features"]}
    order = [c for c in CRITERIA if c in found] + sorted(found - set(CRITERIA))
    return _cumulative(folder, order, lambda r: [(criterion(x), x) for x in by_case.get(r["case"], ())])


def rewrite_curves(folder) -> dict:
    """Backend -> cumulative distinct rewrite kinds it named (timings.jsonl), for each
    backend that named rewrites on at least one case (``rewrites`` recorded, maybe empty)."""
    def named(r) -> dict:
        """backend -> the rewrite kinds it named on case ``r`` (a backend without a record left out)."""
        out = {}
        for b, t in ((folder.timings.get(r["case"]) or {}).get("backends") or {}).items():
            kinds = t.get("rewrites") if isinstance(t, dict) else None
            if isinstance(kinds, list):
                out[b] = [str(x) for x in kinds]
        return out

    recorded = {b for r in folder.records for b in named(r)}
    order = [b for b in backends(folder) if b in recorded] + sorted(recorded - set(backends(folder)))
    return _cumulative(folder, order, lambda r: [(b, x) for b, kinds in named(r).items() for x in kinds])


@dataclass
class Finding:
    backend: str
    fingerprint: str
    cluster: str
    verdict: str
    typed: str  # the reduced operators, typed, or the whole case's pattern
    cause: str  # the cluster's readable key
    first_case: str
    first_position: int
    cases: list = field(default_factory=list)
    classes: list = field(default_factory=list)
    bundle: str | None = None  # the first case's bundle folder, relative to the run folder
    repro: str | None = None  # the reduced repro's folder, relative to the run folder
    confirmed_at: int | None = None  # position of the first case where it was not flaky
    cause_id: str = ""  # the gate's cause (identity ``cause``, else the cluster): one row of the page each
    detail: str = ""  # the first case's verdict detail: the backend's ``Type: message``, or what differs
    error: dict | None = None  # the first case's error as the worker caught it (type, message, frames, stage)
    sub_model: str | None = None  # the cut bundle it showed in, when found behind another failure of its case
    behind_refused: list = field(default_factory=list)  # ONNX types refused in the case before it showed
    behind_failure: bool = False  # showed once another failure's operators were cut out of its case
    dtypes: list = field(default_factory=list)


def _judged(rec: dict):
    """Each verdict of a record, then the findings made behind it (``v["more"]``: failures
    found with the operators of an earlier one cut out of the case), each with the verdict
    it was found behind (None for the record's own verdicts)."""
    for v in rec["verdicts"]:
        yield v, None
        for x in v.get("more", ()):
            yield x, v


def findings(folder) -> list:
    """Every distinct finding of the folder (one per fingerprint), in the order of its
    first case."""
    empty = Baseline()
    out: dict = {}
    for pos, r in enumerate(folder.records, 1):
        for v, top in _judged(r):
            if v["verdict"] == V.REFERENCE_ERROR:
                continue  # dlgate's own failure, not a finding
            cls = D.classify(r, v, empty)  # None or flaky do not depend on the baseline
            if cls is None:
                continue
            i = D.ident(v)
            f = out.get(i["fingerprint"])
            if f is None:
                f = out[i["fingerprint"]] = Finding(
                    v["backend"], i["fingerprint"], i.get("cluster") or i["fingerprint"], v["verdict"],
                    i.get("typed") or i.get("pattern") or "",
                    i.get("cause_text") or i.get("cluster_text") or i.get("text") or "", r["case"], pos,
                    cause_id=i.get("cause") or i.get("cluster") or i["fingerprint"], detail=str(v.get("detail") or ""),
                    error=v.get("error") if isinstance(v.get("error"), dict) else None,
                    dtypes=list(i.get("dtypes") or ()))
                if top is not None and isinstance(v.get("bundle"), str):
                    f.sub_model = v["bundle"]
            if top is not None:
                f.behind_failure |= top["verdict"] != V.UNSUPPORTED
                for t in refused_behind(folder, r, top, v):
                    if t not in f.behind_refused:
                        f.behind_refused.append(t)
            if r["case"] not in f.cases:
                f.cases.append(r["case"])
            if cls != D.FLAKY and f.confirmed_at is None:
                f.confirmed_at = pos
            bundle = v.get("bundle") or r.get("bundle")
            if f.bundle is None and isinstance(bundle, str) and os.path.isdir(os.path.join(folder.path, bundle)):
                f.bundle = bundle
    decided = _classes(folder.verdict)
    for f in out.values():
        rel = os.path.join("repros", f.fingerprint)
        if os.path.isfile(os.path.join(folder.path, rel, "repro.json")):
            f.repro = rel
        if decided is not None:
            f.classes = decided.get(f.fingerprint, [])
        else:
            f.classes = [UNDECIDED] if f.confirmed_at is not None else [D.FLAKY]
    return sorted(out.values(), key=lambda f: (f.first_position, f.backend, f.fingerprint))


def _spec_types(spec_op: str) -> tuple:
    """The ONNX operator types a generator spec emits (its own node first, then its helper
    nodes); () for a name this dlgate does not know (a record of another version)."""
    try:
        s = get(spec_op)
    except KeyError:
        return ()
    return (s.onnx_op,) + tuple(s.onnx_ops)


def named_refused(rec: dict, v: dict) -> list:
    """The ONNX operator types of case ``rec`` that refusal ``v`` names (TVM lists the types it
    has no converter for; onnxruntime names the type and its node), as whole, case-sensitive
    words, in the case's order; [] when the message names none of them. The case's types are
    those its specs emit (``rec["operators"]``), so no model file is needed: the batch keeps
    only failing cases' bundles."""
    err = v.get("error") if isinstance(v.get("error"), dict) else {}
    text = f"{err.get('type', '')}: {err.get('message', '')}" if err else str(v.get("detail") or "")
    types = dict.fromkeys(t for op in rec.get("operators") or () if isinstance(op, str) for t in _spec_types(op))
    return [t for t in types if re.search(rf"(?<![A-Za-z0-9_]){re.escape(t)}(?![A-Za-z0-9_])", text)]


def _cut_types(folder, rec: dict, indices) -> list:
    """The primary ONNX types of the case's nodes at ``indices`` (its bundle's meta.json graph);
    [] when the bundle is not there."""
    try:
        with open(os.path.join(folder.path, rec.get("bundle") or "", "meta.json"), encoding="utf-8") as f:
            nodes = json.load(f)["graph"]["nodes"]
        ops = [nodes[i]["op"] for i in indices]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return []
    return list(dict.fromkeys(t for op in ops for t in _spec_types(op)[:1]))


def refused_behind(folder, rec: dict, top: dict, x: dict) -> list:
    """The ONNX types the backend refused in case ``rec`` before finding ``x`` (made behind
    verdict ``top``) showed: those the case's own refusal names, and the operators of refusals
    met in cut models and cut before ``x`` (:func:`dlgate.gate.decide.behind_refusal`)."""
    out = named_refused(rec, top) if top["verdict"] == V.UNSUPPORTED else []
    cut = set(x.get("cut") or ())
    for c in (top.get("residual") or {}).get("cuts", ()):
        ops = set(c.get("operators") or ())
        if c.get("for") == V.UNSUPPORTED and ops <= cut and top["verdict"] != V.UNSUPPORTED:
            out += [t for t in _cut_types(folder, rec, sorted(ops)) if t not in out]
    return out


@dataclass
class Refusal:
    """An ONNX operator type a backend refused (``unsupported``), over the run's cases."""

    backend: str
    operator: str  # "" when the refusal names none of the case's operators
    cases: list = field(default_factory=list)
    message: str = ""  # the first case's message, as the backend worded it


def refusals(folder) -> list:
    """Every (backend, refused ONNX type) of the run's cases (each case's own verdicts), the
    most frequent first, then by name."""
    out: dict = {}
    for r in folder.records:
        for v in r["verdicts"]:
            if v["verdict"] != V.UNSUPPORTED:
                continue
            for t in named_refused(r, v) or [""]:
                x = out.setdefault((v["backend"], t), Refusal(v["backend"], t, message=str(v.get("detail") or "")))
                if r["case"] not in x.cases:
                    x.cases.append(r["case"])
    return sorted(out.values(), key=lambda x: (-len(x.cases), x.backend, x.operator == "", x.operator))


def _classes(verdict: dict | None) -> dict | None:
    if verdict is None:
        return None
    out: dict = {}
    for cls, key in CLASS_KEYS:
        for g in verdict.get(key) or ():
            if isinstance(g, dict) and cls not in out.setdefault(g.get("fingerprint"), []):
                out[g.get("fingerprint")].append(cls)
    return out


def finding_curves(folder, found: list) -> dict:
    """Backend -> {"findings": curve, "causes": curve}: cumulative distinct findings
    (fingerprints) and causes (the gate's causes, as the summary and the page's rows count
    them: one converter's bug met in several dtypes or sibling operators is one) of every
    backend under test, each counted from the first case where it was not flaky (a finding
    only ever flaky is not counted)."""
    n = len(folder.records)
    out = {}
    for b in backends(folder) + sorted({f.backend for f in found} - set(backends(folder))):
        mine = [f for f in found if f.backend == b and f.confirmed_at is not None]
        causes: dict = {}
        for f in mine:
            key = f.cause_id or f.cluster
            causes[key] = min(causes.get(key, n), f.confirmed_at)
        out[b] = {"findings": _running([f.confirmed_at for f in mine], n), "causes": _running(causes.values(), n)}
    return out


def _running(positions, n: int) -> list:
    """The cumulative count, after each of ``n`` cases, of items first seen at ``positions`` (1-based)."""
    at = Counter(positions)
    total, curve = 0, []
    for pos in range(1, n + 1):
        total += at[pos]
        curve.append(total)
    return curve
