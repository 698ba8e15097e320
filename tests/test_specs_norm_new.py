"""LRN and LpNormalization: each spec's PyTorch implementation
against onnx.reference on random shapes and attributes (inside the specs' domains)."""
from __future__ import annotations

import random

import numpy as np
import onnx
import onnx.helper as h
import pytest
import torch
from onnx.reference import ReferenceEvaluator

from dlgate import dtypes as dt
from dlgate.ops.base import Ctx, TensorType
from dlgate.ops.norm.lp_normalization import LpNormalization
from dlgate.ops.norm.lrn import LRN
from tests.helpers import mismatch

ONNX_T = {"float32": onnx.TensorProto.FLOAT, "float64": onnx.TensorProto.DOUBLE, "float16": onnx.TensorProto.FLOAT16}


def _ref(op, x, attrs, opset=17):
    t = ONNX_T[str(x.dtype)]
    node = h.make_node(op, ["X"], ["Y"], **attrs)
    g = h.make_graph([node], "g", [h.make_tensor_value_info("X", t, list(x.shape))],
                     [h.make_tensor_value_info("Y", t, list(x.shape))])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    return ReferenceEvaluator(m).run(None, {"X": x})[0]


def _ours(spec, a, x):
    with torch.no_grad():
        return spec.torch(a, torch.from_numpy(x.copy())).numpy()


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 6])
def test_lrn_vs_reference(seed, size):
    rng, spec = random.Random(seed), LRN()
    c = rng.randint(1, 9)
    x = np.random.default_rng(seed).uniform(-4, 4, (c, c, rng.randint(1, 4), rng.randint(1, 4)))  # N == C
    dtype = rng.choice(("float32", "float64"))
    x = x.astype(dtype)
    a = spec.sample(Ctx(rng), [TensorType(dtype, x.shape)])
    a["size"] = size  # even sizes too: the formula takes one more channel after c
    want = _ref("LRN", x, {k: a[k] for k in ("size", "alpha", "beta", "bias")})
    assert mismatch(want, _ours(spec, a, x)) is None


def test_lrn_window_even():
    # size 2: channels c and c + 1 (floor(1/2) = 0 before, ceil(1/2) = 1 after)
    x = np.arange(1, 4, dtype=np.float64).reshape(1, 3, 1, 1)
    a = {"size": 2, "alpha": 2.0, "beta": 1.0, "bias": 1.0}
    y = _ours(LRN(), a, x).reshape(-1)
    ss = np.array([1 + 4, 4 + 9, 9])
    np.testing.assert_allclose(y, np.array([1, 2, 3]) / (1 + ss))


def test_lrn_bounds():
    spec, a = LRN(), {"size": 3, "alpha": 1.0, "beta": 0.5, "bias": 0.25}
    lo, hi = spec.value_range(a, [(-2.0, 3.0)], [TensorType("float32", (2, 3, 4, 4))])[0]
    x = np.random.default_rng(0).uniform(-2, 3, (2, 3, 4, 4)).astype(np.float32)
    y = _ours(spec, a, x)
    assert lo <= y.min() and y.max() <= hi


@pytest.mark.parametrize("seed", range(40))
def test_lpnorm_vs_reference(seed):
    rng, spec = random.Random(seed), LpNormalization()
    rank = rng.randint(1, 4)
    dtype = rng.choice(dt.FLOATS)
    shape = tuple(rng.randint(1, 5) for _ in range(rank))
    a = spec.sample(Ctx(rng), [TensorType(dtype, shape)])
    x = np.random.default_rng(seed).uniform(-4, 4, shape)
    if a["p"] == 1:
        x = np.abs(x)  # onnx.reference sums x ** p (not |x| ** p): right for x >= 0 only
    x = np.where(np.abs(x) < 0.05, 0.5, x).astype(dtype)  # inside the domain
    assert all(float(loss) == 0 for loss in spec.losses(a, torch.from_numpy(x.copy())))
    assert mismatch(_ref("LpNormalization", x, a), _ours(spec, a, x)) is None


def test_lpnorm_p1_negative_and_zero_slice():
    spec = LpNormalization()
    x = np.array([[1.0, -3.0], [0.0, 0.0]])
    y = _ours(spec, {"axis": -1, "p": 1}, x)
    np.testing.assert_allclose(y, [[0.25, -0.75], [0.0, 0.0]])  # the spec: 0 where the norm is 0
    np.testing.assert_allclose(_ours(spec, {"axis": 1, "p": 2}, x), _ref("LpNormalization", x, {"axis": 1, "p": 2}))
    assert float(spec.losses({"axis": 1, "p": 2}, torch.from_numpy(x))[0]) > 0  # the zero slice is out of domain
    assert spec.reference_defect({"axis": 0, "p": 1}, [TensorType("float32", (2, 2))], 17)


