"""The transformer family (dlgate/ops/transformer/, Gelu, Shrink, LayerNormalization):
every regime against ONNX's checker and shape inference, onnx.reference (where it is not
known to be wrong) and onnxruntime; the exporter idioms against the fused operators they
spell; and an injected TVM miscompilation caught end to end."""
from __future__ import annotations

import functools
import math
import os
import random

import numpy as np
import onnx
import pytest
import torch
from onnx.reference import ReferenceEvaluator

from dlgate import dtypes as dt
from dlgate.graph.ir import random_values
from dlgate.materialize.onnx_model import Builder
from dlgate.materialize.torch_model import GraphModule
from dlgate.ops.base import Ctx, TensorType, all_true, f32
from dlgate.ops.registry import get
from dlgate.ops.transformer._shared import swish
from dlgate.ops.transformer.attention import MASK_FORMS, attention, sqrt_scale
from dlgate.ops.transformer.rms_normalization import SCALE_FORMS, rms_norm, _scale_shape
from dlgate.ops.transformer.rotary_embedding import rope_cache, rotary
from dlgate.probe.single import single_op_graph, single_op_model
from tests.helpers import check_against_reference, draw_feed, finite, mismatch, ort_run, ort_session

FAMILY = [n for n in ("Attention", "AttentionMask", "AttentionBoolMask", "AttentionPast", "AttentionPastMask",
                      "AttentionQK", "RMSNormalization", "RotaryEmbedding", "RotaryEmbeddingConstCache", "Swish",
                      "SwiGLU", "AttentionIdiom", "AttentionIdiomAddMask", "AttentionIdiomWhereMask",
                      "AttentionIdiomPast", "RMSNormIdiom", "GeluErfIdiom", "GeluTanhIdiom", "SiluIdiom",
                      "RotaryIdiom", "MatMulTransposed", "LinearTransposed", "LinearAttention",
                      "LinearAttentionGated", "LinearAttentionDelta", "LinearAttentionGatedDelta")]


_feed = functools.partial(draw_feed, ints=(-6, 7), uint8=(0, 7))


def _check(name, a, ins, opset, seed=0, feeds=None, use_ort=True):
    """One node from the spec's own lowering: checker, strict shape inference, and the
    spec's torch against onnx.reference (unless it is known wrong) and onnxruntime.
    Returns (ours, reference or None, onnxruntime or None)."""
    r = check_against_reference(name, a, ins, opset, seed=seed, feeds=feeds, ir_version="min", draw=_feed,
                                shape_inference="compare", runtime=use_ort, declines=("NOT_IMPLEMENTED",))
    return r.ours, r.ref, r.got


def _att(rank=4, heads=4, kv_heads=2, kv_len=5, v_head=6, causal=0, scale=None, softcap=0.0, sp=None, past=0,
         **kw):
    return dict({"rank3": rank == 3, "heads": heads, "kv_heads": kv_heads, "kv_len": kv_len, "v_head": v_head,
                 "is_causal": causal, "scale": scale, "softcap": softcap, "softmax_precision": sp,
                 "past_len": past}, **kw)


def _att_ins(name, a, b=2, sq=3, head=8, dtype="float32"):
    spec = get(name)
    q = (b, sq, a["heads"] * head) if a["rank3"] else (b, a["heads"], sq, head)
    sh = spec._shapes(TensorType(dtype, q), a)
    return [(dt.BOOL if k == 3 and spec.mask == "bool" else dtype, s) for k, s in enumerate(sh)]


# -- Attention ------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [
    {}, {"kv_heads": 4}, {"kv_heads": 1}, {"rank": 3}, {"rank": 3, "kv_heads": 1},
    {"causal": 1}, {"causal": 1, "kv_len": 3}, {"causal": 1, "kv_len": 2},  # top-left when q is longer
    {"scale": 0.3}, {"softcap": 2.0}, {"softcap": 50.0, "scale": 1.0},
    {"sp": 1}, {"sp": 11},
])
@pytest.mark.parametrize("opset", [23, 24])
def test_attention_regimes(kw, opset):
    a = _att(**kw)
    _check("Attention", a, _att_ins("Attention", a), opset)


