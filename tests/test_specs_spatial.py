"""Targeted checks of the spatial family (GridSample, AffineGrid, RoiAlign, MaxRoiPool,
DeformConv, MaxUnpool, Col2Im, CenterCropPad, NonMaxSuppression) and of 3-D convolution and
pooling: every mode and regime through each spec's own lowering, against onnx.reference
(where it is right) and onnxruntime; and a miscompilation injected into TVM's
grid_sample caught end to end."""
from __future__ import annotations

import itertools
import os
import random

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F
from onnx import helper
from onnx.reference import ReferenceEvaluator

from dlgate import dtypes as dt
from dlgate.materialize.onnx_model import Builder
from dlgate.ops.base import Ctx, Limits, TensorType, all_true
from dlgate.ops.registry import get
from tests.helpers import mismatch, one_node_model, ort_session


def _model(name, a, ins, opset, seed=0):
    m = one_node_model(name, a, ins, opset, seed=seed)
    return m.spec, m.outs, m.xs, m.model


def _feeds(spec, a, ins, seed):
    rng = np.random.default_rng(seed)
    out = []
    for i, t in enumerate(ins):
        if dt.is_int(t.dtype) or t.dtype == dt.BOOL:
            v = rng.integers(0, 2, size=t.shape) if t.dtype == dt.BOOL else rng.integers(-5, 6, size=t.shape)
        else:
            lo, hi = spec.input_range(a, i) or (-3.0, 3.0)
            v = rng.uniform(lo, hi, size=t.shape)
        out.append(np.asarray(v).astype(dt.NUMPY[t.dtype]))
    return out


def _ort(model, xs, feeds):
    try:
        sess = ort_session(model)
    except Exception as e:  # an operator/dtype onnxruntime does not implement
        assert "NOT_IMPLEMENTED" in str(e), e
        return None
    return sess.run(None, dict(zip(xs, feeds)))


def _check(name, a, ins, opset, seed=0, feeds=None, reference=True, skip_undefined=False):
    """Build the one-node model, run our torch, onnx.reference (unless the spec names a
    defect) and onnxruntime; everything must agree. Returns (ours, onnxruntime's or None),
    or None when ``skip_undefined`` and the spec calls the run undefined."""
    ins = [TensorType(d, tuple(s)) for d, s in ins]
    spec, outs, xs, model = _model(name, a, ins, opset, seed)
    feeds = _feeds(spec, a, ins, seed) if feeds is None else feeds
    with torch.no_grad():
        ours = spec.torch(a, *[torch.from_numpy(np.array(f)) for f in feeds])
    ours = [o.numpy() for o in (ours if isinstance(ours, (tuple, list)) else [ours])]
    for o, t in zip(ours, outs):
        assert (str(o.dtype), tuple(o.shape)) == (t.dtype, tuple(t.shape)), (name, a, o.shape, t)
    why = spec.undefined(a, [torch.from_numpy(np.array(f)) for f in feeds], outs)
    if why and skip_undefined:
        return None
    assert why is None, (name, a, why)
    if reference and spec.reference_defect(a, ins, opset) is None:
        ref = ReferenceEvaluator(model).run(None, dict(zip(xs, feeds)))
        for r, o in zip(ref, ours):
            err = mismatch(np.asarray(r), o)
            assert err is None, f"{name} {a}: onnx.reference vs torch: {err}"
    got = _ort(model, xs, feeds)
    for r, o in zip(got or [], ours):
        err = mismatch(np.asarray(r), o)
        assert err is None, f"{name} {a}: onnxruntime vs torch: {err}"
    return ours, got


# -- GridSample / AffineGrid -----------------------------------------------------------------------
@pytest.mark.parametrize("rank,opset", [(4, 16), (4, 20), (4, 22), (5, 20), (5, 22)])
@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
def test_grid_sample_every_padding_and_alignment(rank, opset, mode):
    x = (2, 3) + (4, 5, 6)[5 - rank:]
    grid = (2,) + (3, 2, 4)[5 - rank:] + (rank - 2,)
    for k, (pad, align) in enumerate(itertools.product(["zeros", "border", "reflection"], [0, 1])):
        a = {"mode": mode, "padding_mode": pad, "align_corners": align, "out": list(grid[1:-1]),
             "volumetric_ok": opset >= 20}
        if rank == 5 and mode == "cubic":
            # not generated (onnxruntime and TVM lack it): the reference against onnx.reference
            spec = get("GridSample")
            assert not all_true(spec.requires([TensorType("float32", x), TensorType("float32", grid)], a))
            feeds = _feeds(spec, a, [TensorType("float32", x), TensorType("float32", grid)], k)
            g = helper.make_graph([helper.make_node("GridSample", ["x", "g"], ["y"], **spec.onnx_attrs(
                a, Builder(opset, random.Random(0))))], "t",
                [helper.make_tensor_value_info("x", 1, x), helper.make_tensor_value_info("g", 1, grid)],
                [helper.make_tensor_value_info("y", 1, None)])
            m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
            ref = ReferenceEvaluator(m).run(None, {"x": feeds[0], "g": feeds[1]})[0]
            ours = spec.torch(a, *[torch.from_numpy(f) for f in feeds]).numpy()
            if pad != "border":
                assert mismatch(ref, ours) is None
            continue
        _check("GridSample", a, [("float32", x), ("float32", grid)], opset, seed=k)


