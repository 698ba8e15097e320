"""The gate's decision, a pure function of the journaled records and the baseline.

A failure's identity is its fingerprint and cluster, taken from its *reduced* case
(:mod:`dlgate.reduce.identity`); groups, the baseline, "known" and "fixed" all use them.
Every failing verdict lands in exactly one class:

* **flaky**: no re-run reproduced it at all; never fails. (A failure that reproduces with
  other wrong values is a failure, marked ``varies``.)
* **new**: fails the check. Head versus base: the base build does not share the failure
  on the same model and inputs (or, where it fails that model otherwise, on the failure's
  reduced case: :func:`dlgate.gate.triage.on_base`), whatever the head class (a model head no longer supports
  that the base build runs counts too). Baseline mode: neither its fingerprint nor its
  cluster is in the baseline.
* **regression**: baseline mode, a corpus case that passed before fails now; fails.
* **pre-existing**: head versus base, the base build shares it; reported, eligible for an
  issue, does not fail the check.
* **known**: in the baseline (fingerprint, or cluster: one cause met through other
  operators), a baseline entry's own repro that still fails, or a corpus case that failed
  before too.

A **cause** (:mod:`dlgate.reduce.identity`: for errors and crashes the cluster) is in exactly
one class per run, as is each fingerprint: when one cause is new in one case and pre-existing
(or known, or flaky) in another, the most severe class (the order of :data:`CLASSES`) takes
all its cases, and ``cases_by_class`` in its groups keeps each case's own class. So the
summary, verdict.json, the HTML report and issues list a cause once, their counts add up, and
a cause new in any case still fails the check.

**Fixed** is claimed only when shown: a baseline entry whose reduced repro passes now, or
a corpus case that failed before and passes now; never because a batch missed a failure.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from dlgate.oracle import memsafety as MS
from dlgate.oracle import verdict as V

NEW, KNOWN, FLAKY, PRE_EXISTING, REGRESSION = "new", "known", "flaky", "pre-existing", "regression"
#: The equivalence oracle's finding (:mod:`dlgate.rewrite.oracle`; the same word, kept here so
#: deciding needs no rewrite code).
INCONSISTENT = "inconsistent"
CLASSES = (NEW, REGRESSION, PRE_EXISTING, KNOWN, FLAKY)

#: Exit statuses: no new failures; new failures; usage or configuration error; dlgate's own
#: defect (the reference failed); a backend the gate needs could not run (the compiler
#: under test, the reference, or the base build: not installed, a broken build, no device).
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL, EXIT_CANNOT_RUN = 0, 1, 2, 3, 4
#: What each status is called in verdict.json's ``result`` (an interrupted run's is 128 + the
#: signal's number, 130 or 143, called "interrupted").
RESULTS = {EXIT_OK: "pass", EXIT_FAIL: "fail", EXIT_INTERNAL: "internal-error", EXIT_CANNOT_RUN: "cannot-run"}
INTERRUPTED = "interrupted"


def backend_name(label: str) -> str:
    return label.split("[", 1)[0]


def ident(v: dict) -> dict:
    """A verdict's identity: fingerprint and cluster from its reduced case; a verdict that
    was not identified (flaky, or a record from an older run) falls back to its signature."""
    i = v.get("identity")
    if i:
        return i
    sig = (v.get("signature") or {}).get("id", "")
    return {"fingerprint": sig, "cluster": sig, "pattern": "", "typed": "", "text": (v.get("signature") or {}).get("text", "")}


def findings(rec: dict):
    """Each verdict of a record followed by the findings made behind it (``v["more"]``,
    :mod:`dlgate.gate.multibug`): ``(verdict, k)``, ``k`` 0 for the verdict itself and
    1, 2, ... for those found behind it."""
    for v in rec["verdicts"]:
        yield v, 0
        for k, x in enumerate(v.get("more", ()), start=1):
            yield x, k


def classify(record: dict, v: dict, baseline) -> str | None:
    """The class of one verdict, or None when it is not a failure."""
    base = v.get("base")
    if (v.get("pair") or {}).get("same_as"):
        return None  # the direct Relax path's side of the importer path's finding (backends.relax_pair)
    if v["verdict"] == V.TIR_SLOW and not v.get("gates"):
        return None  # reported, never a finding unless the campaign says so (tir_slow_gates)
    if v["verdict"] not in V.FAILURES and v["verdict"] != V.TIR_SLOW:
        # head refuses a model the base build runs: a regression, whatever the class
        return NEW if base is not None and base.get("verdict") == V.PASS else None
    confirm = v.get("confirm")
    if confirm is not None and not confirm.get("reproduced", True):
        return FLAKY
    i = ident(v)
    known = baseline.knows(i["fingerprint"], i["cluster"], (v.get("signature") or {}).get("id", ""))
    if base is not None:  # head versus base: the base build decides
        if not base.get("reproduces"):
            return NEW
        return KNOWN if known or record.get("kind") == "baseline" else PRE_EXISTING
    if record.get("kind") == "corpus":
        before = baseline.corpus.get(record["corpus_name"], {}).get(v["backend"])
        if before == "pass":
            return REGRESSION
        if before is not None:
            return KNOWN
    if record.get("kind") == "baseline" or known:
        return KNOWN
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
    unavailable: dict = field(default_factory=dict)  # optional backend label -> why it cannot run here
    cannot_run: dict = field(default_factory=dict)  # required backend, reference or base build -> why
    unloadable: dict = field(default_factory=dict)  # saved case (corpus, baseline repro) left out -> why
    clusters: list = field(default_factory=list)  # failure groups sharing one cause
    mode: str = "baseline"  # how novelty is decided: "base" (head versus base) or "baseline"
    baseline_path: str | None = None
    baseline_size: int = 0
    behind: int = 0  # findings made behind another failure of their case (its operators cut out)
    planned: int | None = None  # cases the run (or the shards merged) planned; ``cases`` of them ran
    budget: float | None = None  # the campaign's ``budget`` (seconds per invocation), None: none
    stopped_by_budget: bool = False  # the budget left planned cases unstarted (a rerun resumes)
    baseline_missing: bool = False  # a baseline file is named but does not exist: none is known
    #: SIGTERM or SIGINT stopped the run before it finished: {"signal", "exit_code", "cases",
    #: "planned"}. The check is then undecided, never a pass, whatever the cases that ran show.
    interrupted: dict | None = None
    #: A change-aware run's coverage table (``dlgate.change.coverage.table``), else None.
    change: dict | None = None
    #: The equivalence oracle's twins (``rewrite_share``): backend label -> status -> n.
    #: Kept apart from ``counts``: a twin's verdict is never one against the reference.
    twins: dict = field(default_factory=dict)

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
        """The status of the run: an interrupted one's (130 or 143) whatever it found, else
        what the cases decide (:meth:`cases_code`)."""
        if self.interrupted:
            return self.interrupted["exit_code"]
        return self.cases_code(fail_on)

    def cases_code(self, fail_on: str = "new") -> int:
        """What the journaled cases decide: the run's status when it finished; for an
        interrupted run, what the cases that ran found so far."""
        if self.internal:
            return EXIT_INTERNAL
        if self.cannot_run:
            return EXIT_CANNOT_RUN
        return EXIT_FAIL if self.failing(fail_on) else EXIT_OK

    def result(self, fail_on: str = "new") -> str:
        return INTERRUPTED if self.interrupted else RESULTS[self.cases_code(fail_on)]

    def to_json(self, fail_on: str = "new") -> dict:
        interrupted = None
        if self.interrupted:  # what the cases that ran found, under a name no reader takes for the result
            interrupted = dict(self.interrupted, result_so_far=RESULTS[self.cases_code(fail_on)])
        doc = {
            "result": self.result(fail_on), "interrupted": interrupted,
            "exit_code": self.exit_code(fail_on), "fail_on": fail_on, "root": self.root, "campaign": self.campaign,
            "complete": self.complete, "backends": self.backends, "cases": self.cases, "counts": self.counts,
            "new": self.of(NEW), "regressions": self.of(REGRESSION), "pre_existing": self.of(PRE_EXISTING),
            "known": self.of(KNOWN), "flaky": self.of(FLAKY), "fixed": self.fixed, "internal_errors": self.internal,
            "unavailable": self.unavailable, "cannot_run": self.cannot_run, "unloadable": self.unloadable, "novelty": self.mode, "baseline": self.baseline_path, "clusters": len(self.clusters), "cluster_list": self.clusters,
            "findings_behind": self.behind, "planned": self.planned, "budget": self.budget,
            "stopped_by_budget": self.stopped_by_budget, "baseline_missing": self.baseline_missing,
            "change": self.change,
        }
        if self.twins:  # a run with twins (rewrite_share) only: other runs' verdict.json is as it was
            doc["twins"] = self.twins
        return doc


def decide(records: list, baseline, root: str, campaign: str, backends: list, complete: bool,
           mode: str = "baseline", optional=(), cannot_run: dict | None = None) -> Decision:
    """``optional``: labels of backends that may be skipped where they cannot run; any other
    backend that could not run (``skipped``), and a base build that could not, fails the
    gate; ``cannot_run``: what the run's start-up check already found (label -> why)."""
    d = Decision(root, campaign, complete, list(backends), cases=len(records), mode=mode,
                 baseline_path=baseline.path, baseline_size=len(baseline.fingerprints) + len(baseline.signatures),
                 cannot_run=dict(cannot_run or {}))
    counts: dict = defaultdict(Counter)
    groups: dict = {}  # (class, signature) -> group
    for rec in sorted(records, key=_order):
        for v in rec["verdicts"]:
            counts[v["backend"]][v["verdict"]] += 1
            if v["verdict"] == V.SKIPPED:
                why = (v.get("detail") or "").strip()[:300]
                (d.unavailable if v["backend"] in optional else d.cannot_run).setdefault(v["backend"], why)
            if (v.get("base") or {}).get("verdict") == V.SKIPPED:
                d.cannot_run.setdefault(f"{v['backend']} (base build)", (v["base"].get("detail") or "").strip()[:300])
            if v["verdict"] == V.REFERENCE_ERROR:
                d.internal.append({"case": rec["case"], "detail": v.get("detail", "")[:500]})
                continue
            cls = classify(rec, v, baseline)
            if rec.get("kind") == "corpus":
                d.corpus_states.setdefault(rec["corpus_name"], {})[v["backend"]] = \
                    "pass" if v["verdict"] == V.PASS else (ident(v)["fingerprint"] if cls not in (None, FLAKY) else None)
                if d.corpus_states[rec["corpus_name"]][v["backend"]] is None:
                    del d.corpus_states[rec["corpus_name"]][v["backend"]]
            if rec.get("kind") == "baseline" and v["verdict"] == V.PASS:
                entry = baseline.fingerprints.get(rec["baseline_entry"], {})
                d.fixed.append({"fingerprint": rec["baseline_entry"], "backend": v["backend"],
                                "cluster": entry.get("cluster"), "text": entry.get("typed") or entry.get("text", ""),
                                "why": "its reduced repro passes now"})
            if cls is not None:
                _group(groups, cls, rec, v, rec.get("bundle"))
            for x in v.get("more", ()):  # found behind it, with its operators cut out
                d.behind += 1
                cls = classify(rec, x, baseline)
                if cls is not None:
                    _group(groups, cls, rec, x, x.get("bundle") or rec.get("bundle"), behind=True,
                           refused=behind_refusal(v, x))
        twin_counts(d, rec, groups, baseline)
    d.counts = {b: dict(sorted(c.items())) for b, c in sorted(counts.items())}
    groups = one_class(groups)
    for (cls, _), g in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[1]["cases"][0], kv[0][1])):
        d.groups.setdefault(cls, []).append(g)
    # fixed: corpus cases that failed before and pass now; baseline signatures not hit
    origins = {r["corpus_name"]: r.get("corpus_origin") or {} for r in records if r.get("kind") == "corpus"}
    for name, states in sorted(d.corpus_states.items()):
        for label, state in sorted(states.items()):
            before = baseline.corpus.get(name, {}).get(label)
            if before is None and origins.get(name, {}).get("backend") == label:
                before = origins[name].get("signature")  # the failure the case was added for
            if state == "pass" and before not in (None, "pass"):
                d.fixed.append({"fingerprint": before, "corpus": name, "backend": label,
                                "text": baseline.fingerprints.get(before, {}).get("typed", ""),
                                "why": "the corpus case passes now"})
    d.clusters = clusters(d.failure_groups())
    return d


