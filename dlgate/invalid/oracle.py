"""The oracle for invalid models: no reference, only what the compiler did with a model that
ONNX's checker rejects for a known reason (``meta["invalid"]``).

- It raised at load, compile or run time (``compile_error``, ``run_error``, a refusal):
  a clean rejection, ``pass``.
- It died by a signal, hung, or ran out of memory: ``invalid_crash``, ``invalid_timeout``,
  ``invalid_oom``. Whatever the input, a compiler must not do that. Unless the valid model
  the case was made from dies the same way (the same status and signal): then the compiler
  fails before it meets the broken rule (TVM's importer converts in node order, and a hang
  at the second node comes before a broken sixth), the case cannot judge how it handles
  invalid input, and the verdict is ``invalid`` (not judged), the failure being the valid
  batch's to find (:func:`not_the_rule`).
- It accepted the model and ran it to completion: ``invalid_accepted``, unless the backend
  is documented to tolerate that rule (:data:`TOLERATED`: TVM's importer, which checks a
  model and only warns by design, and casts through dtypes), then ``pass`` with the
  tolerance named in the detail.
- A backend that compiles dlgate's graph, not the ONNX bytes (:data:`GRAPH_READERS`), is
  not judged: ``unsupported``.

These classes are findings like any other (confirmed, identified, new or pre-existing
against the base build, in the baseline, JUnit and the summary) but are never a wrong
answer: a valid model's wrong result is a ``mismatch``, and an invalid model is never
compared with anything.
"""
from __future__ import annotations

import hashlib

import numpy as np

from dlgate.backends.base import Model
from dlgate.backends.registry import load
from dlgate.case import model_bytes
from dlgate.exec import worker as W
from dlgate.graph.ir import random_values
from dlgate.invalid import repro
from dlgate.oracle import memsafety as MS
from dlgate.oracle import signature as S
from dlgate.oracle import verdict as V

#: The invalid-model finding classes (also in :data:`dlgate.oracle.verdict.FAILURES`).
INVALID_CRASH, INVALID_TIMEOUT, INVALID_OOM, INVALID_ACCEPTED = V.INVALID_FINDINGS

_DIED = {W.CRASH: INVALID_CRASH, W.TIMEOUT: INVALID_TIMEOUT, W.OOM: INVALID_OOM}
_REJECTED = (W.COMPILE_ERROR, W.RUN_ERROR, W.UNSUPPORTED)

#: Why TVM's ONNX importer accepting a model that breaks one of the structural rules is not
#: a defect: ``relax.frontend.onnx.from_onnx`` runs ``onnx.checker.check_model`` (without
#: ``full_check``) first and, on purpose, only warns when it fails ("the checker is a bit
#: violent about errors, so simply print warnings here"), then converts what it can. That
#: plain check is the one that catches these three rules (SSA form, graph order, input
#: counts), so TVM has been told and chose to go on.
_TVM_WARNS = ("TVM's importer runs onnx.checker.check_model and by design only warns when it fails "
              "(relax/frontend/onnx/onnx_frontend.py, from_onnx), then converts what it can")
#: Why TVM accepting a dtype the ONNX operator does not take is not a defect: its importer
#: checks no operand against ONNX's type constraints; each converter emits the Relax
#: operator, whose own type inference takes what it can compute and whose lowering casts
#: mixed operands (Floor of a uint64, Mul of a float by a bool, Slice with int16 steps).
_TVM_CASTS = ("TVM's importer checks no dtype against ONNX's type constraints; the Relax operator takes "
              "what its own type inference allows and its lowering casts mixed operands")
#: Backend name -> rule -> why accepting a model that breaks it is not that backend's defect
#: (the verdict is then ``pass``, the detail naming the tolerance). onnxruntime tolerates
#: nothing: it validates every model it loads (graph resolution, schema and type checks).
#: TVM's acceptance of an incompatible shape or an axis past the rank stays a finding: no
#: check of its own was told, and an index past a tensor's extent is what such a check is for.
TOLERATED: dict = {"tvm": {"dangling": _TVM_WARNS, "duplicate": _TVM_WARNS, "arity": _TVM_WARNS,
                           "dtype": _TVM_CASTS}}
#: Backends that compile dlgate's graph rather than the ONNX bytes (the reference, Inductor,
#: the direct Relax path): an invalid ONNX model never reaches them, so they are not judged
#: on it (``unsupported``, saying so). Matched by the name of the class that defines
#: ``compile``, so a subclass that only changes options is matched too.
GRAPH_READERS = ("torch", "inductor", "tvm-relax", "tvm-relax-invalid")
#: The backend (its ``name``) that runs a Relax-level invalid case (``level: relax``).
RELAX_INVALID = "tvm-relax-invalid"


