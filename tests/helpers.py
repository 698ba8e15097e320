"""Shared test helpers: running a graph on the references and comparing results, and
checking one spec's lowering as a one-node ONNX model against onnx.reference,
onnxruntime and the spec's PyTorch implementation."""
from __future__ import annotations

import random
from typing import Callable, NamedTuple

import numpy as np
import onnxruntime as ort

from dlgate.graph.ir import Graph

TOL = {"float16": (1e-2, 1e-2), "float32": (1e-3, 1e-4), "float64": (1e-6, 1e-9)}
DISABLE_ALL = ort.GraphOptimizationLevel.ORT_DISABLE_ALL


def ort_session(model, level=DISABLE_ALL, severity: int | None = 3) -> ort.InferenceSession:
    """A CPU onnxruntime session on ``model`` (bytes or a ModelProto); ``level`` None or
    ``severity`` None leave onnxruntime's default. One thread, as dlgate's own onnxruntime
    backend runs: its default pool of one thread a core spins between the small operators of
    a test's models, taking about a third more CPU from the other xdist worker, and splits
    reductions by thread, so the results' last bits would depend on the machine."""
    if not isinstance(model, (bytes, bytearray)):
        model = model.SerializeToString()
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    if level is not None:
        so.graph_optimization_level = level
    if severity is not None:
        so.log_severity_level = severity
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def ort_outputs(model, names: list, feeds: list, level=DISABLE_ALL, severity: int | None = 3,
                declines: tuple = ()) -> list | None:
    """onnxruntime's outputs for ``feeds`` given to the inputs ``names``; None where it
    raises an error whose text holds one of ``declines`` (an operator it does not run)."""
    try:
        return ort_session(model, level, severity).run(None, dict(zip(names, feeds)))
    except Exception as e:  # noqa: BLE001
        if not declines:
            raise
        assert any(k in str(e) for k in declines), e
        return None


def ort_run(model: bytes, g: Graph, feeds: list, all_nodes: bool = False) -> list:
    return ort_outputs(model, [g.name(t) for t in g.inputs], feeds)


def finite(*arrays) -> bool:
    return all(not np.issubdtype(a.dtype, np.floating) or np.isfinite(a).all() for a in arrays)


