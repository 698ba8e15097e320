"""The operator contract's split (dlgate/ops/core.py and its parts): OpSpec is the core with
every part, the stock parts give the members they name, and the members the framework
computes cannot be overridden."""
from __future__ import annotations

import pytest
import torch

from dlgate.ops import registry
from dlgate.ops.base import (FINAL, Core, Decreasing, Increasing, InputDomain, NonZero, OpSpec, OracleFacts,
                             Proxied, Restricted, Stepwise, TensorType, ValueModel)
from dlgate.ops.unary._shared import Unary


def test_opspec_is_the_core_with_every_part_and_no_member_is_defined_twice():
    assert OpSpec.__mro__[1:5] == (Core, ValueModel, InputDomain, OracleFacts)
    seen = {}
    for part in (Core, ValueModel, InputDomain, OracleFacts):
        for member in part.__dict__:
            if not member.startswith("__"):
                assert member not in seen, f"{member} is in {seen.get(member)} and {part.__name__}"
                seen[member] = part.__name__


@pytest.mark.parametrize("member", FINAL)
def test_a_spec_overriding_a_computed_member_is_refused_when_its_class_is_made(member):
    with pytest.raises(TypeError, match=member):
        type("Bad", (OpSpec,), {member: lambda self, *a: None})


def test_no_registered_spec_overrides_a_computed_member():
    for spec in registry.all_specs().values():
        for member in FINAL:
            assert getattr(type(spec), member) is getattr(OpSpec, member), (spec.name, member)


def test_stepwise_computes_with_fn_and_differentiates_through_proxy():
    floor = registry.get("Floor")
    assert isinstance(floor, Stepwise) and floor.integral_out and floor.jumps and floor.monotone == 1
    x = torch.tensor([-1.5, 0.25, 2.75], dtype=torch.float64, requires_grad=True)
    y = floor.torch({}, x)
    assert y.tolist() == [-2.0, 0.0, 2.0]
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]  # the proxy's straight-through gradient
    assert floor.torch({}, x.detach()).tolist() == [-2.0, 0.0, 2.0]


def test_monotone_parts_map_bounds_through_the_function():
    class Cube(Increasing, Unary):
        onnx_op = "Cube"
        fn = staticmethod(lambda x: x ** 3)

    class Flip(Decreasing, Unary):
        onnx_op = "Flip"
        fn = torch.neg

    t = [TensorType("float32", (2,))]
    assert Cube().value_range({}, [(-1.0, 2.0)], t) == [(-1.0, 8.0)]
    assert Flip().value_range({}, [(-1.0, 2.0)], t) == [(-2.0, 1.0)]
    assert Unary().value_range({}, [(-1.0, 2.0)], t) is None  # no part: nothing known


def test_restricted_draws_its_starting_values_from_safe():
    log, neg = registry.get("Log"), registry.get("Neg")
    assert isinstance(log, Restricted) and log.restricted and log.input_range({}, 0) == (0.5, 4.0)
    assert not isinstance(neg, Restricted) and not neg.restricted and neg.input_range({}, 0) is None


def test_proxied_computes_with_fn_and_gives_the_search_a_slope_where_fn_is_flat():
    relu = registry.get("Relu")
    assert isinstance(relu, Proxied) and isinstance(relu, Increasing) and not relu.integral_out and not relu.jumps
    x = torch.tensor([-2.0, 3.0], dtype=torch.float64, requires_grad=True)
    y = relu.torch({}, x)
    assert y.tolist() == [0.0, 3.0]
    y.sum().backward()
    assert x.grad.tolist() == [0.1, 1.0]  # proxy_relu's slope below 0; torch.relu's is 0
    assert relu.torch({}, torch.tensor([-2, 3], dtype=torch.int32)).tolist() == [0, 3]


@pytest.mark.parametrize("name", ["Relu", "LeakyRelu", "Elu", "Celu", "Selu", "Sigmoid", "HardSigmoid", "Softplus",
                                  "Softsign", "Tanh"])
