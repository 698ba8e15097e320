"""Value knowledge of the unary and activation specs: valley minima (Gelu, Mish, HardSwish),
Reciprocal, Tan, Sin, Cos, Sign and PRelu bounds, and the exact values of Hardmax,
Softmax and LogSoftmax; each bound is tight on an example and refuses an impossible
composition."""
from __future__ import annotations

import math

import pytest
import torch

from dlgate.graph.generator import Generator
from dlgate.ops.base import INF, UNBOUNDED, TensorType
from dlgate.ops.registry import get

X = TensorType("float32", (4, 8))
admit = Generator._admit


def vr(name, r, a=None, ins=None):
    return get(name).value_range(a or {}, [r], ins or [X])[0]


def refused(consumer, bounds, exact=None, steer=True):
    return admit(get(consumer), {}, 0, bounds, steer, False, exact=exact) is None


@pytest.mark.parametrize("name,a", [("Gelu", {"approximate": "none"}), ("Gelu", {"approximate": "tanh"}),
                                    ("Mish", {}), ("HardSwish", {})])
def test_valley_holds_the_true_minimum(name, a):
    s = get(name)
    va, vb, fmin = s.valley
    x = torch.linspace(-4.0, 2.0, 600001, dtype=torch.float64)
    y = s.torch(a, x)
    i = int(y.argmin())
    assert va < float(x[i]) < vb
    assert fmin <= float(y[i]) < fmin + 1e-3  # sound, and close
    # falling before the valley, rising after it
    d = y[1:] - y[:-1]
    assert float(d[x[1:] <= va].max()) <= 1e-15 and float(d[x[:-1] >= vb].min()) >= 0


@pytest.mark.parametrize("name,a", [("Gelu", {"approximate": "none"}), ("Gelu", {"approximate": "tanh"}),
                                    ("Mish", {}), ("HardSwish", {})])
def test_valley_bounds_with_infinite_ends(name, a):
    fmin = get(name).valley[2]
    assert vr(name, UNBOUNDED, a) == (fmin, INF)  # not UNBOUNDED: f(-inf) is NaN in torch
    lo, hi = vr(name, (-INF, -2.0), a)
    assert hi == 0 and lo == pytest.approx(float(get(name).torch(a, torch.tensor([-2.0], dtype=torch.float64))))
    lo, hi = vr(name, (0.5, INF), a)
    assert lo > 0 and hi == INF
    # never below out_range, even where the valley's own bound is looser
    assert vr(name, (-3.0, 3.0), a)[0] >= get(name).out_range[0]
    # a falling-side interval is all <= 0: Log of it has no valid input
    assert refused("Log", vr(name, (-INF, -0.1), a))


def test_gelu_and_mish_tight_between_their_ends():
    lo, hi = vr("Mish", (0.0, 2.0))
    assert lo == 0.0 and hi == pytest.approx(float(torch.nn.functional.mish(torch.tensor(2.0, dtype=torch.float64))))
    lo, hi = vr("Gelu", (-1.0, 1.0), {"approximate": "none"})
    assert lo == get("Gelu").valley[2] and hi == pytest.approx(0.8413447460685429)


def test_reciprocal_bounds_follow_the_sign():
    assert vr("Reciprocal", (0.5, 4.0)) == (0.25, 2.0)
    assert vr("Reciprocal", (-4.0, -0.5)) == (-2.0, -0.25)
    assert vr("Reciprocal", (0.0, INF)) == (0.0, INF)  # a valid run holds no 0
    assert vr("Reciprocal", (-INF, 0.0)) == (-INF, 0.0)
    assert vr("Reciprocal", (2.0, INF)) == (0.0, 0.5)
    assert get("Reciprocal").value_range({}, [(-1.0, 1.0)], [X]) is None
    assert refused("Acosh", vr("Reciprocal", (2.0, INF)))  # 1/x <= 0.5 < 1
    assert refused("Log", vr("Reciprocal", (-INF, -1.0)))


def test_tan_bounded_within_one_branch():
    lo, hi = vr("Tan", (-1.0, 1.0))
    assert (lo, hi) == (math.tan(-1.0), math.tan(1.0))
    lo, hi = vr("Tan", (2.0, 3.0))  # branch k = 1
    assert (lo, hi) == (math.tan(2.0), math.tan(3.0)) and hi < 0
    assert get("Tan").value_range({}, [(1.0, 2.0)], [X]) is None  # across pi/2
    assert get("Tan").value_range({}, [(-1.0, math.pi / 2)], [X]) is None  # at the pole
    assert get("Tan").value_range({}, [(0.0, INF)], [X]) is None
    assert refused("Log", vr("Tan", (2.0, 3.0)))


@pytest.mark.parametrize("name,f", [("Sin", torch.sin), ("Cos", torch.cos)])
def test_sin_cos_exact_over_short_intervals(name, f):
    for lo, hi in [(0.0, 1.0), (0.5, 2.0), (-4.0, -1.0), (2.0, 7.0), (100.0, 103.0), (-0.3, 0.3)]:
        b = vr(name, (lo, hi))
        y = f(torch.linspace(lo, hi, 200001, dtype=torch.float64))
        assert b[0] == pytest.approx(float(y.min()), abs=1e-9) and b[1] == pytest.approx(float(y.max()), abs=1e-9)
    assert vr(name, (0.0, 7.0)) == (-1.0, 1.0)
    assert vr(name, (-INF, 0.0)) == (-1.0, 1.0)