def test_grid_sample_volumetric_only_from_opset_20():
    spec = get("GridSample")
    a = {"mode": "linear", "padding_mode": "zeros", "align_corners": 0, "out": [2, 2, 2], "volumetric_ok": False}
    assert not all_true(spec.requires([TensorType("float32", (1, 1, 2, 3, 4)), TensorType("float32", (1, 2, 2, 2, 3))], a))


@pytest.mark.parametrize("opset", [16, 20])
def test_grid_sample_nearest_rounds_half_to_even(opset):
    # align_corners=0, width 4: x = ((g + 1) * 4 - 1) / 2, so g = 0, -0.5, 0.5 sit half-way
    # (1.5, 0.5, 2.5) and go to the even pixel (2, 0, 2)
    a = {"mode": "nearest", "padding_mode": "zeros", "align_corners": 0, "out": [1, 3], "volumetric_ok": opset >= 20}
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 1, 4) * 10
    grid = np.array([[[[0.0, 0.0], [-0.5, 0.0], [0.5, 0.0]]]], dtype=np.float32)
    ours, got = _check("GridSample", a, [("float32", x.shape), ("float32", grid.shape)], opset, feeds=[x, grid])
    assert ours[0].reshape(-1).tolist() == [20.0, 0.0, 20.0]
    assert got is not None


@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_cubic_border_pads_the_image_like_pytorch(align):
    """Beyond the image, cubic border sampling reads the image padded with its border
    values (PyTorch, onnxruntime); onnx.reference clamps the position instead."""
    a = {"mode": "cubic", "padding_mode": "border", "align_corners": align, "out": [3, 4], "volumetric_ok": True}
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    grid = rng.uniform(-1.6, 1.6, (1, 3, 4, 2)).astype(np.float32)
    ours, got = _check("GridSample", a, [("float32", x.shape), ("float32", grid.shape)], 20, feeds=[x, grid])
    want = F.grid_sample(torch.from_numpy(x), torch.from_numpy(grid), mode="bicubic", padding_mode="border",
                         align_corners=bool(align))
    assert mismatch(want.numpy(), ours[0]) is None
    assert "clamps" in get("GridSample").reference_defect(a, [TensorType("float32", x.shape)], 20)


@pytest.mark.parametrize("mode,pad", [("linear", "zeros"), ("nearest", "reflection"), ("cubic", "border")])
def test_grid_sample_float16_and_float64(mode, pad):
    for dtype in ("float16", "float64"):
        a = {"mode": mode, "padding_mode": pad, "align_corners": 1, "out": [3, 3], "volumetric_ok": True}
        _check("GridSample", a, [(dtype, (1, 2, 4, 5)), (dtype, (1, 3, 3, 2))], 22)


def test_grid_sample_value_bounds():
    spec = get("GridSample")
    ins = [TensorType("float32", (1, 1, 3, 3)), TensorType("float32", (1, 2, 2, 2))]
    base = {"padding_mode": "border", "align_corners": 0, "out": [2, 2], "volumetric_ok": True}
    assert spec.value_range(dict(base, mode="linear"), [(1.0, 2.0), (-1, 1)], ins) == [(1.0, 2.0)]
    assert spec.value_range(dict(base, mode="nearest", padding_mode="zeros"), [(1.0, 2.0), (-1, 1)], ins) == [(0.0, 2.0)]
    lo, hi = spec.value_range(dict(base, mode="cubic"), [(1.0, 2.0), (-1, 1)], ins)[0]
    assert lo < 1.0 and hi > 2.0  # cubic overshoots
    assert spec.discontinuous(dict(base, mode="nearest")) and not spec.discontinuous(dict(base, mode="linear"))


