"""Value bounds and exact values of the index, slicing, logic, binary and layout operators:
each one tight on a worst case, sound on random inputs, and refusing an impossible model."""
from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
import torch

from dlgate.graph.generator import Generator
from dlgate.ops.base import INF, UNBOUNDED, TensorType
from dlgate.ops.registry import get

admit = Generator._admit


def T(shape, dtype="float32"):
    return TensorType(dtype, tuple(shape))


def run(name, a, *xs):
    with torch.no_grad():
        return get(name).torch(a, *xs)


def test_topk_indices_lie_along_the_axis_not_in_the_values_range():
    s, x = get("TopK"), T((3, 7))
    a = {"axis": -1, "k": 2, "largest": 1}
    assert s.value_range(a, [(-4.0, -2.0)], [x]) == [(-4.0, -2.0), (0.0, 6.0)]
    outs = s.infer([x], a)
    assert s.out_bounds(a, [(-4.0, -2.0)], [x], outs)[1] == (0.0, 6.0)
    _, i = run("TopK", a, torch.arange(21.0).reshape(3, 7))
    assert int(i.max()) == 6


def test_cumsum_sums_between_m0_and_n_terms():
    s, x = get("CumSum"), T((2, 5))
    inc = {"axis": 1, "exclusive": 0, "reverse": 0}
    exc = {"axis": -1, "exclusive": 1, "reverse": 1}
    assert s.value_range(inc, [(1.0, 2.0)], [x]) == [(1.0, 10.0)]
    assert s.value_range(exc, [(1.0, 2.0)], [x]) == [(0.0, 8.0)]
    assert s.value_range(inc, [(-3.0, -1.0)], [x]) == [(-15.0, -1.0)]
    assert s.value_range(exc, [(-1.0, 2.0)], [x]) == [(-4.0, 8.0)]
    assert s.value_range(exc, [(0.0, INF)], [x]) == [(0.0, INF)]
    assert s.value_range(inc, [UNBOUNDED], [x]) == [UNBOUNDED]
    assert s.exact(exc, [None], [x]) == 0.0 and s.exact(inc, [None], [x]) is None
    # tight: constant inputs reach both ends
    y = run("CumSum", inc, torch.full((2, 5), 2.0))
    assert float(y.min()) == 2.0 and float(y.max()) == 10.0
    y = run("CumSum", exc, torch.full((2, 5), 2.0))
    assert float(y.min()) == 0.0 and float(y.max()) == 8.0
    # an exclusive CumSum always holds a 0: Log of it has no valid run, even of a positive input
    assert admit(get("Log"), {}, 0, (0.0, 8.0), True, False, exact=0.0) is None


def test_trilu_zeroed_positions_match_torch():
    s = get("Trilu")
    for rows, cols, k, upper in itertools.product((1, 2, 3, 5), (1, 2, 4), range(-7, 8), (0, 1)):
        a = {"upper": upper, "k": k}
        x = T((2, rows, cols))
        y = run("Trilu", a, torch.ones(2, rows, cols))
        zeros = int((y == 0).sum()) // 2
        want = "none" if zeros == 0 else "all" if zeros == rows * cols else "some"
        assert s.zeroed(a, [x]) == want, (rows, cols, k, upper)
        b = s.value_range(a, [(1.0, 3.0)], [x])[0]
        assert b == {"none": (1.0, 3.0), "some": (0.0, 3.0), "all": (0.0, 0.0)}[want]
        assert s.exact(a, [7.0], [x]) == (7.0 if want == "none" else 0.0)


def test_trilu_zeros_refuse_log_and_divisors():
    s, x = get("Trilu"), T((4, 4))
    a = {"upper": 1, "k": 0}  # zeroes below the diagonal
    e = s.exact(a, [None], [x])
    assert e == 0.0
    assert admit(get("Log"), {}, 0, (0.0, 3.0), True, False, exact=e) is None
    assert admit(get("Div"), {}, 1, (0.0, 3.0), True, False, exact=e) is None
    assert s.value_range({"upper": 1, "k": 4}, [(1.0, 3.0)], [x]) == [(0.0, 0.0)]
    assert s.value_range({"upper": 0, "k": -4}, [(1.0, 3.0)], [x]) == [(0.0, 0.0)]


