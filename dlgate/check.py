"""From a generated case to verdicts: numeric-valid inputs, the reference run, each
candidate backend in its isolated worker, and the oracle's judgement."""
from __future__ import annotations

import glob
import hashlib
import json
import os
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper

from dlgate import dtypes as dt
from dlgate.backends.base import BackendSpec, Model
from dlgate.backends.registry import load
from dlgate.exec import worker as W
from dlgate.graph import dynamic
from dlgate.graph.ir import Graph
from dlgate.inputs.search import search
from dlgate.materialize.onnx_model import to_onnx
from dlgate.ops.registry import all_specs, get
from dlgate.oracle import rules
from dlgate.oracle import verdict as V
from dlgate.oracle.compare import all_finite
from dlgate.oracle.rules.base import Context
from dlgate.oracle.rules.reference_defect import defect
from dlgate.oracle.rules.refusal import refused_by_optimization
from dlgate.oracle.rules.symbolic import judge_symbolic, judge_unknown_sizes
from dlgate.rewrite import oracle as EQ
from dlgate.seeds import sub_seed

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
    #: The share of cases that also run an equivalent twin (``dlgate.rewrite.oracle``).
    rewrite_share: float = 0.0
    #: The rewrites a twin may use (``dlgate.rewrite.MODULES`` names); None: all.
    rewrite_kinds: tuple | None = None


@dataclass
class Prepared:
    """A case ready to run: final model (constants after the input search) and inputs."""

    id: str
    meta: dict
    graph: Graph
    model: bytes
    inputs: list
    search: dict
    #: A dynamic-shape case's further bindings: (binding, static graph there, its inputs).
    shapes: list = field(default_factory=list)
    #: The reference's outputs at each further binding, filled by ``check``.
    shape_refs: list = field(default_factory=list)


class CaseError(ValueError):
    """A case folder whose files are missing, unreadable or disagree with each other (a
    corrupt meta.json or inputs.npz, a model.onnx that does not parse, or is not the model
    meta.json records: swapped, truncated, emptied). The message is one line naming the
    folder and the file; it is the case's fault, never the compiler's."""


#: The most one file of a case folder may hold (generated models take kilobytes).
MAX_CASE_FILE = 256 << 20
#: The most elements one tensor of a case may declare (the generator's limit is 4,096).
MAX_ELEMENTS = 1 << 24


def _read(directory: str, name: str) -> bytes:
    try:
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read(MAX_CASE_FILE + 1)
    except OSError as e:
        raise CaseError(f"{directory}: {name}: cannot read: {e.strerror or e}") from None
    if len(data) > MAX_CASE_FILE:
        raise CaseError(f"{directory}: {name}: larger than {MAX_CASE_FILE >> 20} MiB")
    return data


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def _read_meta(directory: str) -> dict:
    data = _read(directory, "meta.json")
    try:
        meta = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as e:  # not UTF-8, not JSON, nested too deeply
        raise CaseError(f"{directory}: meta.json: not valid JSON ({_first_line(e)})") from None
    if not isinstance(meta, dict):
        raise CaseError(f"{directory}: meta.json: expected a JSON object, got {type(meta).__name__}")
    for key, kind, what in (("id", str, "a string"), ("seed", int, "an integer"), ("graph", dict, "an object")):
        if not isinstance(meta.get(key), kind) or isinstance(meta.get(key), bool):
            raise CaseError(f"{directory}: meta.json: {key}: expected {what}, got {meta.get(key)!r:.60}")
    search = meta.get("search")
    if search is not None and (not isinstance(search, dict) or not isinstance(search.get("valid"), bool)
                               or not isinstance(search.get("reason", ""), (str, type(None)))):
        raise CaseError(f"{directory}: meta.json: search: expected an object with valid (true or false) and reason")
    for key in ("sha256", "model_sha256"):
        if key in meta and not isinstance(meta[key], str):
            raise CaseError(f"{directory}: meta.json: {key}: expected a hex digest, got {meta[key]!r:.60}")
    return meta


