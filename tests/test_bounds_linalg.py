"""Value bounds and exact values of the linear-algebra and convolution specs: sums of
products (MatMul, Gemm, Einsum, Conv, ConvTranspose), fewer terms where padding or stride
gaps feed an output nothing, and the exact 0 a bias-free convolution writes there."""
from __future__ import annotations

import math

import pytest
import torch

from dlgate.graph.generator import Generator
from dlgate.ops.base import INF, UNBOUNDED, TensorType
from dlgate.ops.linalg._shared import product_bounds, sum_bounds
from dlgate.ops.registry import get

F32 = "float32"


def _t(*shape, dtype=F32):
    return TensorType(dtype, shape)


def _run(name, a, *xs):
    with torch.no_grad():
        return get(name).torch(a, *[torch.tensor(x, dtype=torch.float64) for x in xs])


def _conv_attrs(kernel, strides, dilations, pads, group=1, m=1, output_padding=None):
    a = {"kernel": kernel, "strides": strides, "dilations": dilations, "pads": pads, "group": group,
         "m_per_group": m, "spell_kernel": True}
    if output_padding is not None:
        a["output_padding"] = output_padding
    return a


# -- helpers -------------------------------------------------------------------------------------
def test_products_treat_zero_times_infinity_as_zero():
    assert product_bounds((0.0, 0.0), UNBOUNDED) == (0.0, 0.0)
    assert product_bounds((0.0, 2.0), (1.0, INF)) == (0.0, INF)
    assert product_bounds((-1.0, 2.0), (-3.0, 4.0)) == (-6.0, 8.0)
    assert sum_bounds((-INF, INF), 0, 0) == (0.0, 0.0)
    assert sum_bounds((1.0, 2.0), 0, 3) == (0.0, 6.0)  # an empty sum is 0
    assert sum_bounds((-2.0, -1.0), 2, 3) == (-6.0, -2.0)
    for lo, hi in (product_bounds(UNBOUNDED, UNBOUNDED), sum_bounds(UNBOUNDED, 0, 5)):
        assert not math.isnan(lo) and not math.isnan(hi)


# -- MatMul, Gemm, Einsum --------------------------------------------------------------------------
def test_matmul_bounds_are_k_products_and_tight():
    x, y = _t(3, 4), _t(4, 5)
    lo, hi = get("MatMul").value_range({}, [(1.0, 2.0), (-1.0, 3.0)], [x, y])[0]
    assert (lo, hi) == (-8.0, 24.0)
    out = _run("MatMul", {}, [[2.0] * 4] * 3, [[3.0] * 5] * 4)
    assert float(out.max()) == hi  # all terms at their largest product
    # all-zero weights give exactly 0, whatever the other operand
    assert get("MatMul").value_range({}, [UNBOUNDED, (0.0, 0.0)], [x, y])[0] == (0.0, 0.0)
    # positive times positive: no output can feed a Log-like domain's negative side
    assert get("MatMul").value_range({}, [(0.5, INF), (1.0, 2.0)], [x, y])[0] == (2.0, INF)
    # vector @ vector sums K products
    assert get("MatMul").value_range({}, [(1.0, 1.0), (1.0, 1.0)], [_t(7), _t(7)])[0] == (7.0, 7.0)


def test_gemm_scales_by_alpha_and_adds_beta_c():
    a = {"transA": 1, "transB": 0, "alpha": -1.0, "beta": 0.5}
    ins = [_t(4, 3), _t(4, 2), _t(3, 2)]  # A' is 3x4: K = 4
    lo, hi = get("Gemm").value_range(a, [(0.0, 1.0), (0.0, 2.0), (-2.0, 2.0)], ins)[0]
    assert (lo, hi) == (-9.0, 1.0)
    out = _run("Gemm", a, [[1.0] * 3] * 4, [[2.0] * 2] * 4, [[-2.0] * 2] * 3)
    assert float(out.min()) == lo
    # alpha 0 drops the product, even an unbounded one
    a0 = {"transA": 0, "transB": 1, "alpha": 0.0}
    assert get("GemmNoC").value_range(a0, [UNBOUNDED, UNBOUNDED], [_t(3, 4), _t(2, 4)])[0] == (0.0, 0.0)
    a1 = {"transA": 0, "transB": 1, "alpha": 2.0}
    assert get("GemmNoC").value_range(a1, [(1.0, 1.0), (0.0, 0.0)], [_t(3, 4), _t(2, 4)])[0] == (0.0, 0.0)


