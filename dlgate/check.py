"""From a generated case to verdicts: numeric-valid inputs, the reference run, each
candidate backend in its isolated worker, and the oracle's judgement."""
from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper

from dlgate.backends.base import BackendSpec, Model
from dlgate.backends.registry import load
from dlgate.exec import worker as W
from dlgate.graph.ir import Graph
from dlgate.inputs.search import search
from dlgate.materialize.onnx_model import to_onnx
from dlgate.oracle import ub
from dlgate.oracle import verdict as V
from dlgate.oracle.compare import all_finite
from dlgate.seeds import sub_seed
from dlgate.spec.registry import get

REFERENCE = BackendSpec("torch")


@dataclass
class CheckConfig:
    backends: list  # BackendSpec of each candidate
    reference: BackendSpec = REFERENCE
    tolerances: dict = field(default_factory=dict)
    timeout_s: float = 60.0
    memory_mb: int = 4096
    search_steps: int | None = None
    crosscheck: bool = True


@dataclass
class Prepared:
    """A case ready to run: final model (constants after the input search) and inputs."""

    id: str
    meta: dict
    graph: Graph
    model: bytes
    inputs: list
    search: dict


def load_case(directory: str) -> tuple:
    """(meta, graph with constant values, model bytes) of a generated case folder."""
    with open(os.path.join(directory, "meta.json")) as f:
        meta = json.load(f)
    with open(os.path.join(directory, "model.onnx"), "rb") as f:
        model = f.read()
    # to_array gives read-only views of the protobuf's bytes; later stages hand them to torch
    inits = {i.name: np.array(numpy_helper.to_array(i), copy=True) for i in onnx.load_from_string(model).graph.initializer}
    graph = Graph.from_json(meta["graph"])
    graph.values = {t: inits[graph.name(t)] for t in graph.consts}
    return meta, graph, model


def prepare(meta: dict, graph: Graph, model: bytes, search_steps: int | None = None) -> Prepared:
    kw = {} if search_steps is None else {"max_steps": search_steps}
    res = search(graph, meta["seed"], **kw)
    info = {"valid": res.valid, "method": res.method, "steps": res.steps, "restarts": res.restarts,
            "seconds": round(res.seconds, 4), "reason": res.reason, "hit_time_cap": res.hit_time_cap}
    changed = any(not np.array_equal(graph.values[t], res.consts[t]) for t in graph.consts)
    if changed:
        graph = Graph(graph.tensors, graph.nodes, graph.inputs, graph.consts, graph.outputs, graph.opset,
                      dict(res.consts))
        model = to_onnx(graph, sub_seed(meta["seed"], "onnx"), doc=f"dlgate case {meta['id']}").SerializeToString()
    return Prepared(meta["id"], meta, graph, model, res.inputs, info)


def load_bundle(directory: str, case_id: str | None = None) -> Prepared:
    """A saved case (a failure's bundle or a corpus case) ready to run again: its final
    model and, when saved, its inputs; otherwise the input search runs again."""
    meta, graph, model = load_case(directory)
    npz = os.path.join(directory, "inputs.npz")
    if not os.path.exists(npz):
        p = prepare(meta, graph, model)
        if case_id:
            p.id = case_id
        return p
    with np.load(npz) as z:
        inputs = [np.array(z[graph.name(t)], copy=True) for t in graph.inputs]
    search_info = dict(meta.get("search") or {"valid": True, "method": "saved", "reason": ""})
    return Prepared(case_id or meta["id"], meta, graph, model, inputs, search_info)


def op_pattern(graph: Graph) -> str:
    return ",".join(sorted({get(n.op).onnx_op for n in graph.nodes}))


def check(pool: W.Pool, case: Prepared, cfg: CheckConfig, reference_out: list | None = None) -> dict:
    """Run the reference and every candidate on one prepared case; returns the result record.
    ``reference_out``, when given, receives the reference's outputs (for re-runs)."""
    record = {"case": case.id, "seed": case.meta.get("seed"), "root": case.meta.get("root"),
              "campaign": case.meta.get("campaign"), "index": case.meta.get("index"),
              "opset": case.graph.opset, "operators": case.meta.get("operators"), "search": case.search,
              "verdicts": []}
    ref = pool.execute(cfg.reference, Model(case.model, case.graph), case.inputs)
    record["reference"] = {"backend": cfg.reference.label(), "status": ref.status, "versions": ref.backend,
                           "error": ref.error, "compile_s": ref.compile_s, "run_s": ref.run_s}
    if not ref.ok:
        for spec in cfg.backends:
            record["verdicts"].append(V.Verdict(spec.label(), V.REFERENCE_ERROR,
                                                f"the reference failed: {ref.error}").to_json())
        return record
    if reference_out is not None:
        reference_out[:] = ref.outputs
    invalid = not case.search["valid"] or not all_finite(ref.outputs)
    for spec in cfg.backends:
        if invalid:
            why = case.search["reason"] or "the reference output holds NaN or Inf"
            record["verdicts"].append(V.Verdict(spec.label(), V.INVALID, f"no numeric-valid input: {why}").to_json())
            continue
        record["verdicts"].append(judge_backend(pool, case, cfg, spec, ref.outputs).to_json())
    return record


def judge_backend(pool: W.Pool, case: Prepared, cfg: CheckConfig, spec: BackendSpec, reference: list,
                  crosscheck: bool | None = None, explain: bool = True) -> V.Verdict:
    """One candidate's verdict on a case whose reference outputs are known. Re-runs (flaky
    confirmation, the base build) pass ``crosscheck=False``: the cross-checks explain a
    mismatch but do not change its signature."""
    model = Model(case.model, case.graph)
    cross = cfg.crosscheck if crosscheck is None else crosscheck
    out = pool.execute(spec, model, case.inputs)
    levels = load(spec.name).opt_levels
    lowest = levels[0]
    at_lowest = (lambda: pool.execute(spec.at(lowest), model, case.inputs)) \
        if cross and (spec.opt_level or levels[-1]) != lowest else None
    onnx_ref = (lambda: pool.execute(BackendSpec("onnx-reference"), model, case.inputs)) if cross else None
    why = (lambda: ub.explain(case.graph, case.inputs, cfg.tolerances, out.outputs)) if explain else None
    return V.judge(spec.name, spec.label(), out, reference, cfg.tolerances, explain=why, at_lowest=at_lowest,
                   onnx_reference=onnx_ref, op_pattern=op_pattern(case.graph))


def case_dirs(directory: str) -> list:
    """A case folder itself, or the case folders under it."""
    if os.path.isfile(os.path.join(directory, "meta.json")):
        return [directory]
    dirs = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(directory, "*", "meta.json")))
    if not dirs:
        raise FileNotFoundError(f"no generated cases (*/meta.json) under {directory}")
    return dirs


def save_bundle(out_dir: str, case: Prepared, reference: list | None = None, subdir: str | None = None) -> str:
    """The files a failure needs to be reproduced: final model, inputs, metadata; in
    ``OUT/cases/<id>``, or ``OUT/<subdir>``."""
    d = os.path.join(out_dir, subdir) if subdir else os.path.join(out_dir, "cases", case.id)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(case.model)
    np.savez(os.path.join(d, "inputs.npz"), **{case.graph.name(t): x for t, x in zip(case.graph.inputs, case.inputs)})
    meta = dict(case.meta, search=case.search, graph=case.graph.to_json())
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    return d