def test_sin_cos_refuse_impossible_consumers():
    assert refused("Acosh", vr("Cos", (0.5, 2.0)))  # cos < 0.88 there
    assert refused("Log", vr("Sin", (math.pi + 0.1, 2 * math.pi - 0.1)))
    assert not refused("Log", vr("Sin", (0.1, 3.0)))


def test_sign_follows_the_input_sign():
    assert vr("Sign", UNBOUNDED) == (-1.0, 1.0)
    assert vr("Sign", (0.0, INF)) == (0.0, 1.0)
    assert vr("Sign", (0.5, INF)) == (1.0, 1.0)
    assert vr("Sign", (-INF, -0.5)) == (-1.0, -1.0)
    assert vr("Sign", (-3.0, 0.0)) == (-1.0, 0.0)
    # a bound this close to 0 may hold values that underflowed to 0 (Sigmoid(-100) in float32)
    assert vr("Sign", (1e-40, 1.0)) == (0.0, 1.0)
    assert vr("Sign", (2.0, 5.0), ins=[TensorType("int32", (3,))]) == (1.0, 1.0)
    assert refused("Atanh", vr("Sign", (0.5, 4.0)))  # always 1, outside (-1, 1)
    assert refused("Reciprocal", vr("Sign", (0.0, 0.0)))
    s = get("Sign")
    assert s.anchor({}, [0.25], [X]) == 1.0 and s.anchor({}, [-2.0], [X]) == -1.0
    assert s.anchor({}, [0.0], [X]) == 0.0 and s.anchor({}, [1e-9], [X]) is None
    assert s.exact({}, [0.0], [X]) == 0.0


def test_prelu_bounds():
    p = get("PRelu")
    assert p.value_range({}, [(-2.0, 3.0), (0.0, 0.5)], [X, X])[0] == (-1.0, 3.0)
    assert p.value_range({}, [(1.0, 3.0), UNBOUNDED], [X, X])[0] == (1.0, 3.0)
    assert p.value_range({}, [(-INF, -1.0), (0.0, 0.0)], [X, X])[0] == (0.0, 0.0)
    assert p.value_range({}, [(-1.0, INF), (-INF, -1.0)], [X, X])[0] == (0.0, INF)
    assert p.value_range({}, [UNBOUNDED, UNBOUNDED], [X, X])[0] == UNBOUNDED
    assert refused("Log", p.value_range({}, [(-INF, -1.0), (0.1, 0.2)], [X, X])[0])


def test_leaky_relu_with_zero_slope_and_infinite_ends():
    assert vr("LeakyRelu", UNBOUNDED, {"alpha": 0.0}) == (0.0, INF)
    assert vr("LeakyRelu", (-4.0, 2.0), {"alpha": 0.25}) == (-1.0, 2.0)


def test_hardmax_softmax_logsoftmax_exact_values():
    t = TensorType("float32", (3, 4, 1))
    hm, sm, lsm = get("Hardmax"), get("Softmax"), get("LogSoftmax")
    assert hm.exact({"axis": 1}, [None], [t]) == 0.0
    assert hm.exact({"axis": 2}, [None], [t]) == 1.0
    assert hm.value_range({"axis": -1}, [UNBOUNDED], [t])[0] == (1.0, 1.0)
    assert sm.exact({"axis": 2}, [None], [t]) == 1.0 and sm.exact({"axis": 1}, [None], [t]) is None
    assert lsm.exact({"axis": -1}, [None], [t]) == 0.0 and lsm.exact({"axis": 0}, [None], [t]) is None
    x = torch.randn(3, 4, 1)
    x[0, :, 0] = float("nan")
    for a in ({"axis": 1}, {"axis": 2}):
        y = hm.torch(a, x)
        assert bool((y == hm.exact(a, [None], [t])).any())
    assert bool((sm.torch({"axis": 2}, torch.randn(3, 4, 1) * 50) == 1.0).all())
    assert bool((lsm.torch({"axis": 2}, torch.randn(3, 4, 1) * 50) == 0.0).all())
    # a Hardmax always holds a 0: no Log, no Reciprocal of it
    assert refused("Log", hm.value_range({"axis": 1}, [UNBOUNDED], [t])[0], exact=0.0, steer=False)
    assert refused("Reciprocal", (0.0, 1.0), exact=0.0, steer=False)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_elementwise_exact_values_match_torch(dtype):
    t = TensorType(dtype, (5,))
    cases = [("ThresholdedRelu", {"alpha": 1.0}, 0.5), ("ThresholdedRelu", {"alpha": 1.0}, 2.0),
             ("LeakyRelu", {"alpha": 0.1}, -1.0), ("HardSigmoid", {"alpha": 0.2, "beta": 0.5}, 0.3),
             ("Relu", {}, -2.0), ("Floor", {}, 0.5), ("Sign", {}, -0.0), ("Cos", {}, 0.0),
             ("HardSwish", {}, -1.5), ("Gelu", {"approximate": "tanh"}, 1.0), ("Elu", {"alpha": 1.0}, -1.0)]
    for name, a, x in cases:
        s = get(name)
        xs = torch.full((5,), x, dtype=getattr(torch, dtype))
        with torch.no_grad():
            want = float(s.torch(a, xs)[0])
        with torch.enable_grad():  # no proxy derivative leaks into the exact value
            assert s.exact(a, [x], [t]) == want, name
    assert get("Softmax").exact({"axis": 0}, [0.0], [TensorType("float32", (4,))]) is None  # not element-wise