def test_einsum_counts_the_summed_labels():
    e = get("Einsum")
    r = [(1.0, 2.0), (1.0, 3.0)]
    assert e.value_range({"equation": "ab,bc->ac"}, r, [_t(2, 5), _t(5, 3)])[0] == (5.0, 30.0)
    assert e.value_range({"equation": "ab,bc"}, r, [_t(2, 5), _t(5, 3)])[0] == (5.0, 30.0)  # implicit
    assert e.value_range({"equation": "a,b->ab"}, r, [_t(2), _t(3)])[0] == (1.0, 6.0)  # no sum
    assert e.value_range({"equation": "zab,zab->"}, r, [_t(2, 2, 3), _t(2, 2, 3)])[0] == (12.0, 72.0)
    out = _run("Einsum", {"equation": "ab,bc->ac"}, [[2.0] * 5] * 2, [[3.0] * 3] * 5)
    assert float(out.max()) == 30.0
    u = get("EinsumUnary")
    assert u.value_range({"equation": "ab->ba"}, [(-1.0, 2.0)], [_t(3, 4)])[0] == (-1.0, 2.0)
    assert u.value_range({"equation": "ab->a"}, [(-1.0, 2.0)], [_t(3, 4)])[0] == (-4.0, 8.0)
    assert u.value_range({"equation": "ab->"}, [(0.0, INF)], [_t(3, 4)])[0] == (0.0, INF)
    # a transpose (or a sum over size-1 labels) keeps every value: an exact one stays
    assert u.exact({"equation": "ab->ba"}, [0.0], [_t(3, 4)]) == 0.0
    assert u.exact({"equation": "ab->a"}, [0.0], [_t(3, 1)]) == 0.0
    assert u.exact({"equation": "ab->a"}, [0.0], [_t(3, 4)]) is None
    assert e.exact({"equation": "a,b->ab"}, [0.0, None], [_t(2), _t(3)]) is None


# -- Conv -----------------------------------------------------------------------------------------
def test_conv_without_padding_sums_every_tap():
    a = _conv_attrs([3], [1], [1], [0, 0], group=2)
    ins = [_t(1, 4, 8), _t(2, 2, 3), _t(2)]
    s = get("Conv")
    assert s._term_counts(a, ins[0]) == (6, 6)  # 2 channels per group x 3 taps
    assert s.value_range(a, [(1.0, 2.0), (1.0, 2.0), (-1.0, 1.0)], ins)[0] == (5.0, 25.0)
    assert get("ConvNoBias").exact(a, [None, None], ins[:2]) is None


def test_conv_output_fed_only_by_padding_is_exactly_zero():
    # output 0 reads input indices -3, -2 (kernel 2, pad 3): only padding
    a = _conv_attrs([2], [1], [1], [3, 0])
    ins = [_t(1, 1, 4), _t(1, 1, 2)]
    s = get("ConvNoBias")
    assert s._term_counts(a, ins[0]) == (0, 2)
    assert s.exact(a, [None, None], ins) == 0.0
    lo, hi = s.value_range(a, [(1.0, 2.0), (1.0, 3.0)], ins)[0]
    assert (lo, hi) == (0.0, 12.0)
    y = _run("ConvNoBias", a, [[[1.0, 2.0, 1.5, 2.0]]], [[[1.0, 3.0]]])
    assert float(y[0, 0, 0]) == 0.0 and lo <= float(y.min()) and float(y.max()) <= hi
    # so a Log of it has no valid run, though its bounds alone would overlap Log's domain
    assert Generator._admit(get("Log"), {}, 0, (lo, hi), True, False, exact=0.0) is None
    # with a bias the position holds the bias: exact only when the bias holds a value exactly
    assert get("Conv").exact(a, [None, None, None], ins + [_t(1)]) is None
    assert get("Conv").exact(a, [None, None, 0.5], ins + [_t(1)]) == 0.5
    # strided 2-D: the padding of one axis is enough
    a2 = _conv_attrs([1, 3], [2, 1], [1, 1], [0, 0, 1, 3])
    x2 = _t(1, 1, 5, 3)
    assert s._term_counts(a2, x2)[0] == 0 and s.exact(a2, [None, None], [x2, _t(1, 1, 1, 3)]) == 0.0


def test_conv_bounds_rule_out_impossible_consumers():
    # negative inputs times positive weights, no padding: every output is negative
    a = _conv_attrs([3, 3], [1, 1], [2, 2], [0, 0, 0, 0])
    ins = [_t(1, 2, 6, 6), _t(3, 2, 3, 3)]
    lo, hi = get("ConvNoBias").value_range(a, [(-2.0, -1.0), (1.0, 2.0)], ins)[0]
    assert (lo, hi) == (-72.0, -18.0)
    assert Generator._admit(get("Log"), {}, 0, (lo, hi), True, False) is None
    # zero weights: exactly the bias
    assert get("Conv").value_range(a, [UNBOUNDED, (0.0, 0.0), (1.0, 2.0)], ins + [_t(3)])[0] == (1.0, 2.0)