def test_pad_constant_adds_its_value():
    s, x = get("Pad"), T((3, 4))
    pad = {"mode": "constant", "pads": [0, 1, 0, 0], "value": 2.5, "value_dtype": "float32", "axes": None}
    assert s.value_range(pad, [(-1.0, 1.0)], [x]) == [(-1.0, 2.5)]
    assert s.exact(pad, [None], [x]) == 2.5
    zero = dict(pad, value=None)
    assert s.value_range(zero, [(1.0, 2.0)], [x]) == [(0.0, 2.0)] and s.exact(zero, [None], [x]) == 0.0
    # the value as float16 stores it
    h = dict(pad, value=0.1, value_dtype="float16")
    e = s.exact(h, [None], [T((3, 4), "float16")])
    assert e == float(np.float16(0.1)) != 0.1
    y = run("Pad", h, torch.ones(3, 4, dtype=torch.float16))
    assert bool((y.double() == e).any())
    # cropping only: a sub-range, no exact value; a positive pad beside a crop still writes
    crop = dict(pad, pads=[-1, 0, 0, -2])
    assert s.value_range(crop, [(1.0, 2.0)], [x]) == [(1.0, 2.0)] and s.exact(crop, [5.0], [x]) is None
    both = dict(pad, pads=[-1, 0, 0, 2])
    assert s.exact(both, [None], [x]) == 2.5
    # copying modes keep the range, and every input value
    for mode in ("reflect", "edge", "wrap"):
        m = dict(pad, mode=mode, value=None, pads=[1, 0, 1, 2])
        assert s.value_range(m, [(1.0, 2.0)], [x]) == [(1.0, 2.0)]
        assert s.exact(m, [5.0], [x]) == 5.0
    assert admit(get("Log"), {}, 0, (0.0, 2.0), True, False, exact=s.exact(zero, [None], [x])) is None


def test_where_joins_its_branches():
    s = get("Where")
    ins = [T((3,), "bool"), T((3,)), T((3,))]
    assert s.value_range({}, [(0.0, 1.0), (1.0, 2.0), (-5.0, -4.0)], ins) == [(-5.0, 2.0)]
    # the condition's values never reach the output: no span is carried back to it
    assert s.input_span({}, 0, (1.0, 2.0), ins) is None and s.input_span({}, 2, (1.0, 2.0), ins) == (1.0, 2.0)
    # Where(c, Sigmoid, Sigmoid + 1) stays in (0, 2): Log of it is refused when both are <= 0
    assert admit(get("Log"), {}, 0, s.value_range({}, [(0, 1), (-3.0, -1.0), (-2.0, 0.0)], ins)[0],
                 True, False) is None


def test_onehot_holds_only_its_two_values():
    s, x = get("OneHot"), T((4,), "int64")
    a = {"axis": -1, "depth": 3, "values": [0.5, -2.0], "dtype": "float32", "depth_dtype": "int64"}
    assert s.value_range(a, [UNBOUNDED], [x]) == [(-2.0, 0.5)]
    assert s.exact(a, [None], [x]) == 0.5
    assert s.exact(dict(a, depth=1), [None], [x]) is None
    y = run("OneHot", a, torch.tensor([0, 1, 5, -1]))
    assert float(y.min()) == -2.0 and float(y.max()) == 0.5
    # OneHot with off value 0 always holds a 0: no Log of it
    assert admit(get("Log"), {}, 0, (0.0, 1.0), True, False,
                 exact=s.exact(dict(a, values=[0.0, 1.0]), [None], [x])) is None


def _resize_attrs(mode, ctm, cubic_a=None, excl=None, pq=((1, 1), (1, 1), (3, 2), (5, 2))):
    return {"mode": mode, "ctm": ctm, "nearest_mode": "floor" if mode == "nearest" else None, "cubic_a": cubic_a,
            "exclude_outside": excl, "pq": [list(p) for p in pq], "use_sizes": 0, "sizes": None}


def test_resize_cubic_overshoot_is_bounded_and_reached():
    s = get("Resize")
    x = T((1, 1, 6, 4))
    for mode in ("nearest", "linear"):
        assert s.value_range(_resize_attrs(mode, "half_pixel"), [(-1.0, 2.0)], [x]) == [(-1.0, 2.0)]
    a = _resize_attrs("cubic", "half_pixel", -0.75, 0, pq=((1, 1), (1, 1), (1, 1), (5, 2)))
    lo, hi = s.value_range(a, [(0.0, 1.0)], [x])[0]
    assert -0.19 < lo < 0 and 1 < hi < 1.19  # a = -0.75: at most 3/16 of the range either side
    assert s.value_range(a, [(0.0, INF)], [x]) == [UNBOUNDED]
    # tight: a row's weight pattern as the input reaches the upper bound
    from dlgate.ops.index.resize import _weights
    w = _weights(a, 4, 10, 2.5)
    row = w[np.argmax(np.minimum(w, 0).sum(axis=1) * -1)]
    xin = torch.tensor(np.where(row >= 0, 1.0, 0.0), dtype=torch.float32).reshape(1, 1, 1, 4).repeat(1, 1, 6, 1)
    y = run("Resize", a, xin)
    assert float(y.max()) == pytest.approx(hi, abs=1e-6)


def test_resize_cubic_bounds_hold_on_random_inputs():
    s, rng = get("Resize"), np.random.default_rng(0)
    for ctm, ca, excl in itertools.product(("asymmetric", "half_pixel", "align_corners", "pytorch_half_pixel",
                                            "half_pixel_symmetric"), (-0.75, -0.5), (0, 1)):
        for pq in (((1, 1), (1, 1), (1, 4), (3, 1)), ((1, 1), (1, 1), (3, 2), (5, 4)), ((1, 1), (1, 1), (2, 1), (3, 4))):
            a = _resize_attrs("cubic", ctm, ca, excl, pq)
            x = T((2, 1, 8, 4))
            lo, hi = s.value_range(a, [(-1.0, 3.0)], [x])[0]
            for _ in range(5):
                v = torch.from_numpy(rng.choice([-1.0, 3.0], size=x.shape)).float()
                y = run("Resize", a, v)
                assert lo - 1e-5 <= float(y.min()) and float(y.max()) <= hi + 1e-5, (a, lo, hi)


