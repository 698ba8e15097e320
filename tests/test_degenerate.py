"""The degenerate attribute regime (``Ctx.degenerate``): its draws produce each degenerate
value for its operator, still draw ordinary values part of the time, give valid models that
onnxruntime computes as the PyTorch reference does, and leave the ordinary stream unchanged."""
from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

from dlgate.graph.generator import GenConfig, Generator
from dlgate.graph.ir import random_values
from dlgate.materialize.onnx_model import to_onnx
from dlgate.materialize.torch_model import GraphModule
from dlgate.ops.base import SPELL_DEFAULTS, Ctx
from dlgate.ops.norm._shared import EPS_DEFAULT
from dlgate.probe.single import single_op_graph, single_op_model
from tests.helpers import finite, mismatch, ort_run

STREAM = Path(__file__).parent / "data" / "degenerate_off_stream.json"


def _stream_seed(i: int) -> int:
    """A seed independent of GENERATOR_VERSION (case seeds include it)."""
    return int.from_bytes(hashlib.sha256(f"degenerate-stream/{i}".encode()).digest()[:8], "big")


def test_ordinary_stream_is_byte_identical_to_before_the_regime():
    """200 models drawn with the regime off hash as the code before the regime drew them."""
    want = json.loads(STREAM.read_text())["sha256"]
    gen = Generator(GenConfig(min_nodes=1, max_nodes=8))
    got = [hashlib.sha256(to_onnx(gen.generate(_stream_seed(i)), _stream_seed(i) ^ 1).SerializeToString()).hexdigest()
           for i in range(len(want))]
    assert len(want) == 200 and got == want


def test_the_regime_changes_the_stream(monkeypatch):
    """The same seeds under the regime draw other models (the regime is not a no-op)."""
    want = json.loads(STREAM.read_text())["sha256"][:20]
    monkeypatch.setattr(Ctx, "degenerate", True)
    gen = Generator(GenConfig(min_nodes=1, max_nodes=8))
    got = [hashlib.sha256(to_onnx(gen.generate(_stream_seed(i)), _stream_seed(i) ^ 1).SerializeToString()).hexdigest()
           for i in range(20)]
    assert sum(a != b for a, b in zip(got, want)) >= 10


def test_degenerate_draws_touch_no_rng_when_off_and_take_both_sides_when_on():
    off = Ctx(random.Random(5))
    assert not off.degenerate_draw() and off.rng.random() == random.Random(5).random()
    on = Ctx(random.Random(5))
    on.degenerate = True
    perms = [on.perm(4) for _ in range(200)]
    ident = sum(p == [0, 1, 2, 3] for p in perms)
    assert 70 < ident < 140  # about half, plus the shuffles that happen to be the identity
    full = [on.axes(4, 1) for _ in range(200)]
    assert 70 < sum(a == [0, 1, 2, 3] for a in full) < 160 and any(len(a) < 4 for a in full)
    assert [] in [on.axes(3, 0) for _ in range(40)]
    assert {on.or_default(7, 1) for _ in range(40)} == {1, 7}


@pytest.fixture
def degenerate(monkeypatch):
    """Every context the generator makes (concrete and symbolic) in the degenerate regime."""
    monkeypatch.setattr(Ctx, "degenerate", True)


def _node_attr(model, key):
    for node in model.graph.node:
        for at in node.attribute:
            if at.name == key:
                return onnx.helper.get_attribute_value(at)
    return None


def _has_attr(model, key) -> bool:
    return any(at.name == key for n in model.graph.node for at in n.attribute)


def _input_const(model, node_input: int):
    node = model.graph.node[-1]
    name = node.input[node_input] if len(node.input) > node_input else ""
    for init in model.graph.initializer:
        if init.name == name:
            return onnx.numpy_helper.to_array(init).tolist()
    return None


def _judge(g, raw, k):
    """Full checker, then onnxruntime against the PyTorch reference."""
    onnx.checker.check_model(onnx.load_from_string(raw), full_check=True)
    feeds = [random_values(np.random.default_rng(k), g.tensors[t]) for t in g.inputs]
    with torch.no_grad():
        ours = [o.numpy() for o in GraphModule(g)(*[torch.from_numpy(x.copy()) for x in feeds])]
    if not finite(*feeds, *ours):
        return False
    for a, b in zip(ort_run(raw, g, feeds), ours):
        scale = max(1.0, float(np.abs(b.astype(np.float64)).max(initial=0))) if b.dtype.kind == "f" else 1.0
        err = mismatch(np.asarray(a), b, scale)
        assert err is None, f"{g.nodes[0].op} {g.nodes[0].attrs}: onnxruntime vs torch: {err}"
    return True