@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_affine_grid(rank, align, dtype):
    size = [2, 3] + [3, 4, 5][3 - rank:]
    _check("AffineGrid", {"size": size, "align_corners": align}, [(dtype, (2, rank, rank + 1))], 20)


def test_affine_grid_identity_matches_pytorch():
    theta = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    for align in (0, 1):
        ours = get("AffineGrid").torch({"size": [1, 1, 3, 4], "align_corners": align}, theta)
        want = F.affine_grid(theta, [1, 1, 3, 4], align_corners=bool(align))
        assert torch.allclose(ours, want, atol=1e-6)


@pytest.mark.parametrize("rank,mode", [(4, "linear"), (4, "nearest"), (4, "cubic"), (5, "linear"), (5, "nearest")])
def test_affine_grid_sample(rank, mode):
    spec = get("AffineGridSample")
    for k, (pad, align) in enumerate(itertools.product(["zeros", "border", "reflection"], [0, 1])):
        x = TensorType("float32", (2, 3) + (4, 5, 6)[5 - rank:])
        out = [3, 1, 4][5 - rank:]
        a = {"mode": mode, "padding_mode": pad, "align_corners": align, "out": out, "volumetric_ok": True,
             "size": [2, 3] + out, "grid_align": 0 if 1 in out else align}
        theta = spec.input_type(None, 1, [x], a, "float32")
        (y,), _ = _check("AffineGridSample", a, [("float32", x.shape), ("float32", theta.shape)], 20, seed=k)
        model = _model("AffineGridSample", a, [x, theta], 20)[3]
        assert [n.op_type for n in model.graph.node] == ["AffineGrid", "GridSample"]


def test_affine_grid_refuses_size_one_with_align_corners():
    spec = get("AffineGrid")
    assert not all_true(spec.requires([TensorType("float32", (1, 2, 3))], {"size": [1, 1, 1, 4], "align_corners": 1}))
    assert all_true(spec.requires([TensorType("float32", (1, 2, 3))], {"size": [1, 1, 1, 4], "align_corners": 0}))


