"""The reference's float16 rounding told apart from compiler errors (dlgate/oracle/precision.py),
and IEEE special values in the reference's ReduceProd."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx.reference import ReferenceEvaluator

from tests.helpers import judge_candidate
from dlgate.graph.ir import Graph, Node
from dlgate.materialize.onnx_model import to_onnx
from dlgate.materialize.torch_model import run_numpy
from dlgate.ops.base import TensorType as T
from dlgate.ops.registry import get
from dlgate.oracle import precision
from dlgate.oracle import verdict as V
from dlgate.oracle.compare import compare

N = 8


def _graph(nodes, tensors, inputs, outputs):
    return Graph(tensors=tensors, nodes=nodes, inputs=list(inputs), consts=[], outputs=list(outputs), opset=18)


def _judge(g: Graph, inputs: list, candidate: list) -> V.Verdict:
    """The oracle's verdict on ``candidate`` against the PyTorch reference, through the
    same rules that ``check.judge_backend`` hands to ``verdict.judge``."""
    return judge_candidate(g, inputs, candidate)


def _sum_tan():
    """Sum of three float16 inputs landing 0.008 to 0.02 below pi/2, then Tan: the float16
    rounding of the sum moves tan by several percent."""
    g = _graph([Node("Sum", {}, [0, 1, 2], [3]), Node("Tan", {}, [3], [4])], [T("float16", (N,))] * 5,
               [0, 1, 2], [4])
    rng = np.random.default_rng(3)
    a = np.ones(N, np.float16)
    b = rng.uniform(0.2, 0.3, N).astype(np.float16)
    c = (np.pi / 2 - rng.uniform(0.008, 0.02, N) - 1.0 - b.astype(np.float64)).astype(np.float16)
    ins = [a, b, c]
    # a compiler that keeps the float16 graph in float32 and rounds once at the end
    f32 = np.tan(a.astype(np.float32) + b.astype(np.float32) + c.astype(np.float32)).astype(np.float16)
    return g, ins, f32


def test_float16_rounding_excuses_a_more_precise_compiler():
    g, ins, f32 = _sum_tan()
    assert not compare(run_numpy(g, ins), [f32]).ok  # the false alarm this rule removes
    v = _judge(g, ins, [f32])
    assert v.verdict == V.UNDEFINED and not v.failed
    assert v.detail.startswith("float16 rounding dominates: evaluated in float64") and "Tan (node 1)" in v.detail


def test_float16_error_beyond_rounding_is_still_a_mismatch():
    g, ins, f32 = _sum_tan()
    bad = (f32.astype(np.float32) * 3).astype(np.float16)
    assert precision.rounding(g, ins, None, [bad]) is None
    assert _judge(g, ins, [bad]).verdict == V.MISMATCH
    # off by far more than rounding in one element only: still not excused
    one = f32.copy()
    one[5] = -one[5]
    assert precision.rounding(g, ins, None, [one]) is None


def test_float16_near_tie_before_hardmax():
    rows = 16
    g = _graph([Node("Mean", {}, [0, 1, 2], [3]), Node("Tan", {}, [3], [4]), Node("Hardmax", {"axis": 1}, [4], [5])],
               [T("float16", (rows, 2))] * 6, [0, 1, 2], [5])
    rng = np.random.default_rng(0)
    a = np.full((rows, 2), 1.5, np.float16)
    b = rng.uniform(1.3, 1.8, (rows, 2)).astype(np.float16)
    mean = np.pi / 2 - rng.uniform(0.02, 0.03, (rows, 1)) + np.array([0.0, 1e-4])  # two columns almost tied
    c = (3 * mean - a.astype(np.float64) - b).astype(np.float16)
    ins = [a, b, c]
    t = np.tan((a.astype(np.float32) + b.astype(np.float32) + c.astype(np.float32)) / 3)
    f32 = np.zeros((rows, 2), np.float16)
    f32[np.arange(rows), t.argmax(1)] = 1
    assert not compare(run_numpy(g, ins), [f32]).ok
    assert precision.rounding(g, ins, None, [f32]).startswith("float16 rounding dominates")
    assert precision.rounding(g, ins, None, [np.full((rows, 2), 0.5, np.float16)]) is None


def test_well_conditioned_float16_error_is_a_mismatch():
    g = _graph([Node("Sigmoid", {}, [0], [1])], [T("float16", (64,))] * 2, [0], [1])
    x = np.linspace(-4, 4, 64).astype(np.float16)
    good = (1 / (1 + np.exp(-x.astype(np.float32)))).astype(np.float16)
    assert _judge(g, [x], [good]).verdict == V.PASS
    bad = (good.astype(np.float32) + 0.1).astype(np.float16)
    assert precision.rounding(g, [x], None, [bad]) is None
    assert _judge(g, [x], [bad]).verdict == V.MISMATCH


def test_wide_evaluation_keeps_casts_to_float16_wide_and_other_types_declared():
    # float32 -> float16 -> float32: the wide run does not round through float16
    g = _graph([Node("Cast", {"to": "float16"}, [0], [1]), Node("Cast", {"to": "float32"}, [1], [2])],
               [T("float32", (3,)), T("float16", (3,)), T("float32", (3,))], [0], [2])
    x = np.array([1.0001, 3.14159, 1e5], np.float32)
    env, _ = precision.trace(g, [x], wide=True)
    assert env[1].dtype == torch.float64 and env[2].dtype == torch.float32
    assert np.array_equal(env[2].numpy(), x)
    env, _ = precision.trace(g, [x])
    assert env[1].dtype == torch.float16 and np.isinf(env[2].numpy()[2])


def test_graphs_without_float16_and_failing_wide_runs_explain_nothing(monkeypatch):
    g = _graph([Node("Tan", {}, [0], [1])], [T("float32", (2,))] * 2, [0], [1])
    assert precision.rounding(g, [np.array([1.5, 1.57], np.float32)], None, [np.zeros(2, np.float32)]) is None
    g, ins, f32 = _sum_tan()
    tan = get("Tan")
    real = type(tan).torch

    def float16_only(self, a, x):
        if x.dtype == torch.float64:
            raise RuntimeError("tan: float64 not implemented")
        return real(self, a, x)

    monkeypatch.setattr(type(tan), "torch", float16_only)
    assert precision.rounding(g, ins, None, [f32]) is None


# -- IEEE special values: ReduceProd -------------------------------------------------------

def _reduce_prod(shape, axes, keep=0, dtype="float32"):
    a = {"keepdims": keep} if axes is None else {"keepdims": keep, "axes": axes}
    out = get("ReduceProd").infer([T(dtype, shape)], a)[0]
    return _graph([Node("ReduceProd", a, [0], [1])], [T(dtype, shape), out], [0], [1])


def _onnx_reference(g: Graph, inputs: list) -> list:
    with np.errstate(all="ignore"):  # NumPy warns of the very overflows under test
        return ReferenceEvaluator(to_onnx(g, 0)).run(None, {g.name(t): x for t, x in zip(g.inputs, inputs)})


CASES = [  # (values, shape, axes)
    ([1e30, 1e30, 0.0], (3,), [0]),  # overflow to inf, then a zero: NaN
    ([0.0, 1e30, 1e30], (3,), [0]),  # the zero first: 0
    ([-1e30, 1e30, 0.0, 2.0], (4,), None),  # -inf * 0: NaN
    ([np.inf, 2.0, -0.5, 0.0], (2, 2), [1]),  # inf * 2 = inf; -0.5 * 0 = -0
    ([1e-30, 1e-30, 1e30, 1e30], (4,), [0]),  # underflow to 0 before the large factors: 0
    ([1e30, 1.0, 1e30, 0.0], (2, 2), [0, 1]),  # row-major: inf, then 0: NaN (axis by axis: 0)
    ([0.0, 2.0, 1e30, 1e30], (2, 2), None),  # row-major: 0 from the start (axis by axis: 0 * inf = NaN)
    ([1e30, 1e30, 1e30, 0.0, 2.0, -4.0], (3, 2), [0]),  # column products: inf * 1e30, 0 * 2 * -4
]


@pytest.mark.parametrize("values,shape,axes", CASES)
def test_reduce_prod_follows_ieee_sequential_product(values, shape, axes):
    g = _reduce_prod(shape, axes)
    x = np.array(values, np.float32).reshape(shape)
    ours, theirs = run_numpy(g, [x])[0], np.asarray(_onnx_reference(g, [x])[0])
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert np.array_equal(ours, theirs, equal_nan=True)
    assert np.array_equal(np.signbit(ours) & ~np.isnan(ours), np.signbit(theirs) & ~np.isnan(theirs))


def test_reduce_prod_overflow_then_zero_is_nan_and_judged_so():
    x = np.array([[1e30, 1.0], [1e30, 0.0]], np.float32)  # 1e30 * 1 * 1e30 = inf, then * 0
    assert np.isnan(run_numpy(_reduce_prod((2, 2), [0, 1]), [x])[0])
    # float16 rounds each step to float16 too: 300 * 300 is inf there
    assert np.isnan(run_numpy(_reduce_prod((3,), [0], dtype="float16"), [np.array([300, 300, 0], np.float16)])[0])
    # Cast to bool keeps the NaN observable in a finite output: NaN -> True, 0 -> False
    g = _graph([Node("ReduceProd", {"keepdims": 0, "axes": [0, 1]}, [0], [1]), Node("Cast", {"to": "bool"}, [1], [2])],
               [T("float32", (2, 2)), T("float32", ()), T("bool", ())], [0], [2])
    assert _judge(g, [x], [np.array(True)]).verdict == V.PASS  # TVM, onnxruntime, onnx.reference
    # 0 is what another order of multiplication gives (0 first): ONNX leaves the order open
    other = _judge(g, [x], [np.array(False)])
    assert other.verdict == V.UNDEFINED and "order of multiplication" in other.detail
    # a product every order computes alike is judged: 0 there is a wrong answer
    y = np.array([[3.0, 1.0], [2.0, 0.5]], np.float32)
    assert _judge(g, [y], [np.array(True)]).verdict == V.PASS
    assert _judge(g, [y], [np.array(False)]).verdict == V.MISMATCH


def test_reduce_prod_keeps_its_gradient_for_the_input_search():
    x = torch.tensor([[1.5, -2.0], [0.5, 3.0]], dtype=torch.float64, requires_grad=True)
    y = get("ReduceProd").torch({"keepdims": 0, "axes": [0, 1]}, x)
    y.backward()
    assert torch.allclose(y, torch.tensor(-4.5, dtype=torch.float64))
    assert torch.allclose(x.grad, y.detach() / x.detach())


def test_reduceprod_whose_order_decides_overflow_or_underflow_is_undefined():
    """ONNX leaves the order of multiplication open: where partial products can overflow
    before a zero (0 or NaN) or underflow before large factors (0 or finite), compilers
    legitimately differ; a product every order computes alike is judged."""
    import torch

    from dlgate.ops.base import TensorType
    from dlgate.ops.registry import get

    spec, out = get("ReduceProd"), [TensorType("float32", ())]
    row = lambda *v: [torch.tensor(v, dtype=torch.float32)]  # noqa: E731
    assert "overflow" in spec.undefined({"keepdims": 0}, row(1e30, 1e30, 0.0), out)
    assert "overflow" in spec.undefined({"keepdims": 0}, row(1e30, 1e30, 1e-30), out)
    assert "underflow" in spec.undefined({"keepdims": 0}, row(1e-30, 1e-30, 1e30), out)
    assert spec.undefined({"keepdims": 0}, row(1e30, 1e30, 2.0), out) is None  # inf in every order
    assert spec.undefined({"keepdims": 0}, row(2.0, 3.0, 0.5, 0.0), out) is None
