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
   build. The base *shares* the failure when it fails in the same class with the same
   cause, and for a wrong answer at the same output: a base build wrong in another output
   of the model (an older bug) does not hide a new error in this one. A case the base
   build passes is a regression of the head build, whatever its class on head (a wrong
   answer, an error, or a model head no longer supports).
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


def on_base(base_pool, case, ccfg, spec, ref_out: list, v: dict) -> None:
    bv = judge_backend(base_pool, case, ccfg, spec, ref_out, crosscheck=False, explain=True)
    shares = bv.verdict not in (V.PASS, V.UNDEFINED) and _cause_of(bv) == _cause_of(v) and \
        _same_output(v.get("comparison"), bv.comparison)
    v["base"] = {"verdict": bv.verdict, "signature": (bv.signature or {}).get("id"), "reproduces": shares,
                 "versions": bv.versions}
    if bv.verdict not in (V.PASS, V.UNDEFINED) and not shares:
        v["base"]["detail"] = bv.detail[:300]


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
    ident = I.identity(v["verdict"], backend_name, error, reduced.graph, matter)
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
