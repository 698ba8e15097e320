"""The gate's decision, a pure function of the journaled records and the baseline.

Every failing verdict lands in exactly one class:

* **flaky**: a re-run did not reproduce it (same verdict and signature); never fails.
* **regression**: a corpus case that passed before fails now; fails the check.
* **known**: its signature is in the baseline (or the corpus case failed before too).
* **pre-existing**: not in the baseline, but the base build fails the same way
  (head-versus-base mode); reported, eligible for an issue, does not fail the check.
* **new**: everything else; fails the check.

**Fixed**: baseline signatures of the backends under test that no verdict of a complete run
(unsharded, or merged) hit any more, and corpus cases that failed before and pass now.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from dlgate.oracle import verdict as V

NEW, KNOWN, FLAKY, PRE_EXISTING, REGRESSION = "new", "known", "flaky", "pre-existing", "regression"
CLASSES = (NEW, REGRESSION, PRE_EXISTING, KNOWN, FLAKY)

#: Exit statuses.
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def backend_name(label: str) -> str:
    return label.split("[", 1)[0]


def classify(record: dict, v: dict, baseline) -> str | None:
    """The class of one verdict, or None when it is not a failure."""
    if v["verdict"] not in V.FAILURES:
        return None
    confirm = v.get("confirm")
    if confirm is not None and not confirm.get("reproduced", True):
        return FLAKY
    sig = (v.get("signature") or {}).get("id", "")
    if record.get("kind") == "corpus":
        before = baseline.corpus.get(record["corpus_name"], {}).get(v["backend"])
        if before == "pass":
            return REGRESSION
        if before is not None:
            return KNOWN
    if sig in baseline.signatures:
        return KNOWN
    base = v.get("base")
    if base is not None and base.get("reproduces"):
        return PRE_EXISTING
    return NEW


@dataclass
class Decision:
    root: str
    campaign: str
    complete: bool
    backends: list
    cases: int = 0
    counts: dict = field(default_factory=dict)  # backend label -> verdict -> n
    groups: dict = field(default_factory=dict)  # class -> [group]
    fixed: list = field(default_factory=list)
    corpus_states: dict = field(default_factory=dict)  # corpus name -> backend label -> pass | sig
    internal: list = field(default_factory=list)  # reference errors: dlgate's own failures
    unavailable: dict = field(default_factory=dict)  # backend label -> why it cannot run here

    def of(self, cls: str) -> list:
        return self.groups.get(cls, [])

    def failure_groups(self) -> list:
        return [g for c in (NEW, REGRESSION, PRE_EXISTING, KNOWN) for g in self.of(c)]

    def failing(self, fail_on: str) -> list:
        """The groups that fail the check under the ``fail_on`` policy."""
        if fail_on == "none":
            return []
        if fail_on == "any":
            return self.failure_groups()
        return self.of(NEW) + self.of(REGRESSION)

    def exit_code(self, fail_on: str = "new") -> int:
        if self.internal:
            return EXIT_INTERNAL
        return EXIT_FAIL if self.failing(fail_on) else EXIT_OK

    def to_json(self, fail_on: str = "new") -> dict:
        code = self.exit_code(fail_on)
        return {
            "result": {EXIT_OK: "pass", EXIT_FAIL: "fail", EXIT_INTERNAL: "internal-error"}[code],
            "exit_code": code, "fail_on": fail_on, "root": self.root, "campaign": self.campaign,
            "complete": self.complete, "backends": self.backends, "cases": self.cases, "counts": self.counts,
            "new": self.of(NEW), "regressions": self.of(REGRESSION), "pre_existing": self.of(PRE_EXISTING),
            "known": self.of(KNOWN), "flaky": self.of(FLAKY), "fixed": self.fixed, "internal_errors": self.internal,
            "unavailable": self.unavailable,
        }


def decide(records: list, baseline, root: str, campaign: str, backends: list, complete: bool) -> Decision:
    d = Decision(root, campaign, complete, list(backends), cases=len(records))
    counts: dict = defaultdict(Counter)
    groups: dict = {}  # (class, signature) -> group
    seen_sigs = set()
    for rec in sorted(records, key=_order):
        for v in rec["verdicts"]:
            counts[v["backend"]][v["verdict"]] += 1
            if v["verdict"] == V.SKIPPED:
                d.unavailable.setdefault(v["backend"], (v.get("detail") or "").strip()[:300])
            if v["verdict"] == V.REFERENCE_ERROR:
                d.internal.append({"case": rec["case"], "detail": v.get("detail", "")[:500]})
                continue
            cls = classify(rec, v, baseline)
            sig = v.get("signature") or {}
            if rec.get("kind") == "corpus":
                d.corpus_states.setdefault(rec["corpus_name"], {})[v["backend"]] = \
                    "pass" if v["verdict"] == V.PASS else (sig.get("id") if cls is not None and cls != FLAKY else None)
                if d.corpus_states[rec["corpus_name"]][v["backend"]] is None:
                    del d.corpus_states[rec["corpus_name"]][v["backend"]]
            if cls is None:
                continue
            if cls != FLAKY:
                seen_sigs.add(sig.get("id"))
            key = (cls, sig.get("id"))
            g = groups.get(key)
            if g is None:
                g = groups[key] = {
                    "class": cls, "signature": sig.get("id"), "text": sig.get("text", ""), "backend": v["backend"],
                    "backend_name": backend_name(v["backend"]), "verdict": v["verdict"],
                    "detail": (v.get("detail") or "")[:1000], "blame": v.get("blame"), "cases": [], "bundles": [],
                }
            g["cases"].append(rec["case"])
            if rec.get("bundle"):
                g["bundles"].append(rec["bundle"])
    d.counts = {b: dict(sorted(c.items())) for b, c in sorted(counts.items())}
    for (cls, _), g in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[1]["cases"][0])):
        d.groups.setdefault(cls, []).append(g)
    # fixed: corpus cases that failed before and pass now; baseline signatures not hit
    origins = {r["corpus_name"]: r.get("corpus_origin") or {} for r in records if r.get("kind") == "corpus"}
    for name, states in sorted(d.corpus_states.items()):
        for label, state in sorted(states.items()):
            before = baseline.corpus.get(name, {}).get(label)
            if before is None and origins.get(name, {}).get("backend") == label:
                before = origins[name].get("signature")  # the failure the case was added for
            if state == "pass" and before not in (None, "pass"):
                d.fixed.append({"signature": before, "corpus": name, "backend": label,
                                "text": baseline.signatures.get(before, {}).get("text", ""),
                                "why": "the corpus case passes now"})
    if complete:
        names = {backend_name(b) for b in backends}
        corpus_fixed = {f["signature"] for f in d.fixed}
        for sig, entry in sorted(baseline.signatures.items()):
            if entry.get("backend") in names and sig not in seen_sigs and sig not in corpus_fixed:
                d.fixed.append({"signature": sig, "backend": entry.get("backend"), "text": entry.get("text", ""),
                                "why": "not hit by this run"})
    return d


def _order(rec: dict) -> tuple:
    return (0 if rec.get("kind") == "corpus" else 1, rec.get("corpus_name") or "", rec.get("index") or 0, rec["case"])