@pytest.mark.parametrize("dtype,sp", [("float16", None), ("float16", 1), ("float16", 10), ("float64", None),
                                      ("float64", 11)])
def test_attention_float16_and_float64(dtype, sp):
    a = _att(causal=1, sp=sp)
    _check("Attention", a, _att_ins("Attention", a, dtype=dtype), 23)


def test_attention_scale_is_computed_in_float32_and_cast():
    # Cast<to=T1>(Sqrt(1 / Sqrt(float(head)))), every step in float32
    f = np.float32
    want = float(np.sqrt(f(1) / np.sqrt(f(8))))
    assert sqrt_scale(None, 8, torch.float64) == want != math.sqrt(1 / math.sqrt(8))
    assert sqrt_scale(0.3, 8, torch.float16) == float(np.float16(np.sqrt(f(0.3))))
    # float64 Attention: onnxruntime scales like the function body (onnx.reference does not)
    a = _att()
    assert get("Attention").reference_defect(a, [TensorType("float64", (2, 4, 3, 8))], 23)
    _check("Attention", a, _att_ins("Attention", a, dtype="float64"), 23)


@pytest.mark.parametrize("form", MASK_FORMS)
@pytest.mark.parametrize("name", ["AttentionMask", "AttentionBoolMask"])
def test_attention_mask_forms(name, form):
    a = _att(mask_form=form, causal=int(form in ("st", "bhst")))
    _check(name, a, _att_ins(name, a), 23)


def test_attention_fully_masked_row_is_zero():
    a = _att(mask_form="st", kv_heads=4)
    ins = _att_ins("AttentionBoolMask", a)
    rng = np.random.default_rng(0)
    feeds = [_feed(rng, TensorType(d, s)) for d, s in ins]
    feeds[3] = np.ones(feeds[3].shape, bool)
    feeds[3][1] = False  # query 1 sees no key
    ours, ref, got = _check("AttentionBoolMask", a, ins, 23, feeds=feeds)
    assert np.all(ours[0][:, :, 1] == 0) and np.all(np.isfinite(ours[0]))
    assert ref is not None and got is not None


@pytest.mark.parametrize("kw", [{}, {"causal": 1, "kv_len": 3}, {"causal": 1, "kv_len": 1, "rank": 3},
                                {"kv_heads": 1, "causal": 1, "kv_len": 3}])
@pytest.mark.parametrize("opset", [23, 24])
def test_attention_past_cache(kw, opset):
    a = _att(past=4, **kw)
    ours, _, _ = _check("AttentionPast", a, _att_ins("AttentionPast", a), opset)
    assert ours[1].shape[2] == 4 + a["kv_len"]  # the present cache: past, then new
    a = _att(past=2, causal=1, kv_len=3, mask_form="b1st")
    _check("AttentionPastMask", a, _att_ins("AttentionPastMask", a), opset)


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("softcap", [0.0, 3.0])
def test_attention_qk_matmul_output_modes(mode, softcap):
    a = _att(qk_mode=mode, softcap=softcap, causal=int(mode != 2))
    ours, ref, got = _check("AttentionQK", a, _att_ins("AttentionQK", a), 23)
    assert got is not None
    if mode == 0 and softcap:
        assert ref is None  # onnx.reference returns the softcapped scores here
        assert np.abs(ours[1]).max() > softcap  # the raw product, not capped
    if mode == 3:
        assert np.allclose(ours[1].sum(-1), 1, atol=1e-5)


def test_attention_one_query_causal_past_step_has_one_new_key():
    spec = get("AttentionPast")
    for i in range(40):
        ctx = Ctx(random.Random(i), opset=23)
        a = spec.sample(ctx, [TensorType("float32", (1, 2, 1, 4))])
        if a["is_causal"]:
            assert a["kv_len"] == 1


