"""The known-failure baseline: failure signatures a team has accepted, committed or cached.

A small JSON file, sorted and indented so that its diffs read well in review::

    {
     "corpus": {"<corpus case>": {"<backend label>": "pass" | "<signature id>"}},
     "dlgate_baseline": 1,
     "signatures": {"<signature id>": {"backend": "tvm", "verdict": "compile_error",
                                        "text": "...", "cases": 3, "example": "00012-...",
                                        "last_seen": "<root>"}}
    }

``dlgate baseline update`` writes it from a run on the default branch: it adds the run's
failures to the entries already there (a per-commit batch cannot prove that a failure it
did not hit is gone); ``--prune`` drops the entries this run did not see.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from dlgate.gate.journal import write_json

FORMAT = 1


class BaselineError(ValueError):
    pass


@dataclass
class Baseline:
    signatures: dict = field(default_factory=dict)
    corpus: dict = field(default_factory=dict)
    path: str | None = None

    def to_json(self) -> dict:
        return {"dlgate_baseline": FORMAT, "signatures": self.signatures, "corpus": self.corpus}

    def save(self, path: str | None = None) -> str:
        path = path or self.path
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        write_json(path, self.to_json())
        return path


def load(path: str | None, missing_ok: bool = True) -> Baseline:
    """The baseline at ``path``; an empty one when there is no path or (``missing_ok``) no
    file yet, e.g. the first run of a new campaign."""
    if not path:
        return Baseline()
    if not os.path.exists(path):
        if missing_ok:
            return Baseline(path=path)
        raise BaselineError(f"{path}: no such baseline file")
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise BaselineError(f"{path}: not a readable baseline: {e}") from None
    if not isinstance(doc, dict) or doc.get("dlgate_baseline") != FORMAT:
        raise BaselineError(f"{path}: not a dlgate baseline (expected \"dlgate_baseline\": {FORMAT})")
    sigs, corpus = doc.get("signatures", {}), doc.get("corpus", {})
    if not isinstance(sigs, dict) or not isinstance(corpus, dict):
        raise BaselineError(f"{path}: \"signatures\" and \"corpus\" must be mappings")
    return Baseline(dict(sigs), dict(corpus), path)


def update(base: Baseline, decision, prune: bool = False) -> Baseline:
    """The baseline after accepting every failure of ``decision`` (flaky ones excepted)."""
    sigs = {} if prune else dict(base.signatures)
    for group in decision.failure_groups():
        old = base.signatures.get(group["signature"], {})
        sigs[group["signature"]] = {
            "backend": group["backend_name"], "verdict": group["verdict"], "text": group["text"],
            "cases": max(len(group["cases"]), int(old.get("cases", 0) or 0)),
            "example": old.get("example") or group["cases"][0], "last_seen": decision.root,
        }
    corpus = {} if prune else {k: dict(v) for k, v in base.corpus.items()}
    for name, states in decision.corpus_states.items():
        corpus.setdefault(name, {}).update(states)
    return Baseline(dict(sorted(sigs.items())), dict(sorted(corpus.items())), base.path)
