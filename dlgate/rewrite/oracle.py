"""The equivalence oracle: a compiler on a case against itself on the case's twin.

The twin (:func:`dlgate.rewrite.make_twin`) computes what the case computes, so the
compiler under test must give the same outputs on both, on the same inputs, whatever the
reference says or whether it could run at all. Outputs are compared as against the
reference, at the case's own tolerances (a rewrite that blocks a fusion may move float
rounding, so bit-exactness would be wrong), and the oracle's rules excuse what they excuse
there: a value the specification leaves open may differ between the two runs as between a
compiler and the reference.

What a twin's run comes to (``status`` of the record's ``twins`` entry):

- ``consistent``: same outputs (``excused``: the differences are all values a rule says
  the specification leaves open);
- ``inconsistent``: a finding. Either the outputs differ (``how``: the comparison's kind,
  ``values``, ``shape``...), or the compiler ran the case and fails on the twin (``how``:
  ``status``, the twin's error): the twin is valid ONNX (checked before it runs), and a
  model a compiler runs does not become one it may fail on by an identity; HirFuzz
  counted such status differences as bugs too;
- ``refused``: the compiler declares it does not take the twin (its own ``unsupported``
  words, e.g. TVM's importer on a model-local function): a gap, not a wrong answer;
- ``not_judged``: the case itself did not run on the compiler (its own verdict says why),
  or the twin is not for this backend (a rewrite of the ONNX form only, and a backend that
  reads dlgate's graph), or the case has no numeric-valid inputs.

Where the reference ran, the record says which side agrees with it (``reference``:
``{"original": bool, "twin": bool}``); an inconsistency is never a verdict against the
reference and never counted with them.
"""
from __future__ import annotations

import json
import os
import random

from dlgate.backends.base import BackendSpec, Model
from dlgate.backends.registry import load
from dlgate.exec import worker as W
from dlgate.graph import dynamic
from dlgate.oracle import rules
from dlgate.oracle import verdict as V
from dlgate.oracle.signature import signature
from dlgate.ops.registry import get
from dlgate.rewrite import NotEquivalent, make_twin
from dlgate.seeds import sub_seed

INCONSISTENT = "inconsistent"
CONSISTENT = "consistent"
EXCUSED = "excused"
REFUSED = "refused"
NOT_JUDGED = "not_judged"
#: dlgate's own mistake: a rewrite made a model ONNX's checker rejects (never run).
REWRITE_ERROR = "rewrite_error"
STATUSES = (CONSISTENT, EXCUSED, INCONSISTENT, REFUSED, NOT_JUDGED, REWRITE_ERROR)

_ERRORS = (W.COMPILE_ERROR, W.RUN_ERROR, W.CRASH, W.TIMEOUT, W.OOM)


def selected(seed: int, share: float) -> bool:
    """Whether the case of ``seed`` also runs a twin, at ``share`` of the cases: a fixed
    function of the seed (a uniform draw from its own stream), so a rerun, a shard or a
    resumed run picks the same cases."""
    if share <= 0:
        return False
    if share >= 1:
        return True
    return random.Random(sub_seed(seed, "rewrite-share")).random() < share


def twin_seed(seed: int) -> int:
    """The seed a case's twin is drawn from."""
    return sub_seed(seed, "rewrite")


def twin_of(case, kinds: tuple | None = None) -> tuple:
    """``(twin or None, meta)`` for a prepared case (``dlgate.check.Prepared``): ``meta`` is
    what the record keeps about the rewrite (``Twin.meta``), ``{"kind": None}`` when no
    rewrite applies, or the rewrite's error. ``kinds``: the rewrites it may use (default all)."""
    seed = twin_seed(int(case.meta.get("seed", 0)))
    try:
        twin = make_twin(case.graph, case.model, seed, kinds)
    except NotEquivalent as e:
        return None, {"kind": None, "error": str(e), "seed": seed}
    if twin is None:
        return None, {"kind": None, "seed": seed, "reason": "no rewrite applies to this case"}
    return twin, twin.meta()


def reads_graph(cls: type) -> bool:
    """Whether a backend compiles dlgate's graph rather than the ONNX bytes (PyTorch eager and
    Inductor): an ``reads_graph`` attribute where a backend sets one, else whether it is
    PyTorch eager or built on it."""
    own = getattr(cls, "reads_graph", None)
    if isinstance(own, bool):
        return own
    return any(k.__module__ == "dlgate.backends.torch_eager" for k in cls.__mro__)


