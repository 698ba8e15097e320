"""The graph generator: validity of its structure, its knobs, and its use of z3."""
from __future__ import annotations

import math

import random
from collections import Counter

import pytest

from dlgate.graph.generator import NEWEST_OPSET, GenConfig, GenerationError, Generator
from dlgate.ops.base import Ctx, Limits, binned_int
from dlgate.ops.registry import all_specs
from dlgate.seeds import case_seed


def _graphs(cfg, n=60, root="t"):
    gen = Generator(cfg)
    return gen, [gen.generate(case_seed(root, "gen", i)) for i in range(n)]


def _check_structure(g, limits=Limits()):
    defined = set(g.inputs) | set(g.consts)
    for node in g.nodes:
        assert all(t in defined for t in node.inputs), "node consumes a tensor defined later"
        for t in node.outputs:
            assert t not in defined, "tensor defined twice"
            defined.add(t)
    assert set(g.outputs) <= defined and g.outputs
    assert set(range(len(g.tensors))) == defined
    assert g.inputs, "every model has at least one graph input"
    for t in g.tensors:
        assert t.rank <= limits.max_rank and t.numel <= limits.max_elems and all(d >= 1 for d in t.shape)
    assert set(g.values) == set(g.consts)


def test_graphs_are_well_formed_and_within_limits():
    _, graphs = _graphs(GenConfig(max_nodes=12), n=80)
    for g in graphs:
        _check_structure(g)
        assert 1 <= len(g.nodes) <= 12


def test_node_count_follows_the_configured_range():
    _, graphs = _graphs(GenConfig(min_nodes=6, max_nodes=6), n=30)
    assert Counter(len(g.nodes) for g in graphs).most_common(1)[0][0] == 6
    assert all(len(g.nodes) <= 6 for g in graphs)


def test_operator_restriction_is_honoured():
    _, graphs = _graphs(GenConfig(ops=("Add", "Relu", "Sigmoid")), n=30)
    assert {n.op for g in graphs for n in g.nodes} <= {"Add", "Relu", "Sigmoid"}


def test_unknown_operator_is_a_clear_error():
    with pytest.raises(KeyError, match="unknown operator"):
        Generator(GenConfig(ops=("Add", "NoSuchOp")))


def test_fixed_opset_and_drawn_opsets():
    _, fixed = _graphs(GenConfig(opset=17), n=10)
    assert {g.opset for g in fixed} == {17}
    _, drawn = _graphs(GenConfig(), n=60)
    opsets = {g.opset for g in drawn}
    assert len(opsets) >= 4 and min(opsets) >= 13 and max(opsets) <= NEWEST_OPSET
    _, capped = _graphs(GenConfig(opset_range=(13, 21)), n=30)
    assert max(g.opset for g in capped) == 21


def test_the_newest_opset_is_the_newest_onnx_defines():
    import onnx.defs

    assert NEWEST_OPSET == onnx.defs.onnx_opset_version()
    with pytest.raises(ValueError, match="opset range"):
        GenConfig(opset_range=(13, NEWEST_OPSET + 1))


def test_picking_rate_makes_graphs_denser():
    def shared(graphs):  # tensors consumed more than once
        return sum(sum(1 for c in g.consumers().values() if len(c) > 1) for g in graphs)

    ops = ("Add", "Mul", "Sub", "Max", "Where", "Concat")
    ops = tuple(o for o in ops if o in all_specs())
    _, dense = _graphs(GenConfig(ops=ops, picking_rate=1.0, min_nodes=8, max_nodes=8), n=40)
    _, sparse = _graphs(GenConfig(ops=ops, picking_rate=0.0, min_nodes=8, max_nodes=8), n=40)
    def placeholders(graphs):
        return sum(len(g.inputs) + len(g.consts) for g in graphs)

    assert shared(dense) > 1.5 * shared(sparse)
    assert placeholders(sparse) > 1.3 * placeholders(dense)


