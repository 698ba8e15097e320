"""Motifs on the stock parts (dlgate/ops/motif.py, ort_common.py, tvm_common.py): a motif
states its signature as an operator does (types with arity), takes its input types and its
input domain from the steps that read its inputs, and the knowledge a part or a spec already
holds (a quantizer's range, a domain's loss, float16 rounding) is read from there, never
restated beside it."""
from __future__ import annotations

import inspect
import random
import re

import numpy as np
import pytest
import torch

from dlgate import dtypes as dt
from dlgate.ops import registry
from dlgate.ops.base import OpSpec, TensorType, same_dtype_sigs
from dlgate.ops.core import Ctx
from dlgate.ops.motif import In, Motif, Out, Step, WholeMotif, activation, half, reread
from dlgate.ops.motifs.ort_common import FLOATS, OrtMotif, single_consumer
from dlgate.ops.motifs.tvm_common import TvmMotif

MOTIFS = {n: s for n, s in registry.all_specs().items() if isinstance(s, Motif)}


def _ctx(seed: int = 0) -> Ctx:
    return Ctx(random.Random(seed))


def test_a_motif_is_registered_under_its_class_name():
    assert len(MOTIFS) >= 80
    for name, spec in MOTIFS.items():
        assert name == type(spec).__name__


def test_types_with_arity_give_same_dtype_signatures_and_written_dtypes_stay():
    class Two(TvmMotif):
        arity = 2

    class Halves(Two):
        types = (dt.FLOAT16,)

    class Mixed(Two):
        dtypes = ((dt.BOOL, dt.FLOAT32),)

    class Three(Halves):
        arity = 3

    assert Two.dtypes == same_dtype_sigs(dt.FLOATS, 2)
    assert Halves.dtypes == ((dt.FLOAT16, dt.FLOAT16),)
    assert Mixed.dtypes == ((dt.BOOL, dt.FLOAT32),)
    assert Three.dtypes == ((dt.FLOAT16,) * 3,)
    assert Two.optimizer == "tvm" and Two.name == "Two"


def test_no_motif_writes_same_dtype_signatures_by_hand():
    """Signatures with one dtype throughout are stated as ``types``; a motif writes
    ``dtypes`` only for mixed ones (a bool condition, integer weights of another type)."""
    written = 0
    for name, spec in MOTIFS.items():
        for cls in type(spec).__mro__:
            if not cls.__module__.startswith("dlgate.ops.motifs.") or "dtypes" not in cls.__dict__:
                continue
            if re.search(r"^    dtypes\s*=", inspect.getsource(cls), re.M):
                written += 1
                assert any(len(set(s)) > 1 for s in cls.dtypes), (name, cls.__name__, cls.dtypes)
    assert written >= 3  # NotWhereFusion, WhereDummyDq, NhwcQLinearConv


def test_an_onnxruntime_motif_expects_its_transformer_unless_it_says_otherwise():
    class Plain(OrtMotif):
        rewrite = "SomeFusion"

    class Told(OrtMotif):
        rewrite = "OtherFusion"
        expects = ("removed:Add",)

    class Inherits(Told):
        pass

    assert Plain.expects == ("transformer:SomeFusion",)
    assert Told.expects == Inherits.expects == ("removed:Add",)
    assert Plain.dtypes == same_dtype_sigs(FLOATS, 1) and Plain.optimizer == "onnxruntime"
    assert MOTIFS["ConstantFolding"].expects == ("transformer:ConstantFolding",)


def test_an_input_takes_the_type_the_step_reading_it_asks_for():
    conv = registry.get("Conv")
    x = TensorType(dt.FLOAT32, (1, 4, 8, 8))
    a = conv.sample(_ctx(1), [x])

    class ConvThenRelu(TvmMotif):
        arity = 3

        def steps(self, a):
            return [Step("Conv", a["conv"], (In(0), In(1), In(2))), Step("Relu", {}, (Out(0),))]

    class LateInput(TvmMotif):
        arity = 2

        def steps(self, a):
            return [Step("Relu", {}, (In(0),)), Step("Add", {}, (Out(0), In(1)))]

    m = {"conv": a, "violate": None}
    for i in (1, 2):
        want = conv.input_type(_ctx(7), i, [x], a, dt.FLOAT32)
        assert ConvThenRelu().input_type(_ctx(7), i, [x], m, dt.FLOAT32) == want
    # read first by a step whose own first input is not the motif's: input 0's shape
    assert LateInput().input_type(_ctx(7), 1, [x], {"violate": None}, dt.FLOAT64) == x.with_dtype(dt.FLOAT64)
    with pytest.raises(ValueError):
        LateInput().input_type(_ctx(7), 2, [x], {"violate": None}, dt.FLOAT32)
    # a whole motif has no steps: its inputs take the core's default
    assert WholeMotif.input_type is OpSpec.input_type


