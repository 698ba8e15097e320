"""Forms the replay benchmark showed the generator could not draw, now drawn by ordinary
generation: BatchNormalization-15 with mixed float types (T, T1, T2), BatchNormalization of
a 1-D input, and the Shape of a rank-0 tensor (sliced, inside ReshapeFromShape). Each is
drawn at a modest rate, valid under the full checker, and computed by the reference as
onnx.reference computes it."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from onnx.reference import ReferenceEvaluator

from dlgate.graph.generator import GenConfig, Generator
from dlgate.graph.ir import domain_spans, random_values
from dlgate.materialize.onnx_model import to_onnx
from dlgate.materialize.torch_model import GraphModule
from dlgate.ops.registry import all_specs, get
from tests.helpers import mismatch

SPECS = all_specs()


def _draws(ops: tuple, n: int, **kw):
    gen = Generator(GenConfig(min_nodes=1, max_nodes=4, ops=ops, **kw))
    return [gen.generate(7919 * s + 11) for s in range(n)]


def _agrees_with_onnx_reference(g, seed: int) -> None:
    raw = to_onnx(g, seed).SerializeToString()
    onnx.checker.check_model(onnx.load_from_string(raw), full_check=True)
    rng = np.random.default_rng(seed)
    spans = domain_spans(g, SPECS)
    feeds = [random_values(rng, g.tensors[t], spans.get(t)) for t in g.inputs]
    with torch.no_grad():
        ours = [o.numpy() for o in GraphModule(g)(*[torch.from_numpy(np.array(x, copy=True)) for x in feeds])]
    ref = ReferenceEvaluator(onnx.load_from_string(raw)).run(None, {g.name(t): x for t, x in zip(g.inputs, feeds)})
    for a, b in zip(ref, ours):
        a = np.asarray(a)
        assert (a.dtype, a.shape) == (b.dtype, b.shape), f"{g.op_names()}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        scale = max(1.0, float(np.abs(b.astype(np.float64)).max(initial=0))) if b.dtype.kind == "f" else 1.0
        err = mismatch(a, b, scale)
        assert err is None, f"{g.op_names()} opset {g.opset}: onnx.reference vs ours: {err}"


def _bn_nodes(g):
    return [[g.tensors[t] for t in n.inputs] for n in g.nodes if n.op == "BatchNormalization"]


def test_batchnorm_mixes_float_types_where_the_schema_allows_and_not_mostly():
    mixed = plain = 0
    for opset in (13, 14, 15, 21):
        for g in _draws(("BatchNormalization", "Relu"), 60, opset=opset):
            for ins in _bn_nodes(g):
                x, s, b, m, v = (t.dtype for t in ins)
                assert s == b and m == v, "scale/B share T1, mean/var share T2"
                if len({x, s, m}) > 1:
                    # BatchNormalization-9 has one T; -14 types mean/var apart (U); -15 scale/B too
                    assert opset >= 15 or (opset == 14 and s == x), f"mixed types {x, s, m} at opset {opset}"
                    mixed += 1
                else:
                    plain += 1
    assert mixed >= 5, f"mixed float types drawn {mixed} times"
    assert plain > 2 * mixed, f"mixed float types dominate: {mixed} mixed, {plain} plain"


def test_batchnorm_draws_a_1d_input_with_one_channel():
    found = 0
    for g in _draws(("BatchNormalization", "Relu", "Flatten"), 120, opset=15):
        for ins in _bn_nodes(g):
            if ins[0].rank == 1:
                assert all(t.shape == (1,) for t in ins[1:])
                found += 1
    assert found >= 3, f"1-D BatchNormalization drawn {found} times"


def test_batchnorm_reference_follows_onnx_reference_on_mixed_and_1d_forms():
    checked = set()
    for k, g in enumerate(_draws(("BatchNormalization", "Relu"), 80, opset=15)):
        forms = set()
        for ins in _bn_nodes(g):
            if ins[0].rank == 1:
                forms.add("1d")
            if len({t.dtype for t in ins}) > 1:
                forms.add("mixed")
        if not forms or any(get(n.op).reference_defect(n.attrs, [g.tensors[t] for t in n.inputs], g.opset)
                            for n in g.nodes):
            continue
        _agrees_with_onnx_reference(g, k)
        checked |= forms
    assert checked == {"1d", "mixed"}


def test_batchnorm_reference_computes_in_the_widest_type_and_returns_x_type():
    bn = get("BatchNormalization")
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16)
    p32 = torch.tensor([1.0009765625], dtype=torch.float32)  # 1 + 2**-10: not a float16 after scaling
    one = torch.tensor([1.0], dtype=torch.float32)
    y = bn.torch({"epsilon": 0.0}, x, p32, one * 0, one * 0, one)
    assert y.dtype == torch.float16
    assert torch.equal(y, (x.float() * p32).half())


@pytest.mark.parametrize("op", ["ReshapeFromShape", "ExpandFromShape"])
def test_shape_of_a_scalar_is_drawn_sliced_and_valid(op):
    found = 0
    for k, g in enumerate(_draws((op, "Relu"), 150, opset=17)):
        hit = False
        for n in g.nodes:
            pieces = n.attrs.get("pieces") or []
            if n.op == op and any("dims" in p for p in pieces) and g.tensors[n.inputs[1]].rank == 0:
                # the empty slice of the empty shape, then constants
                assert pieces[0]["lo"] == pieces[0]["hi"] == 0 and all("const" in p for p in pieces[1:])
                hit = True
        if hit:
            found += 1
            model = to_onnx(g, k)
            shapes = [nd for nd in model.graph.node if nd.op_type == "Shape"]
            assert any(nd.op_type == "Slice" and nd.input[0] in {s.output[0] for s in shapes} for nd in model.graph.node)
            _agrees_with_onnx_reference(g, k)
    assert 3 <= found <= 40, f"the Shape of a scalar was drawn in {found} of 150 models"


# -- Q -> DQ with scales of two float types (ort-qdq-mixed-scale-types) ---------------------
def _pairs(g):
    """(x dtype, Q scale dtype, DQ scale dtype, output dtype) of each FakeQuant."""
    return [(g.tensors[n.inputs[0]].dtype, n.attrs["sdt"], n.attrs.get("dsdt") or n.attrs["sdt"],
             g.tensors[n.outputs[0]].dtype) for n in g.nodes if n.op == "FakeQuant"]


@pytest.mark.parametrize("opset", [17, 19, 21, 23])
def test_fake_quant_mixes_scale_types_from_opset_19_and_not_mostly(opset):
    mixed = plain = 0
    for g in _draws(("FakeQuant", "Relu"), 80, opset=opset):
        for x, qs, ds, y in _pairs(g):
            if qs != ds:
                assert opset >= 19, "DequantizeLinear takes a float16 scale from opset 19"
                assert opset >= 23 or qs == x, "before opset 23 QuantizeLinear's scale is x's type (T1)"
                assert y == ds, "a mixed pair returns its DQ scale's type"
                mixed += 1
            else:
                plain += 1
    if opset < 19:
        assert mixed == 0
    else:
        assert mixed >= 4, f"mixed scale types drawn {mixed} times at opset {opset}"
        assert plain > 2 * mixed, f"mixed scale types dominate: {mixed} mixed, {plain} plain"


def test_fake_quant_mixed_pair_writes_two_scales_and_follows_onnx_reference():
    checked = 0
    for opset in (19, 21, 23):
        for k, g in enumerate(_draws(("FakeQuant", "Relu", "Abs"), 60, opset=opset)):
            if not any(qs != ds for _, qs, ds, _ in _pairs(g)):
                continue
            model = to_onnx(g, k)
            inits = {i.name: i.data_type for i in model.graph.initializer}
            consts = {nd.output[0]: nd.attribute[0].t.data_type for nd in model.graph.node if nd.op_type == "Constant"}
            inits.update(consts)
            pairs = {(inits.get(q.input[1]), inits.get(d.input[1]))
                     for q in model.graph.node if q.op_type == "QuantizeLinear"
                     for d in model.graph.node if d.op_type == "DequantizeLinear" and d.input[0] == q.output[0]}
            assert any(a is not None and b is not None and a != b for a, b in pairs), pairs
            _agrees_with_onnx_reference(g, k)
            checked += 1
    assert checked >= 6, f"{checked} models with a mixed pair checked"


# -- Einsum: a lone operand reduced and permuted; an operand with a zero-size axis -----------
def _einsums(g, op):
    return [(n.attrs["equation"], g.tensors[n.inputs[0]], g.tensors[n.outputs[0]]) for n in g.nodes if n.op == op]


def _reduces_and_permutes(eq: str) -> bool:
    if "->" not in eq:  # implicit mode: the labels seen once, sorted
        return False
    lhs, rhs = eq.split("->")
    kept = [c for c in lhs if c in rhs]
    return len(rhs) < len(lhs) and len(rhs) > 1 and kept != list(rhs)


def test_einsum_unary_draws_a_reduction_that_permutes_and_not_mostly():
    hit = other = 0
    for k, g in enumerate(_draws(("EinsumUnary", "Relu"), 200, opset=17)):
        found = False
        for eq, x, y in _einsums(g, "EinsumUnary"):
            if _reduces_and_permutes(eq):
                assert x.rank == 3 and y.rank == 2
                hit += 1
                found = True
            else:
                other += 1
        if found and hit <= 6:
            _agrees_with_onnx_reference(g, k)
    assert hit >= 5, f"a permuting reduction drawn {hit} times"
    assert other > 2 * hit, f"permuting reductions dominate: {hit} of {hit + other}"


def test_einsum_empty_is_drawn_only_in_the_degenerate_regime():
    from dlgate.ops.registry import all_specs as specs

    ordinary = Generator(GenConfig(min_nodes=1, max_nodes=6))
    assert "EinsumEmpty" not in {s.name for s in ordinary.specs}, "the ordinary stream must not draw it"
    assert "EinsumEmpty" in {s.name for s in ordinary._specs_at(17, degenerate=True)}
    assert specs()["EinsumEmpty"].degenerate_only


def test_einsum_empty_writes_a_zero_size_operand_summed_out_and_follows_onnx_reference():
    checked = 0
    for k, g in enumerate(_draws(("EinsumEmpty", "Relu", "Add"), 60, opset=17)):
        nodes = [n for n in g.nodes if n.op == "EinsumEmpty"]
        if not nodes:
            continue
        model = to_onnx(g, k)
        einsums = [nd for nd in model.graph.node if nd.op_type == "Einsum"]
        inits = {i.name: tuple(i.dims) for i in model.graph.initializer}
        assert len(einsums) == len(nodes)
        for nd in einsums:
            assert len(nd.input) == 2 and 0 in inits[nd.input[1]], "the second operand is a zero-size constant"
            lhs, rhs = next(a.s.decode() for a in nd.attribute if a.name == "equation").split("->")
            own = set(lhs.split(",")[1]) - set(lhs.split(",")[0])
            assert len(own) == 1 and not own & set(rhs), "its own label has size 0 and is summed out"
        for n in nodes:
            assert g.tensors[n.outputs[0]].numel > 0, "the result is not empty: a sum over nothing"
        _agrees_with_onnx_reference(g, k)
        checked += 1
    assert checked >= 10, f"{checked} models with an empty Einsum operand checked"


def test_einsum_empty_is_zeros_whatever_its_graph_operand():
    spec = get("EinsumEmpty")
    a = {"equation": "ab,bz->ba", "dtype": "float32", "empty": (3, 0)}
    y = spec.torch(a, torch.randn(2, 3))
    assert y.shape == (3, 2) and not bool(y.any())
    assert spec.value_range(a, [(-5.0, 5.0)], []) == [(0.0, 0.0)] and spec.exact(a, [None], []) == 0.0


def test_double_qdq_pairs_remover_declines_on_mixed_scale_types_and_follows_onnx_reference():
    """The motif's ``same_scale_type`` side: Q1 -> DQ1 with a float16 DQ scale, Q2 -> DQ2 back
    to float32, each pair's scales of two types, drawn on a share of the motif's draws."""
    sides, checked = {}, 0
    for k, g in enumerate(_draws(("DoubleQDQPairsRemover",), 80, opset=21)):
        for n in g.nodes:
            if n.op != "DoubleQDQPairsRemover":
                continue
            side = n.attrs["violate"]
            sides[side] = sides.get(side, 0) + 1
            if side == "same_scale_type":
                q1, q2 = n.attrs["q1"], n.attrs["q2"]
                assert (q1["sdt"], q1["dsdt"], q2["sdt"], q2["dsdt"]) == ("float32", "float16", "float16", "float32")
                if checked < 4:
                    _agrees_with_onnx_reference(g, k)
                    checked += 1
    assert sides.get("same_scale_type", 0) >= 5 and sides.get(None, 0) > sides["same_scale_type"], sides
    assert checked == 4