# -- ConvTranspose -------------------------------------------------------------------------------
def test_conv_transpose_stride_gaps_are_exactly_zero():
    # kernel 1, stride 2: odd outputs are reached by no (input, tap) pair
    a = _conv_attrs([1], [2], [1], [0, 0], output_padding=[0])
    ins = [_t(1, 1, 4), _t(1, 1, 1)]
    s = get("ConvTransposeNoBias")
    assert s._term_counts(a, ins[0]) == (0, 1)
    assert s.exact(a, [None, None], ins) == 0.0
    y = _run("ConvTransposeNoBias", a, [[[1.0, 2.0, 3.0, 4.0]]], [[[2.0]]])
    assert float(y[0, 0, 1]) == 0.0
    assert s.value_range(a, [(1.0, 4.0), (2.0, 2.0)], ins)[0] == (0.0, 8.0)
    # output_padding appends positions nothing reaches
    a = _conv_attrs([3], [2], [1], [0, 0], output_padding=[1])
    assert s._term_counts(a, ins[0])[0] == 0 and s.exact(a, [None, None], [ins[0], _t(1, 1, 3)]) == 0.0


def test_conv_transpose_overlaps_count_every_pair():
    # kernel 3, stride 1, pads 2: every output sums exactly 3 taps x 2 channels per group
    a = _conv_attrs([3], [1], [1], [2, 2], output_padding=[0])
    ins = [_t(1, 2, 5), _t(2, 1, 3)]
    s = get("ConvTransposeNoBias")
    assert s._term_counts(a, ins[0]) == (6, 6)
    assert s.exact(a, [None, None], ins) is None
    lo, hi = s.value_range(a, [(1.0, 2.0), (-1.0, 3.0)], ins)[0]
    assert (lo, hi) == (-12.0, 36.0)
    y = _run("ConvTransposeNoBias", a, [[[2.0] * 5] * 2], [[[3.0] * 3]] * 2)
    assert float(y.max()) == hi
    # stride 2, kernel 3, no pads: outputs get one or two taps (stride gaps are filled)
    a = _conv_attrs([3], [2], [1], [0, 0], output_padding=[0])
    assert s._term_counts(a, _t(1, 1, 4)) == (1, 2)


@pytest.mark.parametrize("name", ["Conv", "ConvNoBias", "ConvTranspose", "ConvTransposeNoBias"])
def test_conv_bounds_hold_on_random_instances(name):
    import random

    rng = random.Random(0)
    s = get(name)
    for _ in range(60):
        r = rng.choice((1, 2))
        c, g = rng.choice(((1, 1), (2, 1), (2, 2), (4, 2)))
        a = _conv_attrs([rng.randint(1, 4) for _ in range(r)], [rng.randint(1, 3) for _ in range(r)],
                        [rng.randint(1, 2) for _ in range(r)], [rng.randint(0, 3) for _ in range(2 * r)],
                        group=g, m=rng.randint(1, 2))
        if s.transpose:
            a["output_padding"] = [rng.randint(0, st - 1) for st in a["strides"]]
        x = _t(*((1, c) + tuple(rng.randint(1, 6) for _ in range(r))))
        w = TensorType(F32, s._weight_shape([x], a))
        ins = [x, w] + ([_t(s._out_channels(a))] if s.has_bias else [])
        if not all(bool(q) for q in s.requires(ins, a)):
            continue
        rs = [(rng.uniform(-2, 1), rng.uniform(1, 3)) for _ in ins]
        xs = [torch.rand(t.shape, dtype=torch.float64) * (q[1] - q[0]) + q[0] for t, q in zip(ins, rs)]
        with torch.no_grad():
            y = s.torch(a, *xs)
        lo, hi = s.value_range(a, rs, ins)[0]
        assert lo - 1e-9 <= float(y.min()) and float(y.max()) <= hi + 1e-9
        e = s.exact(a, [None] * len(ins), ins)
        if e is not None:
            assert bool((y == e).any())


def test_det_bounds_beyond_float64_are_unbounded_not_an_error():
    # Hadamard's bound (sqrt(M) max|a|)^M overflows float64 for wide inputs: no bound, no crash
    det = get("Det")
    x = TensorType("float32", (2, 16, 16))
    assert det.value_range({}, [(-1e30, 1e30)], [x]) == [(-INF, INF)]
    lo, hi = det.value_range({}, [(-2.0, 1.0)], [x])[0]
    assert hi == (4.0 * 2.0) ** 16 and lo == -hi