def twin_counts(d: Decision, rec: dict, groups: dict, baseline) -> None:
    """The record's twins (:mod:`dlgate.rewrite.oracle`) counted in ``d.twins``, and each
    ``inconsistent`` one grouped as a finding of that class: flaky where its confirmation
    did not reproduce it, known where the baseline holds its identity, pre-existing where
    the base build's twin is inconsistent the same way (head versus base,
    :func:`dlgate.rewrite.oracle.base_check`), new otherwise."""
    for t in rec.get("twins", ()):
        per = d.twins.setdefault(t["backend"], {})
        per[t["status"]] = per.get(t["status"], 0) + 1
        if t["status"] != INCONSISTENT:
            continue
        v = dict(t, verdict=INCONSISTENT)
        i = ident(v)
        if (t.get("confirm") or {}).get("reproduced") is False:
            cls = FLAKY
        elif rec.get("kind") == "baseline" or baseline.knows(i["fingerprint"], i["cluster"],
                                                               (t.get("signature") or {}).get("id", "")):
            cls = KNOWN
        elif (t.get("base") or {}).get("reproduces"):
            cls = PRE_EXISTING
        else:
            cls = NEW
        _group(groups, cls, rec, v, t.get("bundle") or rec.get("bundle"))


def behind_refusal(v: dict, x: dict) -> bool:
    """Whether finding ``x``, made behind verdict ``v`` of its case, showed once an operator the
    backend refuses (``unsupported``) was cut out: the case's own verdict is a refusal, or a
    refusal met in a cut model was cut before ``x`` showed."""
    if v["verdict"] == V.UNSUPPORTED:
        return True
    cut = set(x.get("cut") or ())
    return any(c.get("for") == V.UNSUPPORTED and set(c.get("operators") or ()) <= cut
               for c in (v.get("residual") or {}).get("cuts", ()))