def test_reread_reads_a_step_again_directly_or_through_a_reduction():
    s = [Step("Relu", {}, (In(0),)), Step("Neg", {}, (Out(0),))]
    assert reread(s, 0, 1) == [Step("Add", {}, (Out(1), Out(0)))]
    assert reread(s, 0, 1, op="Mul") == [Step("Mul", {}, (Out(1), Out(0)))]
    assert reread(s, 0, 1, "ReduceMax", {"keepdims": 0}) == [
        Step("ReduceMax", {"keepdims": 0}, (Out(0),)), Step("Add", {}, (Out(1), Out(2)))]
    assert single_consumer({"violate": None}, s, 0, 1) == s
    assert single_consumer({"violate": "single_consumer"}, s, 0, 1) == s + reread(s, 0, 1)


def test_half_rounds_to_a_value_every_float_type_holds():
    for v in (0.1, -3.3, 2.0, 1e-3):
        h = half(v)
        assert float(np.float16(h)) == h == float(np.float32(h))
        assert abs(h - v) <= abs(v) * 2.0**-10


@pytest.mark.parametrize("half_bounds", [True, False])
def test_a_clip_activation_gets_both_bounds_in_order(half_bounds):
    x = TensorType(dt.FLOAT32, (2, 3))
    seen = 0
    for seed in range(40):
        op, a = activation(_ctx(seed), x, ("Relu", "Clip"), half_bounds)
        if op != "Clip":
            continue
        seen += 1
        assert a["min"] <= a["max"]
        if half_bounds:
            assert half(a["min"]) == a["min"] and half(a["max"]) == a["max"]
    assert seen > 5


def test_embed_layer_norm_attention_steers_float_ids_into_the_table():
    spec = MOTIFS["EmbedLayerNormAttention"]
    a = {"vocab": 9, "float": True}
    assert spec.input_domain(a, 0) == (-8.0, 8.0)
    lo, hi = spec.input_range(a, 0)
    assert -8.0 < lo < hi < 8.0
    inside = torch.tensor([-8.0, 0.0, 7.9, 8.0])
    outside = torch.tensor([0.0, -8.5, 3.0])
    assert all(float(l) <= 0 for l in spec.losses(a, inside))
    assert any(float(l) > 0 for l in spec.losses(a, outside))
    assert spec.losses({"vocab": 9, "float": False}, torch.tensor([100])) == []
    assert spec.input_domain({"vocab": 9, "float": False}, 0) is None


def test_clip_quant_fusion_keeps_or_cuts_the_quantizers_range():
    spec = MOTIFS["ClipQuantFusion"]
    x = TensorType(dt.FLOAT32, (4,))
    for seed in range(30):
        for violate in (None, "wide_bounds"):
            a = spec.draw(_ctx(seed), [x], violate)
            q, clip = a["q"], a["clip"]
            lo, hi = (np.array([-128, 127]) if q["to"] == dt.INT8 else np.array([0, 255])) - q["zp"]
            qlo, qhi = lo * q["scale"], hi * q["scale"]
            if violate is None:
                assert clip["min"] <= qlo and clip["max"] >= qhi
            else:
                assert clip["min"] > qlo and clip["max"] == qhi


def test_slice_concat_second_input_fits_the_concat_whatever_the_slice_keeps():
    """TvmSliceConcat's input 1 is the Concat's other operand: the slice's shape with its own
    size on the concat axis, so the Concat's shape rule holds even where the slice shrinks
    another axis (input 0's shape, the default, fails it there)."""
    spec = registry.get("TvmSliceConcat")
    concat = registry.get("Concat")
    shrunk = 0
    for k in range(60):
        ctx = _ctx(k)
        x = TensorType("float32", ctx.shape(3))
        a = spec.draw(ctx, [x], None)
        sl = registry.get("Slice").infer([x], a["slice"])[0]
        other = spec.input_type(ctx, 1, [x], a, "float32")
        assert list(other.shape) == a["other"] and other.dtype == "float32"
        assert all(concat.requires([sl, other], a["concat"]))
        shrunk += any(p != q for j, (p, q) in enumerate(zip(sl.shape, x.shape)) if j != a["concat"]["axis"] % 3)
    assert shrunk >= 10  # the slices that input 0's shape would not fit were drawn