# -- RMSNormalization ----------------------------------------------------------------------
@pytest.mark.parametrize("axis", [-1, -2, 0, 1, 2, -3])
@pytest.mark.parametrize("form", ["norm", "last", "one", "wide", "ones"])
def test_rms_norm_axes_and_scale_broadcast(axis, form):
    x = (2, 3, 4)
    a = {"axis": axis, "epsilon": f32(1e-5), "stash_type": 1, "scale_form": form}
    s = _scale_shape(form, x, axis)
    if not all_true(get("RMSNormalization").requires([TensorType("float32", x), TensorType("float32", s)], a)):
        pytest.skip("scale shape does not broadcast for this axis")
    _check("RMSNormalization", a, [("float32", x), ("float32", s)], 23)


@pytest.mark.parametrize("dtype,stash", [("float16", 1), ("float16", 10), ("float32", 11), ("float64", 1),
                                         ("float64", 11), ("float32", 1)])
def test_rms_norm_stash_types(dtype, stash):
    a = {"axis": -1, "epsilon": f32(1e-3), "stash_type": stash, "scale_form": "norm"}
    _, ref, got = _check("RMSNormalization", a, [(dtype, (3, 5)), (dtype, (5,))], 23)
    assert (ref is None) == (stash != 1 or dtype == "float64") and got is not None


def test_rms_norm_value_range_holds():
    spec = get("RMSNormalization")
    a = {"axis": -2, "epsilon": 1e-6, "stash_type": 1, "scale_form": "norm"}
    x = torch.zeros(2, 3, 4)
    x[:, 0, 0] = 5.0  # all but one value 0: |x / rms| = sqrt(n)
    y = spec.torch(a, x, torch.full((3, 4), 2.0))
    lo, hi = spec.value_range(a, [(-5.0, 5.0), (2.0, 2.0)], [TensorType("float32", (2, 3, 4))])[0]
    assert lo <= float(y.min()) and float(y.max()) <= hi and float(y.max()) > 0.99 * 2 * math.sqrt(12)


# -- RotaryEmbedding -----------------------------------------------------------------------
@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rot", [0, 4])
@pytest.mark.parametrize("positions", [None, 9])
@pytest.mark.parametrize("rank", [3, 4])
def test_rotary_embedding(interleaved, rot, positions, rank):
    b, s, h, head = 2, 5, 3, 8
    x = (b, s, h * head) if rank == 3 else (b, h, s, head)
    ids = None if positions is None else np.random.default_rng(1).integers(0, positions, (b, s)).tolist()
    a = {"num_heads": h if rank == 3 else None, "rotary_dim": rot, "interleaved": interleaved,
         "positions": positions, "position_ids": ids}
    half = (rot or head) // 2
    cache = (positions, half) if positions else (b, s, half)
    for dtype in ("float32", "float16"):
        _check("RotaryEmbedding", a, [(dtype, x), (dtype, cache), (dtype, cache)], 23)


def test_rotary_embedding_constant_caches():
    spec = get("RotaryEmbeddingConstCache")
    done = 0
    for i in range(30):
        ctx = Ctx(random.Random(i), opset=23)
        x = TensorType(ctx.choice(("float32", "float16")), ctx.choice(((2, 3, 5, 8), (1, 4, 24), (2, 2, 6, 4))))
        a = spec.sample(ctx, [x])
        if not all_true(spec.requires([x], a)):
            continue
        ours, _, _ = _check("RotaryEmbeddingConstCache", a, [(x.dtype, x.shape)], 23, seed=i)
        done += 1
    assert done >= 15
    cos, sin = rope_cache(4, 2, 10000.0, "float32")
    assert np.allclose(cos ** 2 + sin ** 2, 1, atol=1e-5) and cos[0].tolist() == [1.0, 1.0]