# -- RoiAlign / MaxRoiPool -------------------------------------------------------------------------
ROIS = [[0.0, 0.0, 4.0, 4.0], [1.25, 0.5, 6.75, 7.5], [2.0, 3.0, 3.5, 5.0]]


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("ctm", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("ratio", [0, 1, 2])
def test_roi_align(mode, ctm, ratio):
    for scale, dtype in ((1.0, "float32"), (0.5, "float64"), (2.0, "float16")):
        rois = [[v / scale for v in r] for r in ROIS]
        a = {"mode": mode, "output_height": 2, "output_width": 3, "sampling_ratio": ratio, "spatial_scale": scale,
             "coordinate_transformation_mode": ctm, "rois": rois, "batch_indices": [0, 1, 1], "dtype": dtype}
        spec = get("RoiAlign")
        if mode == "max":
            assert "4764" in spec.undefined(a, [], [])
            a = dict(a)  # (undefined, checked apart from _check's no-undefined assertion)
            ins = [TensorType(dtype, (2, 3, 8, 8))]
            _, outs, xs, model = _model("RoiAlign", a, ins, 16)
            feeds = _feeds(spec, a, ins, 0)
            ours = spec.torch(a, torch.from_numpy(feeds[0])).numpy()
            for got in (ReferenceEvaluator(model).run(None, {xs[0]: feeds[0]}), _ort(model, xs, feeds)):
                assert mismatch(np.asarray(got[0]), ours) is None
        else:
            _check("RoiAlign", a, [(dtype, (2, 3, 8, 8))], 16)


def test_roi_align_avg_of_a_constant_image_is_the_constant():
    a = {"mode": "avg", "output_height": 3, "output_width": 2, "sampling_ratio": 0, "spatial_scale": 1.0,
         "coordinate_transformation_mode": "half_pixel", "rois": ROIS, "batch_indices": [0, 0, 0], "dtype": "float32"}
    y = get("RoiAlign").torch(a, torch.full((1, 2, 8, 8), 3.5))
    assert torch.allclose(y, torch.full_like(y, 3.5))


def test_roi_align_refuses_regions_outside_or_under_a_pixel():
    spec = get("RoiAlign")
    a = {"mode": "avg", "output_height": 1, "output_width": 1, "sampling_ratio": 0, "spatial_scale": 1.0,
         "coordinate_transformation_mode": "half_pixel", "batch_indices": [0], "dtype": "float32"}
    x = [TensorType("float32", (1, 1, 4, 4))]
    assert all_true(spec.requires(x, dict(a, rois=[[0.0, 0.0, 4.0, 4.0]])))
    assert not all_true(spec.requires(x, dict(a, rois=[[0.0, 0.0, 4.5, 4.0]])))
    assert not all_true(spec.requires(x, dict(a, rois=[[1.0, 1.0, 1.5, 3.0]])))


@pytest.mark.parametrize("scale", [0.25, 0.5, 1.0, 2.0])
def test_max_roi_pool(scale):
    # regions in feature-map pixels, bins 4/2, 3/3, 6/4 (binary fractions)
    pix = [[0, 0, 0, 3, 2], [1, 2, 1, 7, 6], [1, 4, 3, 5, 6]]
    rois = [[float(b)] + [v / scale for v in box] for b, *box in pix]
    a = {"pooled_shape": [2, 2], "spatial_scale": scale, "rois": rois, "dtype": "float32"}
    ours, got = _check("MaxRoiPool", a, [("float32", (2, 3, 8, 8))], 13)
    assert got is not None
    x = torch.from_numpy(_feeds(get("MaxRoiPool"), a, [TensorType("float32", (2, 3, 8, 8))], 0)[0])
    # the first region's bins: rows 0-1 / 1-2 (3 rows in 2 bins), columns 0-1 / 2-3
    assert ours[0][0, :, 0, 0].tolist() == x[0, :, 0:2, 0:2].amax(dim=(1, 2)).tolist()
    assert ours[0][0, :, 1, 1].tolist() == x[0, :, 1:3, 2:4].amax(dim=(1, 2)).tolist()


def test_max_roi_pool_refuses_inexact_bins():
    spec = get("MaxRoiPool")
    x = [TensorType("float32", (1, 1, 8, 8))]
    ok = {"pooled_shape": [3, 3], "spatial_scale": 1.0, "rois": [[0.0, 0.0, 0.0, 5.0, 5.0]], "dtype": "float32"}
    assert all_true(spec.requires(x, ok))  # 6 / 3
    assert not all_true(spec.requires(x, dict(ok, rois=[[0.0, 0.0, 0.0, 4.0, 4.0]])))  # 5 / 3


# -- DeformConv ---------------------------------------------------------------------------------
DEFORM = [
    ({"kernel": [3, 3], "strides": [1, 1], "dilations": [1, 1], "pads": [1, 1, 1, 1]}, 4, 1, 1, 2),
    ({"kernel": [2, 3], "strides": [2, 1], "dilations": [1, 2], "pads": [0, 2, 1, 0]}, 4, 2, 2, 3),
    ({"kernel": [1, 2], "strides": [1, 3], "dilations": [2, 1], "pads": [0, 0, 0, 0]}, 6, 3, 2, 1),
]


@pytest.mark.parametrize("name", ["DeformConv", "DeformConvNoBias", "DeformConvNoMask"])
@pytest.mark.parametrize("case", range(len(DEFORM)))
@pytest.mark.parametrize("opset", [19, 22])
def test_deform_conv(name, case, opset):
    attrs, c, group, og, m = DEFORM[case]
    spec = get(name)
    a = dict(attrs, group=group, offset_group=og, m_per_group=m, spell_kernel=case % 2 == 0)
    x = TensorType("float32", (2, c, 6, 7))
    ins = [x] + [spec.input_type(None, i, [x], a, "float32") for i in range(1, spec.arity)]
    _check(name, a, [(t.dtype, t.shape) for t in ins], opset, seed=case)


def test_deform_conv_without_offsets_is_a_convolution():
    a = {"kernel": [3, 2], "strides": [2, 1], "dilations": [1, 2], "pads": [1, 0, 2, 1], "group": 2,
         "offset_group": 1, "m_per_group": 2, "spell_kernel": True}
    x, w = torch.randn(1, 4, 7, 6, dtype=torch.float64), torch.randn(4, 2, 3, 2, dtype=torch.float64)
    spec = get("DeformConvNoMask")
    oh, ow = spec.infer([TensorType("float64", tuple(x.shape))], a)[0].shape[2:]
    off = torch.zeros(1, 12, oh, ow, dtype=torch.float64)
    bias = torch.randn(4, dtype=torch.float64)
    want = F.conv2d(F.pad(x, [0, 1, 1, 2]), w, bias, stride=(2, 1), dilation=(1, 2), groups=2)
    assert torch.allclose(spec.torch(a, x, w, off, bias), want)


# -- MaxUnpool ----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,kernel,strides,pads", [
    ((2, 3, 8), [2], [2], [0, 0]),
    ((1, 2, 7), [3], [2], [1, 1]),
    ((2, 2, 6, 5), [2, 2], [2, 2], [0, 0, 0, 0]),
    ((1, 3, 7, 6), [3, 2], [2, 1], [1, 0, 1, 1]),
    ((1, 2, 4, 5, 6), [2, 2, 3], [2, 2, 3], [0, 0, 0, 0, 0, 0]),
    ((1, 1, 5, 4, 6), [3, 2, 2], [1, 2, 2], [1, 0, 0, 1, 1, 0]),
])
@pytest.mark.parametrize("explicit", [True, False])
def test_max_unpool(shape, kernel, strides, pads, explicit):
    spec = get("MaxUnpool")
    a = {"kernel": kernel, "strides": strides, "pads": pads, "output_shape": list(shape) if explicit else None}
    ins = [TensorType("float32", shape)]
    if not explicit and not all_true(spec.requires(ins, a)):
        assert spec._default_size(ins[0], a) != list(shape[2:])
        return
    (y,), _ = _check("MaxUnpool", a, [("float32", shape)], 13)
    x = _feeds(spec, a, ins, 0)[0]
    kept = y != 0
    assert np.array_equal(y[kept], x[kept])  # the maxima, in place; 0 elsewhere