def judge_twin(pool, case, spec: BackendSpec, original, twin, tolerances: dict | None = None,
               reference: list | None = None, original_agrees: bool | None = None, confirm: int = 1,
               meta: dict | None = None) -> dict:
    """The twin's record for one backend: ``original`` is the backend's Outcome on the case,
    ``reference`` the reference's outputs when it ran (None otherwise), ``original_agrees``
    whether the case's own verdict found the backend right. An inconsistency is run again
    ``confirm`` times, case and twin both (``confirm``: ``{"runs", "reproduced"}``; one
    that does not come back every time is flaky). Timings stay out of the record, which
    must be the same on every run. ``meta``: the record's ``rewrite`` (:func:`twin_of`), which
    says why there is no twin when ``twin`` is None."""
    if twin is None and (meta or {}).get("error"):
        return {"backend": spec.label(), "status": REWRITE_ERROR, "detail": meta["error"]}
    rec = _judge(pool, case, spec, original, twin, tolerances, reference, original_agrees)
    if rec["status"] != INCONSISTENT or confirm <= 0:
        return rec
    same = 0
    for _ in range(confirm):
        again = pool.execute(spec, Model(case.model, case.graph), case.inputs, further(case))
        r = _judge(pool, case, spec, again, twin, tolerances, None, None)
        same += r["status"] == INCONSISTENT and r.get("how") == rec.get("how")
    rec["confirm"] = {"runs": confirm, "reproduced": same == confirm}
    return rec


def _judge(pool, case, spec: BackendSpec, original, twin, tolerances, reference, original_agrees) -> dict:
    label = spec.label()
    rec: dict = {"backend": label}
    cls = load(spec.name)
    if twin is None:
        return dict(rec, status=NOT_JUDGED, detail="no rewrite applies to this case")
    if not twin.graph_changed and reads_graph(cls):
        return dict(rec, status=NOT_JUDGED, detail=f"the {twin.kind} rewrite changes the ONNX form only; "
                                                    f"{spec.name} compiles dlgate's graph")
    if original is None or original.status != W.OK:
        return dict(rec, status=NOT_JUDGED, detail="the case itself did not run on this backend (its verdict says why)")
    more = further(case)
    if more and len(original.more) != len(more):
        more = None  # the case ran at its first binding only: the twin is compared there
    out = pool.execute(spec, Model(twin.model, twin.graph), case.inputs, more)
    if out.status == W.UNSUPPORTED:
        err = out.error or {}
        return dict(rec, status=REFUSED, detail=f"{err.get('type', '')}: {err.get('message', '')}".strip(": ")[:500])
    if out.status == W.UNAVAILABLE:
        return dict(rec, status=NOT_JUDGED, detail="the backend is not available here")
    if out.status in _ERRORS:
        err = {k: x for k, x in (out.error or {}).items() if k != "log"}  # worker output: clock stamps
        kind = V._STATUS[out.status]
        detail = f"the case runs, its {twin.kind} twin fails: {kind}: {err.get('type', '')}: {err.get('message', '')}"
        return dict(rec, status=INCONSISTENT, how="status", detail=detail[:2000], error=err,
                    signature=signature(INCONSISTENT, spec.name, err, extra=f"status:{kind} | {twin.kind} | {_ops(case.graph)}"),
                    reference=_sides(reference, original_agrees, None))
    recheck = case.graph.extreme is not None
    why = rules.explain(case.graph, case.inputs, tolerances, out.outputs, original.outputs, recheck)
    v = V.judge(spec.name, label, out, original.outputs, tolerances, explain=why, recheck=recheck)
    twin_agrees = None
    if reference is not None:
        why_ref = rules.explain(case.graph, case.inputs, tolerances, out.outputs, reference, recheck)
        r = V.judge(spec.name, label, out, reference, tolerances, explain=why_ref, recheck=recheck)
        twin_agrees = r.verdict in (V.PASS, V.UNDEFINED)
    sides = _sides(reference, original_agrees, twin_agrees)
    if v.verdict not in (V.PASS, V.UNDEFINED):
        return _differs(rec, spec, case, twin, v, sides)
    if more:  # a dynamic case compiled once: case and twin compared at each further binding too
        rec["bindings"] = 1 + len(more)
        for k, ((b, g, xs), o_k, t_k) in enumerate(zip(case.shapes, original.more, out.more), start=1):
            at = {"index": k, "binding": dict(b)}
            if t_k.status in _ERRORS and o_k.status == W.OK:
                err = {key: x for key, x in (t_k.error or {}).items() if key != "log"}
                kind = V._STATUS[t_k.status]
                detail = (f"at {dynamic.describe(b)} the case runs, its {twin.kind} twin fails: {kind}: "
                          f"{err.get('type', '')}: {err.get('message', '')}")
                return dict(rec, status=INCONSISTENT, how="status", detail=detail[:2000], error=err, shape=at,
                            signature=signature(INCONSISTENT, spec.name, err,
                                                extra=f"status:{kind} | {twin.kind} | {_ops(case.graph)} | dynamic"),
                            reference=sides)
            if o_k.status != W.OK or t_k.status != W.OK:
                continue
            why_k = rules.explain(g, xs, tolerances, t_k.outputs, o_k.outputs, recheck)
            vk = V.judge(spec.name, label, t_k, o_k.outputs, tolerances, explain=why_k, recheck=recheck)
            if vk.verdict not in (V.PASS, V.UNDEFINED):
                vk.detail = f"at {dynamic.describe(b)} (compiled for symbolic shapes, first run at " \
                            f"{dynamic.describe(dynamic.first_binding(case.graph))}): {vk.detail}"
                return dict(_differs(rec, spec, case, twin, vk, sides, " | dynamic"), shape=at)
    if v.verdict == V.PASS:
        return dict(rec, status=CONSISTENT, reference=sides)
    return dict(rec, status=EXCUSED, rule=v.rule, detail=v.detail, excused=v.excused, reference=sides)