# -- Swish, SwiGLU, Shrink, Gelu, LayerNormalization -----------------------------------------
@pytest.mark.parametrize("alpha", [1.0, 1.702, 0.25])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_swish_and_swiglu(alpha, dtype):
    a = {"alpha": f32(alpha if dtype != "float16" else float(np.float16(alpha)))}
    _check("Swish", a, [(dtype, (3, 7))], 24)
    _check("SwiGLU", a, [(dtype, (3, 7)), (dtype, (3, 7))], 28)  # onnxruntime: NOT_IMPLEMENTED
    r = get("Swish").value_range(a, [(-10.0, 10.0)], [TensorType(dtype, (3,))])[0]
    x = torch.linspace(-10, 10, 20001, dtype=torch.float64)
    y = swish(x, a["alpha"])
    assert r[0] <= float(y.min()) and float(y.max()) <= r[1]


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int8", "uint8", "int32", "int64"])
def test_shrink(dtype):
    spec = get("Shrink")
    for i in range(12):
        ctx = Ctx(random.Random(i), opset=13)
        a = spec.sample(ctx, [TensorType(dtype, (4, 5))])
        assert a["lambd"] >= 0
        if dt.is_int(dtype):
            assert a["bias"] == int(a["bias"])
            if dtype == "uint8":
                assert a["bias"] <= math.floor(a["lambd"]) + 1
        _check("Shrink", a, [(dtype, (4, 5))], 13, seed=i)
    assert get("Shrink").undefined({"lambd": 0.5, "bias": -2.0}, [torch.tensor([127], dtype=torch.int8)],
                                    [TensorType("int8", (1,))])
    # beyond 2**24 x - bias has no defined precision: the most negative int64 too (its abs wraps)
    big = {"lambd": 1.5, "bias": 1.0}
    assert get("Shrink").undefined(big, [torch.tensor([-2**63, 3])], [TensorType("int64", (2,))])
    assert get("Shrink").undefined(big, [torch.tensor([-2**24 - 1, 3])], [TensorType("int64", (2,))])
    assert get("Shrink").undefined(big, [torch.tensor([-2**24, 2**24])], [TensorType("int64", (2,))]) is None


def test_gelu_draws_both_approximations_and_layer_norm_its_regimes():
    gelu, ln = get("Gelu"), get("LayerNormalization")
    seen, axes, spelled = set(), set(), set()
    for i in range(60):
        ctx = Ctx(random.Random(i), opset=20)
        seen.add(gelu.sample(ctx, [TensorType("float32", (3,))])["approximate"])
        a = ln.sample(ctx, [TensorType("float32", (2, 3, 4))])
        axes.add(a["axis"])
        b = Builder(17, random.Random(i))
        spelled.add("stash_type" in {k for k, v in ln.onnx_attrs(a, b).items() if v is not None})
        assert a["stash_type"] == 1
    assert seen == {"none", "tanh"} and spelled == {True, False}
    assert {0, 1, 2} <= {x % 3 for x in axes} and any(x < 0 for x in axes)
    for axis in (0, -1, 1):
        _check("LayerNormalization", {"epsilon": 1e-5, "axis": axis, "stash_type": 1},
               [("float32", (2, 3, 4)), ("float32", (2, 3, 4)[axis:]), ("float32", (2, 3, 4)[axis:])], 17)


# -- the idioms spell the fused operators ----------------------------------------------------
def _run_idiom(name, a, xs):
    with torch.no_grad():
        return get(name).torch(a, *xs)


def test_gelu_and_silu_idioms_match_the_operators():
    x = torch.linspace(-6, 6, 1001, dtype=torch.float64)
    erf = _run_idiom("GeluErfIdiom", {"dtype": "float64"}, [x])
    assert torch.allclose(erf, get("Gelu").torch({"approximate": "none"}, x), atol=1e-14)
    for cube in ("mul", "pow"):
        th = _run_idiom("GeluTanhIdiom", {"dtype": "float64", "cube": cube}, [x])
        assert torch.allclose(th, get("Gelu").torch({"approximate": "tanh"}, x), atol=1e-14)
    silu = _run_idiom("SiluIdiom", {"dtype": "float64"}, [x])
    assert torch.allclose(silu, swish(x, 1.0), atol=1e-14)
    assert float(silu.min()) >= get("SiluIdiom").valley[2]


