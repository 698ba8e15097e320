"""Value bounds and exact values of reductions, pools and normalizations: each bound holds
(and is reached) on real runs, and rules out compositions no input can make valid."""
from __future__ import annotations

import math

import pytest
import torch

from dlgate.graph.generator import Generator
from dlgate.ops.base import UNBOUNDED, TensorType
from dlgate.ops.registry import get

INF = float("inf")
admit = Generator._admit


def _run(name, a, *xs):
    with torch.no_grad():
        y = get(name).torch(a, *xs)
    return float(y.min()), float(y.max())


def _vr(name, a, ranges, ins):
    return get(name).value_range(a, ranges, ins)[0]


# -- reductions ---------------------------------------------------------------------------
X = TensorType("float32", (3, 4, 5))
AX = {"keepdims": 0, "axes": [1, 2]}  # 20 elements per output


def test_reduce_sum_scales_its_terms_bounds_by_the_count():
    assert _vr("ReduceSum", AX, [(-1.0, 2.0)], [X]) == (-20.0, 40.0)
    assert _vr("ReduceSum", AX, [(0.5, INF)], [X]) == (10.0, INF)
    assert _vr("ReduceSum", AX, [(-INF, -0.5)], [X]) == (-INF, -10.0)
    assert _vr("ReduceSum", {"keepdims": 1}, [(1.0, 2.0)], [X]) == (60.0, 120.0)  # all axes
    assert _vr("ReduceSum", {"keepdims": 0}, [(1.0, 2.0)], [TensorType("float32", ())]) == (1.0, 2.0)
    # reached: every term at an end
    assert _run("ReduceSum", AX, torch.full((3, 4, 5), 2.0)) == (40.0, 40.0)
    # an integer sum that may leave its dtype's range may wrap: the dtype's range instead
    xi = TensorType("int32", (3, 4, 5))
    spec = get("ReduceSum")
    out = TensorType("int32", (3,))
    assert spec.out_bounds(AX, [(0.0, 100.0)], [xi], [out]) == [(0.0, 2000.0)]
    assert spec.out_bounds(AX, [(0.0, 2.0 ** 30)], [xi], [out]) == [(-2.0 ** 31, 2.0 ** 31 - 1)]


def test_norm_reductions_bound_by_the_smallest_and_largest_magnitude():
    assert _vr("ReduceL1", AX, [(-3.0, 2.0)], [X]) == (0.0, 60.0)
    assert _vr("ReduceL1", AX, [(-3.0, -0.5)], [X]) == (10.0, 60.0)
    assert _vr("ReduceSumSquare", AX, [(0.5, 3.0)], [X]) == (5.0, 180.0)
    lo, hi = _vr("ReduceL2", AX, [(-3.0, -0.5)], [X])
    assert (lo, hi) == pytest.approx((0.5 * math.sqrt(20), 3.0 * math.sqrt(20)))
    assert _vr("ReduceL2", AX, [(-INF, 1.0)], [X]) == (0.0, INF)
    x = torch.full((3, 4, 5), -3.0)  # reached
    assert _run("ReduceL1", AX, x)[1] == 60.0
    assert _run("ReduceSumSquare", AX, x)[1] == 180.0
    assert _run("ReduceL2", AX, x)[1] == pytest.approx(hi)
    # an L2 norm of 20 values within [-0.1, 0.1] is at most 0.45: never valid for Acosh
    r = _vr("ReduceL2", AX, [(-0.1, 0.1)], [X])
    assert admit(get("Acosh"), {}, 0, r, True, False) is None


def test_reduce_log_sum_is_the_log_of_the_sums_bounds():
    assert _vr("ReduceLogSum", AX, [(0.5, 2.0)], [X]) == pytest.approx((math.log(10.0), math.log(40.0)))
    assert _vr("ReduceLogSum", AX, [(-1.0, 2.0)], [X]) == (-INF, pytest.approx(math.log(40.0)))
    assert _vr("ReduceLogSum", AX, [(0.0, INF)], [X]) == (-INF, INF)
    # a sum never positive has no finite logarithm: nothing to say
    assert _vr("ReduceLogSum", AX, [(-2.0, 0.0)], [X]) == UNBOUNDED
    assert _run("ReduceLogSum", AX, torch.full((3, 4, 5), 0.5))[0] == pytest.approx(math.log(10.0))
    # log of a sum of 20 values within [0.2, 1] is at least log(4) > 1: never valid for Acos
    assert admit(get("Acos"), {}, 0, _vr("ReduceLogSum", AX, [(0.2, 1.0)], [X]), True, False) is None