def test_multi_input_and_multi_output_graphs_occur():
    _, graphs = _graphs(GenConfig(max_nodes=10), n=80)
    assert any(len(g.inputs) > 1 for g in graphs)
    assert any(len(g.outputs) > 1 for g in graphs)
    assert any(g.consts for g in graphs), "some placeholders become constant initializers"


def test_forward_only_and_backward_insertion_both_work():
    gen, _ = _graphs(GenConfig(forward_prob=1.0), n=20)
    assert gen.stats["backward"] == gen.stats["z3_backward"] == 0 and gen.stats["forward"] > 0
    gen, graphs = _graphs(GenConfig(forward_prob=0.0), n=20)
    assert gen.stats["forward"] == gen.stats["z3_forward"] == 0
    assert gen.stats["backward"] > 0
    for g in graphs:
        _check_structure(g)


def test_z3_solves_what_propagation_cannot():
    specs = all_specs()
    ops = tuple(o for o in ("Conv", "MaxPool", "AveragePool", "Pad", "ConvTranspose") if o in specs)
    if not ops:
        pytest.skip("no arithmetic-shape operator is registered yet")
    gen, graphs = _graphs(GenConfig(ops=ops + ("Relu",), forward_prob=0.3, max_nodes=6), n=40)
    assert gen.stats["z3_backward"] > 0
    assert gen.solver.calls > 0
    for g in graphs:
        _check_structure(g)


def test_support_restriction_limits_operator_dtype_pairs():
    support = frozenset((name, ("float32",) * spec.arity, o)
                        for name, spec in all_specs().items() for o in range(13, 22)
                        if ("float32",) * spec.arity in spec.dtypes)
    _, graphs = _graphs(GenConfig(support=support, opset=18), n=40)
    for g in graphs:
        for n in g.nodes:
            assert all(g.tensors[t].dtype == "float32" for t in n.inputs), n


def test_attribute_binning_spreads_values_over_bins():
    rng = random.Random(0)
    vals = [binned_int(rng, 0, 200, 7) for _ in range(4000)]
    buckets = Counter(0 if v == 0 else min(v.bit_length(), 7) for v in vals)
    # {0}, [1,2), [2,4), ..., [64, 200]: eight bins, each drawn about equally often
    assert len(buckets) == 8 and min(buckets.values()) > 300
    neg = [binned_int(rng, -10, 10, 7) for _ in range(1000)]
    assert min(neg) < 0 < max(neg) and neg.count(0) > 50


def test_shapes_respect_the_element_cap():
    ctx = Ctx(random.Random(1), Limits(max_elems=100))
    for _ in range(200):
        s = ctx.shape(4)
        assert all(d >= 1 for d in s)
        prod = 1
        for d in s:
            prod *= d
        assert prod <= 100


def test_bad_config_is_rejected():
    with pytest.raises(ValueError):
        GenConfig(min_nodes=5, max_nodes=2)
    with pytest.raises(ValueError):
        GenConfig(dtypes=("float32", "complex64"))


def test_impossible_request_raises_generation_error():
    gen = Generator(GenConfig(ops=("Add",), dtypes=("bool",)))
    with pytest.raises(GenerationError):
        gen.generate(1)


# -- value bounds: what makes a model impossible to run validly ----------------------------
INF = float("inf")


def test_integer_valued_bounds_narrow_to_the_integers_inside_a_domain():
    from dlgate.graph.bounds import _integers_in

    assert _integers_in((0.0, 1.0), (-1.0, 1.0), open_domain=True) == (0.0, 0.0)  # Atanh of a Floor
    assert _integers_in((0.0, 1.0), (-1.0, 1.0), open_domain=False) == (0.0, 1.0)  # Asin of a Floor
    assert _integers_in((0.2, 0.8), (-1.0, 1.0), open_domain=False) is None
    assert _integers_in((-INF, 2.5), (-INF, INF), open_domain=True) == (-INF, 2.0)


