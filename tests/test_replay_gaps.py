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