def test_reduce_log_sum_exp_adds_the_log_of_the_count():
    lo, hi = _vr("ReduceLogSumExp", AX, [(-1.0, 2.0)], [X])
    assert (lo, hi) == pytest.approx((-1.0 + math.log(20), 2.0 + math.log(20)))
    assert _run("ReduceLogSumExp", AX, torch.full((3, 4, 5), -1.0))[0] == pytest.approx(lo)
    assert _vr("ReduceLogSumExp", AX, [(-INF, INF)], [X]) == UNBOUNDED


def test_arg_max_min_are_indices_along_the_axis():
    x = TensorType("float32", (3, 7, 1))
    out = TensorType("int64", (3, 1))
    for name in ("ArgMax", "ArgMin"):
        spec = get(name)
        a = {"axis": -2, "keepdims": 0, "select_last_index": 1}
        assert spec.out_bounds(a, [UNBOUNDED], [x], [out]) == [(0.0, 6.0)]
        assert spec.exact(a, [None], [x]) is None
        # along an axis of size 1 every index is 0: no valid Log of it
        a1 = {"axis": 2, "keepdims": 1, "select_last_index": 0}
        assert spec.value_range(a1, [UNBOUNDED], [x]) == [(0.0, 0.0)]
        assert spec.exact(a1, [None], [x]) == 0.0
        assert _run(name, a1, torch.randn(3, 7, 1)) == (0.0, 0.0)
        assert admit(get("Log"), {}, 0, (0.0, 0.0), True, True, exact=0.0) is None


def test_reductions_over_one_element_map_exact_values():
    x = TensorType("float32", (3, 1, 4))
    one = {"keepdims": 0, "axes": [1]}
    assert get("ReduceSum").exact(one, [0.0], [x]) == 0.0
    assert get("ReduceMax").exact(one, [-2.0], [x]) == -2.0
    assert get("ReduceL2").exact(one, [-2.0], [x]) == 2.0
    assert get("ReduceSumSquare").exact(one, [-2.0], [x]) == 4.0
    assert get("ReduceLogSumExp").exact(one, [0.5], [x]) == 0.5
    assert get("ReduceLogSum").exact(one, [0.0], [x]) is None  # -inf
    assert get("ReduceSum").exact({"keepdims": 0, "axes": [2]}, [0.0], [x]) is None  # 4 terms
    assert get("ReduceSum").exact(one, [None], [x]) is None
    assert get("ReduceMax").exact(one, [300.0], [TensorType("uint8", (3, 1, 4))]) is None  # not a uint8
    assert get("ReduceMax").exact(one, [3.0], [TensorType("int32", (3, 1, 4))]) == 3.0
    # on a real run: the element that holds the exact value keeps it
    t = torch.randn(3, 1, 4)
    t[1, 0, 2] = 0.0
    assert float(get("ReduceSum").torch(one, t)[1, 2]) == 0.0


# -- pools --------------------------------------------------------------------------------
def _pool(kernel, pads, strides=None, ceil=0, **kw):
    r = len(kernel)
    return dict(kernel=kernel, strides=strides or [1] * r, dilations=[1] * r, pads=pads,
                ceil_mode=ceil, **kw)