@pytest.mark.parametrize("square", ["pow", "mul"])
@pytest.mark.parametrize("inv", ["recip", "div1", "div"])
def test_rms_norm_idiom_matches_rms_normalization(square, inv):
    x, w = torch.randn(3, 4, 6, dtype=torch.float64), torch.randn(4, 6, dtype=torch.float64)
    a = {"axes": 2, "square": square, "inv": inv, "cast": False, "epsilon": f32(1e-5), "dtype": "float64"}
    want = rms_norm(x, w, -2, f32(1e-5), 11)
    assert torch.allclose(_run_idiom("RMSNormIdiom", a, [x, w]), want, atol=1e-12)
    for opset in (17, 18):  # ReduceMean's axes: an attribute, then an input
        ins = [("float16", (3, 4, 6)), ("float16", (4, 6))]
        _check("RMSNormIdiom", dict(a, dtype="float16", cast=True), ins, opset)
        _check("RMSNormIdiom", dict(a, dtype="float32"), [("float32", (3, 4, 6)), ("float32", (4, 6))], opset)


@pytest.mark.parametrize("form", ["div", "mul", "qk"])
def test_attention_idiom_matches_attention(form):
    q, k, v = (torch.randn(2, 3, s, d, dtype=torch.float64) for s, d in ((4, 8), (5, 8), (5, 6)))
    spec = get("AttentionIdiom")
    scale = 1 / math.sqrt(8) if form == "div" else 0.3
    a = {"kv_len": 5, "past_len": 0, "v_head": 6, "scale_form": form, "scale": scale, "mask": "causal_add",
         "align": "top", "fill": "-inf", "dtype": "float64", "rank": 4, "sq": 4, "head": 8}
    want = attention(_att(heads=3, kv_heads=3, causal=1, scale=scale), q, k, v)[0]
    assert torch.allclose(spec.torch(a, q, k, v), want, atol=1e-6)  # the fused op scales in float32
    for mask in ("none", "causal_where", "causal_add"):
        for fill in ("-1e4", "f32min", "lowest"):
            b = dict(a, mask=mask, fill=fill, dtype="float32", align="bottom")
            _check("AttentionIdiom", b, [("float32", (2, 3, 4, 8)), ("float32", (2, 3, 5, 8)),
                                         ("float32", (2, 3, 5, 6))], 13)


def test_rotary_idiom_matches_rotary_embedding():
    x = torch.randn(2, 3, 5, 8, dtype=torch.float32)
    freqs = torch.randn(2, 5, 4)
    cos, sin = freqs.cos(), freqs.sin()
    fused = rotary({"num_heads": None, "rotary_dim": 0, "interleaved": 0}, x, cos, sin)
    a = {"rot": 8, "form": "half", "cache": "full", "head": 8, "shape": [2, 3, 5, 8]}
    dup = (torch.cat([cos, cos], -1).unsqueeze(1), torch.cat([sin, sin], -1).unsqueeze(1))
    assert torch.allclose(_run_idiom("RotaryIdiom", a, [x, *dup]), fused, atol=1e-6)
    fused = rotary({"num_heads": None, "rotary_dim": 0, "interleaved": 1}, x, cos, sin)
    dup = (cos.repeat_interleave(2, -1).unsqueeze(1), sin.repeat_interleave(2, -1).unsqueeze(1))
    assert torch.allclose(_run_idiom("RotaryIdiom", dict(a, form="interleaved"), [x, *dup]), fused, atol=1e-6)


# -- everything the specs draw, through the generator ------------------------------------------
OPSETS = {"Attention": (23, 24, 25), "RMSNormalization": (23, 28), "RotaryEmbedding": (23, 28), "Swish": (24,),
          "SwiGLU": (28,), "LinearAttention": (27, 28)}