def _read_graph(directory: str, d: dict) -> Graph:
    """meta.json's graph, checked to be one dlgate can run: known dtypes and operators,
    concrete shapes, tensor ids in range."""
    def bad(why: str) -> CaseError:
        return CaseError(f"{directory}: meta.json: graph: {why}")

    try:
        g = Graph.from_json(d)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise bad(f"malformed ({_first_line(e)})") from None
    n = len(g.tensors)

    def ids(xs) -> bool:
        return all(type(x) is int and 0 <= x < n for x in xs)

    if type(g.opset) is not int:
        raise bad(f"opset: expected an integer, got {g.opset!r:.60}")
    for i, t in enumerate(g.tensors):
        if t.dtype not in dt.ALL:
            raise bad(f"tensors[{i}]: unknown dtype {t.dtype!r:.60}")
        if not all(type(x) is int and x >= 0 for x in t.shape) or int(np.prod(t.shape, dtype=object)) > MAX_ELEMENTS:
            raise bad(f"tensors[{i}]: bad shape {list(t.shape)!r:.60}")
    specs = all_specs()
    for i, node in enumerate(g.nodes):
        if not isinstance(node.op, str) or node.op not in specs:
            raise bad(f"nodes[{i}]: unknown operator {node.op!r:.60}")
        if not isinstance(node.attrs, dict) or not ids(node.inputs) or not ids(node.outputs):
            raise bad(f"nodes[{i}]: malformed (attrs, inputs or outputs)")
    for key in ("inputs", "consts", "outputs"):
        if not ids(getattr(g, key)):
            raise bad(f"{key}: expected tensor ids below {n}")
    if not g.outputs:
        raise bad("no outputs")
    if g.extreme is not None and not (isinstance(g.extreme, dict) and isinstance(g.extreme.get("kinds", []), list)):
        raise bad(f"extreme: expected an object with a list of kinds, got {g.extreme!r:.60}")
    return g


def _expected_sha256(meta: dict) -> str | None:
    """The sha256 that model.onnx must have: ``model_sha256`` (what a saved bundle holds: the
    final model, after the input search changed constants), else ``sha256`` for a generated
    case (the model as generated). A bundle saved before ``model_sha256`` existed (it has
    ``search`` but no ``model_sha256``) records only the generated model's: none to check."""
    if "model_sha256" in meta:
        return meta["model_sha256"]
    return meta.get("sha256") if "search" not in meta else None


def load_case(directory: str) -> tuple:
    """(meta, graph with constant values, model bytes) of a generated case folder, checked:
    a CaseError naming the folder when a file is missing or corrupt, or when model.onnx is
    not the model meta.json records (its sha256, its inputs, outputs and constants)."""
    meta = _read_meta(directory)
    model = _read(directory, "model.onnx")
    expected = _expected_sha256(meta)
    if expected is not None and hashlib.sha256(model).hexdigest() != expected.lower():
        key = "model_sha256" if "model_sha256" in meta else "sha256"
        raise CaseError(f"{directory}: model.onnx does not match the {key} recorded in meta.json "
                        f"(a swapped, altered or truncated model; {len(model)} bytes)")
    graph = _read_graph(directory, meta["graph"])
    try:
        proto = onnx.load_from_string(model)
    except Exception as e:  # google.protobuf's DecodeError, and whatever a hostile file provokes
        raise CaseError(f"{directory}: model.onnx: not an ONNX model ({_first_line(e)})") from None
    inits = {i.name: i for i in proto.graph.initializer}
    ins = sorted(i.name for i in proto.graph.input if i.name not in inits)
    outs = sorted(o.name for o in proto.graph.output)
    missing = [graph.name(t) for t in graph.consts if graph.name(t) not in inits]
    if ins != sorted(graph.name(t) for t in graph.inputs) or outs != sorted(graph.name(t) for t in graph.outputs) \
            or missing:
        raise CaseError(f"{directory}: model.onnx is not the model meta.json describes (inputs {ins[:4]}, "
                        f"outputs {outs[:4]}{', missing constants ' + str(missing[:4]) if missing else ''})")
    graph.values = {}
    for t in graph.consts:
        name = graph.name(t)
        try:
            # to_array gives read-only views of the protobuf's bytes; later stages hand them to torch
            value = np.array(numpy_helper.to_array(inits[name]), copy=True)
        except Exception as e:  # a malformed TensorProto
            raise CaseError(f"{directory}: model.onnx: constant {name}: unreadable ({_first_line(e)})") from None
        want = graph.tensors[t]
        if value.dtype != np.dtype(want.dtype) or value.shape != tuple(want.shape):
            raise CaseError(f"{directory}: model.onnx: constant {name} is {value.dtype}{list(value.shape)}, "
                            f"meta.json says {want.dtype}{list(want.shape)}")
        graph.values[t] = value
    return meta, graph, model


