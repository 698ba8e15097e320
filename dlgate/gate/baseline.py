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


#: The most a baseline file may hold (thousands of entries take a few MiB).
MAX_BYTES = 64 << 20
_TEXT_KEYS = ("backend", "verdict", "cluster", "typed", "text", "example", "last_seen")


def _what(v) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "null"}.get(type(v), type(v).__name__)


def _failure_entry(entry, required: tuple) -> str | None:
    """What is wrong with a fingerprint (or format-1 signature) entry, or None."""
    if not isinstance(entry, dict):
        return f"expected a mapping with {', '.join(required)}, got {_what(entry)}"
    for k in required:
        if not isinstance(entry.get(k), str) or not entry[k]:
            return f"{k}: expected a non-empty string, got {_what(entry.get(k))}"
    for k in _TEXT_KEYS:
        if k in entry and not isinstance(entry[k], str):
            return f"{k}: expected a string, got {_what(entry[k])}"
    cases = entry.get("cases", 0)
    if isinstance(cases, bool) or not isinstance(cases, int) or cases < 0:
        return f"cases: expected a non-negative integer, got {cases!r}"
    repro = entry.get("repro")
    if repro is not None and (not isinstance(repro, str) or not repro or repro in (".", "..")
                              or "/" in repro or "\\" in repro or "\0" in repro):
        return f"repro: expected the name of a folder in the baseline's repros folder, got {repro!r}"
    return None


def _cluster_entry(entry) -> str | None:
    if not isinstance(entry, dict):
        return f"expected a mapping, got {_what(entry)}"
    for k in ("backend", "verdict", "text"):
        if k in entry and not isinstance(entry[k], str):
            return f"{k}: expected a string, got {_what(entry[k])}"
    fps = entry.get("fingerprints", [])
    if not isinstance(fps, list) or not all(isinstance(x, str) for x in fps):
        return "fingerprints: expected a list of fingerprints"
    return None


def _corpus_entry(entry) -> str | None:
    if not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values()):
        return "expected a mapping of backend labels to \"pass\" or a fingerprint"
    return None


_ENTRY_CHECKS = {"fingerprints": lambda e: _failure_entry(e, ("backend", "verdict", "cluster")),
                 "signatures": lambda e: _failure_entry(e, ("backend",)), "clusters": _cluster_entry,
                 "corpus": _corpus_entry}


def load(path: str | None, missing_ok: bool = True) -> Baseline:
    """The baseline at ``path``; an empty one when there is no path or (``missing_ok``) no
    file yet, e.g. the first run of a new campaign. Every entry is checked here, so a
    malformed one is a BaselineError naming the file and the entry before any work starts."""
    if not path:
        return Baseline()
    if not os.path.exists(path):
        if missing_ok:
            return Baseline(path=path)
        raise BaselineError(f"{path}: no such baseline file")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)  # bounded: a baseline pointed at /dev/zero must not eat the memory
    except OSError as e:
        raise BaselineError(f"{path}: not a readable baseline: {e.strerror or e}") from None
    if len(data) > MAX_BYTES:
        raise BaselineError(f"{path}: larger than {MAX_BYTES >> 20} MiB; not a dlgate baseline")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as e:  # not JSON, not UTF-8, nested too deeply
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise BaselineError(f"{path}: not a readable baseline (not JSON: {why})") from None
    if not isinstance(doc, dict) or type(doc.get("dlgate_baseline")) is not int or \
            doc.get("dlgate_baseline") not in READABLE:
        raise BaselineError(f"{path}: not a dlgate baseline (expected \"dlgate_baseline\": {FORMAT})")
    parts = {k: doc.get(k, {}) for k in ("fingerprints", "clusters", "corpus", "signatures")}
    for k, v in parts.items():
        if not isinstance(v, dict):
            raise BaselineError(f"{path}: \"{k}\" must be a mapping, got {_what(v)}")
        for name, entry in v.items():
            problem = _ENTRY_CHECKS[k](entry)
            if problem:
                raise BaselineError(f"{path}: {k}[{name!r}]: {problem}")
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