def _x(g):
    return g.tensors[g.nodes[0].inputs[0]]


#: (spec, signature, opset, the degenerate value seen on (graph, model)).
REGIMES = [
    ("Transpose", ("float32",), 21, lambda g, m: g.nodes[0].attrs["perm"] == list(range(_x(g).rank))
     and _node_attr(m, "perm") == list(range(_x(g).rank))),
    ("ReduceSum", ("float32",), 18, lambda g, m: g.nodes[0].attrs.get("axes") == [] and g.nodes[0].attrs["noop"] == 1
     and _node_attr(m, "noop_with_empty_axes") == 1 and _input_const(m, 1) == []),
    ("ReduceMax", ("float32",), 18, lambda g, m: g.nodes[0].attrs.get("axes") == [] and g.nodes[0].attrs["noop"] == 0
     and _node_attr(m, "noop_with_empty_axes") == 0),
    ("ReduceL1", ("float32",), 13, lambda g, m: _x(g).rank > 0 and sorted(a % _x(g).rank for a in g.nodes[0].attrs.get("axes") or [-1])
     == list(range(_x(g).rank)) and _has_attr(m, "keepdims")),
    ("Squeeze", ("float32",), 21, lambda g, m: not g.nodes[0].attrs["omit"] and sorted(
        a % _x(g).rank for a in g.nodes[0].attrs["axes"]) == [i for i, d in enumerate(_x(g).shape) if d == 1]),
    ("Pad", ("float32",), 19, lambda g, m: not any(g.nodes[0].attrs["pads"])),
    ("Conv", ("float32", "float32", "float32"), 21, lambda g, m: g.nodes[0].attrs["auto_pad"] == "NOTSET"
     and _node_attr(m, "pads") == [0] * (2 * (_x(g).rank - 2)) and _node_attr(m, "strides") == [1] * (_x(g).rank - 2)),
    ("MaxPool", ("float32",), 21, lambda g, m: g.nodes[0].attrs["auto_pad"] == "NOTSET"
     and _node_attr(m, "pads") == [0] * (2 * (_x(g).rank - 2))),
    ("Slice", ("float32",), 21, lambda g, m: tuple(g.tensors[g.outputs[0]].shape) == tuple(_x(g).shape)
     and all(s == 1 for s in (g.nodes[0].attrs["steps"] or [1]))),
    ("Expand", ("float32",), 21, lambda g, m: g.nodes[0].attrs["shape"] == list(_x(g).shape)),
    ("Reshape", ("float32",), 21, lambda g, m: list(g.nodes[0].attrs["shape"]) == list(_x(g).shape)),
    ("Tile", ("float32",), 21, lambda g, m: _x(g).rank > 0 and g.nodes[0].attrs["repeats"] == [1] * _x(g).rank),
    ("Cast", ("float32",), 21, lambda g, m: g.nodes[0].attrs["to"] == "float32"),
    ("Resize", ("float32",), 21, lambda g, m: all(p == q for p, q in g.nodes[0].attrs["pq"])),
    ("QuantizeLinear", ("float32",), 21, lambda g, m: set(np.ravel(g.nodes[0].attrs["scale"]).tolist()) == {1.0}
     and set(np.ravel(g.nodes[0].attrs["zp"] if g.nodes[0].attrs["zp"] is not None else [0]).tolist()) == {0}),
    ("LayerNormalization", ("float32", "float32", "float32"), 21,
     lambda g, m: g.nodes[0].attrs["epsilon"] == EPS_DEFAULT and _node_attr(m, "epsilon") is not None),
]


