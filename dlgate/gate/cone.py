"""Sharing decided on the cone of a failure that was not reduced.

Head versus base, a base build that fails a model otherwise (it stops first at another
operator: one it lacks, an older bug, a result excused as undefined) leaves open whether it
shares head's failure; the gate then decides on the failure's reduced case
(:mod:`dlgate.gate.triage`). A failure that was not reduced (``reduce: false``, a failure at
a further binding of a dynamic case, a reduction that did not reproduce) has no reduced
case, and the whole model would decide: the base build's earlier failure would make a
shared failure look new, or hide a new one. The cheapest case that still isolates it is
then the *cone* of the failure: the operators the failing output depends on (a wrong
answer: head's first differing output), or those the failing operators depend on (an error
or a crash that names its operators' types), with the model's own inputs and constants.
Nothing is fed from a reference run, so the cone computes exactly what the model computes
there, and a dynamic case's cone keeps its symbolic dimensions and further bindings, so a
failure at a further binding shows on it too.

The cone decides only when head fails it as it fails the model (any wrong answer for a wrong
answer; the same failure, :func:`dlgate.gate.triage.same`, for an error); then the base
build's verdict on it is the base record, ``decided_on: "cone case"``, with ``whole`` (the
base build's verdict on the model) and ``cone`` (its operators, of the model's).
"""
from __future__ import annotations

from dlgate.backends.base import Model
from dlgate.check import Prepared, judge_backend
from dlgate.graph import dynamic
from dlgate.graph.ir import Graph
from dlgate.oracle import verdict as V
from dlgate.reduce.cutout import refused, valid
from dlgate.reduce.reducer import as_case, cut_map


def failing_tensors(graph: Graph, v: dict) -> list:
    """What the failure is at: a wrong answer's first differing output; an error's or a
    crash's operators, those whose types its message names (none: unknown)."""
    if v["verdict"] in V.VALUE_CLASSES:
        k = (v.get("comparison") or {}).get("output")
        return [graph.outputs[k]] if isinstance(k, int) and 0 <= k < len(graph.outputs) else []
    return [t for i in refused(graph, v.get("error")) for t in graph.nodes[i].outputs]


def cone_case(case: Prepared, v: dict) -> tuple | None:
    """``(cone, keep)``: the case cut to the operators its failure depends on (``keep``, its
    operators' indices in ``case``), its own inputs and constants, its further bindings cut
    alike; None when the failure's place is unknown, or its cone is the whole model."""
    graph = case.graph
    keep = graph.ancestors(failing_tensors(graph, v))
    if not keep or len(keep) == len(graph.nodes):
        return None
    env = dict(zip(graph.inputs, case.inputs))
    env.update({t: graph.values[t] for t in graph.consts})
    g, feeds, order = cut_map(graph, env, keep)
    if g.dynamic:  # the symbols the cone keeps, at each further binding the case runs
        syms = {sym for _, _, sym in g.dynamic["dims"]}
        g.dynamic["bindings"] = [{s: n for s, n in b.items() if s in syms} for b, _, _ in case.shapes]
    cone = as_case(case, g, feeds, "cone")
    if not valid(cone):
        return None
    if g.dynamic:
        for k, (b, _, xs) in enumerate(case.shapes, start=1):
            at = dict(zip(graph.inputs, xs))
            cone.shapes.append((b, dynamic.at(g, k), [at[t] if t in at else env[t] for t in order[:len(g.inputs)]]))
    return cone, keep


def _fails_alike(v: dict, head: V.Verdict, same) -> bool:
    if v["verdict"] in V.VALUE_CLASSES:
        return head.verdict in V.VALUE_CLASSES
    return same(v, head)


def on_cone(pool, base_pool, ccfg, spec, case: Prepared, v: dict, same, base_record) -> bool:
    """Decide sharing of ``v`` (head's failure on ``case``, with ``v["base"]`` the base
    build's verdict on it) on the failure's cone; False, recording nothing, when there is
    no cone, the reference fails it, or head does not fail it as it fails the case.
    ``same`` and ``base_record``: the triage's comparison and base record."""
    built = cone_case(case, v)
    if built is None:
        return False
    cone, keep = built
    ref = pool.execute(ccfg.reference, Model(cone.model, cone.graph), cone.inputs)
    if not ref.ok:
        return False
    for _, g, xs in cone.shapes:
        r = pool.execute(ccfg.reference, Model(cone.model, g), xs)
        if not r.ok:
            return False
        cone.shape_refs.append(r.outputs)
    head = judge_backend(pool, cone, ccfg, spec, ref.outputs, crosscheck=False, explain=True)
    if not _fails_alike(v, head, same):
        return False
    bv = judge_backend(base_pool, cone, ccfg, spec, ref.outputs, crosscheck=False, explain=True)
    whole = {k: v["base"][k] for k in ("verdict", "signature", "detail") if k in v["base"]}
    v["base"] = dict(base_record(bv, same(head, bv), "cone case"), whole=whole,
                     cone={"operators": len(keep), "of": len(case.graph.nodes)})
    return True
