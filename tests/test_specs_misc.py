"""Regimes added to existing families: integer Div and Mod by constant divisors (DivInt,
ModInt), float Mod with fmod=0 (opset 28), inference-mode Dropout, Constant in each of its
attribute spellings, and Det; each through the spec's lowering against onnx.reference and
onnxruntime."""
from __future__ import annotations

import functools
import os
import random

import numpy as np
import pytest
import torch

from dlgate.ops import schema
from dlgate.ops.base import Ctx, TensorType, all_true
from dlgate.ops.registry import get
from tests.helpers import check_against_reference, draw_feed

INTS = ("uint8", "int8", "int32", "int64")


def _check(name, a, ins, opset, feeds=None, seed=0, ort=True):
    """One-node model from the spec's lowering: onnx.reference (unless the spec reports its
    defect), onnxruntime (where it implements the operator) and the spec's torch agree."""
    draw = functools.partial(draw_feed, ints=(-120, 121), uint8=(0, 121), bools=False)
    r = check_against_reference(name, a, ins, opset, seed=seed, feeds=feeds, draw=draw, coerce_feeds=True,
                                runtime=ort)
    return r.ours, r.model


# -- integer Div and Mod -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", INTS)
def test_div_int_truncates_toward_zero(dtype):
    if dtype == "uint8":
        x, d, want = [7, 200, 0, 255], [2, 7, 3, 16], [3, 28, 0, 15]
    else:
        x, d, want = [7, -7, 7, -7], [2, 2, -2, -3], [3, -3, -3, 2]
    _check("DivInt", {"dtype": dtype, "divisor": d}, [(dtype, (4,))], 14, feeds=[x])
    y, _ = _check("DivInt", {"dtype": dtype, "divisor": d}, [(dtype, (4,))], 14, feeds=[x])
    assert y[0].tolist() == want


@pytest.mark.parametrize("fmod,want", [(0, [1, 2, -2, -1, 0]), (1, [1, -1, 1, -1, 0])])
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_mod_int_signs(fmod, want, dtype):
    """fmod=0 takes the divisor's sign (Python %), fmod=1 the dividend's (C %)."""
    x, d = [7, -7, 7, -7, -6], [3, 3, -3, -3, 3]
    opset = 28 if fmod else 13
    y, _ = _check("ModInt", {"dtype": dtype, "divisor": d, "fmod": fmod}, [(dtype, (5,))], opset, feeds=[x])
    assert y[0].tolist() == want


@pytest.mark.parametrize("name", ["DivInt", "ModInt"])
@pytest.mark.parametrize("opset", [13, 14, 18, 28])
def test_int_division_sampled(name, opset):
    spec = get(name)
    done = 0
    for i in range(40):
        ctx = Ctx(random.Random(i), opset=opset)
        t = ctx.choice(INTS)
        if not schema.allowed(spec.onnx_op, (t,), opset):
            assert name == "DivInt" and opset < 14 and t in ("int8", "uint8")  # Div-13: no 8-bit types
            continue
        x = TensorType(t, ctx.shape(ctx.rng.randint(0, 4), 64))
        a = spec.sample(ctx, [x])
        d = np.asarray(a["divisor"])
        assert (d != 0).all() and (d != -1).all()
        if name == "ModInt":
            assert a["fmod"] in ((0, 1) if opset >= 28 else (0,))
        _check(name, a, [(t, x.shape)], opset, seed=i)
        done += 1
    assert done >= 15


def test_int_division_value_ranges():
    div, mod = get("DivInt"), get("ModInt")
    t = [TensorType("int32", (3,))]
    assert div.value_range({"divisor": [2, -3]}, [(-7.0, 9.0)], t) == [(-3.0, 4.0)]
    assert mod.value_range({"divisor": [5, -3], "fmod": 0}, [(-7.0, 9.0)], t) == [(-2.0, 4.0)]
    assert mod.value_range({"divisor": [5, -3], "fmod": 1}, [(-7.0, 2.0)], t) == [(-4.0, 2.0)]


# -- float Mod ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_float_mod_fmod(fmod, dtype):
    x = np.array([5.5, -5.5, 5.5, -5.5, 0.25, -3.0], dtype=dtype)
    y = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 1.5], dtype=dtype)
    out, _ = _check("Mod", {"fmod": fmod}, [(dtype, (6,)), (dtype, (6,))], 28, feeds=[x, y])
    want = np.fmod(x, y) if fmod else np.mod(x, y)
    np.testing.assert_allclose(out[0], want)


def test_float_mod_fmod0_only_from_opset_28():
    spec = get("Mod")
    x = [TensorType("float32", (2, 3))]
    assert {spec.sample(Ctx(random.Random(i), opset=21), x).get("fmod", 1) for i in range(30)} == {1}
    assert {spec.sample(Ctx(random.Random(i), opset=28), x)["fmod"] for i in range(30)} == {0, 1}
    assert spec.torch({}, torch.tensor([-5.5]), torch.tensor([2.0])).item() == -1.5  # no attribute: fmod 1


