"""The known-failure baseline: root causes a team has accepted, committed or cached.

A small JSON file, sorted and indented so that its diffs read well in review::

    {
     "dlgate_baseline": 2,
     "fingerprints": {"<fingerprint>": {"backend": "tvm", "verdict": "compile_error",
                                        "cluster": "<cluster>", "typed": "Selu(float16;...)",
                                        "text": "...", "cases": 3, "example": "00012-...",
                                        "last_seen": "<root>", "repro": "<fingerprint>"}},
     "clusters": {"<cluster>": {"backend": "tvm", "verdict": "compile_error", "text": "...",
                                "fingerprints": ["<fingerprint>", ...]}},
     "corpus": {"<corpus case>": {"<backend label>": "pass" | "<fingerprint>"}}
    }

Identities are fingerprints and clusters of *reduced* cases (:mod:`dlgate.reduce.identity`).
Each entry's reduced repro is kept beside the file, in ``<name>.repros/<fingerprint>/``
(``.dlgate/baseline.json`` -> ``.dlgate/baseline.repros/``): every run re-runs them, and an
entry is reported fixed only when its repro passes. ``dlgate baseline update`` writes the
file from a run on the default branch: it adds the run's failures to the entries already
there; ``--prune`` drops the entries this run did not see. A format-1 file (signatures of
unreduced models) is still read: its entries match by signature until the next update.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field

from dlgate.gate.journal import write_json

FORMAT = 2
READABLE = (1, 2)


class BaselineError(ValueError):
    pass


@dataclass
class Baseline:
    fingerprints: dict = field(default_factory=dict)
    clusters: dict = field(default_factory=dict)
    corpus: dict = field(default_factory=dict)
    signatures: dict = field(default_factory=dict)  # format 1 entries, matched by signature
    path: str | None = None

    def knows(self, fingerprint: str, cluster: str, signature: str = "") -> bool:
        """Whether a failure with this identity is accepted: its fingerprint, or another
        fingerprint of its cluster (one cause met through other operators or dtypes)."""
        return fingerprint in self.fingerprints or cluster in self.clusters or \
            bool(signature) and signature in self.signatures

    def repros_dir(self) -> str | None:
        return repros_dir(self.path) if self.path else None

    def repro_cases(self) -> list:
        """Sorted fingerprints whose reduced repro is kept with the baseline."""
        d = self.repros_dir()
        return sorted(fp for fp, e in self.fingerprints.items()
                      if d and e.get("repro") and os.path.isfile(os.path.join(d, e["repro"], "model.onnx")))

    def to_json(self) -> dict:
        doc = {"dlgate_baseline": FORMAT, "fingerprints": self.fingerprints, "clusters": self.clusters,
               "corpus": self.corpus}
        if self.signatures:
            doc["signatures"] = self.signatures
        return doc

    def save(self, path: str | None = None) -> str:
        path = path or self.path
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        write_json(path, self.to_json())
        return path


def repros_dir(path: str) -> str:
    stem = path[:-5] if path.endswith(".json") else path
    return stem + ".repros"


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
    if not isinstance(doc, dict) or doc.get("dlgate_baseline") not in READABLE:
        raise BaselineError(f"{path}: not a dlgate baseline (expected \"dlgate_baseline\": {FORMAT})")
    parts = {k: doc.get(k, {}) for k in ("fingerprints", "clusters", "corpus", "signatures")}
    for k, v in parts.items():
        if not isinstance(v, dict) or not all(isinstance(e, (dict, str)) for e in v.values()):
            raise BaselineError(f"{path}: \"{k}\" must be a mapping")
    return Baseline(dict(parts["fingerprints"]), dict(parts["clusters"]), dict(parts["corpus"]),
                    dict(parts["signatures"]), path)


def update(base: Baseline, decision, prune: bool = False, run_dir: str | None = None) -> Baseline:
    """The baseline after accepting every failure of ``decision`` (flaky ones excepted);
    with ``run_dir``, each new entry's reduced repro is copied beside the baseline file."""
    fps = {} if prune else {k: dict(v) for k, v in base.fingerprints.items()}
    target = base.repros_dir()
    for group in decision.failure_groups():
        fp = group["fingerprint"]
        old = base.fingerprints.get(fp, {})
        entry = {"backend": group["backend_name"], "verdict": group["verdict"], "cluster": group["cluster"],
                 "typed": group.get("typed", ""), "text": group["text"],
                 "cases": max(len(group["cases"]), int(old.get("cases", 0) or 0)),
                 "example": old.get("example") or group["cases"][0], "last_seen": decision.root}
        src = os.path.join(run_dir, group["repro"]) if run_dir and group.get("repro") else None
        if old.get("repro"):
            entry["repro"] = old["repro"]
        elif src and target and os.path.isdir(src):
            dst = os.path.join(target, fp)
            if not os.path.exists(dst):
                shutil.copytree(src, dst)
            entry["repro"] = fp
        fps[fp] = entry
    # entries proven fixed (their repro passes now) leave the baseline
    for f in decision.fixed:
        if f.get("why", "").startswith("its reduced repro") and f["fingerprint"] in fps:
            gone = fps.pop(f["fingerprint"])
            if target and gone.get("repro"):
                shutil.rmtree(os.path.join(target, gone["repro"]), ignore_errors=True)
    clusters: dict = {}
    for fp, e in sorted(fps.items()):
        c = clusters.setdefault(e["cluster"], {"backend": e["backend"], "verdict": e["verdict"],
                                               "text": (base.clusters.get(e["cluster"]) or {}).get("text", ""),
                                               "fingerprints": []})
        c["fingerprints"].append(fp)
    for g in decision.failure_groups():
        if g["cluster"] in clusters:
            clusters[g["cluster"]]["text"] = g.get("cluster_text") or g["text"]
    corpus = {} if prune else {k: dict(v) for k, v in base.corpus.items()}
    for name, states in decision.corpus_states.items():
        corpus.setdefault(name, {}).update(states)
    legacy = {} if prune else dict(base.signatures)
    return Baseline(dict(sorted(fps.items())), dict(sorted(clusters.items())), dict(sorted(corpus.items())),
                    legacy, base.path)
