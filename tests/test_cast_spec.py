"""Cast and CastLike follow the ONNX Cast specification: what it defines (integer narrowing
discards the high bits, float overflow gives +/-inf) is computed by the reference and
judged; only float -> integer of NaN, Inf or out-of-range values is undefined."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from tests.helpers import judge_candidate
from dlgate import dtypes as dt
from dlgate.graph.ir import Graph, Node
from dlgate.materialize.torch_model import run_numpy
from dlgate.ops.base import TensorType as T
from dlgate.ops.cast._shared import cast_undefined
from dlgate.ops.registry import get
from dlgate.oracle import ub
from dlgate.oracle import verdict as V


def _onnx_cast(x: np.ndarray, src: int, to: int) -> np.ndarray:
    """ONNX's reference evaluator on one Cast from ONNX type ``src`` to ``to``."""
    g = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=to)], "cast",
                          [helper.make_tensor_value_info("x", src, x.shape)],
                          [helper.make_tensor_value_info("y", to, x.shape)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    with np.errstate(all="ignore"):  # NumPy warns of the very overflows under test
        return ReferenceEvaluator(model).run(None, {"x": x})[0]


def _cast_graph(src: str, to: str, n: int) -> Graph:
    return Graph(tensors=[T(src, (n,)), T(to, (n,))], nodes=[Node("Cast", {"to": to}, [0], [1])], inputs=[0],
                 consts=[], outputs=[1], opset=21)


def _judge(g: Graph, inputs: list, candidate: list) -> V.Verdict:
    return judge_candidate(g, inputs, candidate)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype and bits (NaN matching NaN, -0.0 only -0.0)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        return bool(np.all((a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}")) | (np.isnan(a) & np.isnan(b))))
    return bool(np.array_equal(a, b))


def test_int16_200_to_int8_is_defined_and_wraps():
    x = torch.tensor([200, -200, 127, 128], dtype=torch.int16)
    assert cast_undefined(x, dt.INT8) is None
    y = get("Cast").torch({"to": dt.INT8}, x)
    assert y.tolist() == [-56, 56, 127, -128]
    assert _onnx_cast(x.numpy(), TensorProto.INT16, TensorProto.INT8).tolist() == y.tolist()


def test_narrowing_integer_cast_is_judged_not_excused():
    g = _cast_graph(dt.INT32, dt.INT8, 3)
    x = np.array([200, -129, 5], np.int32)
    assert ub.undefined_values(g, [x]) is None
    assert run_numpy(g, [x])[0].tolist() == [-56, 127, 5]
    assert _judge(g, [x], [np.array([-56, 127, 5], np.int8)]).verdict == V.PASS
    saturated = _judge(g, [x], [np.array([127, -128, 5], np.int8)])
    assert saturated.verdict == V.MISMATCH and saturated.failed


@pytest.mark.parametrize("src,to,values,expected", [
    (dt.INT32, dt.UINT8, [-1, 256, 300], [255, 0, 44]),
    (dt.UINT8, dt.INT8, [200, 127, 255], [-56, 127, -1]),
    (dt.INT64, dt.INT32, [2**40 + 5, -2**31 - 1, 7], [5, 2**31 - 1, 7]),
    (dt.INT8, dt.UINT8, [-1, -128, 3], [255, 128, 3]),
    (dt.INT32, dt.BOOL, [0, 256, -1], [False, True, True]),
])
def test_integer_narrowing_discards_high_bits(src, to, values, expected):
    x = np.array(values, dt.NUMPY[src])
    assert ub.undefined_values(_cast_graph(src, to, len(values)), [x]) is None
    assert run_numpy(_cast_graph(src, to, len(values)), [x])[0].tolist() == expected


def test_float_to_integer_out_of_range_is_still_undefined():
    g = _cast_graph(dt.FLOAT32, dt.INT8, 2)
    assert "outside" in ub.undefined_values(g, [np.array([300.5, 1.0], np.float32)])
    nan_reason = ub.undefined_values(g, [np.array([np.nan, 1.0], np.float32)])
    assert nan_reason.startswith("Cast (node 0): NaN in its inputs") and "specification of Cast" in nan_reason
    for inf in (np.inf, -np.inf):
        reason = ub.undefined_values(g, [np.array([inf, 1.0], np.float32)])
        assert reason.startswith("Cast (node 0): Inf in its inputs") and "specification of Cast" in reason
    # truncation toward zero decides: -0.9 becomes 0, which uint8 holds
    g = _cast_graph(dt.FLOAT32, dt.UINT8, 2)
    assert ub.undefined_values(g, [np.array([-0.9, 255.9], np.float32)]) is None
    assert ub.undefined_values(g, [np.array([-1.0, 2.0], np.float32)]) is not None


def test_float_overflow_is_inf_and_defined():
    g = _cast_graph(dt.FLOAT32, dt.FLOAT16, 3)
    x = np.array([1e5, -1e5, 2.0], np.float32)
    assert ub.undefined_values(g, [x]) is None
    ref = run_numpy(g, [x])[0]
    assert ref.tolist() == [np.inf, -np.inf, 2.0]
    assert _same(ref, _onnx_cast(x, TensorProto.FLOAT, TensorProto.FLOAT16))
    assert _judge(g, [x], [ref.copy()]).verdict == V.PASS
    assert _judge(g, [x], [np.array([65504, -65504, 2.0], np.float16)]).verdict == V.MISMATCH  # saturating
    # float64 out of float32's range: inf too
    g = _cast_graph(dt.FLOAT64, dt.FLOAT32, 1)
    assert run_numpy(g, [np.array([1e300])])[0].tolist() == [np.inf]


def test_float64_to_float16_rounds_once():
    # Tensor.to rounds through float32: 65519.999999 would become inf, and values just off
    # a midpoint between float16 neighbours would round to the wrong side
    h = np.random.default_rng(0).uniform(-60000, 60000, 500).astype(np.float16)
    mid = (h.astype(np.float64) + np.nextafter(h, np.float16(np.inf)).astype(np.float64)) / 2
    x = np.concatenate([mid * (1 + 1e-12), mid * (1 - 1e-12), [65519.999999, -65519.999999, 65520.0, -0.0, np.nan]])
    ours = run_numpy(_cast_graph(dt.FLOAT64, dt.FLOAT16, len(x)), [x])[0]
    assert _same(ours, _onnx_cast(x, TensorProto.DOUBLE, TensorProto.FLOAT16))
    assert ours[-5:-2].tolist() == [65504.0, -65504.0, np.inf]
    # the input search still differentiates through it
    xt = torch.tensor([1.0, 65519.999999], dtype=torch.float64, requires_grad=True)
    get("Cast").torch({"to": dt.FLOAT16}, xt).float().sum().backward()
    assert xt.grad.tolist() == [1.0, 1.0]


def test_castlike_shares_the_semantics():
    like = Graph(tensors=[T(dt.FLOAT64, (2,)), T(dt.FLOAT16, (1,)), T(dt.FLOAT16, (2,))],
                 nodes=[Node("CastLike", {}, [0, 1], [2])], inputs=[0, 1], consts=[], outputs=[2], opset=21)
    assert run_numpy(like, [np.array([65519.999999, 1e5]), np.zeros(1, np.float16)])[0].tolist() == [65504.0, np.inf]
    spec = get("CastLike")
    x = torch.tensor([200], dtype=torch.int32)
    assert spec.undefined({}, [x, torch.zeros(1, dtype=torch.int8)], [T(dt.INT8, (1,))]) is None
    assert spec.torch({}, x, torch.zeros(1, dtype=torch.int8)).tolist() == [-56]
    assert spec.undefined({}, [torch.tensor([300.0]), torch.zeros(1, dtype=torch.int8)], [T(dt.INT8, (1,))])


def _values(src: str) -> np.ndarray:
    """Edge and random values of ``src``, out of range for narrower types included."""
    if src == dt.BOOL:
        return np.array([True, False])
    if dt.is_float(src):
        edges = [0.0, -0.0, 0.5, -0.5, -0.99, 127.9, 128.5, 255.9, -128.9, 65519.99, 65520.0, 1e5, -1e5, 1e39,
                 2.0**31, -2.0**31 - 0.5, 2.0**63, np.nan, np.inf, -np.inf]
        v = np.concatenate([np.random.default_rng(1).uniform(-300, 300, 64), edges])
        with np.errstate(over="ignore"):
            return v.astype(src)
    info = np.iinfo(src)
    edges = np.array([info.min, info.max, 0, 1, info.max // 2 + 1], dtype=np.int64)
    return np.concatenate([np.random.default_rng(1).integers(info.min, info.max, 64, endpoint=True), edges]).astype(src)


@pytest.mark.parametrize("src,to", list(itertools.product(dt.ALL, dt.ALL)))
def test_cast_agrees_with_onnx_reference_wherever_defined(src, to):
    x = _values(src)
    ours = get("Cast").torch({"to": to}, torch.from_numpy(x.copy())).numpy()
    theirs = _onnx_cast(x, dt.ONNX[src], dt.ONNX[to])
    defined = np.array([cast_undefined(torch.from_numpy(x[i:i + 1].copy()), to) is None for i in range(len(x))])
    assert defined.all() or (dt.is_float(src) and dt.is_int(to))
    assert _same(ours[defined], theirs[defined])