def _read_inputs(directory: str, graph: Graph) -> list | None:
    """The saved inputs (inputs.npz) checked against the graph's input types; None when
    the folder has none."""
    path = os.path.join(directory, "inputs.npz")
    if not os.path.lexists(path):
        return None
    out = []
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise CaseError(f"{directory}: inputs.npz: cannot read: {e.strerror or e}") from None
    if magic not in (b"PK\x03\x04", b"PK\x05\x06"):  # a zip archive's first record, or an empty one's end
        raise CaseError(f"{directory}: inputs.npz: not an .npz archive ({len(magic)} bytes read, not a zip file)")
    try:
        z = np.load(path, allow_pickle=False)
    except Exception as e:  # not a zip, truncated, a pickle, a folder...
        raise CaseError(f"{directory}: inputs.npz: unreadable ({_first_line(e)})") from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise CaseError(f"{directory}: inputs.npz: not an .npz archive of named arrays")
    with z:
        for t in graph.inputs:
            name, want = graph.name(t), graph.tensors[t]
            if name not in z.files:
                raise CaseError(f"{directory}: inputs.npz: no array for input {name}")
            try:
                x = np.array(z[name], copy=True)
            except Exception as e:  # a corrupt member (CRC, zlib), an object array
                raise CaseError(f"{directory}: inputs.npz: {name}: unreadable ({_first_line(e)})") from None
            if x.dtype != np.dtype(want.dtype) or x.shape != tuple(want.shape):
                raise CaseError(f"{directory}: inputs.npz: {name} is {x.dtype}{list(x.shape)}, "
                                f"the model takes {want.dtype}{list(want.shape)}")
            out.append(x)
    return out


def verify_bundle(directory: str) -> None:
    """Check a case folder the way :func:`load_bundle` reads it, without the input search:
    a CaseError when it cannot be run as it is."""
    _, graph, _ = load_case(directory)
    _read_inputs(directory, graph)


def prepare(meta: dict, graph: Graph, model: bytes, search_steps: int | None = None) -> Prepared:
    kw = {} if search_steps is None else {"max_steps": search_steps}
    res = search(graph, meta["seed"], **kw)
    info = {"valid": res.valid, "method": res.method, "steps": res.steps, "restarts": res.restarts,
            "seconds": round(res.seconds, 4), "reason": res.reason, "hit_time_cap": res.hit_time_cap}
    if graph.extreme is not None:
        info["extreme"] = res.extreme  # the kinds of extreme value the case's inputs and constants hold
    changed = any(not np.array_equal(graph.values[t], res.consts[t]) for t in graph.consts)
    if changed:
        graph = Graph(graph.tensors, graph.nodes, graph.inputs, graph.consts, graph.outputs, graph.opset,
                      dict(res.consts), graph.dynamic, graph.extreme)
        model = to_onnx(graph, sub_seed(meta["seed"], "onnx"), doc=f"dlgate case {meta['id']}").SerializeToString()
    return Prepared(meta["id"], meta, graph, model, res.inputs, info, shape_inputs(graph, meta["seed"], kw))


def shape_inputs(graph: Graph, seed: int, kw: dict | None = None) -> list:
    """A dynamic graph's further bindings with numeric-valid inputs for each, found by the
    input search on the static graph there (its constants are the model's: a binding whose
    search would need to move them is left out)."""
    out = []
    for k, b in enumerate(dynamic.bindings(graph)[1:], start=1):
        g = dynamic.at(graph, k)
        res = search(g, sub_seed(seed, f"shape-{k}"), **(kw or {}))
        if res.valid and all(np.array_equal(g.values[t], res.consts[t]) for t in g.consts):
            out.append((b, g, res.inputs))
    return out


def load_bundle(directory: str, case_id: str | None = None) -> Prepared:
    """A saved case (a failure's bundle or a corpus case) ready to run again: its final
    model and, when saved, its inputs; otherwise the input search runs again."""
    meta, graph, model = load_case(directory)
    inputs = _read_inputs(directory, graph)
    if inputs is None:
        p = prepare(meta, graph, model)
        if case_id:
            p.id = case_id
        return p
    search_info = dict(meta.get("search") or {"valid": True, "method": "saved", "reason": ""})
    search_info.setdefault("reason", "")
    # a dynamic case's further bindings: their inputs come from the same deterministic search
    shapes = shape_inputs(graph, meta["seed"]) if graph.dynamic and "seed" in meta else []
    return Prepared(case_id or meta["id"], meta, graph, model, inputs, search_info, shapes)