def test_max_unpool_ties_are_undefined_unless_zero():
    spec = get("MaxUnpool")
    a = {"kernel": [2], "strides": [2], "pads": [0, 0], "output_shape": [1, 1, 4]}
    out = spec.infer([TensorType("float32", (1, 1, 4))], a)
    assert spec.undefined(a, [torch.tensor([[[1.0, 1.0, 0.5, 0.2]]])], out)
    assert spec.undefined(a, [torch.tensor([[[0.0, 0.0, 0.5, 0.2]]])], out) is None


# -- Col2Im -------------------------------------------------------------------------------------
@pytest.mark.parametrize("image,block,strides,dilations,pads", [
    ([7], [3], [2], [1], [1, 0]),
    ([8], [4], [1], [2], [0, 0]),
    ([5, 6], [2, 3], [1, 1], [1, 1], [0, 0, 0, 0]),
    ([6, 7], [3, 2], [2, 3], [1, 2], [1, 0, 2, 1]),
    ([4, 3, 5], [2, 1, 2], [1, 2, 2], [1, 1, 1], [0, 1, 1, 1, 0, 0]),
    ([5, 4, 5], [2, 2, 2], [1, 1, 2], [1, 2, 1], [1, 0, 0, 0, 1, 1]),
])
def test_col2im(image, block, strides, dilations, pads):
    spec = get("Col2Im")
    a = {"image_shape": image, "block_shape": block, "strides": strides, "dilations": dilations, "pads": pads}
    length = int(np.prod(spec._blocks(image, block, strides, dilations, pads)))
    shape = (2, 3 * int(np.prod(block)), length)
    if len(image) != 2 and max(dilations) > 1:
        # not generated: onnxruntime 1.32's 1-D/3-D Col2Im is wrong with a dilation; the
        # reference against onnx.reference only
        ins = [TensorType("float32", shape)]
        assert not all_true(spec.requires(ins, a))
        g = helper.make_graph(
            [helper.make_node("Col2Im", ["x", "i", "b"], ["y"], strides=strides, dilations=dilations, pads=pads)], "t",
            [helper.make_tensor_value_info("x", 1, shape)], [helper.make_tensor_value_info("y", 1, None)],
            initializer=[onnx.numpy_helper.from_array(np.array(image), "i"),
                         onnx.numpy_helper.from_array(np.array(block), "b")])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
        x = _feeds(spec, a, ins, 0)[0]
        ref = ReferenceEvaluator(model).run(None, {"x": x})[0]
        assert mismatch(ref, spec.torch(a, torch.from_numpy(x)).numpy()) is None
        return
    (y,), _ = _check("Col2Im", a, [("float32", shape)], 18)
    if len(image) == 2:
        x = torch.from_numpy(_feeds(spec, a, [TensorType("float32", shape)], 0)[0])
        want = F.fold(x, image, block, dilation=dilations, padding=0, stride=strides) if not any(pads) else None
        if want is not None:
            assert np.allclose(want.numpy(), y, atol=1e-5)