def test_average_pool_counts_pads_as_zeros_only_when_asked():
    x = TensorType("float32", (1, 2, 5, 5))
    a = _pool([3, 3], [1, 1, 1, 1], count_include_pad=1)
    # a corner window holds 4 input elements of 9 counted: 4/9 of the smallest positive value
    lo, hi = _vr("AveragePool", a, [(1.0, 2.0)], [x])
    assert (lo, hi) == pytest.approx((4.0 / 9.0, 2.0))
    assert _run("AveragePool", a, torch.ones(1, 2, 5, 5))[0] == pytest.approx(4.0 / 9.0)  # reached
    assert _vr("AveragePool", a, [(-2.0, -1.0)], [x]) == pytest.approx((-2.0, -4.0 / 9.0))
    assert _vr("AveragePool", a, [(-2.0, 1.0)], [x]) == (-2.0, 1.0)
    assert _vr("AveragePool", dict(a, count_include_pad=0), [(1.0, 2.0)], [x]) == (1.0, 2.0)
    assert _vr("AveragePool", _pool([3, 3], [0] * 4, count_include_pad=1), [(1.0, 2.0)], [x]) == (1.0, 2.0)
    # the ceil_mode overflow never counts: 1-D, n=4, k=2, s=3, ceil: windows [0,1], [3,(4)]
    a1 = _pool([2], [0, 0], strides=[3], ceil=1, count_include_pad=1)
    x1 = TensorType("float32", (1, 1, 4))
    assert _vr("AveragePool", a1, [(1.0, 2.0)], [x1]) == (1.0, 2.0)
    assert _run("AveragePool", a1, torch.ones(1, 1, 4)) == (1.0, 1.0)


def test_lp_pool_scales_magnitudes_by_the_window_population():
    x = TensorType("float32", (1, 1, 4, 4))
    a = _pool([2, 2], [1, 1, 1, 1], p=2)  # corner windows hold 1 element, inner ones 4
    assert _vr("LpPool", a, [(-3.0, -1.0)], [x]) == (1.0, 6.0)
    assert _vr("LpPool", dict(a, p=1), [(0.5, 3.0)], [x]) == (0.5, 12.0)
    assert _vr("LpPool", a, [(-1.0, 3.0)], [x]) == (0.0, 6.0)
    assert _vr("LpPool", a, [(-INF, 1.0)], [x]) == (0.0, INF)
    assert _run("LpPool", a, torch.full((1, 1, 4, 4), -3.0)) == (3.0, 6.0)  # the top is reached
    assert _run("LpPool", a, torch.full((1, 1, 4, 4), -1.0))[0] == 1.0  # so is the bottom
    # an L2 pool of values within [1, 2] is at least 1: never valid for Atanh
    assert admit(get("Atanh"), {}, 0, _vr("LpPool", a, [(1.0, 2.0)], [x]), True, False) is None


def test_max_and_global_pools_keep_the_range_and_single_elements():
    x = TensorType("float32", (2, 3, 1, 1))
    for name in ("MaxPool", "GlobalMaxPool", "GlobalAveragePool"):
        a = _pool([2, 2], [1, 1, 1, 1]) if name == "MaxPool" else {}
        assert _vr(name, a, [(-1.0, 2.0)], [TensorType("float32", (2, 3, 4, 4))]) == (-1.0, 2.0)
    for name in ("GlobalMaxPool", "GlobalAveragePool"):
        assert get(name).exact({}, [0.0], [x]) == 0.0
        assert get(name).exact({}, [0.0], [TensorType("float32", (2, 3, 1, 2))]) is None
        t = torch.randn(2, 3, 1, 1)
        assert torch.equal(get(name).torch({}, t), t)


# -- normalizations -----------------------------------------------------------------------
def test_layer_norm_bounds_the_standardized_value_by_sqrt_n_minus_1():
    x = TensorType("float64", (3, 4))
    a = {"epsilon": 1e-5, "axis": -1}
    lo, hi = _vr("LayerNormalization", a, [(-1.0, 1.0), (0.5, 2.0), (-0.25, 0.25)], [x])
    assert (lo, hi) == pytest.approx((-0.25 - 2 * math.sqrt(3), 0.25 + 2 * math.sqrt(3)), rel=1e-9)
    # reached (up to eps): all values but one equal
    t = torch.tensor([[0.0, 0.0, 0.0, 1.0]] * 3, dtype=torch.float64)
    y = get("LayerNormalization").torch(a, t, torch.full((4,), 2.0), torch.full((4,), 0.25))
    assert float(y.max()) == pytest.approx(hi, rel=1e-4)
    # float32 statistics widen it a little (rounding against eps)
    lo32, hi32 = _vr("LayerNormalization", a, [(-1.0, 1.0), (0.5, 2.0), (-0.25, 0.25)], [x.with_dtype("float32")])
    assert hi < hi32 < 1.1 * hi
    # a scale within [0.1, 0.2] over rows of 4: |output| < 0.4, never valid for Acosh
    r = _vr("LayerNormalizationNoB", a, [(-1.0, 1.0), (0.1, 0.2)], [x.with_dtype("float32")])
    assert r[1] < 0.4
    assert admit(get("Acosh"), {}, 0, r, True, False) is None
    # an unknown scale tells nothing
    assert _vr("LayerNormalization", a, [(-1.0, 1.0), UNBOUNDED, (0.0, 0.0)], [x]) == UNBOUNDED