# -- Dropout -----------------------------------------------------------------------------------
@pytest.mark.parametrize("ratio", [None, 0.0, 0.3])
@pytest.mark.parametrize("training_mode", [None, False])
@pytest.mark.parametrize("mask", [False, True])
@pytest.mark.parametrize("opset", [13, 22])
def test_dropout_inference(ratio, training_mode, mask, opset):
    a = {"ratio": ratio, "ratio_dtype": "float64" if opset == 22 else "float16", "training_mode": training_mode,
         "mask": mask, "seed": 7 if mask else None}
    out, model = _check("Dropout", a, [("float32", (2, 3))], opset)
    node = model.graph.node[-1]
    assert node.op_type == "Dropout" and len(node.output) == 1 + mask
    if ratio is None and training_mode is not None:
        assert node.input[1] == ""  # an absent ratio before a present training_mode
    if mask:
        assert out[1].dtype == np.bool_ and out[1].all()


# -- Constant ----------------------------------------------------------------------------------
@pytest.mark.parametrize("spelling,dtype,value", [
    ("value", "float16", [[0.5], [-1.0]]), ("value", "int8", 3), ("value", "uint8", [1, 2, 3]),
    ("value_float", "float32", 1.5), ("value_floats", "float32", [0.5, -2.0, 1.0]),
    ("value_floats", "float32", [4.0]), ("value_int", "int64", -3), ("value_ints", "int64", [1, 2, 3]),
])
@pytest.mark.parametrize("op,first", [("Add", False), ("Sub", True), ("Mul", False)])
def test_constant_spellings(spelling, dtype, value, op, first):
    a = {"spelling": spelling, "dtype": dtype, "value": value, "op": op, "first": first}
    _, model = _check("Constant", a, [(dtype, (2, 3))], 18)
    const = model.graph.node[0]
    assert const.op_type == "Constant" and [x.name for x in const.attribute] == [spelling]
    assert model.graph.node[1].op_type == op


def test_constant_sampled_spellings():
    spec = get("Constant")
    seen = set()
    for i in range(120):
        ctx = Ctx(random.Random(i), opset=17)
        t = ctx.choice(("float32", "int64", "float64", "int8"))
        x = TensorType(t, ctx.shape(ctx.rng.randint(0, 3), 32))
        a = spec.sample(ctx, [x])
        if not all_true(spec.requires([x], a)):
            assert x.rank == 0 and a["spelling"] in ("value_floats", "value_ints")
            continue
        seen.add(a["spelling"])
        _check("Constant", a, [(t, x.shape)], 17, seed=i)
    assert seen == {"value", "value_float", "value_floats", "value_int", "value_ints"}


# -- Det ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4), (2, 1, 2, 2)])
def test_det(dtype, shape):
    if dtype == "float16" and shape[-1] > 3:
        assert not all_true(get("Det").requires([TensorType(dtype, shape)], {}))
        return
    # onnxruntime implements Det for float32 and float16 only
    _check("Det", {}, [(dtype, shape)], 13, ort=dtype != "float64")


def test_det_values_and_bounds():
    x = np.array([[[2.0, 1.0], [1.0, 3.0]], [[1.0, 2.0], [2.0, 4.0]]], dtype=np.float32)  # 5, singular 0
    out, _ = _check("Det", {}, [("float32", (2, 2, 2))], 22, feeds=[x])
    np.testing.assert_allclose(out[0], [5.0, 0.0], atol=1e-6)
    spec = get("Det")
    (lo, hi), = spec.value_range({}, [(-2.0, 1.0)], [TensorType("float32", (3, 3))])
    assert hi == pytest.approx((2 * 3 ** 0.5) ** 3) and lo == -hi  # Hadamard's bound


def test_det_reference_defect_float16():
    spec = get("Det")
    assert spec.reference_defect({}, [TensorType("float16", (2, 2))], 13)
    assert spec.reference_defect({}, [TensorType("float32", (2, 2))], 13) is None


# -- generated models --------------------------------------------------------------------------
def test_generated_models_run_on_onnxruntime(tmp_path):
    """Mixed models with the new regimes go through the input search and pass onnxruntime."""
    from dlgate.backends.base import BackendSpec
    from dlgate.case import make_case
    from dlgate.check import CheckConfig, check, load_case, prepare
    from dlgate.exec.worker import Pool
    from dlgate.graph.generator import GenConfig, Generator
    from dlgate.oracle import verdict as V

    batches = [(("DivInt", "ModInt", "Constant"), ("int32", "int64", "int8"), 28),
               (("Mod", "Dropout", "Constant", "Det"), ("float32",), 28)]
    for k, (ops, dts, opset) in enumerate(batches):
        gen = Generator(GenConfig(ops=ops, dtypes=dts, max_nodes=4, opset=opset))
        for i in range(10):  # enough that each operator is drawn (Det is first drawn at 9)
            make_case(gen, "e2e", f"misc{k}", i).write(str(tmp_path))
    cases = [prepare(*load_case(os.path.join(tmp_path, d))) for d in sorted(os.listdir(tmp_path))]
    seen = set()
    with Pool(timeout_s=120) as pool:
        for case in cases:
            assert case.search["valid"], case.search
            seen.update(case.graph.op_names())
            (v,) = check(pool, case, CheckConfig([BackendSpec("onnxruntime")]))["verdicts"]
            assert v["verdict"] == V.PASS, (case.id, v)
    assert {"DivInt", "ModInt", "Constant", "Mod", "Dropout", "Det"} <= seen
