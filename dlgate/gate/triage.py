"""What the gate learns about one failing verdict before it is journaled.

For each candidate verdict that is a failure (and, against a base build, each one that is
not a pass), in order:

1. **confirm**: re-run it. It *reproduces* when a re-run fails in the same class with the
   same cause (the same cluster for errors and crashes; any wrong answer for a wrong
   answer). A failure that reproduces with other wrong values (uninitialised memory, a
   race) is still a failure, marked ``varies``; only one that never reproduces is flaky.
2. **identify**: reduce the case on the warm workers and take the failure's fingerprint
   and cluster from the reduced case (:mod:`dlgate.reduce.identity`); the reduced repro is
   written once per fingerprint to ``OUT/repros/<fingerprint>/``.
3. **base**: in head-versus-base mode, run the same model on the same inputs on the base
   build. The base *shares* the failure when it is the same failure (:func:`same`): the
   same class and, for errors and crashes, the same message whatever the build's spelling
   (:func:`dlgate.oracle.signature.share_key`: source positions, template arguments,
   object reprs and stack frames normalized away; operator names and the message's words
   kept); for a wrong answer, wrong at the same output: a base build wrong in another
   output of the model (an older bug) does not hide a new error in this one. A case the
   base build passes is a regression of the head build, whatever its class on head (a
   wrong answer, an error, or a model head no longer supports).
4. **base, on the reduced case**: when the base build fails the model otherwise (it stops
   first at another operator: one it lacks, an older bug, a result it is excused for as
   undefined), that earlier failure hides whether it has head's. Sharing is then decided
   on the reduced case (for a finding behind another failure, the cut case's reduction),
   run on the base build and compared with head's failure on it: only a base build that
   passes it, or fails it differently, leaves the failure new. ``v["base"]["decided_on"]``
   says which case decided: ``case``, ``cut case`` or ``reduced case`` (then ``whole``
   keeps the base build's verdict on the case itself).
"""
from __future__ import annotations

import os

from dlgate.check import judge_backend
from dlgate.oracle import memsafety as MS
from dlgate.oracle import signature as S
from dlgate.oracle import verdict as V
from dlgate.reduce import identity as I

#: Head verdicts re-run on the base build: every failure, and refusals (a model the base
#: build ran and head no longer supports is a regression).
BASE_CHECKED = V.FAILURES + (V.UNSUPPORTED,)


def cause(verdict: str, backend_name: str, error: dict | None) -> tuple:
    """What two runs of one case must share to be the same failure: the class and, for
    errors and crashes, the cluster (message template and innermost frames)."""
    if verdict in V.VALUE_CLASSES:
        return ("value",)
    return (verdict, S.cluster(verdict, backend_name, error)["id"])


def _cause_of(v) -> tuple:
    if isinstance(v, dict):
        return cause(v["verdict"], v["backend"].split("[", 1)[0], v.get("error"))
    return cause(v.verdict, v.backend.split("[", 1)[0], v.error)


def confirm(pool, case, ccfg, spec, ref_out: list, v: dict, runs: int) -> None:
    want = _cause_of(v)
    seen, causes, values = [], [], set()
    for _ in range(runs):
        again = judge_backend(pool, case, ccfg, spec, ref_out, crosscheck=False, explain=False)
        seen.append([again.verdict, (again.signature or {}).get("id")])
        causes.append(_cause_of(again))
        if causes[-1] == want and again.comparison:
            values.add(_values(again.comparison))
    v["confirm"] = {"runs": runs, "reproduced": want in causes}
    if v.get("comparison") and values - {_values(v["comparison"])}:
        v["confirm"]["varies"] = True  # wrong, and wrong differently from run to run
    if any(c != want for c in causes):
        v["confirm"]["seen"] = seen


def _values(comparison: dict) -> tuple:
    return (comparison.get("max_abs"), comparison.get("max_rel"), tuple(comparison.get("first_index") or ()))


def same(head, base) -> bool:
    """Whether ``base`` (a verdict, or its JSON) is the same failure as ``head`` on one case:
    both failures of the same class with the same :func:`~dlgate.oracle.signature.share_key`
    for errors and crashes; for wrong answers, any wrong answer at the output head's is at."""
    h, b = (x if isinstance(x, dict) else x.to_json() for x in (head, base))
    if b["verdict"] in (V.PASS, V.UNDEFINED, V.SKIPPED):
        return False
    if h["verdict"] in V.VALUE_CLASSES:
        return b["verdict"] in V.VALUE_CLASSES and _same_output(h.get("comparison"), b.get("comparison"))
    name = h["backend"].split("[", 1)[0]
    return h["verdict"] == b["verdict"] and S.share_key(h["verdict"], name, h.get("error")) == \
        S.share_key(b["verdict"], name, b.get("error"))