def test_monotone_activations_take_the_increasing_part(name):
    spec = registry.get(name)
    assert isinstance(spec, Increasing) and spec.monotone == 1
    assert "monotone" not in type(spec).__dict__  # stated by the part, not again by hand
    grid = torch.linspace(-6.0, 6.0, 241, dtype=torch.float64)
    a = {k: default for k, _, _, default in type(spec).params}
    y = spec.torch(a, grid)
    assert bool((y[1:] >= y[:-1]).all()), "the part's claim holds on a grid"


def test_reduce_max_and_min_share_the_reduce_extremum_part():
    from dlgate.ops.reduce._shared import ReduceExtremum

    x = torch.tensor([[1.0, -3.0, 2.0], [0.5, 4.0, -1.0]])
    for name, want in (("ReduceMax", [2.0, 4.0]), ("ReduceMin", [-3.0, -1.0])):
        spec = registry.get(name)
        assert isinstance(spec, ReduceExtremum) and spec.keeps_range and spec.exact_values
        assert spec.torch({"keepdims": 0, "axes": [1]}, x).tolist() == want
        assert spec.torch({"keepdims": 1, "axes": [], "noop": 1}, x).tolist() == x.tolist()
    assert registry.get("ReduceMax").siblings == registry.get("ReduceMin").siblings == "reduce-extremum"


def test_restricted_reductions_take_the_part_and_their_safe_range():
    lse, ls, l2 = registry.get("ReduceLogSumExp"), registry.get("ReduceLogSum"), registry.get("ReduceSumSquare")
    assert all(isinstance(s, Restricted) and s.restricted for s in (lse, ls, l2))
    assert ls.input_range({}, 0) == (0.1, 4.0) and lse.input_range({}, 0) is None


def test_safe_gives_every_input_one_range_or_some_inputs_theirs():
    div, pow_, bn = registry.get("Div"), registry.get("Pow"), registry.get("BatchNormalization")
    assert [div.input_range({}, i) for i in (0, 1)] == [None, (0.5, 4.0)]
    assert [pow_.input_range({}, i) for i in (0, 1)] == [(0.5, 2.0), (-2.0, 2.0)]
    assert [bn.input_range({}, i) for i in range(5)] == [None] * 4 + [(0.1, 2.0)]  # the variance
    assert registry.get("MeanVarianceNormalization").input_range({}, 0) == (-4.0, 4.0)
    assert registry.get("GridSample").input_range({}, 1) == (-1.2, 1.2)
    assert registry.get("Abs").input_range({}, 0) is None  # nothing said: any value will do


def test_pow_states_its_base_domain_declaratively():
    pow_ = registry.get("Pow")
    assert isinstance(pow_, Restricted) and pow_.input_domain({}, 0) == (0.0, float("inf"))
    assert pow_.input_domain({}, 1) is None


@pytest.mark.parametrize("name, i", [("Div", 1), ("Mod", 1), ("Reciprocal", 0), ("QuantizeLinearScaleInput", 1)])
def test_nonzero_names_its_input_and_its_loss_is_positive_exactly_when_it_holds_a_zero(name, i):
    spec = registry.get(name)
    assert isinstance(spec, NonZero) and spec.restricted
    assert [spec.input_nonzero({}, k) for k in range(spec.arity)] == [k == i for k in range(spec.arity)]
    ok = [torch.tensor([1.0, -2.0]) for _ in range(spec.arity)]
    bad = list(ok)
    bad[i] = torch.tensor([1.0, 0.0])
    assert [float(v) for v in spec.losses({}, *ok)] == [0.0]
    assert [float(v) > 0 for v in spec.losses({}, *bad)] == [True]


@pytest.mark.parametrize("name, inside, outside", [
    ("Sqrt", [0.0, 2.0], [-1e-3]), ("Log", [1e-3, 2.0], [0.0, -1.0]), ("Acosh", [1.0, 3.0], [0.999]),
    ("Asin", [-1.0, 1.0, 0.5], [1.001]), ("Acos", [-1.0, 0.0], [-1.5]), ("Atanh", [-0.999, 0.5], [1.0])])