# -- CenterCropPad ------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,target,axes", [
    ((5, 6), [3, 9], None),
    ((4, 7, 2), [4, 2], [0, 1]),
    ((3, 4, 5), [6, 2], [-1, 0]),
    ((2, 3, 4, 5), [1], [-3]),
    ((1, 2, 3, 4, 5), [4, 4, 4, 4, 4], None),
])
@pytest.mark.parametrize("dtype", ["float32", "int8", "uint8", "bool", "int64", "float16"])
def test_center_crop_pad(shape, target, axes, dtype):
    _check("CenterCropPad", {"shape": target, "axes": axes}, [(dtype, shape)], 18)


def test_center_crop_pad_centres_with_the_extra_pixel_at_the_end():
    y = get("CenterCropPad").torch({"shape": [3, 6], "axes": None}, torch.arange(1, 7.0).reshape(2, 3))
    assert y.tolist() == [[0, 1, 2, 3, 0, 0], [0, 4, 5, 6, 0, 0], [0, 0, 0, 0, 0, 0]]
    y = get("CenterCropPad").torch({"shape": [2], "axes": [-1]}, torch.arange(5.0))
    assert y.tolist() == [1.0, 2.0]


# -- NonMaxSuppression ------------------------------------------------------------------------------
@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("threshold", [None, "-inf"])
@pytest.mark.parametrize("max_output", [1, 3, 9])
def test_non_max_suppression_without_suppression(center, threshold, max_output):
    a = {"max_output": max_output, "center_point_box": center, "score_threshold": threshold}
    (y,), got = _check("NonMaxSuppression", a, [("float32", (2, 3, 5)), ("float32", (2, 5, 4))], 13)
    assert y.shape == (2 * 3 * min(max_output, 5), 3) and got is not None


def test_non_max_suppression_clusters_keep_one_box_each():
    spec = get("NonMaxSuppressionClusters")
    done = 0
    for i in range(30):
        ctx = Ctx(random.Random(i), opset=13)
        scores = TensorType("float32", (ctx.int(1, 3), ctx.int(1, 3), ctx.int(1, 10)))
        a = spec.sample(ctx, [scores])
        (y,), got = _check("NonMaxSuppressionClusters", a, [("float32", scores.shape)], 13, seed=i)
        assert got is not None and got[0].shape == y.shape
        # at most one box per cluster in each (batch, class)
        for b, c in itertools.product(range(scores.shape[0]), range(scores.shape[1])):
            picked = [a["clusters"][b][k] for bb, cc, k in y.tolist() if (bb, cc) == (b, c)]
            assert len(picked) == len(set(picked))
        done += 1
    assert done == 30


def test_non_max_suppression_ties_are_undefined():
    spec = get("NonMaxSuppression")
    a = {"max_output": 1, "center_point_box": 0, "score_threshold": None}
    scores = torch.tensor([[[0.5, 0.5, 0.1]]])
    boxes = torch.tensor([[[0, 0, 1, 1], [2, 2, 3, 3], [4, 4, 5, 5]]], dtype=torch.float32)
    assert spec.undefined(a, [scores, boxes], [])
    assert spec.undefined(a, [torch.tensor([[[0.5, 0.4, 0.4]]]), boxes], []) is None  # ties below the cut


# -- 3-D convolution and pooling, GlobalLpPool, MaxPool's indices -----------------------------------
@pytest.mark.parametrize("name", ["Conv", "ConvNoBias", "ConvTranspose", "ConvTransposeNoBias"])
def test_conv_3d(name):
    spec = get(name)
    for k in range(6):
        ctx = Ctx(random.Random(k), limits=Limits(max_dim=6), opset=17)
        x = TensorType("float32", (1, 2, 4, 3, 5))
        a = spec.sample(ctx, [x])
        ins = [x] + [spec.input_type(ctx, i, [x], a, "float32") for i in range(1, spec.arity)]
        if all_true(spec.requires(ins, a)):
            _check(name, a, [(t.dtype, t.shape) for t in ins], 17, seed=k)


@pytest.mark.parametrize("rank", [3, 4, 5])
def test_conv_transpose_output_shape(rank):
    spec = get("ConvTranspose")
    r = rank - 2
    a = {"kernel": [3] * r, "strides": [2] * r, "dilations": [1] * r, "pads": [1] * (2 * r), "group": 1,
         "m_per_group": 2, "output_padding": [1] * r, "spell_kernel": True, "auto_pad": "NOTSET"}
    x = TensorType("float32", (1, 2) + (3, 4, 2)[:r])
    a["output_shape"] = spec._spatial_out(x, a)  # pads 1 + 1 each: an even total, split evenly
    ins = [x] + [spec.input_type(None, i, [x], a, "float32") for i in (1, 2)]
    _, outs, _, model = _model("ConvTranspose", a, ins, 17)
    node = model.graph.node[0]
    assert {at.name for at in node.attribute} >= {"output_shape"} and "pads" not in {at.name for at in node.attribute}
    assert spec.reference_defect(a, ins, 17)
    _check("ConvTranspose", a, [(t.dtype, t.shape) for t in ins], 17)


