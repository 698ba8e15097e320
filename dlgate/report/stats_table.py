"""``stats.json`` as table rows: every value the file holds, with what it means.

The file is shown as it is: nested objects flattened to dotted keys, nothing computed,
nothing left out but the per-kind rewrite counts, which are returned apart (a table per
backend). Keys this module does not know are shown too, with an empty meaning.
"""
from __future__ import annotations

import json
import math

from dlgate.stats import PERCENT  # the diversity metrics shown as percentages

#: Meanings by full key, by the key's first part(s), or by its last part.
MEANING = {
    "cases_run": "cases this invocation ran (a resumed run counts only its own)",
    "wall_s": "seconds the cases took, wall clock",
    "backend_s": "seconds the workers spent compiling and running",
    "worker_start_s": "seconds spent starting workers",
    "coverage.features": "distinct graph features of this criterion in the coverage state the run ended with "
                         "(its start state included)",
    "coverage.rewrite_kinds": "distinct rewrite kinds of this backend in the coverage state the run ended with",
    "graphs": "graphs measured",
    "corpus": "operation types in the corpus the operation-level metrics average over",
    "types_seen": "operation types generated",
    "types_missing": "operation types never generated",
    "NOO": "operations per graph (mean)",
    "NOT": "distinct operation types per graph (mean)",
    "NOP": "distinct type pairs over edges per graph (mean)",
    "NTR": "distinct type triples over adjacent edges per graph (mean)",
    "NSA": "distinct (type, input types, attributes) per graph (mean)",
    "OTC": "operation types that occur",
    "IDC": "input degrees seen of those each type can have",
    "ODC": "distinct output degrees per type (mean)",
    "SEC": "successor types seen, of all types",
    "DEC": "(successor, successor's successor) pairs seen, of all pairs",
    "SAC": "distinct (input types, attributes) per type (mean)",
    "div_V": "GenCoG vertex diversity",
    "div_E": "GenCoG edge diversity",
}


def _flatten(doc: dict, prefix: str = ""):
    for k in sorted(doc, key=str):
        v, key = doc[k], f"{prefix}{k}"
        if isinstance(v, dict) and v:
            yield from _flatten(v, key + ".")
        else:
            yield key, v


def _meaning(key: str) -> str:
    parts = key.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in MEANING:
            return MEANING[".".join(parts[:n])]
    return MEANING.get(parts[-1], "")


def _value(key: str, v) -> str:
    last = key.rsplit(".", 1)[-1]
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        return f"{100 * v:.2f}%" if last in PERCENT else f"{v:.4g}"
    if isinstance(v, list):
        return ", ".join(str(x) for x in v) if v else "none"
    if isinstance(v, dict):
        return "none"  # an empty object
    return str(v)


def stats_rows(stats: dict) -> tuple:
    """([(key, value text, meaning)], {backend: {rewrite kind: cases}}) of a stats.json."""
    rewrites = stats.get("rewrites") if isinstance(stats.get("rewrites"), dict) else {}
    rows = [(k, _value(k, v), _meaning(k)) for k, v in _flatten({k: v for k, v in stats.items()
                                                                  if not (k == "rewrites" and rewrites)})]
    kinds = {str(b): (dict(c) if isinstance(c, dict) else {}) for b, c in rewrites.items()}
    return rows, kinds
