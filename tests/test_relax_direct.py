"""The direct Relax path (``tvm-relax``): every covered operator's lowering agrees with the
reference on real TVM, a generated batch passes the gate on it, a fault in a pass that only
the direct path's structure meets (calls to a private function) is caught there and nowhere
else, the same graph gives the same TVMScript in any process, and an operator without a
lowering is refused in words."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from functools import lru_cache

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

from dlgate.backends import registry  # noqa: E402
from dlgate.backends.base import BackendSpec, Model  # noqa: E402
from dlgate.backends.tvm_relax import TVMRelax, structure_seed  # noqa: E402
from dlgate.case import make_case  # noqa: E402
from dlgate.check import CheckConfig, check, prepare  # noqa: E402
from dlgate.exec.worker import Pool  # noqa: E402
from dlgate.graph.generator import GenConfig, Generator  # noqa: E402
from dlgate.materialize.relax.lowerings import LOWERINGS, NoRelaxLowering, covered  # noqa: E402
from dlgate.materialize.relax.module import script, to_relax  # noqa: E402
from dlgate.materialize.torch_model import run_numpy  # noqa: E402
from dlgate.ops.registry import all_specs  # noqa: E402
from dlgate.oracle import verdict as V  # noqa: E402
from dlgate.oracle.compare import compare  # noqa: E402
from tests.relax_faults import _private, shift_private_calls  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The words of the direct path's refusals (``NoRelaxLowering``).
REFUSAL = "no Relax lowering for"


# the fault, a pass that miscompiles only calls to a private function: tests/relax_faults.py


# -- helpers ----------------------------------------------------------------------------------
def _prepared(gen: Generator, campaign: str, index: int):
    c = make_case(gen, "relax", campaign, index)
    return prepare(c.meta(), c.graph, c.model_bytes)


def _run(backend, p) -> list:
    return backend.run(backend.compile(Model(p.model, p.graph)), p.inputs)


def _first_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"


# -- every covered operator ------------------------------------------------------------------------
def test_the_lowerings_are_found_by_spec_name():
    specs = all_specs()
    assert set(LOWERINGS) <= set(specs), sorted(set(LOWERINGS) - set(specs))
    # the brief's broad operators are covered
    for op in ("Add", "Sub", "Mul", "Div", "Exp", "Sigmoid", "Equal", "Less", "Where", "MatMul", "ReduceSum",
               "ReduceMax", "ArgMax", "Reshape", "Transpose", "Concat", "Slice", "Squeeze", "Unsqueeze", "Softmax",
               "Cast"):
        assert op in covered(), op


def test_every_covered_operator_agrees_with_the_reference_on_tvm():
    """One-operator models of every covered operator (float32, int32, int64 and bool, half
    of them with symbolic dimensions), compiled on the direct path at TVM's default
    pipeline: each operator has a case that agrees with the PyTorch reference, and none
    disagrees. A case may be refused in the direct path's words, or fail to compile where
    the importer path fails the same way (TVM's own limit: ReduceMax on bool)."""
    direct = TVMRelax(record_rewrites=False)
    importer = registry.load("tvm")(record_rewrites=False)
    agreed, wrong, refused, shared = set(), [], [], []
    for op in covered():
        gen = Generator(GenConfig(ops=(op,), min_nodes=1, max_nodes=1, dtypes=("float32", "int32", "int64", "bool"),
                                  dynamic_share=0.5))
        for i in range(5):
            p = _prepared(gen, op, i)
            if not p.search["valid"]:
                continue
            try:
                outs = _run(direct, p)
            except NoRelaxLowering as e:
                assert str(e).startswith(REFUSAL), e
                refused.append(op)
                continue
            except Exception as e:  # noqa: BLE001 - shared with the importer path, or a failure of ours
                try:
                    _run(importer, p)
                except Exception as e2:  # noqa: BLE001
                    assert _first_line(e2) == _first_line(e), (op, _first_line(e), _first_line(e2))
                    shared.append(op)
                    continue
                raise AssertionError(f"{op}: only the direct path fails: {_first_line(e)}") from e
            cmp = compare(run_numpy(p.graph, p.inputs), outs)
            if not cmp.ok:
                wrong.append((op, i, cmp.detail))
            else:
                agreed.add(op)
                break
    assert not wrong, wrong
    assert agreed == set(covered()), sorted(set(covered()) - agreed)
    assert "ArgMax" not in refused and "ArgMin" not in refused, refused


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_select_last_index_takes_the_last_extremum_static_and_symbolic(op):
    """ArgMax/ArgMin with ``select_last_index=1`` (relax.op.argmax/argmin take the first
    extremum; the direct path flips the axis): on inputs rounded so that extrema tie, the
    direct path gives the reference's last index, where the first index differs, with a
    static and a symbolic axis."""
    direct = TVMRelax(record_rewrites=False)
    seen = {"static": 0, "symbolic": 0}
    differs = 0
    gen = Generator(GenConfig(ops=(op,), min_nodes=1, max_nodes=1, dtypes=("float32",), dynamic_share=0.5))
    for i in range(40):
        c = make_case(gen, "relax", op, i)
        a = c.graph.nodes[0].attrs
        x = c.graph.tensors[c.graph.nodes[0].inputs[0]]
        if not a.get("select_last_index") or x.shape[a["axis"] % len(x.shape)] < 2:
            continue
        p = prepare(c.meta(), c.graph, c.model_bytes)
        if not p.search["valid"]:
            continue
        kind = "symbolic" if c.graph.dynamic else "static"
        if seen[kind] >= 2:
            continue
        tied = [np.round(v / 2).astype(v.dtype) for v in p.inputs]  # many equal extrema
        want = run_numpy(p.graph, tied)
        node = p.graph.nodes[0]
        first = run_numpy(dataclasses.replace(p.graph, nodes=[
            dataclasses.replace(node, attrs={**node.attrs, "select_last_index": 0})]), tied)
        assert compare(want, _run(direct, dataclasses.replace(p, inputs=tied))).ok, (op, i, a)
        differs += any(not np.array_equal(w, f) for w, f in zip(want, first))
        seen[kind] += 1
    assert seen == {"static": 2, "symbolic": 2}, seen
    assert differs, "no draw where the last extremum differs from the first: the test would not see the flip"


def _batch(n: int = 24):
    """A small generated batch restricted to the covered operators, every dtype, half of it
    with symbolic dimensions: its cases one at a time (each prepared as it is reached)."""
    gen = Generator(GenConfig(ops=covered(), max_nodes=8, dynamic_share=0.5))
    return (_prepared(gen, "silent", i) for i in range(n))


def test_every_te_form_agrees_with_the_reference_on_tvm():
    """The operators that may be written as a PrimFunc called by call_tir, each forced to that
    form in one-operator models of every float dtype and the integers: the TE form means
    what the operator does (float16 included, which TOPI's own intrinsics do not all lower)."""
    from dlgate.materialize.relax.lowerings import TE_LOWERINGS
    from dlgate.materialize.relax.module import assemble

    backend = TVMRelax(record_rewrites=False)
    checked = set()

    def dtype(g):
        return g.tensors[g.inputs[0]].dtype if g.inputs else None

    def agrees(op, p) -> None:
        mod = assemble(p.graph, {"wrap": None, "cast_inputs": [], "cast_outputs": [], "call_tir": [0]})
        assert "R.call_tir(" in script(mod), op
        vm, dev = backend._build(mod, (), False)
        outs = backend.run((vm, dev, list(range(len(p.graph.inputs)))), p.inputs)
        cmp = compare(run_numpy(p.graph, p.inputs), outs)
        assert cmp.ok, (op, p.graph.input_types(), cmp.detail)
        checked.add((op, dtype(p.graph)))

    gens = {op: Generator(GenConfig(ops=(op,), min_nodes=1, max_nodes=1,
                                    dtypes=("float16", "float64", "int32", "float32"))) for op in TE_LOWERINGS}
    for op in sorted(TE_LOWERINGS):
        for i in range(3):
            p = _prepared(gens[op], "te", i)
            if p.search["valid"]:
                agrees(op, p)
    # float16 is the dtype the TE forms must be seen to handle: where the first draws hold
    # none, the first further draw (indices 3..11, the operators in order) of a float16 input
    for i in range(3, 12):
        if any(t == "float16" for _, t in checked):
            break
        for op in sorted(TE_LOWERINGS):
            c = make_case(gens[op], "relax", "te", i)
            if dtype(c.graph) == "float16":
                p = prepare(c.meta(), c.graph, c.model_bytes)
                if p.search["valid"]:
                    agrees(op, p)
                    break
    assert {op for op, _ in checked} == set(TE_LOWERINGS)
    assert any(t == "float16" for _, t in checked)


@lru_cache(maxsize=None)
def _refusal():
    """A case holding an operator without a Relax lowering (Det)."""
    det = Generator(GenConfig(ops=("Det", "Abs"), min_nodes=2, max_nodes=3, dtypes=("float32",)))
    return next(p for p in (_prepared(det, "det", i) for i in range(10)) if "Det" in p.graph.op_names())


def test_a_generated_batch_passes_the_gate_on_the_direct_path():
    """The silent test: the gate (reference, oracle, further bindings of dynamic cases) on
    the direct path and on the importer path. The direct path is never wrong; where it does
    not pass, it refuses in its own words or fails exactly as the importer path does (TVM's
    own limits, e.g. no TIR intrinsic for asin on float16). The batch is read until the
    direct path has passed 11 cases, 3 of them dynamic, at most 24: how many of the first
    cases meet one of TVM's own limits is the generator's draw, not the direct path's."""
    cases, refusal = _batch(), _refusal()
    cfg = CheckConfig([BackendSpec("dlgate.backends.tvm_relax:TVMRelax"), BackendSpec("tvm")], timeout_s=120)
    passed = dynamic_passed = 0
    with Pool(timeout_s=120) as pool:
        for case in cases:
            if passed >= 11 and dynamic_passed >= 3:
                break
            direct, importer = check(pool, case, cfg)["verdicts"]
            if direct["verdict"] == V.PASS:
                passed += 1
                dynamic_passed += bool(case.graph.dynamic)
            elif direct["verdict"] == V.UNSUPPORTED:
                assert REFUSAL in direct["detail"], (case.id, direct["detail"])
            else:
                assert direct["verdict"] == importer["verdict"] == V.COMPILE_ERROR, (case.id, direct, importer)
                assert direct["detail"].splitlines()[0] == importer["detail"].splitlines()[0], (case.id,)
        direct, _ = check(pool, refusal, cfg)["verdicts"]
    assert passed >= 11, passed
    assert dynamic_passed >= 3, dynamic_passed
    assert direct["verdict"] == V.UNSUPPORTED and "no Relax lowering for operator Det" in direct["detail"], direct


# -- the injected fault ------------------------------------------------------------------------------
def test_a_pass_that_miscompiles_private_function_calls_is_caught_only_on_the_direct_path():
    gen = Generator(GenConfig(ops=covered(), max_nodes=6, dtypes=("float32",)))
    healthy, broken = TVMRelax(record_rewrites=False), TVMRelax(record_rewrites=False, extra_passes=[shift_private_calls])
    plain = TVMRelax(record_rewrites=False, plain=True, extra_passes=[shift_private_calls])
    importer = registry.load("tvm")(record_rewrites=False, extra_passes=[shift_private_calls])
    caught = 0
    first_caught = None
    for i in range(9):
        p = _prepared(gen, "fault", i)
        if not p.search["valid"]:
            continue
        ref = run_numpy(p.graph, p.inputs)
        try:
            good = _run(healthy, p)
        except NotImplementedError:
            continue
        assert compare(ref, good).ok, p.id
        bad = compare(ref, _run(broken, p))
        if bad.ok:
            continue
        # wrong only through a private function: the same case without one, and the
        # importer's module, are right under the same pass
        assert _private(to_relax(p.graph, structure_seed(p.graph))), p.id
        assert compare(ref, _run(plain, p)).ok, p.id
        assert compare(ref, _run(importer, p)).ok, p.id
        caught += 1
        first_caught = first_caught or p
        if caught == 4:
            break
    assert caught >= 4, caught  # of 9 cases
    # and through the gate: the fault named as a pass the worker imports is a mismatch there
    spec = BackendSpec("dlgate.backends.tvm_relax:TVMRelax",
                       options=(("extra_passes", ("tests.relax_faults:shift_private_calls",)),))
    with Pool(timeout_s=120) as pool:
        (v,) = check(pool, first_caught, CheckConfig([spec], timeout_s=120))["verdicts"]
    assert v["verdict"] == V.MISMATCH, v


# -- determinism and structure ---------------------------------------------------------------------
_SCRIPT = """
import hashlib, sys
from dlgate.case import make_case
from dlgate.graph.generator import GenConfig, Generator
from dlgate.materialize.relax.lowerings import covered
from dlgate.materialize.relax.module import script, to_relax
from dlgate.backends.tvm_relax import structure_seed
gen = Generator(GenConfig(ops=covered(), max_nodes=8, dynamic_share=0.5))
for i in range(int(sys.argv[1])):
    g = make_case(gen, "relax", "det", i).graph
    try:
        text = script(to_relax(g, structure_seed(g)))
    except NotImplementedError as e:
        text = str(e)
    print(hashlib.sha256(text.encode()).hexdigest())
"""


def _texts(n: int) -> list:
    gen = Generator(GenConfig(ops=covered(), max_nodes=8, dynamic_share=0.5))
    out = []
    for i in range(n):
        g = make_case(gen, "relax", "det", i).graph
        try:
            out.append((g, script(to_relax(g, structure_seed(g)))))
        except NotImplementedError as e:
            out.append((g, str(e)))
    return out


def test_the_same_graph_gives_the_same_tvmscript_in_any_process():
    import hashlib

    texts = _texts(12)
    assert [t for _, t in texts] == [t for _, t in _texts(12)]
    env = dict(os.environ, PYTHONHASHSEED="12345", PYTHONPATH=ROOT)
    res = subprocess.run([sys.executable, "-c", _SCRIPT, "12"], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == [hashlib.sha256(t.encode()).hexdigest() for _, t in texts]
    # the seed draws the structure: another seed gives another module for some graph
    g = next(g for g, t in texts if len(g.nodes) >= 3 and REFUSAL not in t)
    assert len({script(to_relax(g, s)) for s in range(8)}) > 1


def test_the_modules_use_what_only_relax_has():
    """Across a small batch: private functions called from main, dataflow blocks, symbolic
    shape variables (in signatures and bound by match_cast), tuples out of a call, PrimFuncs
    called by call_tir."""
    texts = [t for _, t in _texts(12) if REFUSAL not in t]
    joined = "\n".join(texts)
    assert "@R.function(private=True)" in joined
    assert "R.dataflow()" in joined
    assert "R.match_cast(" in joined
    assert "R.call_tir(" in joined and "@T.prim_func(private=True" in joined
    assert 'TypeVar("batch")' in joined or 'TypeVar("seq")' in joined
    assert any("private=True" in t and "R.Tuple(" in t.split("def main")[1] for t in texts)


# -- refusal, registration, options ----------------------------------------------------------------
def test_an_operator_without_a_lowering_is_refused_in_words():
    refusal = _refusal()
    backend = TVMRelax()
    with pytest.raises(NoRelaxLowering) as e:
        backend.compile(Model(refusal.model, refusal.graph))
    assert str(e.value) == "no Relax lowering for operator Det"
    assert backend.unsupported(e.value)
    assert not backend.unsupported(TypeError("a converter's crash"))


def test_the_backend_is_registered_like_the_others():
    with open(os.path.join(ROOT, "pyproject.toml")) as f:  # read as text: tomllib is Python 3.11+
        text = f.read()
    group = text.split('[project.entry-points."dlgate.backends"]\n', 1)[1].split("\n\n", 1)[0]
    assert 'tvm-relax = "dlgate.backends.tvm_relax:TVMRelax"' in group.splitlines()
    assert registry.load("dlgate.backends.tvm_relax:TVMRelax") is TVMRelax
    assert BackendSpec.parse("tvm-relax@zero") == BackendSpec("tvm-relax", "cpu", "zero")
    assert TVMRelax.opt_levels == ("zero", "default")
    TVMRelax.check_options({"plain": True, "extra_passes": ["dlgate.backends.testing:add_to_subtract"]})
    with pytest.raises(ValueError, match="'plain': expected true or false"):
        TVMRelax.check_options({"plain": "yes"})
    with pytest.raises(ValueError, match="unknown option 'nope'"):
        TVMRelax.check_options({"nope": 1})


# -- the importer path and the direct path as a differential pair ------------------------------
def test_the_pair_classifies_each_table():
    from dlgate.backends.relax_pair import classify

    def table(iz, idf, dz, ddf):
        return {("importer", "zero"): iz, ("importer", "default"): idf, ("direct", "zero"): dz,
                ("direct", "default"): ddf}

    assert classify(table(True, True, True, True))[0] == "agree"
    assert classify(table(True, False, True, True)) == (
        "pass", "a pass of the default pipeline: both paths are right at the zero pipeline, the importer path is "
                "wrong at the default")
    assert classify(table(True, False, True, False))[0] == "pass"
    assert classify(table(False, False, True, True))[0] == "importer"
    assert classify(table(True, True, False, False), plain_agrees=True)[0] == "direct-structure"
    assert classify(table(True, True, False, False), plain_agrees=False)[0] == "direct-lowering"
    assert classify(table(False, False, False, False))[0] == "below"
    assert classify(table(True, True, None, None)) == ("undecided", "the direct path refused the graph")


def test_the_pair_places_injected_faults_on_their_side():
    """Real runs of both paths at both pipelines on one case, with a fault put where each
    side would have it: in the importer path's module, in a pass of the default pipeline,
    in what only the direct path's structure meets, in both paths before any optimization."""
    from dlgate.backends.relax_pair import compare_paths

    gen = Generator(GenConfig(ops=("Add", "Mul", "Sigmoid", "Exp", "Neg"), min_nodes=3, max_nodes=4,
                              dtypes=("float32",)))
    p = next(p for p in (_prepared(gen, "pair", i) for i in range(20))
             if "Add" in p.graph.op_names() and _private(to_relax(p.graph, structure_seed(p.graph))))
    model, ref = Model(p.model, p.graph), run_numpy(p.graph, p.inputs)
    add_fault = (("extra_passes", ("dlgate.backends.testing:add_to_subtract",)),)
    call_fault = (("extra_passes", (shift_private_calls,)),)
    everywhere = {(path, lvl): add_fault for path in ("importer", "direct") for lvl in ("zero", "default")}

    def side(options=None):
        return compare_paths(model, p.inputs, ref, options=options)["side"]

    assert side() == "agree"
    assert side({("importer", "zero"): add_fault, ("importer", "default"): add_fault}) == "importer"
    assert side({("importer", "default"): add_fault, ("direct", "default"): add_fault}) == "pass"
    assert side({("direct", "zero"): call_fault, ("direct", "default"): call_fault}) == "direct-structure"
    assert side({("direct", "zero"): add_fault, ("direct", "default"): add_fault}) == "direct-lowering"
    assert side(everywhere) == "below"


def _broadcast_add(batch_size: int, other: tuple):
    """Add of x[batch, 3] (batch symbolic, bound to ``batch_size``) and a constant of shape
    ``other``, as the generator writes a dynamic graph."""
    import numpy as np

    from dlgate.graph.ir import Graph, Node
    from dlgate.ops.base import TensorType

    out = tuple(max(a, b) for a, b in zip((batch_size, 3), other))
    g = Graph(tensors=[TensorType("float32", (batch_size, 3)), TensorType("float32", other),
                       TensorType("float32", out)],
              nodes=[Node("Add", {}, [0, 1], [2])], inputs=[0], consts=[1], outputs=[2], opset=18,
              values={1: np.arange(np.prod(other), dtype=np.float32).reshape(other)})
    g.dynamic = {"dims": [[0, 0, "batch"]], "bindings": []}
    return g


def test_a_te_form_that_would_read_past_a_symbolic_operand_keeps_the_relax_operator():
    """Catch: TOPI takes a symbol broadcast against a constant above 1 (batch against 5) to be
    that constant, so a call_tir Add of x[batch, 3] and c[5, 3] reads past x where batch
    binds to 1, which ONNX broadcasting allows (undefined values, a false alarm waiting to
    happen): that node keeps R.add, which Relax cannot type, so the direct path refuses it.
    Silent: x[batch, 3] against c[1, 3] (a static 1) stays a call_tir and is right."""
    import numpy as np

    from dlgate.materialize.relax.module import assemble

    forced = {"wrap": None, "cast_inputs": [], "cast_outputs": [], "call_tir": [0]}
    with pytest.raises(NoRelaxLowering):
        assemble(_broadcast_add(1, (5, 3)), forced)
    safe = assemble(_broadcast_add(4, (1, 3)), forced)
    assert "R.call_tir(" in script(safe)
    backend = TVMRelax(record_rewrites=False)
    x = np.arange(12, dtype=np.float32).reshape(4, 3) + 100
    vm, dev = backend._build(safe, (), False)
    for rows in (4, 1):  # the symbol at its own size and at 1
        got = backend.run((vm, dev, [0]), [x[:rows]])[0]
        assert np.array_equal(got, x[:rows] + np.arange(3, dtype=np.float32)), rows