def _differs(rec: dict, spec: BackendSpec, case, twin, v, sides: dict, where: str = "") -> dict:
    """An inconsistent twin's record: its outputs differ from the case's (verdict ``v``)."""
    cmp = v.comparison or {}
    return dict(rec, status=INCONSISTENT, how=cmp.get("kind") or "values",
                detail=f"the {twin.kind} twin differs from the case on the same compiler: {v.detail}",
                comparison=cmp, excused=v.excused,
                signature=signature(INCONSISTENT, spec.name,
                                    extra=f"{cmp.get('kind')} | {twin.kind} | {_ops(case.graph)}{where}"),
                reference=sides)


def further(case) -> list | None:
    """A dynamic case's further input sets (one per further binding of its symbolic
    dimensions), which a run of the case and of its twin also takes; None for a static case."""
    return [xs for _, _, xs in getattr(case, "shapes", ())] or None


def _ops(graph) -> str:
    """The case's ONNX operator types, as a mismatch's signature holds them."""
    return ",".join(sorted({get(n.op).onnx_op for n in graph.nodes}))


def _sides(reference, original_agrees, twin_agrees) -> dict:
    if reference is None:
        return {"ran": False}
    return {"ran": True, "original": original_agrees, "twin": twin_agrees}


def summary(twins: list) -> dict:
    """Counts of the twin records' statuses, in ``STATUSES`` order (for a run's summary)."""
    out = {s: 0 for s in STATUSES}
    for t in twins:
        out[t["status"]] = out.get(t["status"], 0) + 1
    return {k: v for k, v in out.items() if v}



def findings(rec: dict) -> list:
    """The record's inconsistent twins."""
    return [t for t in rec.get("twins", ()) if t["status"] == INCONSISTENT]


def base_check(base_pool, case, ccfg, rec: dict) -> None:
    """Head versus base: each inconsistent twin of ``rec`` run on the base build, case and
    twin both (``base``: ``{"status", "how", "reproduces"}``). The base build shares the
    inconsistency when its twin is inconsistent the same way (``how``); where the base build
    does not run the case, or its twin is consistent, refused or not judged, it does not,
    and the finding is new. A pull request must not be blamed for an inconsistency its base
    build has (:func:`dlgate.gate.decide.twin_counts`)."""
    specs = {s.label(): s for s in ccfg.backends}
    twin, _meta = twin_of(case, ccfg.rewrite_kinds)
    for t in findings(rec):
        spec = specs.get(t["backend"])
        if spec is None or twin is None:
            continue
        original = base_pool.execute(spec, Model(case.model, case.graph), case.inputs, further(case))
        r = _judge(base_pool, case, spec, original, twin, ccfg.tolerances, None, None)
        t["base"] = {"status": r["status"], "how": r.get("how"),
                     "reproduces": r["status"] == INCONSISTENT and r.get("how") == t.get("how")}


#: The files a failing case's bundle holds for its twin.
TWIN_MODEL, TWIN_META = "twin.onnx", "twin.json"


def save_twin(directory: str, case) -> None:
    """The case's twin beside its bundle (``twin.onnx``, and ``twin.json``: what the rewrite
    did), made again from the case: a twin is a pure function of it."""
    twin, meta = twin_of(case)
    _write_twin(directory, twin, meta)


def save_twin_of(directory: str, case, seed: int, kind: str, prefer: dict | None = None) -> None:
    """A reduced case's twin (``kind``, from ``seed``, ``prefer`` as for its reduction)
    beside its bundle."""
    try:
        twin = make_twin(case.graph, case.model, seed, (kind,), prefer)
    except NotEquivalent:
        twin = None
    _write_twin(directory, twin, twin.meta() if twin is not None else {})


def _write_twin(directory: str, twin, meta: dict) -> None:
    if twin is None:
        return
    with open(os.path.join(directory, TWIN_MODEL), "wb") as f:
        f.write(twin.model)
    with open(os.path.join(directory, TWIN_META), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