def op_pattern(graph: Graph) -> str:
    return ",".join(sorted({get(n.op).onnx_op for n in graph.nodes}))


def check(pool: W.Pool, case: Prepared, cfg: CheckConfig, reference_out: list | None = None,
          outcomes: dict | None = None) -> dict:
    """Run the reference and every candidate on one prepared case; returns the result record.
    ``reference_out``, when given, receives the reference's outputs (for re-runs);
    ``outcomes``, each candidate's run by label (the Relax pair compares the two paths')."""
    record = {"case": case.id, "seed": case.meta.get("seed"), "root": case.meta.get("root"),
              "campaign": case.meta.get("campaign"), "index": case.meta.get("index"),
              "opset": case.graph.opset, "operators": case.meta.get("operators"), "search": case.search,
              "verdicts": []}
    ref = pool.execute(cfg.reference, Model(case.model, case.graph), case.inputs)
    record["reference"] = {"backend": cfg.reference.label(), "status": ref.status, "versions": ref.backend,
                           "error": ref.error, "compile_s": ref.compile_s, "run_s": ref.run_s}
    twin = None
    if EQ.selected(int(case.meta.get("seed") or 0), cfg.rewrite_share):
        twin, record["rewrite"] = EQ.twin_of(case, cfg.rewrite_kinds)
        record["twins"] = []
    if not ref.ok:
        for spec in cfg.backends:
            record["verdicts"].append(V.Verdict(spec.label(), V.REFERENCE_ERROR,
                                                f"the reference failed: {ref.error}").to_json())
            if twin is not None:  # the equivalence oracle needs no reference
                original = pool.execute(spec, Model(case.model, case.graph), case.inputs, EQ.further(case))
                record["twins"].append(EQ.judge_twin(pool, case, spec, original, twin, cfg.tolerances,
                                                     meta=record["rewrite"]))
        return record
    if reference_out is not None:
        reference_out[:] = ref.outputs
    case.shape_refs = []
    for b, g, xs in case.shapes:  # a dynamic case: the reference at every further binding
        r = pool.execute(cfg.reference, Model(case.model, g), xs)
        if not r.ok:
            for spec in cfg.backends:
                record["verdicts"].append(V.Verdict(spec.label(), V.REFERENCE_ERROR,
                                                    f"the reference failed at {dynamic.describe(b)}: {r.error}").to_json())
            return record
        case.shape_refs.append(r.outputs)
    if case.shapes:
        record["shapes"] = [dynamic.describe(dynamic.first_binding(case.graph))] + \
            [dynamic.describe(b) for b, _, _ in case.shapes]
    # an extreme case's outputs may hold NaN and Inf: compared position by position (the
    # search made sure the specification defines them; the oracle's rules scope any it does not)
    invalid = not case.search["valid"] or case.graph.extreme is None and (
        not all_finite(ref.outputs) or not all(all_finite(r) for r in case.shape_refs))
    for spec in cfg.backends:
        if invalid:
            why = case.search["reason"] or "the reference output holds NaN or Inf"
            record["verdicts"].append(V.Verdict(spec.label(), V.INVALID, f"no numeric-valid input: {why}").to_json())
            if "twins" in record:
                record["twins"].append({"backend": spec.label(), "status": EQ.NOT_JUDGED,
                                        "detail": f"no numeric-valid input: {why}"})
            continue
        ran: list = []
        v = judge_backend(pool, case, cfg, spec, ref.outputs, outcome=ran)
        record["verdicts"].append(v.to_json())
        if outcomes is not None and ran:
            outcomes[spec.label()] = ran[0]
        if "twins" in record:
            record["twins"].append(EQ.judge_twin(pool, case, spec, ran[0] if ran else None, twin, cfg.tolerances,
                                                 ref.outputs, v.verdict in (V.PASS, V.UNDEFINED),
                                                 meta=record["rewrite"]))
    return record