def test_admit_refuses_impossible_inputs_and_narrows_possible_ones():
    spec = all_specs()
    admit = Generator._admit
    assert admit(spec["Acosh"], {}, 0, (0.0, 1.0), True, False) is None  # Acosh of a Sigmoid
    assert admit(spec["Log"], {}, 0, (-2.0, 3.0), True, False) == (0.0, 3.0)
    assert admit(spec["Atanh"], {}, 0, (0.0, INF), True, True) == (0.0, 0.0)  # Atanh of a Floor: only 0
    # a divisor that is exactly zero cannot be steered away from it
    assert admit(spec["Div"], {}, 1, (0.0, 0.0), True, False) is None
    # a tensor the search cannot steer (a cast from integers) must lie inside the domain
    assert admit(spec["Atanh"], {}, 0, (0.0, 1.0), False, True) is None
    assert admit(spec["Div"], {}, 1, (0.0, 1.0), False, False) is None
    # LogSoftmax over 8 elements always has an element at or below -log(8) < -1
    assert admit(spec["Asin"], {}, 0, (-INF, 0.0), True, False, anchor=-2.08) is None
    assert admit(spec["Asin"], {}, 0, (-INF, 0.0), True, False, anchor=-0.69) == (-1.0, 0.0)


def test_spec_bounds_and_anchors():
    from dlgate.ops.base import TensorType

    spec = all_specs()
    x = TensorType("float32", (4, 8))
    assert spec["Sub"].self_range({}, (-3.0, 5.0)) == (0.0, 0.0)
    assert spec["LogSoftmax"].anchor({"axis": 1}, [None], [x]) == pytest.approx(-2.0794, abs=1e-4)
    assert spec["Softmax"].anchor({"axis": 0}, [None], [x]) == 0.25
    assert spec["Neg"].anchor({}, [0.5], [x]) == -0.5  # a decreasing map keeps an anchor
    assert spec["Transpose"].anchor({"perm": [1, 0]}, [0.25], [x]) == 0.25
    assert spec["Slice"].anchor({}, [0.25], [x]) is None  # a subset of the elements: no anchor
    assert spec["ReduceProd"].value_range({"axes": [1]}, [(-0.5, 0.9)], [x]) == [(-0.9 ** 8, 0.9 ** 8)]
    assert spec["ThresholdedRelu"].value_range({"alpha": 1.0}, [(-1.0, 1.0)], [x]) == [(0.0, 0.0)]
    assert spec["Softmax"].value_range({"axis": 1}, [(-INF, INF)], [TensorType("float32", (4, 1))]) == [(1.0, 1.0)]
    assert spec["Exp"].value_range({}, [(0.0, 1.0)], [x])[0] == pytest.approx((1.0, 2.718281828))


def test_generated_models_respect_known_bounds():
    """Over many models: no Acosh consumes a Sigmoid/Tanh/Softmax output directly, and no
    divisor is a Sub of a tensor with itself."""
    gen = Generator(GenConfig(min_nodes=5, max_nodes=15))
    bad = []
    for i in range(300):
        g = gen.generate(case_seed("bounds", "b", i))
        prod = {t: n for n in g.nodes for t in n.outputs}
        for n in g.nodes:
            src = prod.get(n.inputs[0])
            if n.op == "Acosh" and src is not None and src.op in ("Sigmoid", "Tanh", "Softmax", "HardSigmoid"):
                bad.append((i, src.op, n.op))
            if n.op in ("Div", "Mod", "Reciprocal"):
                d = prod.get(n.inputs[-1])
                if d is not None and d.op == "Sub" and d.inputs[0] == d.inputs[1]:
                    bad.append((i, "Sub(x, x)", n.op))
    assert not bad, bad


def _state_with(ops):
    """A generator state built by committing ``(op, attrs, inputs)`` in order, each input
    an existing tensor id or a TensorType for a new placeholder (ids count placeholders
    and outputs in creation order); returns the generator and the state."""
    from dlgate.graph.generator import _State

    gen = Generator(GenConfig())
    st = _State()
    for op, attrs, ins in ops:
        spec = all_specs()[op]
        ids = [i if isinstance(i, int) else None for i in ins]
        types = [st.tensors[i] if isinstance(i, int) else i for i in ins]
        assert gen._domains_ok(st, spec, attrs, ids), op
        gen._commit(st, spec, attrs, ids, types, spec.infer(types, attrs))
    return gen, st