def test_restricted_derives_its_losses_from_the_domain(name, inside, outside):
    spec = registry.get(name)
    assert "losses" not in type(spec).__dict__  # nothing written by hand
    assert all(float(v) == 0 for v in spec.losses({}, torch.tensor(inside, dtype=torch.float64)))
    for x in outside:
        assert any(float(v) > 0 for v in spec.losses({}, torch.tensor([0.5 + 1.5 * (name == "Acosh"), x])))


def test_domain_losses_of_an_interval_bound_each_end():
    from dlgate.ops.domains import domain_losses

    x = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64)
    assert [float(v) for v in domain_losses((0.0, 2.0), False, x)] == [0.0, 0.0]
    assert [float(v) > 0 for v in domain_losses((0.5, 1.5), False, x)] == [True, True]
    assert [float(v) > 0 for v in domain_losses((0.0, 2.0), True, x)] == [True, True]  # the ends are out
    assert domain_losses(None, True, x) == []


def test_cum_sum_and_cum_prod_are_one_cumulative_operator():
    from dlgate.ops.index.cum_sum import Cumulative

    x = torch.tensor([[1.0, 2.0, 3.0]])
    for name, inclusive, exclusive_reversed, empty in (("CumSum", [1.0, 3.0, 6.0], [5.0, 3.0, 0.0], 0.0),
                                                       ("CumProd", [1.0, 2.0, 6.0], [6.0, 3.0, 1.0], 1.0)):
        spec = registry.get(name)
        assert isinstance(spec, Cumulative) and spec.can_overflow and spec.keeps_integers
        assert spec.torch({"axis": -1, "exclusive": 0, "reverse": 0}, x).tolist() == [inclusive]
        assert spec.torch({"axis": 1, "exclusive": 1, "reverse": 1}, x).tolist() == [exclusive_reversed]
        assert spec.exact({"axis": 1, "exclusive": 1}, [None], [TensorType("float32", (1, 3))]) == empty
    assert registry.get("CumSum").family == "index" and registry.get("CumProd").family == "shapecalc"


def test_iterate_ranges_feeds_carried_bounds_back_and_unites_the_scan_outputs():
    from dlgate.graph.ir import Graph, Node
    from dlgate.ops.control._iterated import Iterated, iterate_ranges

    assert isinstance(registry.get("Loop"), Iterated) and isinstance(registry.get("Scan"), Iterated)
    f = TensorType("float32", (3,))
    # body(c, x) = (c + x, x + x): the carried sum grows each run, the scan output does not
    g = Graph(tensors=[f, f, f, f], nodes=[Node("Add", {}, [0, 1], [2]), Node("Add", {}, [1, 1], [3])],
              inputs=[0, 1], consts=[], outputs=[2, 3], opset=21)
    carried, scans = iterate_ranges(g, 3, [(0.0, 1.0)], lambda c: c + [(-1.0, 2.0)])
    assert carried == [(-3.0, 7.0)] and scans == [(-2.0, 4.0)]
    carried, scans = iterate_ranges(g, 0, [(0.0, 1.0)], lambda c: c + [(-1.0, 2.0)])
    assert carried == [(0.0, 1.0)] and scans == []


def test_every_spec_takes_its_monotone_and_restricted_claims_from_a_stock_part():
    """A claim a stock part makes is made by the part, never restated by hand beside it."""
    stock = (Increasing, Decreasing, Stepwise, Proxied, Restricted, NonZero)
    for spec in registry.all_specs().values():
        cls = type(spec)
        if spec.monotone:
            assert isinstance(spec, (Increasing, Decreasing, Stepwise)), spec.name
        if spec.restricted:
            assert isinstance(spec, Restricted), spec.name
        for member in ("monotone", "restricted", "integral_out", "jumps"):
            owner = next(c for c in cls.__mro__ if member in c.__dict__)
            parts = [c for c in cls.__mro__ if c in stock and member in c.__dict__]
            if parts and owner not in stock:
                assert owner.__dict__[member] != parts[0].__dict__[member], (spec.name, member, owner.__name__)