def _group(groups: dict, cls: str, rec: dict, v: dict, bundle: str | None, behind: bool = False,
           refused: bool = False) -> None:
    """Add failing verdict ``v`` of ``rec`` (``behind``: found behind another failure of
    the case, with its operators cut out; ``refused``: behind an operator the backend
    refuses) to its (class, fingerprint) group."""
    i, sig = ident(v), v.get("signature") or {}
    key = (cls, i["fingerprint"])
    g = groups.get(key)
    if g is None:
        g = groups[key] = {
            "class": cls, "fingerprint": i["fingerprint"], "cluster": i["cluster"], "signature": sig.get("id"),
            "text": i.get("text") or sig.get("text", ""), "pattern": i.get("pattern", ""),
            "typed": i.get("typed", ""), "cluster_text": i.get("cluster_text", ""),
            "cause": i.get("cause") or i["cluster"], "cause_text": i.get("cause_text") or i.get("cluster_text", ""),
            "dtypes": list(i.get("dtypes") or ()),
            "backend": v["backend"], "backend_name": backend_name(v["backend"]), "verdict": v["verdict"],
            "detail": (v.get("detail") or "")[:1000], "blame": v.get("blame"), "cases": [], "bundles": [],
            "varies": False, "base": None, "behind": 0, "behind_refused": 0, "cases_by_class": {},
        }
        if i.get("repro"):
            g["repro"] = i["repro"]
    g["cases"].append(rec["case"])
    g["cases_by_class"][cls] = g["cases_by_class"].get(cls, 0) + 1
    g["behind"] += behind
    g["behind_refused"] += refused
    # a possible memory-safety bug (never filed in public): from the identity, which saw the
    # worker's output, else from the signal the record keeps
    ms = "memory_safety" not in g and (i.get("memory_safety") or MS.classify(v["verdict"], v.get("error")))
    if ms:
        g["memory_safety"] = ms
    g["varies"] |= bool((v.get("confirm") or {}).get("varies"))
    if v.get("base") and g["base"] is None:
        g["base"] = {k: v["base"].get(k) for k in ("verdict", "reproduces", "detail", "decided_on", "whole",
                                                        "reused")
                     if k in v["base"]}
    if bundle:
        g["bundles"].append(bundle)