def reads_graph(backend_name: str) -> bool:
    """Whether the backend compiles dlgate's graph, not the ONNX model (:data:`GRAPH_READERS`)."""
    cls = load(backend_name)
    owner = next((k for k in cls.__mro__ if "compile" in vars(k)), cls)
    return getattr(owner, "name", "") in GRAPH_READERS


def judge(backend_name: str, label: str, outcome, info: dict) -> V.Verdict:
    """The verdict of ``outcome`` (a worker Outcome) on an invalid model that breaks
    ``info["rule"]`` at node ``info["node"]``."""
    times = {"compile_s": outcome.compile_s, "run_s": outcome.run_s, "wall_s": outcome.wall_s,
             "versions": dict(outcome.backend)}
    where = f"{info['rule']} at {info['op_type']}"
    err = outcome.error or {}
    said = f"{err.get('type', '')}: {err.get('message', '')}".strip(": ")
    if outcome.status in _REJECTED:
        stage = err.get("stage") or outcome.status.replace("_error", "")
        return V.Verdict(label, V.PASS, f"rejected cleanly ({where}) at {stage}: {said}"[:2000], **times)
    if outcome.status == W.UNAVAILABLE:
        return V.Verdict(label, V.SKIPPED, said[:2000], error=err, **times)
    if outcome.status == W.OK:
        why = TOLERATED.get(backend_name, {}).get(info["rule"])
        if why:
            return V.Verdict(label, V.PASS, f"accepted ({where}), tolerated: {why}", **times)
        sig = S.signature(INVALID_ACCEPTED, backend_name, extra=f"{info['rule']} | {info['op_type']}")
        if info.get("level") == "relax":  # the ONNX model is valid: the Relax module is not
            said = f"accepted and ran a Relax module TVM must reject ({where}: {info.get('detail', '')})"
        else:
            said = (f"accepted and ran a model ONNX rejects ({where}: {info.get('detail', '')}; onnx.checker: "
                    f"{info.get('checker', '')})")
        return V.Verdict(label, INVALID_ACCEPTED, said[:2000], sig, **times)
    kind = _DIED[outcome.status]
    sig = S.signature(kind, backend_name, err, extra=f"{info['rule']} | {info['op_type']}")
    return V.Verdict(label, kind, f"on an invalid model ({where}): {said}"[:2000], sig, error=err, **times)


def valid_model(case) -> bytes:
    """The valid ONNX model an ONNX-level invalid case was made from: its graph is the valid
    one (the rule is broken in the model bytes only), written as the generator writes it."""
    m = case.meta
    return model_bytes(case.graph, m.get("seed") or 0, m.get("root"), m.get("campaign"), m.get("index"))


def not_the_rule(pool, spec, case, out, v: V.Verdict) -> V.Verdict:
    """``v``, a hang, crash or memory blow-up on invalid ``case`` (worker outcome ``out``),
    unless the valid model it was made from, run the same way, dies the same way (status and
    signal): then the broken rule is not what the compiler failed on, and the verdict is
    ``invalid`` (not judged), saying so."""
    got = pool.execute(spec, Model(valid_model(case), case.graph), case.inputs)
    if got.status != out.status or (got.error or {}).get("signal") != (out.error or {}).get("signal"):
        return v
    what = {W.TIMEOUT: "gives no answer", W.OOM: "runs out of memory"}.get(out.status, "dies")
    sig = (out.error or {}).get("signal")
    info = case.meta["invalid"]
    return V.Verdict(v.backend, V.INVALID, f"not judged: the valid model this case was made from {what}"
                     f"{f' ({sig})' if sig else ''} too, so the compiler fails before it meets the broken rule "
                     f"({info['rule']} at {info['op_type']}); that failure is the valid batch's to find",
                     compile_s=v.compile_s, run_s=v.run_s, wall_s=v.wall_s, versions=v.versions)


def inputs(graph, seed: int) -> list:
    """Inputs for an invalid model: plain random values of the valid graph's input types
    (no rule changes a graph input). No numeric validity is needed: nothing is compared."""
    rng = np.random.default_rng(seed)
    return [random_values(rng, graph.tensors[t]) for t in graph.inputs]