def test_a_new_consumer_that_narrows_a_tensor_rechecks_everything_downstream():
    from dlgate.ops.base import TensorType

    x = TensorType("float64", ())
    # x -> ThresholdedRelu(alpha 1.5) -> Log: valid only with x > 1.5
    gen, st = _state_with([("ThresholdedRelu", {"alpha": 1.5}, [x]), ("Log", {}, [1])])
    asin = all_specs()["Asin"]
    # Asin(x) keeps x within [-1, 1]: the threshold then always gives 0, and Log(0) is -inf
    assert not gen._domains_ok(st, asin, {}, [0])
    # a consumer that keeps x positive is fine
    assert gen._domains_ok(st, all_specs()["Sqrt"], {}, [0])


def test_narrowing_passes_back_through_monotone_operators():
    from dlgate.ops.base import TensorType

    x = TensorType("float32", (4,))
    # Acosh(Asin(x)) needs Asin(x) >= 1, so x >= sin(1)
    gen, st = _state_with([("Asin", {}, [x]), ("Acosh", {}, [1])])
    spec = all_specs()
    lo, hi = st.ranges[0]
    assert lo == pytest.approx(math.sin(1.0), abs=1e-3) and lo <= math.sin(1.0) and hi >= 1.0
    pre = spec["Exp"].preimage({}, (1.0, math.e))
    assert pre[0] <= 0.0 <= pre[0] + 1e-2 and 1.0 <= pre[1] <= 1.0 + 1e-2  # sound: never narrower
    assert spec["Relu"].preimage({}, (0.0, 2.0)) == (-INF, pytest.approx(2.0, abs=1e-2))


def test_starting_ranges_are_carried_back_from_restricted_operators():
    from dlgate.graph.ir import Graph, Node, domain_spans
    from dlgate.ops.base import TensorType

    t = TensorType("float32", (2, 3))
    r = TensorType("float32", (2,))
    # x -> Exp -> ReduceSum(axis 1, 3 terms) -> Acosh: starting values near log((1.1..4)/3)
    g = Graph(tensors=[t, t, r, r], nodes=[Node("Exp", {}, [0], [1]),
                                           Node("ReduceSum", {"keepdims": 0, "axes": [1]}, [1], [2]),
                                           Node("Acosh", {}, [2], [3])],
              inputs=[0], consts=[], outputs=[3], opset=18)
    lo, hi = domain_spans(g, all_specs())[0]
    safe = all_specs()["Acosh"].input_range({}, 0)
    assert 3 * math.exp(lo) >= safe[0] - 1e-6 and 3 * math.exp(hi) <= safe[1] + 1e-6
    # periodic operators invert on their principal branch
    assert all_specs()["Sin"].input_span({}, 0, (0.5, 1.0), [t]) == pytest.approx((math.pi / 6, math.pi / 2))
    # a product of 3 sines can never reach Acosh's starting range: nothing is carried
    g.nodes[0] = Node("Sin", {}, [0], [1])
    g.nodes[1] = Node("ReduceProd", {"keepdims": 0, "axes": [1]}, [1], [2])
    assert domain_spans(g, all_specs()) == {}