def on_base(base_pool, case, ccfg, spec, ref_out: list, v: dict, reduced=None, pool=None, what: str = "case") -> None:
    """Run ``case`` on the base build and record in ``v["base"]`` whether it shares ``v``
    (``what``: ``case``, or ``cut case`` for a finding behind another failure). When the
    base build fails the case otherwise and ``reduced`` (the failure's reduction,
    :class:`dlgate.reduce.reducer.Reduced`) is given, sharing is decided on the reduced case
    instead (its reference run on ``pool``)."""
    bv = judge_backend(base_pool, case, ccfg, spec, ref_out, crosscheck=False, explain=True)
    shares = same(v, bv)
    v["base"] = _base_record(bv, shares, what)
    if shares or bv.verdict in (V.PASS, V.SKIPPED) or reduced is None or pool is None \
            or v["verdict"] not in V.FAILURES or reduced.case is case:
        return  # a base build that passes the model: head's failure there is new, whatever the parts do
    from dlgate.backends.base import Model

    ref = pool.execute(ccfg.reference, Model(reduced.case.model, reduced.case.graph), reduced.case.inputs)
    if not ref.ok:
        return
    rv = judge_backend(base_pool, reduced.case, ccfg, spec, ref.outputs, crosscheck=False, explain=True)
    whole = {k: v["base"][k] for k in ("verdict", "signature", "detail") if k in v["base"]}
    v["base"] = dict(_base_record(rv, same(reduced.verdict, rv), "reduced case"), whole=whole)


def _base_record(bv, shares: bool, decided_on: str) -> dict:
    """``v["base"]``: the base build's verdict on the case that decided, and whether it shares
    head's failure (with its detail when it fails otherwise)."""
    rec = {"verdict": bv.verdict, "signature": (bv.signature or {}).get("id"), "reproduces": shares,
           "versions": bv.versions, "decided_on": decided_on}
    if bv.verdict not in (V.PASS, V.UNDEFINED) and not shares:
        rec["detail"] = bv.detail[:300]
    return rec


def _same_output(head: dict | None, base: dict | None) -> bool:
    """For wrong answers: whether the base build is wrong at the output head's finding is
    described by (every output the base gets wrong beyond rounding counts). Errors, and a
    wrong number of outputs, concern the whole model."""
    hout, bout = (head or {}).get("output"), (base or {}).get("output")
    if hout is None or bout is None:
        return True
    return hout in (base.get("differing") or [bout])


def identify(pool, case, ccfg, spec, ref_out: list, v: dict, out: str, campaign: str, root: str,
             reduce: bool, max_seconds: float, log=print):
    """Reduce the failure and record its identity (``v["identity"]``); write its repro.
    Returns the reduction (:class:`dlgate.reduce.reducer.Reduced`), or None when the case
    was identified whole."""
    from dlgate.backends.base import Model
    from dlgate.reduce.bundle import write_repro
    from dlgate.reduce.reducer import NotReproduced, Reducer, Target

    backend_name = spec.name
    reduced, matter, res = case, None, None
    # a failure at a further binding of a dynamic case only shows with the symbolic model run
    # at two shapes: the reducer's static candidates cannot show it, so the case stays whole
    if reduce and not v.get("shape"):
        cl = S.cluster(v["verdict"], backend_name, v.get("error"))["id"]
        try:
            res = Reducer(pool, ccfg, Target(spec, v["verdict"], (v.get("signature") or {}).get("id"), cluster=cl),
                          max_seconds=max_seconds).reduce(case)
            reduced, matter = res.case, getattr(res, "matter", None)
        except NotReproduced as e:  # did not fail the same way again: identify the whole case
            log(f"dlgate: cannot reduce {case.id} on {spec.label()}: {e}")
        except Exception as e:  # a defect of dlgate's own: the case is identified whole, the run goes on
            log(f"dlgate: cannot reduce {case.id} on {spec.label()}: a defect in dlgate's reducer "
                f"({type(e).__name__}: {e}); the case is identified whole")
    error = v.get("error") if res is None else (res.verdict.error or v.get("error"))
    comparison = v.get("comparison") if res is None else (res.verdict.comparison or v.get("comparison"))
    ident = I.identity(v["verdict"], backend_name, error, reduced.graph, matter, comparison)
    ident.update(reduced=res is not None, nodes=len(reduced.graph.nodes), original_nodes=len(case.graph.nodes))
    # read while the worker's output is still on the record (the journal keeps it apart)
    ms = MS.classify(v["verdict"], v.get("error")) or (res is not None and MS.classify(v["verdict"], error))
    if ms:
        ident["memory_safety"] = ms
    if res is not None:
        ident["hit_limit"] = res.hit_limit
    d = os.path.join(out, "repros", ident["fingerprint"])
    if res is not None and not os.path.exists(os.path.join(d, "repro.json")):
        ref = pool.execute(ccfg.reference, Model(reduced.model, reduced.graph), reduced.inputs)
        if ref.ok:
            info = {"campaign": campaign, "root": root, "case": case.id, "original_nodes": res.original_nodes,
                    "probes": res.probes, "reduce_seconds": round(res.seconds, 2), "hit_limit": res.hit_limit,
                    "identity": {k: ident[k] for k in ("fingerprint", "cluster", "pattern", "typed", "text")}}
            if ms:
                info["memory_safety"] = ms
            write_repro(d, reduced, spec, res.verdict.to_json(), ref.outputs, info, ccfg.tolerances)
            log(f"dlgate: reduced {case.id} from {res.original_nodes} to {len(reduced.graph.nodes)} operators "
                f"({ident['typed']}) in {res.seconds:.1f} s: repros/{ident['fingerprint']}")
    if os.path.exists(os.path.join(d, "repro.json")):
        ident["repro"] = os.path.join("repros", ident["fingerprint"])
    v["identity"] = ident
    return res
