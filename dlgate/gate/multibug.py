"""More than one finding per case: what a failure, or a refusal, hides in the rest of a model.

A model stops at its first failure on a backend: a crash in one operator, a converter the
compiler lacks, a wrong answer that reduction pins on two operators, and the other
operators go untested. So once a failure is confirmed, reduced (its operators are those of
its reduced case, traced back: :attr:`dlgate.reduce.reducer.Reduced.kept`) and run on the
base build, those operators are cut out of the model (:mod:`dlgate.reduce.cutout`: the
others are fed the reference's values of what the cut operators made) and the rest runs
again on the same backend, judged exactly as a case is (:func:`dlgate.check.check`: the
reference on the rest, the same oracle, the same excuses for undefined or invalid
results). A failure there goes through the same triage as the first
(:class:`dlgate.gate.triage.Triage`: base-build run on the same cut model, confirmation,
reduction or a reused reduction of its cause), and becomes a finding of its own; its
operators are cut in turn (a failure left unreduced because the base build shares it:
the operators its message names). A refusal (``unsupported``) is cut the same way: the
operators it names, or else those the reducer shrinks it to. A dynamic-shape model
refused for its symbolic dimensions runs first at its first binding, whole.

It stops when the rest passes (or is undefined or invalid), when no operator is left, at
``findings_per_case`` findings (the first included), after ``2 * findings_per_case`` cuts,
or once it has spent ``(findings_per_case - 1) * reduce_seconds``. A failure of a cause
found before in the model (the same cluster: for errors and crashes the message template
and innermost frames, for a wrong answer its fingerprint) is cut and not recorded again.

Each further finding is journaled inside the case's record, under its verdict:
``v["more"]``, a list of verdicts of the same shape (``confirm``, ``identity``, ``base``)
plus ``cut`` (the indices of the operators cut out of the case before it showed) and
``bundle`` (the cut model, in ``cases/<case>/cut<k>-<backend>/``); ``v["residual"]``
records each cut (``operators``, what it was ``for``, the verdict of the ``rest``) and
why the search ``stopped``.
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, replace

from dlgate.check import check, save_bundle
from dlgate.gate import triage as T
from dlgate.gate.decide import ident
from dlgate.oracle import verdict as V
from dlgate.reduce.cutout import cut_out, reference_values, refused, valid
from dlgate.reduce.reducer import NotReproduced, Reducer, Target

#: Why the search ends, per verdict of the rest that ends it.
_ENDS = {V.PASS: "the rest passes", V.UNDEFINED: "the rest is undefined", V.INVALID: "the rest is invalid",
         V.SKIPPED: "the backend cannot run here", V.REFERENCE_ERROR: "the reference fails on the rest"}
#: What a dynamic-shape model refused for its symbolic dimensions says (dlgate.check).
_SYMBOLIC = "symbolic input dimensions is not accepted"


@dataclass
class Search:
    """Everything the search needs from the run: the run's triage (:class:`dlgate.gate.triage.Triage`,
    which confirms, reduces and runs on the base build each further finding as it does the
    first) and ``findings_per_case``."""

    triage: T.Triage
    limit: int  # findings_per_case

    @classmethod
    def of(cls, cfg, triage: T.Triage) -> "Search":
        return cls(triage, cfg.findings_per_case)

    @property
    def pool(self):
        return self.triage.pool

    @property
    def ccfg(self):
        return self.triage.ccfg

    @property
    def out(self) -> str:
        return self.triage.out

    @property
    def reduce_seconds(self) -> float:
        return self.triage.reduce_seconds

    @property
    def base_pool(self):
        return self.triage.base_pool

    @property
    def log(self):
        return self.triage.log


def _cause(v: dict) -> str:
    """A finding's cause: its cluster (for a wrong answer, its fingerprint; for a support
    regression, the operator refused: one message template names every operator a
    compiler lacks)."""
    i = ident(v)
    return i["cause"] if v["verdict"] == V.UNSUPPORTED and i.get("refused") else i["cluster"]


def _refusal(s: Search, case, spec, v: dict, reduced=None) -> list:
    """The operators of ``case`` behind a refusal (or a failure left unreduced): those it
    names, else those of its reduction (``reduced``: a support regression's), else those
    the reducer shrinks the case to, in about two probes an operator (empty when none
    finds them)."""
    named = refused(case.graph, v.get("error"))
    if named:
        return named
    if reduced is not None and reduced.kept:
        return list(reduced.kept)
    n = len(case.graph.nodes)
    try:
        return list(Reducer(s.pool, s.ccfg, Target.of(spec, v), max_seconds=s.reduce_seconds, max_probes=2 * n + 2,
                            matter_probes=0).reduce(case).kept)
    except NotReproduced:
        return []
    except Exception as e:  # a defect of dlgate's own: no operators to cut, the run goes on
        s.log(f"dlgate: cannot find the refused operators of {case.id} on {spec.label()}: {type(e).__name__}: {e}")
        return []


def _folder(case_id: str, k: int, label: str) -> str:
    return os.path.join("cases", case_id, f"cut{k}-" + re.sub(r"[^A-Za-z0-9_.@-]+", "-", label).strip("-"))


def search(s: Search, case, spec, v: dict, reduced=None, kind: str = "batch") -> bool:
    """Look behind verdict ``v`` of backend ``spec`` on ``case`` (``reduced``: its
    failure's reduction, when it was reduced); records ``v["more"]`` and
    ``v["residual"]``. True when it found a further finding."""
    if s.limit <= 1 or kind == "baseline":
        return False
    if v["verdict"] not in V.FAILURES + (V.UNSUPPORTED,) or not (v.get("confirm") or {}).get("reproduced", True):
        return False  # nothing hides behind a pass; a flaky failure has no operators to cut
    causes = [_cause(v)] if v["verdict"] in V.FAILURES or v.get("identity") else []
    found, more, cuts, removed = len(causes), [], [], set()
    if v["verdict"] == V.UNSUPPORTED:
        symbolic = bool(case.graph.dynamic) and _SYMBOLIC in (v.get("detail") or "")
        cut_now, why = ([], "symbolic dimensions") if symbolic else (_refusal(s, case, spec, v, reduced), "unsupported")
    elif reduced is not None or _unreduced(v):
        cut_now, why = _operators(s, case, spec, v, reduced), v["identity"]["fingerprint"]
        if not cut_now:
            v["residual"] = {"cuts": [], "stopped": "the failure was not reduced (pre-existing) and its message names "
                                                    "none of its operators" if reduced is None else
                                                    "its operators are not known"}
            return False
    else:
        v["residual"] = {"cuts": [], "stopped": "the failure was not reduced: its operators are not known"}
        return False
    try:
        env = reference_values(case)
    except Exception as e:  # the reference cannot give the cut tensors' values: nothing to feed
        s.log(f"dlgate: cannot cut {case.id}: the reference's intermediate values failed: {type(e).__name__}: {e}")
        v["residual"] = {"cuts": [], "stopped": "the reference's intermediate values are not known"}
        return False
    t0 = time.perf_counter()
    stopped = None
    while stopped is None:
        if cut_now is None or (not cut_now and why != "symbolic dimensions"):
            stopped = "the operators to cut are not known"
        elif found >= s.limit:
            stopped = f"findings_per_case ({s.limit}) reached"
        elif len(cuts) >= 2 * s.limit:
            stopped = f"{2 * s.limit} cuts made"
        elif time.perf_counter() - t0 > (s.limit - 1) * s.reduce_seconds:
            stopped = "time bound reached"
        if stopped is not None:
            break
        removed.update(cut_now)
        cuts.append({"operators": sorted(cut_now), "for": why})
        got = cut_out(case, env, removed, f"cut{len(cuts)}")
        if got is None:
            stopped = "nothing left to run"
            break
        c, keep = got
        if not valid(c):
            stopped = "ONNX's checker refuses the rest"
            break
        ref: list = []
        x = check(s.pool, c, replace(s.ccfg, backends=[spec]), ref)["verdicts"][0]
        cuts[-1]["rest"] = x["verdict"]
        x["cut"] = sorted(removed)
        cut_now, why, record = None, None, False
        if x["verdict"] in V.FAILURES:
            res = s.triage.failure(c, spec, ref, x, what="cut case")
            record = True
            if res is not None or _unreduced(x):
                cut_now, why = [keep[k] for k in _operators(s, c, spec, x, res)], x["identity"]["fingerprint"]
            else:
                stopped = "not reproduced on re-run" if "identity" not in x else \
                    "the failure was not reduced: its operators are not known"
        elif x["verdict"] == V.UNSUPPORTED:
            res = None
            if s.base_pool is not None:  # head refuses what the base build runs: a regression, reduced
                res = s.triage.refusal(c, spec, ref, x, what="cut case")
                record = T.support_regression(x)
            cut_now, why = [keep[k] for k in _refusal(s, c, spec, x, res)], "unsupported"
        else:
            stopped = _ENDS.get(x["verdict"], f"the rest is {x['verdict']}")
            if x["verdict"] == V.REFERENCE_ERROR:
                s.log(f"dlgate: the reference fails on {c.id} (cut out of {case.id}): {x.get('detail', '')[:200]}")
        if record:
            cause = _cause(x)
            if cause in causes:
                cuts[-1]["again"] = cause  # one cause met twice in the model: cut, not recorded twice
            else:
                causes.append(cause)
                found += 1
                x["bundle"] = os.path.relpath(save_bundle(s.out, c, subdir=_folder(case.id, len(cuts), spec.label())),
                                              s.out)
                more.append(x)
    if more:
        v["more"] = more
    v["residual"] = {"cuts": cuts, "stopped": stopped}
    return bool(more)


def _unreduced(v: dict) -> bool:
    """A failure left unreduced because the base build shares it (``reduce_pre_existing``
    false)."""
    return (v.get("identity") or {}).get("not_reduced") == "pre-existing"


def _operators(s: Search, case, spec, v: dict, reduced) -> list:
    """The operators of ``case`` to cut for looking behind failure ``v``: its reduction's
    (``reduced``); for a failure not reduced because the base build shares it, only those
    its message names (finding the others would cost what its reduction was spared); for a
    reused reduction whose operators are not found here, those a short localisation finds
    (:func:`_refusal`)."""
    if reduced is not None and reduced.kept:
        return list(reduced.kept)
    if reduced is None:
        return refused(case.graph, v.get("error"))
    return _refusal(s, case, spec, v)


def split_timings(v: dict, keys: tuple) -> list:
    """Move what varies from run to run out of ``v``'s further findings (timings, the
    worker's log): one dict per finding, for timings.jsonl."""
    out = []
    for x in v.get("more", ()):
        t = {k: x.pop(k) for k in keys if k in x}
        if (x.get("error") or {}).get("log") is not None:
            t["log"] = x["error"].pop("log")
        for extra in ("confirm", "base"):
            for k in keys:
                (x.get(extra) or {}).pop(k, None)
        out.append(t)
    return out