def mismatch(a: np.ndarray, b: np.ndarray, scale: float = 1.0) -> str | None:
    """None when a and b agree in dtype, shape, non-finite positions and values."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} vs {b.dtype}"
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    if np.issubdtype(a.dtype, np.floating):
        rtol, atol = TOL[str(a.dtype)]
        x, y = a.astype(np.float64), b.astype(np.float64)
        if not np.array_equal(np.isnan(x), np.isnan(y)):
            return "NaN positions differ"
        if not np.allclose(x, y, rtol=rtol, atol=atol * scale, equal_nan=True):
            bad = ~np.isclose(x, y, rtol=rtol, atol=atol * scale, equal_nan=True)
            return f"values differ at {int(bad.sum())} places, e.g. {x[bad][:3]} vs {y[bad][:3]}"
        return None
    if not np.array_equal(a, b):
        return f"values differ at {int((a != b).sum())} places"
    return None


def generated_cases(out_dir, gen, root: str, campaign: str, limit: int):
    """The prepared cases ``root``/``campaign``/0, 1, ... of generator ``gen`` (at most
    ``limit``), written under ``out_dir`` one at a time: an end-to-end test reads on until
    it has compared enough cases of each kind, and stops there."""
    from dlgate.case import make_case
    from dlgate.check import load_case, prepare

    for i in range(limit):
        yield prepare(*load_case(make_case(gen, root, campaign, i).write(str(out_dir))))


def draw_cases(gen, root: str, campaign: str, n: int = 1, *, where: Callable | None = None,
               keep: Callable | None = None, tries: int = 200, skip_errors: bool = False) -> list:
    """The first ``n`` cases ``root``/``campaign``/0, 1, ... of generator ``gen`` (within
    ``tries`` indices) that a test needs: ``where(case)`` on the generated case, then, where
    ``keep`` is given, ``keep(prepared)`` on the case prepared as a run prepares it (only
    the cases ``where`` took are prepared: the input search is the costly part); the
    prepared cases are returned then, else the generated ones. ``skip_errors``: an index
    whose draw fits nothing (the generator raises) is passed over. Picking cases by the
    property under test, not by a fixed index, keeps a test's meaning across generator
    versions; too few raises, naming what was searched."""
    from dlgate.case import make_case
    from dlgate.check import prepare

    out = []
    for i in range(tries):
        try:
            c = make_case(gen, root, campaign, i)
        except Exception:  # noqa: BLE001 - only where asked: a draw that fits nothing
            if not skip_errors:
                raise
            continue
        if where is not None and not where(c):
            continue
        if keep is not None:
            c = prepare(c.meta(), c.graph, c.model_bytes)
            if not keep(c):
                continue
        out.append(c)
        if len(out) == n:
            return out
    raise AssertionError(f"only {len(out)} of the {n} cases wanted among {root}/{campaign}/0..{tries - 1}")


# -- one spec's lowering as a one-node model -------------------------------------------------------
class OneNode(NamedTuple):
    spec: object
    ins: list      # the input TensorTypes
    outs: list     # the output TensorTypes the spec infers
    xs: list       # the model's input names
    model: object  # the onnx.ModelProto


def tensor_types(input_types) -> list:
    """TensorTypes from TensorTypes or (dtype, shape) pairs."""
    from dlgate.ops.base import TensorType

    return [t if isinstance(t, TensorType) else TensorType(t[0], tuple(t[1])) for t in input_types]


def one_node_model(spec_name, attrs, input_types, opset, ir_version: int | str = 8, seed=0, check=True,
                   requires=True) -> OneNode:
    """The model of one instance of ``spec_name`` from the spec's own lowering, inputs x0...,
    outputs y0...; ``ir_version`` "min" is the least one the opset allows; ``check``: through
    ONNX's full checker; ``requires``: the instance must meet the spec's requirements."""
    import onnx
    from onnx import helper

    from dlgate import dtypes as dt
    from dlgate.materialize.onnx_model import Builder
    from dlgate.ops.base import all_true
    from dlgate.ops.registry import get

    spec = get(spec_name)
    ins = tensor_types(input_types)
    if requires:
        assert all_true(spec.requires(ins, attrs)), (spec_name, attrs, ins)
    outs = spec.infer(ins, attrs)
    b = Builder(opset, random.Random(seed))
    xs, ys = [f"x{i}" for i in range(len(ins))], [f"y{i}" for i in range(len(outs))]
    spec.onnx(b, attrs, xs, ys)
    graph = helper.make_graph(
        b.nodes, "t", [helper.make_tensor_value_info(x, dt.ONNX[t.dtype], list(t.shape)) for x, t in zip(xs, ins)],
        [helper.make_tensor_value_info(y, dt.ONNX[t.dtype], list(t.shape)) for y, t in zip(ys, outs)],
        initializer=b.initializers)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = helper.find_min_ir_version_for(opsets) if ir_version == "min" else ir_version
    if check:
        onnx.checker.check_model(model, full_check=True)
    return OneNode(spec, ins, outs, xs, model)


def draw_feed(rng, t, ints=(-5, 6), uint8=None, bools=True, floats=(-3.0, 3.0)) -> np.ndarray:
    """A random value of type ``t``: booleans (where ``bools``) evenly, integers in ``ints``
    (``uint8`` for uint8 where given), anything else uniform in ``floats``."""
    from dlgate import dtypes as dt

    if bools and t.dtype == dt.BOOL:
        return rng.integers(0, 2, size=t.shape).astype(bool)
    if dt.is_int(t.dtype):
        lo, hi = uint8 if uint8 is not None and t.dtype == dt.UINT8 else ints
        return rng.integers(lo, hi, size=t.shape).astype(dt.NUMPY[t.dtype])
    return rng.uniform(*floats, size=t.shape).astype(dt.NUMPY[t.dtype])


def torch_outputs(spec, attrs, feeds) -> list:
    """The spec's PyTorch implementation on ``feeds``, as NumPy arrays."""
    import torch

    with torch.no_grad():
        out = spec.torch(attrs, *[torch.from_numpy(np.array(f, copy=True)) for f in feeds])
    return [o.numpy() for o in (out if isinstance(out, (tuple, list)) else [out])]


def assert_typed(ours, outs, *where):
    """Our outputs have the dtypes and shapes the spec infers."""
    for o, t in zip(ours, outs):
        assert (str(o.dtype), tuple(o.shape)) == (t.dtype, tuple(t.shape)), (*where, o.dtype, o.shape, t)