def judge_backend(pool: W.Pool, case: Prepared, cfg: CheckConfig, spec: BackendSpec, reference: list,
                  crosscheck: bool | None = None, explain: bool = True, outcome: list | None = None) -> V.Verdict:
    """One candidate's verdict on a case whose reference outputs are known. Re-runs (flaky
    confirmation, the base build) pass ``crosscheck=False``: the cross-checks explain a
    mismatch but do not change its signature. ``outcome``, when given, receives the
    candidate's run (the equivalence oracle compares its twin with it)."""
    model = Model(case.model, case.graph)
    cross = cfg.crosscheck if crosscheck is None else crosscheck
    more = [xs for _, _, xs in case.shapes] if len(case.shape_refs) == len(case.shapes) else []
    cls = load(spec.name)
    lowest = cls.opt_levels[0]
    above_lowest = (spec.opt_level or cls.opt_levels[-1]) != lowest
    run_lowest = lambda: pool.execute(spec.at(lowest), model, case.inputs)  # noqa: E731
    out = pool.execute(spec, model, case.inputs, more)
    if out.status == W.UNSUPPORTED and cls.refusals_by_level and above_lowest:
        out = refused_by_optimization(out, lowest, run_lowest())
    if case.graph.dynamic and out.status == W.COMPILE_ERROR:
        # a refusal only in the compiler's own words for symbolic dimensions; otherwise asked
        # again with static shapes (rules.symbolic)
        out = judge_symbolic(out, cls.symbolic_refusals, lambda: pool.execute(spec, _static(case), case.inputs))
    elif out.status == W.COMPILE_ERROR:  # a size the importer made symbolic itself (rules.symbolic)
        out = judge_unknown_sizes(out, cls.symbolic_refusals)
    if outcome is not None:
        outcome.append(out)
    at_lowest = run_lowest if cross and above_lowest else None
    onnx_ref = (lambda: _onnx_reference(pool, case, model)) if cross else None
    recheck = case.graph.extreme is not None
    # a re-run without the excuses still leaves out what the scoping rules name on an extreme
    # case: a finding there must reproduce (gate.triage.confirm)
    asked = rules.RULES if explain else rules.SCOPING if recheck else None
    why = rules.explain(case.graph, case.inputs, cfg.tolerances, out.outputs, reference, recheck, asked) \
        if asked else None
    v = V.judge(spec.name, spec.label(), out, reference, cfg.tolerances, explain=why, at_lowest=at_lowest,
                onnx_reference=onnx_ref, op_pattern=op_pattern(case.graph), recheck=recheck)
    if v.verdict != V.PASS or not more:
        return v
    # compiled once, run at each further binding: judged there against the reference
    for k, ((b, g, xs), ref_k, out_k) in enumerate(zip(case.shapes, case.shape_refs, out.more), start=1):
        out_k.compile_s, out_k.wall_s = out.compile_s, out.wall_s
        why_k = rules.explain(g, xs, cfg.tolerances, out_k.outputs, ref_k, recheck, asked) if asked else None
        vk = V.judge(spec.name, spec.label(), out_k, ref_k, cfg.tolerances, explain=why_k,
                     op_pattern=op_pattern(case.graph) + " | dynamic", recheck=recheck)
        if vk.verdict != V.PASS:
            vk.shape = {"index": k, "binding": dict(b)}
            vk.detail = f"at {dynamic.describe(b)} (compiled for symbolic shapes, first run at " \
                        f"{dynamic.describe(dynamic.first_binding(case.graph))}): {vk.detail}"
            return vk
    return v


def _onnx_reference(pool: W.Pool, case: Prepared, model: Model):
    """ONNX's reference evaluator on the case, or why it is not consulted (it computes an
    instance of the model wrongly: ``rules.reference_defect``)."""
    why = defect(Context(case.graph, case.inputs))
    return why if why else pool.execute(BackendSpec("onnx-reference"), model, case.inputs)


def _static(case: Prepared) -> Model:
    """A dynamic case's model with static shapes: its graph at its own first binding."""
    g = dynamic.at(case.graph, 0)
    return Model(to_onnx(g, sub_seed(case.meta.get("seed", 0), "onnx"), doc=f"dlgate case {case.id}, static")
                 .SerializeToString(), g)


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
    # model_sha256: the model written here (the input search may have changed its constants,
    # so it can differ from the generated model's sha256); load_case checks it
    meta = dict(case.meta, search=case.search, graph=case.graph.to_json(),
                model_sha256=hashlib.sha256(case.model).hexdigest())
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    return d
