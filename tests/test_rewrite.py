"""The equivalence rewrites (dlgate/rewrite/): each keeps the model valid ONNX (full checker,
strict shape inference) and computes the same under onnx.reference and PyTorch; twins are
a pure function of (graph, model, seed); the exactness claims hold on special values."""
import hashlib
import json
import os
import subprocess
import sys
from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from dlgate.case import make_case
from dlgate.check import prepare
from dlgate.graph.config import GenConfig
from dlgate.graph.generator import Generator
from dlgate.materialize.torch_model import run_numpy
from dlgate.rewrite import MODULES, all_rewrites, get, make_twin
from dlgate.rewrite.base import validate
from dlgate.rewrite.cast_round_trip import WIDER
from dlgate.rewrite.inline_functions import plain
from dlgate.rewrite.oracle import selected
from dlgate.rewrite.wrap_function import wrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def batch():
    """36 prepared cases with numeric-valid inputs (dynamic and extreme ones among them)."""
    return _cases(36)


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and \
        np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


def _feeds(p) -> dict:
    return {p.graph.name(t): x for t, x in zip(p.graph.inputs, p.inputs)}


def test_registry_lists_every_module():
    assert tuple(m for m in MODULES) == ("mul_one", "transpose_pair", "reshape_round_trip", "cast_round_trip",
                                         "reorder", "wrap_function", "inline_functions")
    rws = all_rewrites()
    assert list(rws) == list(MODULES)
    assert all(rw.applies for rw in rws.values())
    with pytest.raises(KeyError, match="unknown rewrite"):
        get("add_zero")


@pytest.mark.parametrize("kind", [k for k in MODULES if k != "inline_functions"])
def test_rewrite_is_valid_and_equal(batch, kind):
    """Every twin passes the full checker and gives bit-identical outputs under
    onnx.reference (where it runs the case) and under PyTorch on the edited graph."""
    applied = compared = 0
    for k, p in enumerate(batch):
        twin = make_twin(p.graph, p.model, 7000 + k, (kind,))
        if twin is None:
            continue
        applied += 1
        m = onnx.load_from_string(twin.model)
        validate(m)  # raises on an invalid twin
        assert twin.kind == kind and twin.where
        if twin.graph_changed:
            for a, b in zip(run_numpy(p.graph, p.inputs), run_numpy(twin.graph, p.inputs)):
                assert _same(a, b), (p.id, kind, twin.where)
        else:
            assert twin.graph is p.graph
        try:
            want = ReferenceEvaluator(onnx.load_from_string(p.model)).run(None, _feeds(p))
        except Exception:  # noqa: BLE001 - an operator onnx.reference does not implement: nothing to compare
            continue
        if not all(isinstance(x, np.ndarray) for x in want):
            continue  # onnx.reference returns some If outputs as lists (its own defect)
        got = ReferenceEvaluator(m).run(None, _feeds(p))
        assert len(got) == len(want)
        for a, b in zip(want, got):
            assert _same(a, np.asarray(b)), (p.id, kind, twin.where)
        compared += 1
    assert applied >= 12, f"{kind} applied to only {applied} of {len(batch)} cases"
    assert compared >= 5, f"{kind}: only {compared} twins compared under onnx.reference"


def test_twin_records_what_and_where(batch):
    seen = Counter()
    for k, p in enumerate(batch):
        twin = make_twin(p.graph, p.model, 11 + k)
        meta = twin.meta()
        seen[meta["kind"]] += 1
        assert meta["sha256"] == hashlib.sha256(twin.model).hexdigest()
        json.dumps(meta)  # the record holds it as JSON
        if meta["kind"] in ("mul_one", "transpose_pair", "reshape_round_trip", "cast_round_trip"):
            assert meta["where"]["mode"] in ("consumers", "producer")
            assert meta["where"]["tensor"].startswith("t")
    assert len(seen) >= 5, seen  # the draw spreads over the kinds


