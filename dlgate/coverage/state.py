"""A campaign's coverage state: what earlier cases (and earlier runs) have covered.

The state is the set of graph features seen (:mod:`dlgate.coverage.features`) and, per
backend, the rewrite kinds its compiler applied. It guides generation
(:mod:`dlgate.coverage.guide`), so a run saves the state it started from beside its
results (``coverage-start.json``, its digest in ``run.json``): with it, the root, the
campaign and the index, any case regenerates byte for byte. The state a run ends with
(``coverage-state.json``) is what the next run (next week's campaign, every shard alike)
starts from.

File format: JSON, ``{"format": 1, "features": [...], "rewrites": {backend: [...]}}``,
both lists sorted, so equal states are equal files.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field

FORMAT = 1


class StateError(ValueError):
    """A coverage state file that cannot be used (one line, naming the file)."""


@dataclass
class CoverageState:
    features: set = field(default_factory=set)
    rewrites: dict = field(default_factory=dict)  # backend label -> set of rewrite kinds

    def copy(self) -> "CoverageState":
        return CoverageState(set(self.features), {b: set(k) for b, k in self.rewrites.items()})

    def add_features(self, feats) -> int:
        """Add features; how many were new."""
        before = len(self.features)
        self.features.update(feats)
        return len(self.features) - before

    def add_rewrites(self, backend: str, kinds) -> int:
        got = self.rewrites.setdefault(backend, set())
        before = len(got)
        got.update(kinds)
        return len(got) - before

    def merge(self, other: "CoverageState") -> None:
        self.features |= other.features
        for b, k in other.rewrites.items():
            self.rewrites.setdefault(b, set()).update(k)

    def fired(self) -> set:
        """Every rewrite kind any backend applied."""
        return set().union(*self.rewrites.values()) if self.rewrites else set()

    def to_json(self) -> dict:
        return {"format": FORMAT, "features": sorted(self.features),
                "rewrites": {b: sorted(k) for b, k in sorted(self.rewrites.items())}}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=0, sort_keys=True) + "\n"

    def digest(self) -> str:
        return hashlib.sha256(self.dumps().encode()).hexdigest()

    def save(self, path: str) -> None:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(self.dumps())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    @staticmethod
    def from_json(doc, where: str = "coverage state") -> "CoverageState":
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise StateError(f"{where}: not a dlgate coverage state (format {FORMAT})")
        feats, rw = doc.get("features", []), doc.get("rewrites", {})
        if not isinstance(feats, list) or not all(isinstance(f, str) and ":" in f for f in feats):
            raise StateError(f"{where}: 'features' must be a list of 'criterion:...' strings")
        if not isinstance(rw, dict) or not all(isinstance(k, list) and all(isinstance(x, str) for x in k)
                                               for k in rw.values()):
            raise StateError(f"{where}: 'rewrites' must map backends to lists of rewrite kinds")
        unknown = set(doc) - {"format", "features", "rewrites"}
        if unknown:
            raise StateError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        return CoverageState(set(feats), {str(b): set(k) for b, k in rw.items()})

    @staticmethod
    def load(path: str) -> "CoverageState":
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except FileNotFoundError:
            raise StateError(f"{path}: no such coverage state file") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise StateError(f"{path}: cannot read a coverage state: {e}") from None
        return CoverageState.from_json(doc, path)