def test_norms_of_large_values_are_bounded_only_where_rounding_cannot_blow_z_up():
    # f32 statistics of 1e6 and the next float: the mean rounds to 1e6, doubling the other
    # value's distance from it, so z exceeds sqrt(n - 1) = 1 (and far more elsewhere)
    base = torch.tensor(1e6, dtype=torch.float32)
    t = torch.stack([base, torch.nextafter(base, torch.tensor(INF))]).reshape(1, 2)
    y = get("LayerNormalizationNoB").torch({"epsilon": 1e-5, "axis": -1}, t, torch.ones(2))
    assert float(y.abs().max()) > 1.4
    r = [(1e6, 1e6 + 1.0), (1.0, 1.0)]
    x = TensorType("float32", (1, 2))
    assert _vr("LayerNormalizationNoB", {"epsilon": 1e-5, "axis": -1}, r, [x]) == UNBOUNDED
    g = {"epsilon": 1e-5, "num_groups": 1, "stash_type": 1}
    xg = TensorType("float32", (1, 4, 1))
    assert _vr("GroupNormalization", g, r + [(0.0, 0.0)], [xg]) == UNBOUNDED
    # values around 1e3: still too large for float32 statistics, harmless in float64 ones
    r3 = [(1e3, 1e3 + 1.0), (1.0, 1.0), (0.0, 0.0)]
    assert _vr("GroupNormalization", g, r3, [xg]) == UNBOUNDED
    lo, hi = _vr("GroupNormalization", dict(g, stash_type=11), r3, [xg.with_dtype("float64")])
    assert hi == pytest.approx(math.sqrt(3), rel=1e-3)
    # a two-pass variance caps |z| at sqrt(n) whatever the values
    xi = TensorType("float32", (1, 1, 4))
    assert _vr("InstanceNormalization", {"epsilon": 1e-5}, r + [(0.0, 0.0)], [xi]) == (-2.0, 2.0)
    yi = get("InstanceNormalization").torch({"epsilon": 1e-5}, t.repeat(1, 2).reshape(1, 1, 4), torch.ones(1),
                                             torch.zeros(1))
    assert float(yi.abs().max()) <= 2.0


def test_group_and_instance_norm_bounds_hold_on_near_constant_groups():
    torch.manual_seed(0)
    inst, grp = get("InstanceNormalization"), get("GroupNormalization")
    for k in range(200):
        n = 2 + k % 9
        scale = 10.0 ** (k % 7 - 3)
        t = (scale * (1 + 1e-3 * torch.randn(8, 2, n))).float()
        t[:, :, 0] += scale * 1e-2 * (k % 2)
        rng = (float(t.min()), float(t.max()))
        eps = [1e-5, 1e-3, 0.07][k % 3]
        for spec, a in ((inst, {"epsilon": eps}),
                        (grp, {"epsilon": eps, "num_groups": 2, "stash_type": 1})):
            y = spec.torch(a, t, torch.ones(2), torch.zeros(2))
            lo, hi = spec.value_range(a, [rng, (1.0, 1.0), (0.0, 0.0)], [TensorType("float32", (8, 2, n))])[0]
            y = y[torch.isfinite(y)]
            assert y.numel() == 0 or (lo * (1 + 1e-5) <= float(y.min()) and float(y.max()) <= hi * (1 + 1e-5))