def test_backward_insertion_narrows_the_new_inputs_and_rederives_the_output():
    from dlgate.ops.base import Ctx, Limits, TensorType

    spec = all_specs()
    x = TensorType("float32", (4,))
    # Atanh(p) keeps p within (-1, 1); Abs inserted backward on p keeps its input within
    # (-1, 1) too; ThresholdedRelu(alpha > 1) inserted backward on that input can then
    # only output 0, so a divisor of the Abs is refused
    gen, st = _state_with([("Atanh", {}, [x])])
    ctx = Ctx(random.Random(0), Limits(), ("float32",), 18)

    def insert_backward(op, attrs, p):
        class Fixed(type(spec[op])):  # the same operator, with these attributes
            def backward(self, c, out):
                return [out], dict(attrs)

        st.placeholders[:] = [p]
        assert gen._backward(st, Fixed(), ctx, random.Random(0))
        return st.nodes[-1]

    abs_node = insert_backward("Abs", {}, 0)
    assert st.ranges[abs_node.inputs[0]] == (-1.0, 1.0)
    thr = insert_backward("ThresholdedRelu", {"alpha": 1.25}, abs_node.inputs[0])
    assert st.ranges[thr.inputs[0]][1] == 1.25 and st.ranges[thr.outputs[0]] == (0.0, 0.0)
    assert st.ranges[0] == (0.0, 0.0)  # Abs of only zeros
    assert not gen._domains_ok(st, spec["Reciprocal"], {}, [0])
    assert spec["Abs"].preimage({}, (0.0, 2.0)) == (-2.0, 2.0)
    assert spec["Cosh"].preimage({}, (1.0, math.cosh(3.0))) == pytest.approx((-3.0, 3.0))
    lo, hi = spec["ThresholdedRelu"].preimage({"alpha": 2.0}, (0.5, 1.5))
    assert lo > hi  # outputs are 0 or above 2: none in [0.5, 1.5]


# -- a draw that fails is drawn again: a case is always made -------------------------------------
def _shuns(op: str):
    """Coverage guidance (from an empty state) that never draws operator ``op`` (weight 0),
    as guidance weighing unseen operators up all but stops drawing a seen one."""
    from dlgate.coverage.guide import Guide
    from dlgate.coverage.state import CoverageState

    class Shuns(Guide):
        def spec_weight(self, spec, sigs) -> float:
            return 0.0 if spec.name == op else super().spec_weight(spec, sigs)

    return Shuns(CoverageState())


def test_a_case_whose_draws_never_came_back_to_its_first_operator_inserts_it():
    # Cases stopped generation with "could not insert any operator" (under generator versions
    # 12 to 14: prc-8's case 44 in configs/pr.yaml with the opsets capped at 25; bars-held-out-7's
    # case 53, a bool scalar placeholder for Or): the first placeholder is made to fit an
    # operator, the draws never came back to it (guidance weighed others up) and nothing else
    # fits it. That operator is now inserted there when no other draw inserted any. Built
    # directly: the first placeholder fits Or (bool), guidance never draws Or, and Relu (the
    # only other operator) takes no bool, nor makes one.
    cfg = GenConfig(ops=("Or", "Relu"), dtypes=("bool", "float32"), opset=18, max_nodes=4)
    met = 0
    for seed in range(40):
        gen = Generator(cfg, guide=_shuns("Or"))
        try:
            gen.generate(seed, redraw=False)  # the draw alone: Relu's, or nothing
            continue
        except GenerationError as e:
            assert "could not insert any operator" in str(e)
        g = gen.generate(seed)
        assert g.redrawn is None and g.op_names() == ["Or"], (seed, g.op_names(), g.redrawn)
        _check_structure(g)
        met += 1
    assert met >= 5, met


class _Stuck(Generator):
    """Inserts no operator in its first ``stuck`` draws (a restriction nothing fits)."""

    def __init__(self, cfg, stuck):
        super().__init__(cfg)
        self.stuck, self.draws, self.blocked = stuck, 0, False

    def _draw(self, seed, insist=True, aim=None):
        self.draws += 1
        self.blocked = self.draws <= self.stuck
        try:
            return super()._draw(seed, insist, aim)
        finally:
            self.blocked = False

    def _forward(self, *a):
        return not self.blocked and super()._forward(*a)

    def _backward(self, *a):
        return not self.blocked and super()._backward(*a)