def assert_agree(results: dict, ours, where) -> None:
    """Each of ``results`` (who: outputs) agrees with ours."""
    for who, got in results.items():
        for g, o in zip(got, ours):
            err = mismatch(np.asarray(g), o)
            assert err is None, f"{where}: {who} vs torch: {err}"


class Checked(NamedTuple):
    ours: list
    model: object
    ref: list | None
    got: list | None


def check_against_reference(spec_name, attrs, input_types, opset, *, seed=0, feeds=None,
                            ir_version: int | str = 8, draw: Callable = draw_feed, coerce_feeds=False,
                            shape_inference: str | None = None, reference: str | bool = "unless-defect",
                            runtime=True, declines: tuple = (), level=DISABLE_ALL,
                            skip_nonfinite=False, requires=True) -> Checked:
    """One node from the spec's own lowering through ONNX's full checker, then the spec's
    torch against onnx.reference and onnxruntime.

    ``draw(rng, t)`` draws each feed not given (one ``np.random.default_rng(seed)``);
    ``coerce_feeds``: given feeds are cast to the input dtypes and shapes; ``shape_inference``
    "strict" runs ONNX's strict shape inference, "compare" also compares its output shapes
    with the spec's; ``reference`` "unless-defect" skips onnx.reference where the spec names
    a defect of it, True runs it always, False never; ``runtime``: onnxruntime (at ``level``)
    too, ``declines`` the errors it may raise instead (then ``got`` is None);
    ``skip_nonfinite``: no comparison where our outputs are not all finite; ``requires``:
    the instance must meet the spec's requirements."""
    import onnx
    from onnx.reference import ReferenceEvaluator

    from dlgate import dtypes as dt

    spec, ins, outs, xs, model = one_node_model(spec_name, attrs, input_types, opset, ir_version, seed,
                                                  requires=requires)
    where = f"{spec_name} {attrs} opset {opset}"
    if shape_inference:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        if shape_inference == "compare":
            for vi, t in zip(inferred.graph.output, outs):
                dims = tuple(d.dim_value for d in vi.type.tensor_type.shape.dim)
                assert dims == tuple(t.shape), f"{where}: ONNX infers {dims}, the spec {t.shape}"
    if feeds is None:
        rng = np.random.default_rng(seed)
        feeds = [draw(rng, t) for t in ins]
    elif coerce_feeds:
        feeds = [np.asarray(f, dtype=dt.NUMPY[t.dtype]).reshape(t.shape) for f, t in zip(feeds, ins)]
    ours = torch_outputs(spec, attrs, feeds)
    assert_typed(ours, outs, spec_name, attrs)
    ref = got = None
    if skip_nonfinite and not finite(*ours):
        return Checked(ours, model, ref, got)
    if reference is True or (reference == "unless-defect" and spec.reference_defect(attrs, ins, opset) is None):
        ref = ReferenceEvaluator(model).run(None, dict(zip(xs, feeds)))
        assert_agree({"onnx.reference": ref}, ours, where)
    if runtime:
        got = ort_outputs(model, xs, feeds, level, declines=declines)
        assert_agree({"onnxruntime": got or []}, ours, where)
    return Checked(ours, model, ref, got)


def judge_candidate(g: Graph, inputs: list, candidate: list, reference: list | None = None, tolerances=None):
    """The oracle's verdict on ``candidate`` against the PyTorch reference (or ``reference``),
    through the same rules ``check.judge_backend`` hands to ``verdict.judge``."""
    from dlgate.exec.worker import Outcome
    from dlgate.materialize.torch_model import run_numpy
    from dlgate.oracle import rules
    from dlgate.oracle import verdict as V

    ref = run_numpy(g, inputs) if reference is None else reference
    out = Outcome("ok", candidate, None, 0.1, 0.01, 0.2, {"name": "fake", "version": "1"})
    recheck = g.extreme is not None
    return V.judge("fake", "fake[cpu]", out, ref, tolerances,
                   explain=rules.explain(g, inputs, tolerances, candidate, ref, recheck), recheck=recheck)