@pytest.mark.parametrize("name", ["MaxPool", "AveragePool", "LpPool", "MaxPoolWithIndices"])
def test_pool_3d(name):
    spec = get(name)
    done = 0
    for k in range(12):
        ctx = Ctx(random.Random(k), opset=19)
        x = TensorType("float32", (1, 2, 5, 4, 6))
        a = spec.sample(ctx, [x])
        if all_true(spec.requires([x], a)):
            _check(name, a, [("float32", x.shape)], 19, seed=k)
            done += 1
    assert done >= 4


@pytest.mark.parametrize("rank", [3, 4, 5])
@pytest.mark.parametrize("order", [0, 1])
def test_max_pool_indices(rank, order):
    r = rank - 2
    a = {"kernel": [2] * r, "strides": [2] * r, "dilations": [1] * r, "pads": [1] + [0] * (2 * r - 1),
         "ceil_mode": 0, "auto_pad": "NOTSET", "storage_order": order}
    shape = (2, 2) + (5, 4, 3)[:r]
    (y, idx), got = _check("MaxPoolWithIndices", a, [("float32", shape)], 13)
    assert got is not None
    x = _feeds(get("MaxPoolWithIndices"), a, [TensorType("float32", shape)], 0)[0]
    flat = x.reshape(-1) if order == 0 else np.moveaxis(x, range(2, rank), range(rank - 1, 1, -1)).reshape(-1)
    assert np.array_equal(flat[idx], y)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_max_pool_indices_of_integers(dtype):
    a = {"kernel": [2, 3], "strides": [2, 2], "dilations": [1, 1], "pads": [1, 1, 0, 0], "ceil_mode": 1,
         "auto_pad": "NOTSET", "storage_order": 1}
    x = np.random.default_rng(0).permutation(60).reshape(1, 2, 6, 5).astype(dtype)  # no ties
    (y, idx), got = _check("MaxPoolWithIndices", a, [(dtype, x.shape)], 13, feeds=[x])
    assert got is not None
    tied = x.copy()
    tied[0, 0, 0, :2] = 70
    assert get("MaxPoolWithIndices").undefined(a, [torch.from_numpy(tied)], [])


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 2, 3, 4), (2, 1, 2, 3, 2)])
def test_global_lp_pool(p, shape):
    (y,), got = _check("GlobalLpPool", {"p": p}, [("float32", shape)], 13)
    assert got is not None
    _check("GlobalLpPool", {"p": p}, [("float16", shape)], 22)


# -- instances drawn by the specs themselves ------------------------------------------------------
SPATIAL = ["GridSample", "AffineGrid", "AffineGridSample", "RoiAlign", "MaxRoiPool", "DeformConv", "DeformConvNoBias", "DeformConvNoMask",
           "MaxUnpool", "Col2Im", "CenterCropPad", "NonMaxSuppression", "NonMaxSuppressionClusters", "GlobalLpPool",
           "MaxPoolWithIndices"]


def _drawn(spec, ctx, dtype):
    """An instance from ``sample`` on a fresh first input, or from ``backward`` on a fresh
    output (AffineGrid's theta shape, Col2Im's column count, rank-5 GridSample)."""
    if ctx.coin(0.5) or spec.name in ("AffineGrid",):
        rank = ctx.choice([5] if spec.name == "AffineGrid" and ctx.coin(0.5) else [4] if spec.name == "AffineGrid"
                          else [r for r in spec.ranks])
        if spec.name == "AffineGrid":
            shape = (ctx.int(1, 3),) + ctx.shape(rank - 2, 64) + (rank - 2,)
        elif spec.name.startswith("NonMaxSuppression"):
            return None
        else:
            shape = ctx.shape(rank, 256)
        res = spec.backward(ctx, TensorType(dtype, shape))
        if res is None:
            return None
        ins, a = res
    else:
        x = TensorType(dtype, ctx.shape(ctx.choice(list(spec.ranks)), 256))
        a = spec.sample(ctx, [x])
        ins = [x]
        sig = next(s for s in spec.dtypes if s[0] == dtype)
        for i in range(1, spec.arity):
            ins.append(spec.input_type(ctx, i, ins, a, sig[i]))
    return (ins, a) if all_true(spec.requires(ins, a)) else None