def overlaps(groups: list) -> list:
    """Causes and fingerprints listed in more than one class: ``[(id, [classes])]``, sorted.
    Empty for a :class:`Decision` (:func:`one_class` sees to it); a check for any list of
    groups that claims one class per cause."""
    seen: dict = defaultdict(set)
    for g in groups:
        seen[("cause", g.get("cause") or g["cluster"])].add(g["class"])
        seen[("fingerprint", g["fingerprint"])].add(g["class"])
    rank = {cls: k for k, cls in enumerate(CLASSES)}
    return sorted((f"{kind} {x}", sorted(c, key=rank.get)) for (kind, x), c in seen.items() if len(c) > 1)


def one_class(groups: dict) -> dict:
    """The (class, fingerprint) groups with each cause in one class: groups that share a
    cause or a fingerprint (transitively) all take the most severe class among them, and a
    fingerprint's groups merge into one, the winning class's cases and bundles first. Each
    group's ``cases_by_class`` keeps how many of its cases each class claimed on their own."""
    parent: dict = {}

    def find(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    first: dict = {}
    for key, g in groups.items():
        parent.setdefault(key, key)
        for tag in (("fingerprint", g["fingerprint"]), ("cause", g.get("cause") or g["cluster"])):
            if tag in first:
                parent[find(key)] = find(first[tag])
            else:
                first[tag] = key
    rank = {cls: k for k, cls in enumerate(CLASSES)}
    parts: dict = defaultdict(list)
    for key in groups:
        parts[find(key)].append(key)
    out: dict = {}
    for keys in parts.values():
        cls = min((k[0] for k in keys), key=rank.get)
        for key in sorted(keys, key=lambda k: (rank[k[0]], k[1])):
            g = groups[key]
            target = (cls, g["fingerprint"])
            if target not in out:
                out[target] = dict(g, **{"class": cls, "cases": list(g["cases"]), "bundles": list(g["bundles"]),
                                         "cases_by_class": dict(g["cases_by_class"])})
                continue
            m = out[target]
            m["cases"] += g["cases"]
            m["bundles"] += g["bundles"]
            for c, n in g["cases_by_class"].items():
                m["cases_by_class"][c] = m["cases_by_class"].get(c, 0) + n
            m["behind"] += g["behind"]
            m["behind_refused"] += g["behind_refused"]
            m["varies"] |= g["varies"]
            for k in ("base", "memory_safety", "repro", "blame"):
                if m.get(k) is None and g.get(k) is not None:
                    m[k] = g[k]
    for g in out.values():
        g["cases_by_class"] = dict(sorted(g["cases_by_class"].items(), key=lambda kv: rank[kv[0]]))
    return out


def clusters(groups: list) -> list:
    """Failure groups that share one cause (:mod:`dlgate.reduce.identity`: for errors and
    crashes their cluster, for wrong answers the operators up to dtype and siblings and the
    wrong-value pattern): one entry per cause with its clusters, fingerprints, operators,
    dtypes, classes and case count, in a stable order."""
    out: dict = {}
    for g in groups:
        cause = g.get("cause") or g["cluster"]
        c = out.setdefault(cause, {"cause": cause, "backend": g["backend"], "verdict": g["verdict"],
                                   "text": g.get("cause_text") or g.get("cluster_text") or g["text"], "clusters": [],
                                   "fingerprints": [], "operators": set(), "dtypes": set(), "classes": set(),
                                   "cases": 0})
        for key, x in (("clusters", g["cluster"]), ("fingerprints", g["fingerprint"])):
            if x not in c[key]:
                c[key].append(x)
        c["operators"].update(p for p in g.get("pattern", "").split(">") if p)
        c["dtypes"].update(g.get("dtypes") or ())
        c["classes"].add(g["class"])
        c["cases"] += len(g["cases"])
    rank = {cls: k for k, cls in enumerate(CLASSES)}
    res = []
    for c in out.values():
        c["operators"], c["dtypes"] = sorted(c["operators"]), sorted(c["dtypes"])
        c["classes"] = sorted(c["classes"], key=rank.get)
        res.append(c)
    return sorted(res, key=lambda c: (rank[c["classes"][0]], c["backend"], c["text"], c["cause"]))


_KIND_ORDER = {"corpus": 0, "baseline": 1}


def _order(rec: dict) -> tuple:
    return (_KIND_ORDER.get(rec.get("kind"), 2), rec.get("corpus_name") or rec.get("baseline_entry") or "",
            rec.get("index") or 0, rec["case"])