def _digests(cases: list) -> list:
    return [hashlib.sha256(make_twin(p.graph, p.model, 99 + k).model).hexdigest() for k, p in enumerate(cases)]


def test_same_graph_and_seed_same_bytes(batch, tmp_path):
    """Byte-identical twins for the same (graph, model, seed): twice here, and in a fresh
    process with another hash seed; a different seed gives another twin somewhere."""
    first = _digests(batch[:12])
    assert first == _digests(batch[:12])
    code = ("import json;from tests.test_rewrite import _digests, _cases;"
            "print(json.dumps(_digests(_cases(12))))")
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == first
    other = [hashlib.sha256(make_twin(p.graph, p.model, 100 + k).model).hexdigest() for k, p in enumerate(batch[:12])]
    assert other != first


def _cases(n: int) -> list:
    gen = Generator(GenConfig(dynamic_share=0.25, extreme_share=0.2))
    out = []
    for i in range(48):
        c = make_case(gen, "rewrite-tests", "rw", i)
        p = prepare(c.meta(), c.graph, c.model_bytes)
        if p.search["valid"]:
            out.append(p)
    return out[:n]


def test_wrap_then_inline_is_the_plain_graph(batch):
    for p in batch[:10]:
        m = onnx.load_from_string(p.model)
        n = len(m.graph.node)
        w = wrap(m, 0, n, "f")
        assert w is not None and len(w.functions) == 1 and [x.op_type for x in w.graph.node] == ["f"]
        assert w.ir_version >= 8
        validate(w)
        back = plain(w)
        validate(back)
        assert not back.functions
        assert all(o.domain != "dlgate.local" for o in back.opset_import)
        assert Counter(x.op_type for x in back.graph.node) == Counter(x.op_type for x in m.graph.node)
        tw = get("inline_functions").apply(p.graph, w, None)
        assert tw is not None and not tw.graph_changed
        assert get("inline_functions").apply(p.graph, m, None) is None  # nothing to inline


def _run_ort(model: onnx.ModelProto, feeds: dict) -> list:
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.75, 65504.0, 6e-8, -6e-8], dtype=np.float64)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_mul_one_is_exact_on_special_values(dtype):
    """``x * 1`` keeps -0, infinities and NaN (``x + 0`` would turn -0 into +0)."""
    from dlgate.graph.ir import Graph, Node
    from dlgate.materialize.onnx_model import to_onnx
    from dlgate.ops.base import TensorType

    ty = TensorType(dtype, (10,))
    g = Graph([ty, ty], [Node("Relu", {}, [0], [1])], [0], [], [1], 17)
    m = to_onnx(g, 1)
    twin = get("mul_one").apply(g, m, __import__("random").Random(3))
    x = SPECIAL.astype(dtype)
    want = _run_ort(m, {"t0": x})[0]
    got = _run_ort(onnx.load_from_string(twin.model), {"t0": x})[0]
    assert np.array_equal(np.signbit(want), np.signbit(got)) and _same(want, got)
    # -0 survives the Mul itself, not only Relu's output: the twin on an identity-like edge
    assert np.signbit(np.asarray(-0.0, dtype) * np.ones((), dtype))


