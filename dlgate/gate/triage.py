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
   With ``base_first`` (the default, :class:`Triage`), this step comes *first*: a failure
   the base build shares is pre-existing and not confirmed (the other build failing the
   same way on the same model confirms it), and unless ``reduce_pre_existing`` asks for it
   (the weekly campaign) not reduced either (``identity.not_reduced``);
   only a failure the base build does not share, or cannot show (it fails the model
   otherwise), goes on to steps 1 and 2.
   A refusal (``unsupported``) that the base build does not share, on a model the base
   build runs, is a regression of head's support (:meth:`Triage.refusal`): it is reduced
   with both builds as the judges (a candidate is kept where head refuses it the same way
   and the base build runs it), so it ends at the operator head refuses, and its cause is
   that operator (:func:`refusal_cause`): one cause per refused operator, however many
   models meet it.
4. **base, on the reduced case**: when the base build fails the model otherwise (it stops
   first at another operator: one it lacks, an older bug, a result it is excused for as
   undefined), that earlier failure hides whether it has head's. Sharing is then decided
   on the reduced case (for a finding behind another failure, the cut case's reduction),
   run on the base build and compared with head's failure on it: only a base build that
   passes it, or fails it differently, leaves the failure new. A failure that was not
   reduced (``reduce: false``, a failure at a further binding of a dynamic case) is decided
   on the cheapest case that isolates it: the cut case it was found on, or else the cone of
   the failing output or operators (:mod:`dlgate.gate.cone`). ``v["base"]["decided_on"]``
   says which case decided: ``case``, ``cut case``, ``reduced case`` or ``cone case`` (then
   ``whole`` keeps the base build's verdict on the case itself).

**One reduction per cause** (``reuse_reductions``): a failure whose cause was reduced in
an earlier case of the run (:func:`reduction_key`: the backend, class, cluster and sharing
key of an error or a crash) takes that reduction's identity and repro
(``identity.reduction.reused`` names the case reduced) instead of being reduced again,
when the case holds the reduced operators (their types and input dtypes: one message can
come from several operators, as TVM's dtype error from the Elu and Selu converters; a case
without them is reduced itself); those operators are what is cut to look behind it. What was reduced is read from the journal (:class:`Reductions`), so a resumed
run reuses exactly what an uninterrupted one does. Where sharing must be decided on a
reduced case (step 4), the reused reduced case decides only when head fails it the same
way as the case at hand; otherwise the case is reduced itself. A wrong answer carries no
message to key it by: before it is confirmed, the wrong-answer causes reduced earlier in the
run (same backend and class) are tried on cuts of its own case (:meth:`Reductions.reuse_wrong`:
the case's operators of the reduced case's kinds, in the wrong outputs' cone, fed the
reference's values), and the first cut head gets wrong with a reduction's fingerprint
reuses it; that cut is the re-run that confirms it and the case sharing is decided on. A
case no cut fails that way is confirmed and reduced itself: a bug in other operators is a
cause of its own.

**A cause decided once** (head versus base, ``base_first``): a failure whose cause has a
reduction the base build was shown not to have (:func:`~dlgate.gate.reuse.new_on_base`)
reuses it before any base-build run and is new without one of its own
(:meth:`Triage._reused_new`): the check is red for that cause whatever the case's own run
would say. A cause the base build shares or could not show is run case by case.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass

from dlgate.backends.base import Model
from dlgate.check import judge_backend
from dlgate.gate.cone import on_cone
from dlgate.gate.progress import ACTIVITY
from dlgate.gate.reuse import CUT_REUSED_CLASSES, Reductions, Reused, hang_key, lookup_key, reduction_key
from dlgate.ops.registry import get
from dlgate.oracle import memsafety as MS
from dlgate.oracle import signature as S
from dlgate.oracle import verdict as V
from dlgate.reduce import identity as I
from dlgate.reduce.bundle import tvm_repro, write_repro
from dlgate.reduce.cutout import refused
from dlgate.reduce.reducer import NotReproduced, Reducer, Target

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
    ACTIVITY.begin(f"confirming case {case.id}'s {v['verdict']} on {spec.label()} (re-running it)")
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
    ACTIVITY.begin(f"running {what} {case.id} on the base build ({spec.label()})")
    bv = judge_backend(base_pool, case, ccfg, spec, ref_out, crosscheck=False, explain=True)
    shares = same(v, bv)
    v["base"] = _base_record(bv, shares, what)
    if reduced is None or pool is None or reduced.case is case:
        return
    # A base build that passes the model: head's failure there is new, whatever the parts do.
    # One that fails it otherwise, or gives a wrong answer at the same output (which may come
    # from another operator of the model: a second instance of an operator the base build
    # also gets wrong), decides on the reduced case, which holds head's failure alone.
    if inconclusive(v) or (shares and v["verdict"] in V.VALUE_CLASSES):
        on_reduced(base_pool, ccfg, spec, v, reduced, pool)


def support_regression(v: dict) -> bool:
    """Whether ``v``, a refusal of head's run on the base build (``v["base"]``), is a
    regression: the base build passes the model head refuses."""
    b = v.get("base") or {}
    return v["verdict"] == V.UNSUPPORTED and b.get("verdict") == V.PASS and not b.get("reproduces")


def inconclusive(v: dict) -> bool:
    """Whether the base build's run of the case (``v["base"]``) leaves open if it shares
    head's failure ``v``: it fails the case otherwise (another failure, a refusal, a result
    excused as undefined), which may hide head's."""
    b = v["base"]
    return v["verdict"] in V.FAILURES and not b["reproduces"] and b["verdict"] not in (V.PASS, V.SKIPPED)


def on_reduced(base_pool, ccfg, spec, v: dict, reduced, pool) -> bool:
    """Decide sharing on ``reduced.case`` (the failure's reduction, or a reused one:
    :class:`Reused`) run on the base build; ``v["base"]`` keeps the whole case's verdict
    in ``whole``. A reused reduced case decides only when head fails it as it fails the
    case (:func:`same`); False when it cannot (nothing is recorded then)."""
    reused = isinstance(reduced, Reused)
    ACTIVITY.begin(f"running reduced case {reduced.case.id} on the base build ({spec.label()})")
    outputs = reduced.ref if reused and reduced.judged and reduced.ref is not None else None
    if outputs is None:
        ref = pool.execute(ccfg.reference, Model(reduced.case.model, reduced.case.graph), reduced.case.inputs)
        if not ref.ok:
            return not reused
        outputs = ref.outputs
    head = reduced.verdict
    if reused and not reduced.judged:  # a wrong answer's cut was judged on head already: the same failure
        head = judge_backend(pool, reduced.case, ccfg, spec, outputs, crosscheck=False, explain=True)
        if not same(v, head):
            return False
    rv = judge_backend(base_pool, reduced.case, ccfg, spec, outputs, crosscheck=False, explain=True)
    whole = {k: v["base"][k] for k in ("verdict", "signature", "detail") if k in v["base"]}
    v["base"] = dict(_base_record(rv, same(head, rv), "reduced case"), whole=whole)
    if reused:
        v["base"]["reused"] = reduced.source
    return True


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
             reduce: bool, max_seconds: float, log=print, reductions: "Reductions | None" = None, base_pool=None,
             tried: bool = False):
    """Reduce the failure and record its identity (``v["identity"]``); write its repro.
    Returns the reduction (:class:`dlgate.reduce.reducer.Reduced`), or None when the case
    was identified whole. With ``reductions`` (the causes reduced earlier in the run), a
    failure of a cause reduced before reuses that reduction (:class:`Reused`), whatever
    ``reduce`` says; a fresh reduction is recorded with its key
    (``identity.reduction``) for later cases. ``base_pool``: a refusal of head's that the
    base build does not share (:meth:`Triage.refusal`) is reduced to what head refuses and
    the base build runs (:class:`~dlgate.reduce.reducer.Reducer`), and its cause is the
    operator refused (:func:`refusal_cause`). ``tried``: the reductions were tried already
    (a wrong answer's, before its confirmation): a fresh reduction is still recorded."""
    key = reduction_key(v) if reductions is not None else None
    found = lookup_key(reductions, v) if key is not None else None
    hang = hang_key(v, case.id) if reductions is not None else None
    if hang is not None:  # the same case's hang, reduced at another level of the backend
        key = hang
        got = reductions.reuse_hang(hang, case, v, pool, spec, log) if hang in reductions else None
        if got is not None:
            return got
    if found is not None and not tried:
        if v["verdict"] in V.VALUE_CLASSES:
            got = reductions.reuse_wrong(found, case, v, pool, ccfg, spec, log)
        else:
            got = reductions.reuse(found, case, v, log)
        if got is not None:
            return got
    backend_name = spec.name
    reduced, matter, res = case, None, None
    # a failure at a further binding of a dynamic case only shows with the symbolic model run
    # at two shapes: the reducer's static candidates cannot show it, so the case stays whole
    if reduce and not v.get("shape"):
        cl = S.cluster(v["verdict"], backend_name, v.get("error"))["id"]
        try:
            res = Reducer(pool, ccfg, Target(spec, v["verdict"], (v.get("signature") or {}).get("id"), cluster=cl),
                          max_seconds=max_seconds, base_pool=base_pool).reduce(case)
            reduced, matter = res.case, getattr(res, "matter", None)
        except NotReproduced as e:  # did not fail the same way again: identify the whole case
            log(f"dlgate: cannot reduce {case.id} on {spec.label()}: {e}")
        except Exception as e:  # a defect of dlgate's own: the case is identified whole, the run goes on
            log(f"dlgate: cannot reduce {case.id} on {spec.label()}: a defect in dlgate's reducer "
                f"({type(e).__name__}: {e}); the case is identified whole")
    error = v.get("error") if res is None else (res.verdict.error or v.get("error"))
    comparison = v.get("comparison") if res is None else (res.verdict.comparison or v.get("comparison"))
    ident = I.identity(v["verdict"], backend_name, error, reduced.graph, matter, comparison)
    up = getattr(res, "upstream", None)
    if up is not None:  # an error a wrong dtype or shape made upstream: that wrong answer's cause
        ident.update(I.upstream_cause(ident, up.verdict.verdict, backend_name, up.case.graph, up.matter,
                                      up.verdict.comparison))
    if v["verdict"] == V.UNSUPPORTED:
        ident.update(refusal_cause(backend_name, reduced.graph, error))
    ident.update(reduced=res is not None, nodes=len(reduced.graph.nodes), original_nodes=len(case.graph.nodes))
    # read while the worker's output is still on the record (the journal keeps it apart)
    ms = MS.classify(v["verdict"], v.get("error")) or (res is not None and MS.classify(v["verdict"], error))
    if ms:
        ident["memory_safety"] = ms
    if res is not None:
        ident["hit_limit"] = res.hit_limit
        if key is not None:
            ident["reduction"] = {"key": key, "case": case.id}
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
            # a TVM finding: its pass list reduced too, and the TVMScript repro beside repro.py
            tvm_repro(pool, ccfg, d, reduced, spec, res.verdict.to_json(), ref.outputs, max_seconds, log)
    if os.path.exists(os.path.join(d, "repro.json")):
        ident["repro"] = os.path.join("repros", ident["fingerprint"])
    v["identity"] = ident
    if reductions is not None and "reduction" in ident:  # the case's other backends may reuse it at once
        reductions.note(v)
    return res


def refusal_cause(backend_name: str, graph, error: dict | None) -> dict:
    """The cause of a support regression (head refuses what the base build runs) whose
    reduced case is ``graph``: the ONNX operator types refused, those of its operators the
    refusal names, else all of its operators (a reduced case holds the one refused). One
    cause per refused operator, whatever the model it was met in, its dtypes or the words of
    the message (onnxruntime names the node, TVM lists every converter it lacks): a missing
    kernel met in 42 models is one row, and two operators lost are two."""
    named = refused(graph, error)
    text = f"{(error or {}).get('type', '')}: {(error or {}).get('message', '')}"
    ops = set()
    for i in (named or range(len(graph.nodes))):
        spec = get(graph.nodes[i].op)  # a spec lowered to several ONNX operators: the one refused
        said = [t for t in (spec.onnx_op, *spec.onnx_ops)
                if named and re.search(rf"(?<![A-Za-z0-9]){re.escape(t)}(?![A-Za-z0-9])", text)]
        ops.update(said[:1] or [spec.onnx_op])
    ops = sorted(ops)
    return {"cause": hashlib.sha256(json.dumps(["refused", backend_name, ops]).encode()).hexdigest()[:16],
            "cause_text": f"{V.UNSUPPORTED}: refuses {', '.join(ops)}, which the base build runs", "refused": ops}


@dataclass
class Triage:
    """What the gate does with a failing head verdict, as the campaign says: confirm it,
    reduce it (or reuse a reduction of its cause) and, head versus base, run it on the base
    build, in the order ``base_first`` says."""

    pool: object
    ccfg: object  # CheckConfig
    out: str
    campaign: str
    root: str
    confirm_runs: int = 1
    reduce: bool = True
    reduce_seconds: float = 60.0
    base_pool: object = None
    base_first: bool = True
    reduce_pre_existing: bool = False
    reductions: Reductions | None = None
    log: object = print

    @classmethod
    def of(cls, cfg, pool, base_pool, ccfg, out: str, root: str, log=print, records=()) -> "Triage":
        """The campaign's triage; ``records``: the journal so far (what was reduced)."""
        red = None
        if cfg.reuse_reductions:
            red = Reductions(out)
            red.add(records)
        return cls(pool, ccfg, out, cfg.campaign, root, cfg.confirm_runs, cfg.reduce, cfg.reduce_seconds, base_pool,
                   cfg.base_first, cfg.reduce_pre_existing, red, log)

    def journaled(self, rec: dict) -> None:
        """A record was journaled: its reductions stand for later cases."""
        if self.reductions is not None:
            self.reductions.add([rec])

    def identify(self, case, spec, ref_out: list, v: dict, reduce: bool | None = None, reuse: bool = True,
                 base_pool=None, tried: bool = False):
        return identify(self.pool, case, self.ccfg, spec, ref_out, v, self.out, self.campaign, self.root,
                        self.reduce if reduce is None else reduce, self.reduce_seconds, self.log,
                        self.reductions if reuse else None, base_pool, tried)

    def refusal(self, case, spec, ref_out: list, v: dict, what: str = "case"):
        """Head versus base, head refuses ``case`` (``v``: ``unsupported``): run it on the base
        build. A refusal the base build shares, or a model it fails too, is no finding; a
        model it runs is a regression of head's support (:func:`support_regression`), reduced
        to what head refuses and the base build runs (the reducer's candidates judged on both
        builds) and identified by the operator refused (:func:`refusal_cause`). Returns the
        reduction (:class:`Reduced` or :class:`Reused`), or None."""
        if self.reductions is not None:
            self.reductions.exclude = set()
        on_base(self.base_pool, case, self.ccfg, spec, ref_out, v, what=what)
        if not support_regression(v):
            return None
        return self.identify(case, spec, ref_out, v, base_pool=self.base_pool)

    def failure(self, case, spec, ref_out: list, v: dict, what: str = "case"):
        """Triage failing verdict ``v`` of ``spec`` on ``case`` (``what``: ``case``, or ``cut
        case`` for a finding behind another failure); its reduction (:class:`Reduced` or
        :class:`Reused`), or None when it has none."""
        if self.reductions is not None:
            self.reductions.exclude = set()
        if self.base_pool is None:
            return self._confirmed(case, spec, ref_out, v)
        if not self.base_first:  # the order before base_first: confirm, reduce, then the base build
            reduced = self._confirmed(case, spec, ref_out, v)
            on_base(self.base_pool, case, self.ccfg, spec, ref_out, v, what=what)
        else:
            early = self._reused_new(case, spec, ref_out, v)
            if early is not None:
                return early
            if (v.get("confirm") or {}).get("reproduced") is False:  # flaky: no base-build run, no reduction
                return None
            on_base(self.base_pool, case, self.ccfg, spec, ref_out, v, what=what)
            if v["base"]["reproduces"]:  # the base build failing the same way confirms it: no re-run
                if not self.reduce_pre_existing:
                    return self._pre_existing(case, spec, ref_out, v)
                reduced = self.identify(case, spec, ref_out, v)
            else:
                reduced = self._confirmed(case, spec, ref_out, v)
        # Decided on the reduced case: a base build failing the case otherwise, and a wrong
        # answer of the base build's at the output head's is at, which may come from another
        # operator of the model (a second instance of one the base build also gets wrong)
        undecided = inconclusive(v) or (v["base"]["reproduces"] and v["verdict"] in V.VALUE_CLASSES)
        if reduced is None:  # not reduced: the cut case decided already, or else the failure's cone
            if undecided and what == "case" and (v.get("confirm") or {}).get("reproduced", True):
                on_cone(self.pool, self.base_pool, self.ccfg, spec, case, v, same, _base_record)
            return reduced
        if undecided:
            return self._on_reduced(case, spec, ref_out, v, reduced)
        return reduced

    def _reused_new(self, case, spec, ref_out: list, v: dict):
        """Head versus base, the base build first: a failure of a cause reduced earlier in the
        run that the base build was shown not to have (:func:`~dlgate.gate.reuse.new_on_base`:
        it passes the case that decided) reuses that reduction and is new without a
        base-build run of its own (``base.decided_on``: ``reused reduction``, ``base.reused``:
        the case reduced). The check is red for that cause whatever this case's base-build run
        would say, and where the whole case must not decide (a base build failing it
        otherwise) the reduced case would decide alike. An error is matched by its message
        and the reduced operators in the case and confirmed as any failure; a wrong answer by
        a cut of its own operators failing with the reduction's fingerprint, which is its
        confirmation. Returns the :class:`Reused`, or None when no such reduction stands for
        the failure (the reductions tried are left out of the lookups that follow:
        :attr:`Reductions.exclude`)."""
        red = self.reductions
        if red is None:
            return None
        key = reduction_key(v)
        if key is None or not red.proven_new(key):
            return None
        wrong = v["verdict"] in CUT_REUSED_CLASSES
        if wrong:
            ACTIVITY.begin(f"trying the new causes reduced before on case {case.id}'s {v['verdict']} "
                           f"on {spec.label()} (cut cases)")
            got = red.reuse_wrong(key, case, v, self.pool, self.ccfg, spec, self.log, only_new=True)
        else:
            got = red.reuse(key, case, v, self.log, only_new=True)
        red.exclude = {k for k in red.new if k[0] == key}  # tried: not again for this failure
        if got is None:
            return None
        if wrong:  # the cut that failed with the reduction's fingerprint re-ran it
            v["confirm"] = {"runs": 1, "reproduced": True, "on": "cut case"}
        else:
            if self.confirm_runs:
                confirm(self.pool, case, self.ccfg, spec, ref_out, v, self.confirm_runs)
            if not v["confirm"]["reproduced"]:
                return None
        b = red.new[(key, got.source)]
        v["base"] = {"verdict": b["verdict"], "signature": b.get("signature"), "reproduces": False,
                     "versions": b.get("versions"), "decided_on": "reused reduction", "reused": got.source}
        return got

    def _on_reduced(self, case, spec, ref_out: list, v: dict, reduced):
        """The base build fails the case otherwise: decide sharing on the reduced case. A
        reused reduction that cannot decide it (no repro, or head fails its reduced case
        otherwise) gives way to a reduction of this case."""
        if reduced.case is not None and reduced.case is not case and \
                on_reduced(self.base_pool, self.ccfg, spec, v, reduced, self.pool):
            return reduced
        if not isinstance(reduced, Reused):
            return reduced
        own = self.identify(case, spec, ref_out, v, reuse=False)
        if own is not None and own.case is not case:
            on_reduced(self.base_pool, self.ccfg, spec, v, own, self.pool)
        return own

    def _confirmed(self, case, spec, ref_out: list, v: dict):
        """Confirm ``v``, then (when it reproduces) identify it. A wrong answer first tries
        the causes reduced before it (:meth:`Reductions.reuse_wrong`): its operators cut out
        failing as a confirmed cause's reduced case did is a re-run that reproduces it
        (``confirm.on``: ``cut case``), so the whole case is not run again."""
        tried = False
        if self.reductions is not None and v["verdict"] in CUT_REUSED_CLASSES:
            key = lookup_key(self.reductions, v)
            if key is not None:
                tried = True
                ACTIVITY.begin(f"trying the causes reduced before on case {case.id}'s {v['verdict']} "
                               f"on {spec.label()} (cut cases)")
                got = self.reductions.reuse_wrong(key, case, v, self.pool, self.ccfg, spec, self.log)
                if got is not None:
                    v["confirm"] = {"runs": 1, "reproduced": True, "on": "cut case"}
                    return got
        if self.confirm_runs:
            confirm(self.pool, case, self.ccfg, spec, ref_out, v, self.confirm_runs)
        if not (v.get("confirm") or {}).get("reproduced", True):
            return None
        return self.identify(case, spec, ref_out, v, tried=tried)

    def _pre_existing(self, case, spec, ref_out: list, v: dict):
        """A failure the base build shares, not reduced (``reduce_pre_existing`` false): a
        reduction of its cause made earlier in the run identifies it; otherwise its whole
        case does (``identity.not_reduced``)."""
        reduced = self.identify(case, spec, ref_out, v, reduce=False)
        if reduced is None:
            v["identity"]["not_reduced"] = "pre-existing"
        return reduced