def check_invalid(pool, case, cfg) -> dict:
    """Run every candidate on an invalid case (``case.meta["invalid"]``); the result record,
    shaped as :func:`dlgate.check.check`'s, with ``invalid`` and no reference run."""
    info = case.meta["invalid"]
    record = {"case": case.id, "seed": case.meta.get("seed"), "root": case.meta.get("root"),
              "campaign": case.meta.get("campaign"), "index": case.meta.get("index"),
              "opset": case.graph.opset, "operators": case.meta.get("operators"), "search": case.search,
              "invalid": info, "verdicts": []}
    relax_level = info.get("level") == "relax"
    for spec in cfg.backends:
        # a Relax-level invalid case (dlgate.invalid.relax_case) is broken in the module the
        # direct path's invalid backend builds, and only there: its ONNX model is valid
        if relax_level and load(spec.name).name != RELAX_INVALID:
            record["verdicts"].append(V.Verdict(spec.label(), V.UNSUPPORTED, "a Relax-level invalid case: its ONNX "
                                                "model is valid, only TVM's direct path takes the broken module "
                                                f"({RELAX_INVALID})").to_json())
            continue
        if reads_graph(spec.name) and not relax_level:
            record["verdicts"].append(V.Verdict(spec.label(), V.UNSUPPORTED, "compiles dlgate's graph, not the ONNX "
                                                "model: an invalid ONNX model cannot reach it").to_json())
            continue
        out = pool.execute(spec, Model(case.model, case.graph), case.inputs)
        v = judge(spec.name, spec.label(), out, info)
        if v.verdict in _DIED.values() and not relax_level:
            v = not_the_rule(pool, spec, case, out, v)
        record["verdicts"].append(v.to_json())
    return record


def same(head: dict, base: dict) -> bool:
    """Whether the base build's verdict on an invalid case is head's finding: the same class
    and, for a crash or a hang, the same :func:`~dlgate.oracle.signature.share_key`."""
    if head["verdict"] != base["verdict"]:
        return False
    name = head["backend"].split("[", 1)[0]
    return S.share_key(head["verdict"], name, head.get("error")) == S.share_key(base["verdict"], name, base.get("error"))


def identity(v: dict, info: dict) -> dict:
    """A finding's identity, from the invalid model as it is (there is nothing to reduce: the
    rule is broken at one node): the fingerprint is the signature (class, backend, the
    error's words, frames and signal, the rule and the operator type); the cluster and the
    cause leave the error's variable parts out (its template), so one crash met through two
    models of one rule and operator is one row."""
    name = v["backend"].split("[", 1)[0]
    sig = v.get("signature") or S.signature(v["verdict"], name, v.get("error"), extra=f"{info['rule']} | {info['op_type']}")
    cl = S.cluster(v["verdict"], name, v.get("error"))
    key = f"{cl['text']} :: {info['rule']} | {info['op_type']}"
    cl_id = hashlib.sha256(key.encode()).hexdigest()[:16]
    typed = f"{info['op_type']} ({info['rule']}: {info.get('breaks', '')})"
    ident = {"fingerprint": sig["id"], "cluster": cl_id, "cluster_text": key, "pattern": info["op_type"],
             "typed": typed, "text": f"invalid :: {sig['text']}"[:600], "cause": cl_id, "cause_text": key,
             "dtypes": [], "reduced": False, "not_reduced": "invalid model", "rule": info["rule"]}
    ms = MS.classify(V.CRASH, v.get("error")) if v["verdict"] == INVALID_CRASH else None
    if ms:
        ident["memory_safety"] = ms
    return ident


def _fails_as(pool, case, spec, v: dict, info: dict):
    """``spec``'s verdict on invalid ``case`` when it is finding ``v`` again (:func:`same`),
    else None: how a pass list of a Relax-level invalid finding is judged."""
    got = judge(spec.name, spec.label(), pool.execute(spec, Model(case.model, case.graph), case.inputs), info)
    return got if same(v, got.to_json()) else None


def triage(pool, base_pool, case, spec, v: dict, confirm_runs: int, out: str | None = None) -> None:
    """What the gate learns about an invalid-model finding ``v`` before it is journaled: the
    base build's verdict on the same model and inputs (head versus base), a confirmation
    re-run when the base build does not share it, and its identity; with ``out``, its repro
    bundle (:mod:`dlgate.invalid.repro`) once it reproduces. Nothing is reduced."""
    info = case.meta["invalid"]
    model = Model(case.model, case.graph)
    if base_pool is not None:
        bv = judge(spec.name, spec.label(), base_pool.execute(spec, model, case.inputs), info).to_json()
        shares = same(v, bv)
        v["base"] = {"verdict": bv["verdict"], "signature": (bv.get("signature") or {}).get("id"),
                     "reproduces": shares, "versions": bv["versions"], "decided_on": "case"}
        if not shares and bv["verdict"] != V.PASS:
            v["base"]["detail"] = bv["detail"][:300]
    if confirm_runs and not (v.get("base") or {}).get("reproduces"):
        seen = [judge(spec.name, spec.label(), pool.execute(spec, model, case.inputs), info).to_json()
                for _ in range(confirm_runs)]
        v["confirm"] = {"runs": confirm_runs, "reproduced": any(same(v, x) for x in seen)}
        if not all(same(v, x) for x in seen):
            v["confirm"]["seen"] = [[x["verdict"], (x.get("signature") or {}).get("id")] for x in seen]
    v["identity"] = identity(v, info)
    if out is not None and (v.get("confirm") or {}).get("reproduced", True):
        rel = repro.write(out, case, spec, v, info, pool, lambda run: _fails_as(pool, case, run, v, info))
        if rel:
            v["identity"]["repro"] = rel