def test_binary_exact_zeros():
    x = T((3,))
    assert get("Mul").exact({}, [None, 0.0], [x, x]) == 0.0
    assert get("Mul").exact({}, [2.0, None], [x, x]) is None
    assert get("Div").exact({}, [0.0, None], [x, x]) == 0.0
    assert get("Mod").exact({}, [0.0, None], [x, x]) == 0.0
    assert get("Div").exact({}, [None, 3.0], [x, x]) is None
    assert get("Pow").exact({}, [None, 0.0], [x, x]) == 1.0
    assert get("Pow").exact({}, [1.0, None], [x, x]) == 1.0
    y = run("Div", {}, torch.tensor([0.0, 1.0]), torch.tensor([-3.0, 2.0]))
    assert float(y[0]) == 0.0
    # Div(0, y) always holds a 0: not a divisor, not under a Log
    assert admit(get("Reciprocal"), {}, 0, (0.0, 1.0), True, False, exact=0.0) is None


def test_binary_bounds():
    x = T((3,))
    div, mod, pw = get("Div"), get("Mod"), get("Pow")
    assert div.value_range({}, [(1.0, 2.0), (2.0, 4.0)], [x, x]) == [(0.25, 1.0)]
    assert div.value_range({}, [(1.0, 2.0), (-4.0, -2.0)], [x, x]) == [(-1.0, -0.25)]
    assert div.value_range({}, [(0.0, 0.0), UNBOUNDED], [x, x]) == [(0.0, 0.0)]
    assert div.value_range({}, [(1.0, 2.0), (0.0, 4.0)], [x, x]) == [(0.25, INF)]  # y > 0 when valid
    assert div.value_range({}, [(1.0, 2.0), (-1.0, 4.0)], [x, x]) == [UNBOUNDED]
    assert div.value_range({}, [(1.0, 2.0), (2.0, INF)], [x, x]) == [(0.0, 1.0)]
    assert mod.value_range({}, [(0.0, 10.0), (-3.0, 2.0)], [x, x]) == [(0.0, 3.0)]
    assert mod.value_range({}, [(-1.0, 5.0), (2.0, 2.0)], [x, x]) == [(-1.0, 2.0)]
    assert mod.value_range({}, [(-9.0, -1.0), UNBOUNDED], [x, x]) == [(-9.0, 0.0)]
    assert pw.value_range({}, [(0.5, 2.0), (-1.0, 2.0)], [x, x]) == [(0.25, 4.0)]
    assert pw.value_range({}, [(0.0, 1.0), (-1.0, 1.0)], [x, x]) == [(0.0, INF)]
    assert pw.value_range({}, [(2.0, INF), (-INF, 0.0)], [x, x]) == [(0.0, 1.0)]
    assert pw.value_range({}, [(-1.0, 1.0), (0.0, 1.0)], [x, x]) is None
    assert get("Mul").value_range({}, [(0.0, 0.0), UNBOUNDED], [x, x]) == [(0.0, 0.0)]
    assert get("Mul").value_range({}, [(0.0, 2.0), (1.0, INF)], [x, x]) == [(0.0, INF)]
    assert get("Mean").value_range({}, [(0.0, 3.0), (3.0, 6.0), (3.0, 3.0)], [x, x, x]) == [(2.0, 4.0)]
    # Log(Mod(x, y)) for x <= 0 can never be valid
    b = mod.value_range({}, [(-5.0, 0.0), (1.0, 2.0)], [x, x])[0]
    assert admit(get("Log"), {}, 0, b, True, False) is None


@pytest.mark.parametrize("name", ["Div", "Mod", "Pow", "Mul", "Add", "Sub", "Max", "Min"])
def test_binary_bounds_hold_on_random_boxes(name):
    s, rng = get(name), random.Random(name)
    ends = (-INF, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 4.0, INF)
    x = T((64,))
    for _ in range(300):
        r = tuple(sorted(rng.sample([e for e in ends if e >= 0] if name == "Pow" else ends, 2)))
        q = tuple(sorted(rng.sample(ends, 2)))
        b = s.value_range({}, [r, q], [x, x])
        if b is None:
            continue
        lo, hi = b[0]
        assert not (math.isnan(lo) or math.isnan(hi))

        def draw(e):
            a, c = max(e[0], -50.0), min(e[1], 50.0)
            return torch.tensor([a, c] + [rng.uniform(a, c) for _ in range(62)], dtype=torch.float64)

        y = run(name, {}, draw(r), draw(q))
        y = y[torch.isfinite(y)]
        if y.numel():
            assert lo - 1e-9 * max(1, abs(lo)) <= float(y.min()) and float(y.max()) <= hi + 1e-9 * max(1, abs(hi)), (r, q, b)