@pytest.mark.parametrize("src", sorted(WIDER))
def test_cast_round_trip_is_exact(src):
    """Every widening pair round-trips every value of the narrow type: all float16 bit
    patterns, float32 specials, all int8/uint8 values, int32 limits."""
    if src == "float16":
        x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    elif src == "float32":
        x = np.concatenate([SPECIAL.astype(np.float32), np.array([3.4e38, -3.4e38, 1e-45], np.float32)])
    elif src in ("int8", "uint8"):
        info = np.iinfo(src)
        x = np.arange(info.min, info.max + 1).astype(src)
    else:
        x = np.array([np.iinfo(np.int32).min, -1, 0, 1, np.iinfo(np.int32).max], np.int32)
    for wide in WIDER[src]:
        assert np.dtype(wide).itemsize > np.dtype(src).itemsize
        assert np.dtype(wide).kind == ("f" if np.dtype(src).kind == "f" else "i")  # never float <-> int
        nodes = [helper.make_node("Cast", ["x"], ["w"], to=helper.np_dtype_to_tensor_dtype(np.dtype(wide))),
                 helper.make_node("Cast", ["w"], ["y"], to=helper.np_dtype_to_tensor_dtype(np.dtype(src)))]
        t = helper.np_dtype_to_tensor_dtype(np.dtype(src))
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", t, [len(x)])],
                              [helper.make_tensor_value_info("y", t, [len(x)])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        y = _run_ort(m, {"x": x})[0]
        assert x.tobytes() == y.tobytes() or (src.startswith("float") and _same(x, y)), (src, wide)


def test_rewrites_apply_where_they_say():
    """mul_one never on bool or int8 (Mul takes int8 only from opset 14), a transpose pair only
    from rank 2, a reshape round trip never on a dynamic graph or an empty tensor."""
    from dlgate.graph.ir import Graph, Node
    from dlgate.materialize.onnx_model import to_onnx
    from dlgate.ops.base import TensorType
    import random

    b = TensorType("bool", (3,))
    g = Graph([b, b], [Node("Not", {}, [0], [1])], [0], [], [1], 17)
    m = to_onnx(g, 1)
    assert get("mul_one").apply(g, m, random.Random(1)) is None
    assert get("cast_round_trip").apply(g, m, random.Random(1)) is None
    assert get("transpose_pair").apply(g, m, random.Random(1)) is None
    assert get("reorder").apply(g, m, random.Random(1)) is None  # one node: one order
    e = TensorType("float32", (2, 0))
    g = Graph([e, e], [Node("Relu", {}, [0], [1])], [0], [], [1], 17)
    assert get("reshape_round_trip").apply(g, to_onnx(g, 1), random.Random(1)) is None
    assert get("transpose_pair").apply(g, to_onnx(g, 1), random.Random(1)) is not None


def test_share_is_a_function_of_the_seed():
    picks = [selected(s, 0.3) for s in range(2000)]
    assert picks == [selected(s, 0.3) for s in range(2000)]
    assert 0.25 < sum(picks) / 2000 < 0.35
    assert not any(selected(s, 0.0) for s in range(50)) and all(selected(s, 1.0) for s in range(50))


def test_an_invalid_twin_is_never_run(monkeypatch):
    """A twin ONNX's checker rejects is dlgate's mistake: NotEquivalent, recorded as
    ``rewrite_error`` for every backend, and nothing runs it."""
    from dlgate.backends.base import BackendSpec
    from dlgate.rewrite import NotEquivalent
    from dlgate.rewrite import oracle as EQ

    g = helper.make_graph([helper.make_node("Mul", ["x", "c"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", onnx.TensorProto.INT32, [2])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.INT32, [2])],
                          initializer=[numpy_helper.from_array(np.ones((), np.float32), "c")])
    bad = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(NotEquivalent, match="not valid ONNX"):
        validate(bad)

    class Case:
        meta = {"seed": 3}
        graph = None
        model = b""

    def broken(*_a, **_k):
        raise NotEquivalent("the rewritten model is not valid ONNX: (op_type:Mul) type mismatch")

    monkeypatch.setattr(EQ, "make_twin", broken)
    twin, meta = EQ.twin_of(Case())
    assert twin is None and meta["kind"] is None and "not valid ONNX" in meta["error"]
    rec = EQ.judge_twin(None, Case(), BackendSpec("onnxruntime"), None, None, meta=meta)  # no pool: nothing runs
    assert rec == {"backend": "onnxruntime[cpu]", "status": EQ.REWRITE_ERROR, "detail": meta["error"]}