# -- picking a run's seed by what its batch holds --------------------------------------------------
def run_batch(cfg_path: str, seed: str) -> list:
    """The batch cases (``dlgate.case.Case``, in index order) that ``dlgate run --config
    cfg_path --seed seed`` generates: the campaign's generator at its fixed opset (or from
    13 up to its ``max_opset``, which spares the probe), guided by
    coverage from an empty state unless guidance is off. A test that needs its batch to hold
    some kind of model picks its seed by this (:func:`seed_where`), so that a new generator
    version, which draws other cases from every seed, does not take the kind away."""
    from dlgate.case import GuidedBatch, make_case
    from dlgate.coverage.state import CoverageState
    from dlgate.gate import config as C
    from dlgate.gate.run.plan import generator

    from dlgate.graph.config import OLDEST_OPSET

    cfg = C.load(cfg_path)
    # what the run would draw otherwise depends on probes (the opset range, a support
    # restriction) or on a coverage state kept elsewhere
    assert cfg.opset is not None or cfg.max_opset is not None
    assert not cfg.support and not cfg.restrict_to_support and not cfg.coverage_state
    gen = generator(cfg, [cfg.opset, cfg.opset] if cfg.opset is not None else [OLDEST_OPSET, cfg.max_opset])
    if not cfg.guidance:
        return [make_case(gen, seed, cfg.campaign, i) for i in range(cfg.models)]
    batch = GuidedBatch(gen, seed, cfg.campaign, CoverageState())
    return [batch.case(i)[0] for i in range(cfg.models)]


def seed_where(cfg_path: str, holds: Callable, prefix: str, tries: int = 60) -> str:
    """The first of ``prefix``1, ``prefix``2, ... whose batch (:func:`run_batch`) ``holds``."""
    for k in range(1, tries + 1):
        if holds(run_batch(cfg_path, f"{prefix}{k}")):
            return f"{prefix}{k}"
    raise AssertionError(f"no seed {prefix}1..{prefix}{tries} draws the batch the test needs")


def pinned_where(pinned: str, holds: Callable[[str], bool], search: Callable[[], str | None], what: str) -> str:
    """``pinned``, a seed the test picked once by ``search`` (the first within its bound that
    ``holds``: :func:`seed_where` or the like) and names, to spare the search in every run;
    checked here by the property it was picked for. Where it no longer ``holds`` (a generator
    version draws other cases from every seed), this fails and says what to pin instead: the
    search runs then, and only then."""
    if holds(pinned):
        return pinned
    try:
        again = search()
    except AssertionError:  # the search's own bound: nothing to pin
        again = None
    fix = f"pin {again!r}, the first the search picks now" if again else "the search finds none: widen it"
    raise AssertionError(f"the pinned seed {pinned!r} no longer {what} (generation changed): {fix}")


def seed_where_pinned(cfg_path: str, holds: Callable, prefix: str, pinned: str, tries: int = 60) -> str:
    """:func:`seed_where`'s pick, pinned by the test as ``pinned`` and checked (:func:`pinned_where`)."""
    return pinned_where(pinned, lambda s: holds(run_batch(cfg_path, s)),
                        lambda: seed_where(cfg_path, holds, prefix, tries), f"draws the batch the test needs ({prefix}...)")


def onnx_ops(case) -> list:
    """The operator types of a case's ONNX model, in its node order."""
    import onnx

    return [n.op_type for n in onnx.load_from_string(case.model_bytes).graph.node]


def output_cones(model) -> list:
    """For each output of an ONNX model (a ModelProto, or its bytes), in order: the types of
    the operators it depends on."""
    import onnx

    if isinstance(model, (bytes, bytearray)):
        model = onnx.load_from_string(model)
    producer = {t: n for n in model.graph.node for t in n.output}
    cones = []
    for out in model.graph.output:
        todo, seen = [out.name], set()
        while todo:
            n = producer.get(todo.pop())
            if n is not None and id(n) not in seen:
                seen.add(id(n))
                todo.extend(n.input)
        cones.append({n.op_type for n in model.graph.node if id(n) in seen})
    return cones


#: onnxruntime's uint8 x int8 integer matmuls on an x86-64 CPU without VNNI (AVX2 alone, as
#: on this project's AMD EPYC machines) multiply with vpmaddubsw, whose int16 sums of two
#: adjacent products saturate: onnxruntime's quantization guide documents it and advises
#: reduce_range or int8 x int8 there. Its values then differ from the exact products ONNX
#: specifies (and torch computes); on a CPU with VNNI they agree, and are compared.
U8S8_SATURATING = {"MatMulIntegerToFloat", "DynamicQuantizeMatMul"}


def saturating_cpu() -> bool:
    """Whether this is an x86-64 CPU without VNNI (onnxruntime's u8s8 kernels saturate there)."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln for ln in f if ln.startswith("flags")), "").split()
    except OSError:
        return False
    return not {"avx512_vnni", "avx_vnni", "amx_int8"} & set(flags)
