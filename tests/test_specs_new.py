"""Targeted checks of the Shape, Size, EyeLike, GatherND, ScatterND, ScatterElements and
ReverseSequence specs on edge attributes (negative axes and starts, batch_dims, every
reduction, repeated indices) against onnx.reference, through each spec's own lowering."""
from __future__ import annotations

import functools
import random

import numpy as np
import pytest

from dlgate.ops.base import Ctx, TensorType, all_true
from dlgate.ops.registry import get
from tests.helpers import check_against_reference, draw_feed


def _check(name, a, ins, opset, seed=0):
    draw = functools.partial(draw_feed, bools=False)
    return check_against_reference(name, a, ins, opset, seed=seed, draw=draw, reference=True, runtime=False).ref


@pytest.mark.parametrize("start,end,lo,hi", [(None, None, 0, 4), (-3, None, 1, 4), (1, -1, 1, 3),
                                             (-4, 9, 0, 4), (2, 3, 2, 3)])
def test_shape_start_end(start, end, lo, hi):
    ref = _check("Shape", {"start": start, "end": end, "lo": lo, "hi": hi}, [("float32", (2, 3, 5, 7))], 21)
    assert ref[0].tolist() == [2, 3, 5, 7][lo:hi]


def test_shape_before_opset_15_is_the_whole_shape():
    _check("Shape", {"start": None, "end": None, "lo": 0, "hi": 3}, [("int8", (2, 1, 4))], 13)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3, 4)])
def test_size(shape):
    assert int(_check("Size", {}, [("bool", shape)], 17)[0]) == int(np.prod(shape))


@pytest.mark.parametrize("k,dtype", [(0, None), (2, None), (-1, "int64"), (7, "float64"), (-5, "bool")])
def test_eyelike_offsets_and_dtypes(k, dtype):
    _check("EyeLike", {"k": k, "dtype": dtype}, [("float32", (3, 4))], 17)


@pytest.mark.parametrize("shape,b,indices", [
    ((3, 4), 0, [[0, 1], [-1, -4], [2, 3]]),        # full-rank indices, negatives
    ((3, 4, 2), 0, [[[1]], [[-3]]]),                  # slices
    ((2, 3, 4), 1, [[[0, 1], [-1, 2]], [[2, -4], [1, 0]]]),  # batch_dims 1
    ((2, 3, 4), 2, [[[1], [3], [-1]], [[0], [0], [2]]]),      # batch_dims 2
])
def test_gathernd(shape, b, indices):
    _check("GatherND", {"batch_dims": b, "indices": indices}, [("float32", shape)], 13)


@pytest.mark.parametrize("reduction,opset", [("none", 13), ("none", 18), ("add", 16), ("mul", 16), ("max", 18),
                                             ("min", 18)])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_scatternd_reductions(reduction, opset, dtype):
    # repeated rows only where a reduction defines them
    rows = [[0, 1], [2, 0], [1, 1]] if reduction == "none" else [[0, 1], [2, 0], [0, 1], [0, 1]]
    _check("ScatterND", {"reduction": reduction, "indices": rows}, [(dtype, (3, 2, 4)), (dtype, (len(rows), 4))],
           opset)
    slices = [[2], [0]] if reduction == "none" else [[2], [2]]
    _check("ScatterND", {"reduction": reduction, "indices": slices}, [(dtype, (3, 2)), (dtype, (2, 2))], opset)


def test_scatternd_refuses_repeated_indices_without_reduction():
    spec = get("ScatterND")
    a = {"reduction": "none", "indices": [[1], [1]]}
    ins = [TensorType("float32", (3, 2)), TensorType("float32", (2, 2))]
    assert not all_true(spec.requires(ins, a))


@pytest.mark.parametrize("reduction,opset", [("none", 13), ("add", 16), ("mul", 16), ("max", 18), ("min", 18)])
@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_scatterelements(reduction, axis, opset):
    ax = axis % 2
    if reduction == "none":
        idx = np.array([[0, -2, 2], [-3, 1, 2]]) if ax == 1 else np.array([[0, -1, 2], [-2, 1, 0]])
    else:
        idx = np.array([[0, -1, 2], [2, 2, -1]]) if ax == 1 else np.array([[0, -1, 1], [0, 1, -1]])
    shape = (2, 4) if ax == 0 else (3, 3)
    idx = idx if ax == 1 else idx[:, :2].T.copy()[:2]
    a = {"reduction": reduction, "axis": axis, "indices": idx.tolist()}
    for dtype in ("float32", "int64"):
        _check("ScatterElements", a, [(dtype, shape), (dtype, idx.shape)], opset)


def test_scatterelements_refuses_repeats_in_a_line_without_reduction():
    spec = get("ScatterElements")
    a = {"reduction": "none", "axis": -1, "indices": [[0, -3]]}
    assert not all_true(spec.requires([TensorType("float32", (2, 3)), TensorType("float32", (1, 2))], a))


@pytest.mark.parametrize("ba,lens,shape", [(1, [1, 4, 2], (4, 3)), (0, [3, 1], (2, 3, 2)),
                                           (1, [2, 2, 1, 3], (3, 4, 2, 1))])
def test_reverse_sequence(ba, lens, shape):
    _check("ReverseSequence", {"batch_axis": ba, "time_axis": 1 - ba, "lens": lens}, [("float32", shape)], 13)


@pytest.mark.parametrize("name", ["Shape", "Size", "EyeLike", "GatherND", "ScatterND", "ScatterElements",
                                  "ReverseSequence"])
def test_sampled_instances_match_the_reference(name):
    """Attributes drawn by the spec itself, at the newest default opset (every reduction)."""
    spec = get(name)
    rng = random.Random(name)
    done = 0
    for i in range(40):
        ctx = Ctx(random.Random(i), opset=18 if name.startswith("Scatter") else 21)
        dtype = ctx.choice(["float32", "int32", "int64"] if name.startswith("Scatter") else ["float32", "int8"])
        rank = ctx.choice([r for r in spec.ranks if r <= 4])
        x = TensorType(dtype, ctx.shape(rank, 256))
        a = spec.sample(ctx, [x])
        if a is None:
            continue
        ins = [x] + [spec.input_type(ctx, k, [x], a, dtype) for k in range(1, spec.arity)]
        if not all_true(spec.requires(ins, a)):
            continue
        _check(name, a, [(t.dtype, t.shape) for t in ins], ctx.opset, seed=rng.randrange(1000))
        done += 1
    assert done >= 10