@pytest.mark.parametrize("name", FAMILY + ["Shrink"])
def test_generated_instances(name):
    """Single-operator models the generator draws, at several opsets and every signature,
    against onnx.reference and onnxruntime."""
    spec = get(name)
    base = next((v for k, v in sorted(OPSETS.items(), key=lambda kv: -len(kv[0]))
                 if name.startswith(k) and "Idiom" not in name), None)
    opsets = base or (13, 18, 21)
    built = 0
    for opset in opsets:
        for sig in spec.dtypes:
            for k in range(3):
                g = single_op_graph(name, sig, opset, 100 + k)
                if g is None:
                    continue
                built += 1
                node = g.nodes[0]
                where = f"{name} {sig} opset {opset} attrs {node.attrs}"
                model = single_op_model(g, k)
                onnx.checker.check_model(onnx.load_from_string(model), full_check=True)
                feeds = [random_values(np.random.default_rng(k), g.tensors[t]) for t in g.inputs]
                with torch.no_grad():
                    ours = [o.numpy() for o in GraphModule(g)(*[torch.from_numpy(x.copy()) for x in feeds])]
                if not finite(*feeds, *ours):
                    continue
                if spec.reference_defect(node.attrs, g.input_types(), opset) is None:
                    ref = ReferenceEvaluator(onnx.load_from_string(model)).run(
                        None, {g.name(t): x for t, x in zip(g.inputs, feeds)})
                    for r, o in zip(ref, ours):
                        assert mismatch(np.asarray(r), o) is None, f"{where}: reference"
                try:
                    got = ort_run(model, g, feeds)
                except Exception as e:
                    assert "NOT_IMPLEMENTED" in str(e), f"{where}: {e}"
                    continue
                exact = None
                for i, (r, o) in enumerate(zip(got, ours)):
                    err = mismatch(r, o)
                    if err is not None and o.dtype == np.float16 and "Idiom" in name:
                        # an idiom is the exporters' chain of ONNX nodes, each rounding to
                        # float16 (ours does too, and agrees with onnx.reference above); a
                        # softmax can carry one node's last-place difference past the
                        # tolerance. Where onnxruntime first parts from onnx.reference, the
                        # node's exact value on the inputs both computed alike decides:
                        # onnx.reference's (ours) must be its rounding, onnxruntime's farther.
                        assert spec.reference_defect(node.attrs, g.input_types(), opset) is None, \
                            f"{where}: ours unchecked against onnx.reference"
                        op, e, mine, theirs = _parting(model, g, feeds)
                        assert mismatch(e.astype(np.float16), mine) is None, f"{where}: {op} against float64"
                        far = [float(np.abs(x.astype(np.float64) - e).max()) for x in (theirs, mine)]
                        assert far[0] > far[1], f"{where}: onnxruntime's {op} nearer its exact value than ours"
                        continue
                    if err is not None and o.dtype == np.float16:
                        # onnxruntime rounds some float16 intermediates the spec types as T (its
                        # Attention: the scores after the product, the softcap and the mask, and
                        # the probabilities); ours rounds once. The exact value decides: ours
                        # must be its rounding, and onnxruntime the one farther from it.
                        exact = exact if exact is not None else _exact(model, g, feeds)
                        e = np.asarray(exact[i], np.float64)
                        assert mismatch(e.astype(np.float16), o) is None, f"{where}: ours against float64"
                        far = [float(np.abs(x.astype(np.float64) - e).max()) for x in (r, o)]
                        assert far[0] > far[1], f"{where}: onnxruntime {err}, nearer the exact value than ours"
                        continue
                    assert err is None, f"{where}: onnxruntime"
    assert built >= len(opsets)


def _exact(model: bytes, g, feeds) -> list:
    """onnx.reference's outputs for the model with its float16 tensors widened to float64:
    the spec with float16's rounding taken out, which tells two disagreeing float16 results
    apart. A float16 constant (an attention scale, a causal mask) widens exactly, keeping the
    value the model holds; a node that makes float16 itself (a Cast to it, a float16
    attribute) would round again, so there must be none."""
    m = onnx.load_from_string(model)
    for node in m.graph.node:
        for at in node.attribute:
            assert not (at.name == "to" and at.i == onnx.TensorProto.FLOAT16), node
            assert not (at.HasField("t") and at.t.data_type == onnx.TensorProto.FLOAT16), node
    for k, init in enumerate(m.graph.initializer):
        if init.data_type == onnx.TensorProto.FLOAT16:
            wide = onnx.numpy_helper.from_array(onnx.numpy_helper.to_array(init).astype(np.float64), init.name)
            m.graph.initializer[k].CopyFrom(wide)
    for vi in [*m.graph.input, *m.graph.output, *m.graph.value_info]:
        if vi.type.tensor_type.elem_type == onnx.TensorProto.FLOAT16:
            vi.type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    wide = [x.astype(np.float64) if x.dtype == np.float16 else x for x in feeds]
    return ReferenceEvaluator(m).run(None, {g.name(t): x for t, x in zip(g.inputs, wide)})