def test_single_element_norms_output_their_bias_exactly():
    a = {"epsilon": 1e-5, "axis": 1}
    x = TensorType("float32", (5, 1))
    assert get("LayerNormalizationNoB").exact(a, [None, None], [x]) == 0.0
    assert get("LayerNormalization").exact(a, [None, None, 0.5], [x]) == 0.5
    assert get("LayerNormalization").exact(a, [None, None, None], [x]) is None
    assert get("LayerNormalization").value_range(a, [UNBOUNDED, UNBOUNDED, (0.5, 1.0)], [x]) == [(0.5, 1.0)]
    assert get("LayerNormalization").exact(a, [None, None, 0.5], [TensorType("float32", (5, 2))]) is None
    y = get("LayerNormalizationNoB").torch(a, torch.randn(5, 1) * 1e3, torch.randn(1))
    assert bool((y == 0).all())
    # so a Reciprocal of it has no valid run
    assert admit(get("Reciprocal"), {}, 0, (0.0, 0.0), True, False, exact=0.0) is None
    xi = TensorType("float32", (4, 3, 1, 1))
    assert get("InstanceNormalization").exact({"epsilon": 1e-5}, [None, None, -1.5], [xi]) == -1.5
    b = torch.tensor([-1.5, 2.0, 0.0])
    y = get("InstanceNormalization").torch({"epsilon": 1e-5}, torch.randn(4, 3, 1, 1), torch.randn(3), b)
    assert bool((y[:, 0] == -1.5).all())
    g = {"epsilon": 1e-5, "num_groups": 3, "stash_type": 1}
    assert get("GroupNormalization").exact(g, [None, None, -1.5], [xi]) == -1.5
    assert get("GroupNormalization").exact(dict(g, num_groups=1), [None, None, -1.5], [xi]) is None
    y = get("GroupNormalization").torch(g, torch.randn(4, 3, 1, 1) * 100, torch.randn(3), b)
    assert bool((y[:, 0] == -1.5).all())
    assert get("GroupNormalization").value_range(g, [UNBOUNDED, UNBOUNDED, (0.0, 2.0)], [xi]) == [(0.0, 2.0)]


def test_batch_norm_interval_arithmetic_and_variance_domain():
    spec = get("BatchNormalization")
    a = {"epsilon": 0.0, "momentum": 0.9}
    x = TensorType("float32", (2, 3, 4))
    rs = [(-1.0, 2.0), (0.5, 1.0), (-0.5, 0.5), (0.0, 1.0), (0.25, 4.0)]
    # (x - mean) in [-2, 2]; 1/sqrt(var) in [0.5, 2]; times scale in [0.5, 1]: [-4, 4]; + B
    assert spec.value_range(a, rs, [x]) == [(-4.5, 4.5)]
    t = [torch.full((2, 3, 4), 2.0), torch.ones(3), torch.full((3,), 0.5), torch.zeros(3), torch.full((3,), 0.25)]
    assert float(spec.torch(a, *t).max()) == 4.5  # reached
    # a positive scale and x above the mean give outputs above B's bottom
    assert spec.value_range(a, [(1.0, 2.0), (0.5, 1.0), (1.0, 1.0), (0.0, 0.5), (1.0, 1.0)], [x]) == [(1.25, 3.0)]
    # a variance that may reach -eps: unbounded; one always at or below -eps: no valid run
    a = {"epsilon": 1e-3, "momentum": 0.9}
    assert spec.value_range(a, rs[:4] + [(-1e-3, 1.0)], [x]) == [UNBOUNDED]
    assert admit(spec, a, 4, (-INF, -1e-3), True, False) is None
    assert admit(spec, a, 4, (-1.0, 1.0), True, False) == (-1e-3, 1.0)
    assert admit(spec, a, 4, (-1.0, 1.0), True, True) == (0.0, 1.0)  # integers above -eps
    assert spec.value_range(a, rs[:4] + [(0.0, INF)], [x])[0] == pytest.approx((-2.0 / math.sqrt(1e-3) - 0.5,
                                                                                2.0 / math.sqrt(1e-3) + 0.5))
    assert spec.value_range(a, [UNBOUNDED] * 4 + [(0.0, 1.0)], [x]) == [UNBOUNDED]
