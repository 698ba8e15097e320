"""What a change-aware batch covered: per case, the target it was aimed at and the targets
it exercised (journaled with the case, so shards merge and a resumed run keeps them); per
target, over the run, how many models were aimed at it and exercised it, how many of
those a backend tested (did not refuse), and for a rewrite how many times each backend
applied it. A target no model tested is a gap, with why.
"""
from __future__ import annotations

from dlgate.change.aim import Aim, exercised, resolve
from dlgate.change.targets import REWRITE, TargetSet
from dlgate.ops.registry import all_specs

#: Verdicts that mean a backend did not test the model (refused it, or could not run).
_UNTESTED = ("unsupported", "skipped", "unavailable")


def aims_of(doc: dict):
    """(aims, gaps) of a recorded change (``run.json``'s ``change``)."""
    ts = TargetSet.from_json(doc)
    return resolve(ts.targets, ts.compiler)


def case_row(aims, graph, meta: dict) -> dict:
    row = {"exercised": exercised(aims, graph)}
    if meta.get("aimed"):
        row["aimed"] = meta["aimed"]["target"]
    return row


def rewrites_of(timings) -> dict:
    """``{(case id, backend label): rewrite kinds}`` from a run's timing lines (the backends
    that recorded them), as :func:`table` takes them."""
    out = {}
    for t in timings:
        for label, x in (t.get("backends") or {}).items():
            if isinstance(x, dict) and x.get("rewrites") is not None:
                out[(t.get("case"), label)] = x["rewrites"]
    return out


def _expects(aim: Aim, compiler: str) -> set:
    specs = all_specs()
    kinds = {f"transformer:{aim.target.name}", f"pass:{aim.target.name}"}
    for n in aim.specs:
        kinds.update(getattr(specs[n], "expects", ()) or ())
    return kinds


def table(doc: dict, records: list, rewrites: dict) -> dict:
    """The coverage table of a run's change. ``rewrites``: ``{(case id, backend label):
    kinds}`` from the run's timings."""
    aims, gaps = aims_of(doc)
    by_key = {a.target.key: a for a in aims}
    rows = []
    ts = TargetSet.from_json(doc)
    for t in ts.targets:
        row = {"target": t.key, "kind": t.kind, "name": t.name, "why": t.why, "aimed": 0, "models": 0, "tested": 0}
        a = by_key.get(t.key)
        expects = _expects(a, ts.compiler) if a is not None and t.kind == REWRITE else None
        applied: dict = {}
        for r in records:
            ch = r.get("change") or {}
            if ch.get("aimed") == t.key:
                row["aimed"] += 1
            if t.key not in (ch.get("exercised") or ()):
                continue
            row["models"] += 1
            verdicts = r.get("verdicts") or []
            if any(v.get("verdict") not in _UNTESTED for v in verdicts):
                row["tested"] += 1
            if expects is not None:
                for v in verdicts:
                    label = v.get("backend")
                    kinds = rewrites.get((r.get("case"), label))
                    if kinds is None:
                        continue
                    applied.setdefault(label, 0)
                    if expects & set(kinds):
                        applied[label] += 1
        if expects is not None:
            row["applied"] = applied
        if t.key in gaps:
            row["gap"] = gaps[t.key]
        elif row["models"] == 0:
            row["gap"] = ("aimed at, but no draw could place it (the configuration, its dtypes or the probed "
                          "support leave it out)" if row["aimed"] else
                          "no case was aimed at it (more targets than aimed cases: a larger batch reaches it)")
        elif row["tested"] == 0:
            row["gap"] = "every model exercising it was refused (unsupported) by the backends"
        rows.append(row)
    files = doc.get("files") or []
    return {"compiler": ts.compiler, "source": doc.get("source", ""), "table": doc.get("table") or {},
            "target_share": doc.get("target_share"), "rows": rows,
            "files": files, "ordinary": not rows}