def _parting(model: bytes, g, feeds) -> tuple:
    """The first node (in order) whose float16 result onnxruntime computes otherwise than
    onnx.reference, every intermediate exposed: (its type, its exact value in float64 from
    the inputs both computed alike, onnx.reference's result, onnxruntime's)."""
    from onnx import helper

    m = onnx.shape_inference.infer_shapes(onnx.load_from_string(model))
    named = {o.name for o in m.graph.output}
    m.graph.output.extend([vi for vi in m.graph.value_info if vi.name not in named])
    names = [o.name for o in m.graph.output]
    feed = {g.name(t): x for t, x in zip(g.inputs, feeds)}
    ref = dict(zip(names, ReferenceEvaluator(m).run(None, feed)))
    got = dict(zip(names, ort_session(m).run(None, feed)))
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in m.graph.initializer}
    for node in m.graph.node:
        parted = [y for y in node.output if ref[y].dtype == np.float16 and not np.array_equal(ref[y], got[y])]
        if not parted:
            continue
        y = parted[0]
        ins = {x: ref.get(x, feed.get(x, inits.get(x))) for x in node.input if x}
        wide = {x: v.astype(np.float64) if v.dtype == np.float16 else v for x, v in ins.items()}
        one = helper.make_graph(
            [node], "one", [helper.make_tensor_value_info(x, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                            for x, v in wide.items()],
            [helper.make_tensor_value_info(y, onnx.TensorProto.DOUBLE, None)])
        one_model = helper.make_model(one, opset_imports=m.opset_import)
        (e,) = ReferenceEvaluator(one_model).run([y], wide)
        return node.op_type, np.asarray(e, np.float64), ref[y], got[y]
    raise AssertionError("onnxruntime's intermediates all agree with onnx.reference's")


def _regimes(name, first, keys, n=80, opset=23):
    spec = get(name)
    seen = {k: set() for k in keys}
    for i in range(n):
        ctx = Ctx(random.Random(i), opset=opset)
        a = spec.sample(ctx, [first(ctx)])
        for k in keys:
            seen[k].add(a[k] if not isinstance(a[k], list) else a[k] is not None)
    return seen


def test_regimes_are_all_drawn():
    q4 = lambda ctx: TensorType("float32", (2, 4, 3, 8))  # noqa: E731
    s = _regimes("Attention", q4, ("is_causal", "softmax_precision", "kv_heads", "rank3"))
    assert s["is_causal"] == {0, 1} and s["softmax_precision"] == {None, 1, 11} and s["kv_heads"] == {1, 2, 4}
    s = _regimes("Attention", lambda ctx: TensorType("float32", (2, 3, 24)), ("rank3", "heads"))
    assert s["rank3"] == {True} and len(s["heads"]) >= 3
    assert _regimes("AttentionQK", q4, ("qk_mode",))["qk_mode"] == {0, 1, 2, 3}
    assert _regimes("AttentionMask", q4, ("mask_form",))["mask_form"] == set(MASK_FORMS)
    s = _regimes("RMSNormalization", lambda ctx: TensorType("float16", (2, 3, 4)),
                 ("stash_type", "scale_form", "axis"))
    assert s["stash_type"] == {1, 10} and s["scale_form"] == set(SCALE_FORMS) and min(s["axis"]) < 0
    s = _regimes("RotaryEmbedding", lambda ctx: TensorType("float32", (2, 3, 5, 8)),
                 ("interleaved", "rotary_dim", "position_ids"))
    assert s["interleaved"] == {0, 1} and 0 in s["rotary_dim"] and len(s["rotary_dim"]) > 1
    assert s["position_ids"] == {True, None} or len(s["position_ids"]) == 2
    s = _regimes("AttentionIdiom", q4, ("scale_form", "mask", "fill", "align"), opset=13)
    assert s["scale_form"] == {"div", "mul", "qk"} and s["mask"] == {"none", "causal_where", "causal_add"}
    assert s["fill"] == {"-1e4", "f32min", "lowest", "-inf"} and s["align"] == {"top", "bottom"}
    s = _regimes("RMSNormIdiom", lambda ctx: TensorType("float16", (2, 3, 4)), ("square", "inv", "cast", "axes"),
                 opset=13)
    assert s == {"square": {"pow", "mul"}, "inv": {"recip", "div1", "div"}, "cast": {True, False}, "axes": {1, 2}}


# -- an injected TVM miscompilation is caught end to end ----------------------------------------
def test_injected_softmax_miscompilation_is_caught_on_attention_idioms(tmp_path):
    pytest.importorskip("tvm")
    from dlgate.backends.base import BackendSpec
    from dlgate.case import make_case
    from dlgate.check import CheckConfig, check, load_case, prepare
    from dlgate.exec.worker import Pool
    from dlgate.graph.generator import GenConfig, Generator
    from dlgate.oracle import verdict as V

    ops = ("AttentionIdiom", "AttentionIdiomAddMask", "AttentionIdiomPast", "RMSNormIdiom", "Add", "Relu")
    gen = Generator(GenConfig(ops=ops, dtypes=("float32",), max_nodes=4, opset=18))
    for i in range(9):  # four of them hold an attention idiom
        make_case(gen, "e2e", "transformer", i).write(str(tmp_path))
    cases = [prepare(*load_case(os.path.join(tmp_path, d))) for d in sorted(os.listdir(tmp_path))]
    broken = BackendSpec("tvm", options=(("extra_passes", ("dlgate.backends.testing:softmax_offset",)),))
    cfg = CheckConfig([broken, BackendSpec("tvm")], crosscheck=False)
    hit = 0
    with Pool(timeout_s=120) as pool:
        for case in cases:
            bad, healthy = check(pool, case, cfg)["verdicts"]
            assert healthy["verdict"] == V.PASS, (case.id, healthy)
            if any(o.startswith("AttentionIdiom") for o in case.meta["operators"]):
                hit += 1
                assert bad["verdict"] == V.MISMATCH, (case.id, bad)
            else:
                assert bad["verdict"] == V.PASS, (case.id, bad)
    assert hit >= 3


# -- LinearAttention ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["LinearAttention", "LinearAttentionGated", "LinearAttentionDelta",
                                  "LinearAttentionGatedDelta"])
@pytest.mark.parametrize("heads,kv_heads", [(2, 2), (4, 2), (3, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_linear_attention_rules(name, heads, kv_heads, dtype):
    spec = get(name)
    for k, (df, bf, scale, chunk) in enumerate([("head", "head", None, None), ("key", "one", 0.5, 2)]):
        a = {"heads": heads, "kv_heads": kv_heads, "v_head": 3, "scale": scale, "chunk_size": chunk,
             "decay_form": df, "beta_form": bf}
        sh = spec._shapes((2, 5, heads * 4), a)
        ins = [(dtype, sh[key]) for key in spec.keys]
        rng = np.random.default_rng(k)
        feeds = []
        for key, (d, shape) in zip(spec.keys, ins):
            lo, hi = spec.input_range(a, spec.keys.index(key)) or (-1.0, 1.0)
            feeds.append(rng.uniform(lo, hi, size=shape).astype(d))
        with torch.no_grad():
            assert all(float(x) == 0 for x in spec.losses(a, *[torch.from_numpy(f) for f in feeds]))
        ours, ref, got = _check(name, a, ins, 27, seed=k, feeds=feeds)
        assert ref is not None and got is not None