def test_a_failed_draw_is_drawn_again_from_a_sub_seed_and_says_so():
    from dlgate.case import make_case
    from dlgate.seeds import sub_seed

    cfg = GenConfig(max_nodes=5, dtypes=("float32",))
    seed = case_seed("redraw", "r", 0)
    with pytest.raises(GenerationError, match="could not insert any operator"):
        _Stuck(cfg, 1).generate(seed, redraw=False)
    for stuck in (1, 3):
        g = _Stuck(cfg, stuck).generate(seed)
        assert g.redrawn == {"attempts": stuck, "reason": f"could not insert any operator (seed {seed})"}
        # the redraw is the draw of its own sub-seed, byte for byte
        again = Generator(cfg).generate(sub_seed(seed, f"redraw/{stuck}"))
        assert g.to_json() == again.to_json() and g.values.keys() == again.values.keys()
        assert all((g.values[t] == again.values[t]).all() for t in g.values)
    a = make_case(_Stuck(cfg, 2), "redraw", "r", 0)
    b = make_case(_Stuck(cfg, 2), "redraw", "r", 0)
    assert a.model_bytes == b.model_bytes and a.meta()["redrawn"]["attempts"] == 2
    assert make_case(Generator(cfg), "redraw", "r", 0).graph.redrawn is None


def test_when_every_redraw_fails_the_fallback_is_one_operator_the_restriction_allows():
    from dlgate.case import make_case
    from dlgate.graph.generator import REDRAWS

    cfg = GenConfig(max_nodes=5, dtypes=("float32",), ops=("Gelu", "Relu", "Add"), opset_range=(13, 22))
    cases = [make_case(_Stuck(cfg, REDRAWS + 1), "fallback", "f", i) for i in range(4)]
    for i, c in enumerate(cases):
        meta = c.meta()
        assert meta["redrawn"]["attempts"] == REDRAWS + 1 and meta["redrawn"]["fallback"] == c.graph.op_names()[0]
        assert len(c.graph.nodes) == 1 and c.graph.redrawn["reason"].startswith("could not insert any operator")
        # the first operator of the list that exists at the failed draw's opset: Gelu from opset 20
        assert c.graph.op_names() == (["Gelu"] if c.graph.opset >= 20 else ["Relu"])
        assert all(t.dtype == "float32" for t in c.graph.tensors) and not c.graph.dynamic
        _check_structure(c.graph)
        assert make_case(_Stuck(cfg, REDRAWS + 1), "fallback", "f", i).model_bytes == c.model_bytes
    assert {c.graph.opset >= 20 for c in cases} == {True, False}
    # an operator whose rewrite needs symbolic dimensions gets them, where the config gives any
    cfg = GenConfig(ops=("EmbedLayerNormAttention",), opset=13, dynamic_share=1.0)
    g = _Stuck(cfg, REDRAWS + 1).generate(case_seed("fallback", "dyn", 0))
    assert g.redrawn["fallback"] == "EmbedLayerNormAttention" and g.dynamic and g.dynamic["dims"]


def test_a_fixed_opset_that_holds_no_allowed_operator_is_a_configuration_error():
    gen = Generator(GenConfig(ops=("Gelu",), opset=18))
    with pytest.raises(GenerationError, match="no operator can be drawn at opset 18 within the operator list"):
        gen.drawable()
    with pytest.raises(GenerationError):
        gen.generate(1)
    Generator(GenConfig(ops=("Gelu",), opset=20)).drawable()  # silent where one is


def test_checking_that_a_configuration_can_draw_changes_no_case():
    # the check walks the opsets; the next case's draw reads the generator's current one
    # (coverage guidance's narrow-motif candidates), so the check must leave it as it was
    from dlgate.case import GuidedBatch
    from dlgate.coverage.state import CoverageState

    def cases(check):
        gen = Generator(GenConfig(max_nodes=5, dynamic_share=0.25, extreme_share=0.2))
        if check:
            gen.drawable()
        batch = GuidedBatch(gen, "drawable", "d", CoverageState())
        return [batch.case(i)[0].model_bytes for i in range(6)], gen

    plain, _ = cases(False)
    checked, gen = cases(True)
    assert checked == plain
    before = gen.opset
    gen.drawable()
    assert gen.opset == before