@pytest.mark.parametrize("name,sig,opset,seen", REGIMES, ids=[r[0] for r in REGIMES])
def test_degenerate_regime_is_produced_valid_and_judged(degenerate, name, sig, opset, seen):
    hits = misses = judged = 0
    # up to 100 draws: some regimes' values come about one draw in twelve (ReduceSum's
    # empty axes with noop), and 40 left three hits to the luck of the generator version
    for k in range(100):
        g = single_op_graph(name, sig, opset, k)
        if g is None:
            continue
        raw = single_op_model(g, k)
        model = onnx.load_from_string(raw)
        assert g.nodes[0].attrs.get(SPELL_DEFAULTS) is True
        if seen(g, model):
            hits += 1
            judged += _judge(g, raw, k)
        else:
            misses += 1
        if hits >= 3 and misses >= 1 and judged >= 2:
            break
    assert hits >= 3, f"{name}: the degenerate value was drawn {hits} times"
    assert misses >= 1, f"{name}: the regime never drew an ordinary value"
    assert judged >= 2, f"{name}: only {judged} degenerate cases could be judged"


def test_defaults_are_spelled_out_under_the_regime(degenerate):
    """Every attribute at its default is written, never left out (the writer's coin is not
    tossed): ReduceMean's keepdims=1, Conv's group=1."""
    spelled = 0
    for k in range(12):
        for name, sig in (("ReduceMean", ("float32",)), ("Conv", ("float32",) * 3)):
            g = single_op_graph(name, sig, 13, k)
            if g is None:
                continue
            m = onnx.load_from_string(single_op_model(g, k))
            a = g.nodes[0].attrs
            if name == "ReduceMean" and a["keepdims"] == 1:
                assert _node_attr(m, "keepdims") == 1
                spelled += 1
            if name == "Conv" and a["group"] == 1:
                assert _node_attr(m, "group") == 1
                spelled += 1
    assert spelled >= 4


def test_ordinary_draws_carry_no_regime_marker():
    g = single_op_graph("Transpose", ("float32",), 21, 0)
    assert SPELL_DEFAULTS not in g.nodes[0].attrs


# -- degenerate-only specs: Concat of one input, Split into one output ---------------------

def _one_way(g) -> list:
    """The nodes of ``g`` that are a one-input Concat or a one-output Split."""
    return [n for n in g.nodes if (n.op == "Concat1" and len(n.inputs) == 1) or (n.op == "Split1" and len(n.outputs) == 1)]


def test_one_input_concat_and_one_output_split_come_only_in_the_degenerate_regime():
    """An aimed batch at Concat and Split draws them, in its degenerate cases only; an ordinary
    batch never does (its stream is pinned above)."""
    from dlgate.change.aim import resolve
    from dlgate.change.targets import Target

    aims, _ = resolve([Target("operator", "Concat", regimes=("degenerate",)), Target("operator", "Split")], "onnxruntime")
    gen = Generator(GenConfig(aims=tuple(aims), aim_share=1.0, min_nodes=1, max_nodes=6))
    seen = {"Concat1": 0, "Split1": 0}
    for i in range(40):
        g = gen.generate(_stream_seed(i))
        one = _one_way(g)
        for n in one:
            seen[n.op] += 1
        if one:
            assert g.aimed.get("degenerate") is True, f"case {i}: {[n.op for n in one]} outside the degenerate regime"
    assert seen["Concat1"] >= 2 and seen["Split1"] >= 1, seen
    plain = Generator(GenConfig(min_nodes=1, max_nodes=6))
    assert not any(_one_way(plain.generate(_stream_seed(i))) for i in range(40))


@pytest.mark.parametrize("name", ["Concat1", "Split1"])
def test_one_way_concat_and_split_are_valid_and_judged(name):
    """Drawn as named (the support probe does so), each is a valid model at every opset
    form of its lowering, and onnxruntime computes it as the reference does."""
    judged, forms = 0, set()
    for opset in (13, 17, 18, 21):
        for k in range(4):
            g = single_op_graph(name, ("float32",), opset, k)
            assert g is not None
            assert len(g.nodes[0].inputs) == 1 if name == "Concat1" else len(g.nodes[0].outputs) == 1
            raw = single_op_model(g, k)
            node = onnx.load_from_string(raw).graph.node[-1]
            forms.add((len(node.input), tuple(sorted(a.name for a in node.attribute if a.name != "axis"))))
            judged += _judge(g, raw, k)
    assert judged >= 12
    if name == "Split1":  # sizes as an input, as num_outputs (>= 18), and left implied (< 18)
        assert {(2, ()), (1, ("num_outputs",)), (1, ())} <= forms, forms