@pytest.mark.parametrize("name", SPATIAL)
def test_sampled_instances_match_the_references(name):
    spec = get(name)
    done = 0
    for i in range(60):
        ctx = Ctx(random.Random(f"{name}/{i}"), limits=Limits(max_dim=8, max_elems=512), opset=22)
        dtype = ctx.choice([s[0] for s in spec.dtypes if s[0] != "float64" or name != "GlobalLpPool"])
        got = _drawn(spec, ctx, dtype)
        if got is None:
            continue
        ins, a = got
        if _check(name, a, [(t.dtype, t.shape) for t in ins], 22, seed=i, skip_undefined=True):
            done += 1
        if done == 12:
            break
    assert done >= 6, done


# -- an injected TVM miscompilation, caught end to end --------------------------------------------------
@pytest.fixture(scope="module")
def grid_cases(tmp_path_factory):
    from dlgate.case import make_case
    from dlgate.check import load_case, prepare
    from dlgate.graph.generator import GenConfig, Generator

    out = tmp_path_factory.mktemp("spatial")
    gen = Generator(GenConfig(ops=("GridSample", "Relu", "Add"), dtypes=("float32",), min_nodes=3, max_nodes=4,
                               opset=20))  # three nodes or more: seed e2e-2 puts a GridSample in 5 of 8 cases
    for i in range(8):  # (this batch compiles in seconds: some GridSample chains take TVM ~20 s)
        make_case(gen, "e2e-2", "grid", i).write(str(out))
    return [prepare(*load_case(os.path.join(out, d))) for d in sorted(os.listdir(out))]


def test_injected_tvm_grid_sample_miscompilation_is_caught(grid_cases):
    """``relax.image.grid_sample`` (what TVM's importer makes of GridSample) offset by 0.5:
    every case with a GridSample is a mismatch, the others pass, and the healthy TVM
    passes them all."""
    pytest.importorskip("tvm")
    from dlgate.backends.base import BackendSpec
    from dlgate.check import CheckConfig, check
    from dlgate.exec.worker import Pool
    from dlgate.oracle import verdict as V

    broken = BackendSpec("tvm", options=(("extra_passes", ("dlgate.backends.testing:grid_sample_offset",)),))
    cfg = CheckConfig([broken, BackendSpec("tvm")], crosscheck=False)  # onnx.reference is slow on GridSample
    with_op = 0
    with Pool(timeout_s=120) as pool:
        for case in grid_cases:
            if not case.search["valid"]:
                continue
            bad, healthy = check(pool, case, cfg)["verdicts"]
            assert healthy["verdict"] == V.PASS, (case.id, healthy)
            if "GridSample" in case.meta["operators"]:
                with_op += 1
                assert bad["verdict"] == V.MISMATCH, (case.id, bad)
            else:
                assert bad["verdict"] == V.PASS, (case.id, bad)
    assert with_op >= 3


def test_nan_and_far_coordinates_sample_nan_and_stay_in_bounds():
    """A NaN grid coordinate or deformation offset gives NaN there (not an out-of-range
    index); a coordinate far outside the image is held, and GridSample calls it undefined."""
    from dlgate.ops.registry import get
    from dlgate.ops.spatial.deform_conv import _bilinear_zero
    from dlgate.ops.spatial.grid_sample import grid_sample

    x = torch.rand(1, 2, 4, 5, dtype=torch.float64)
    g = torch.rand(1, 3, 3, 2, dtype=torch.float64) * 2 - 1
    g[0, 1, 1, 0], g[0, 2, 2, 1] = float("nan"), 1e30
    for mode in ("nearest", "linear", "cubic"):
        for pad in ("zeros", "border", "reflection"):
            y = grid_sample(x, g, mode, pad, False)
            assert torch.isnan(y[0, :, 1, 1]).all() and torch.isfinite(y[0, :, 0, 0]).all(), (mode, pad)
    assert get("GridSample").undefined({}, [x, g], []) is not None
    assert get("GridSample").undefined({}, [x, g.clamp(-1, 1)], []) is None
    r = _bilinear_zero(torch.rand(1, 1, 4, 4, dtype=torch.float64),
                       torch.tensor([[0.5, float("nan")]], dtype=torch.float64),
                       torch.tensor([[1.5, 2.0]], dtype=torch.float64))
    assert torch.isfinite(r[0, 0, 0]) and torch.isnan(r[0, 0, 1])
