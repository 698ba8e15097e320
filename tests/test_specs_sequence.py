"""Targeted checks of the sequence and optional idioms (``dlgate/ops/sequence/``): every
split mode, positions counted either way, insert/erase with and without positions,
SequenceEmpty's dtype, ConcatFromSequence's ``new_axis`` and negative axes, SequenceMap
bodies, optionals with and without elements. Each idiom is lowered by its spec into a model
that goes through ONNX's full checker and strict shape inference, onnx.reference (where it
is right) and onnxruntime (where it has kernels), against the spec's PyTorch implementation.
Last, a TVM miscompilation injected into ``relax.concat`` is caught end to end."""
from __future__ import annotations

import functools
import random

import numpy as np
import pytest
import torch
from onnx import helper
from onnx.reference import ReferenceEvaluator

from dlgate import dtypes as dt
from dlgate.materialize.onnx_model import Builder
from dlgate.ops import schema
from dlgate.ops.base import Ctx, TensorType, all_true
from dlgate.ops.registry import all_specs, get
from tests.helpers import check_against_reference, draw_feed

NAMES = ["SplitToSequenceConcat", "SplitToSequenceAt", "SequenceEditConcat", "SequenceConstructAt",
         "SequenceAppendConcat", "SequenceMapUnary", "SequenceMapBinary", "OptionalCoalesce",
         "OptionalGetElementTensor"]


_draw = functools.partial(draw_feed, uint8=(0, 6))


def _feeds(ins, seed):
    rng = np.random.default_rng(seed)
    return [_draw(rng, t) for t in ins]


def _check(name, a, ins, opset, seed=0, ort=True):
    """Lower one instance, check the model, compare onnx.reference (unless the spec names
    its defect) and onnxruntime (unless it lacks a kernel) with the spec's torch. Returns
    the torch outputs as NumPy arrays."""
    r = check_against_reference(name, a, ins, opset, seed=seed, draw=_draw, shape_inference="strict", runtime=ort,
                                declines=("NOT_IMPLEMENTED",))
    spec = get(name)
    ops = {n.op_type for n in r.model.graph.node}
    assert ops <= {spec.onnx_op, *spec.onnx_ops}, (name, ops)
    return r.ours


def _split(mode, axis, split=None, chunk=None, keepdims=1, idx="int64"):
    return {"mode": mode, "axis": axis, "split": split, "chunk": chunk, "keepdims": keepdims, "idx": idx}


# -- SplitToSequence + ConcatFromSequence ---------------------------------------------------

@pytest.mark.parametrize("split,cat_axis,new_axis,shape,out", [
    (_split("sizes", 1, [1, 3, 2], idx="int32"), 1, 0, (2, 6), (2, 6)),       # back together
    (_split("sizes", -2, [2, 2, 2]), -1, 0, (6, 3), (2, 9)),                  # equal pieces, another axis
    (_split("scalar", 0, chunk=3), 0, 0, (7, 2), (7, 2)),                     # chunks 3, 3, 1
    (_split("scalar", 0, chunk=2, idx="int32"), 1, 1, (6, 2), (2, 3, 2)),     # equal chunks stacked
    (_split("scalar", 1, chunk=5), 1, 0, (2, 5), (2, 5)),                     # one chunk
    (_split("none", 1, keepdims=0), 0, 1, (2, 3, 4), (3, 2, 4)),              # unbind, stack: an axis moved
    (_split("none", -1, keepdims=0), -1, 1, (2, 3), (2, 3)),                  # unbind, stack back
    (_split("none", 0, keepdims=0), -1, 0, (3, 2, 4), (2, 12)),               # unbind, concatenate
    (_split("none", 0, keepdims=1), -3, 1, (3, 2), (3, 1, 2)),                # keepdims 1, stacked at -3
    (_split("none", 0, keepdims=0), 0, 1, (4,), (4,)),                        # scalars stacked
])
def test_split_concat(split, cat_axis, new_axis, shape, out):
    a = dict(split, cat_axis=cat_axis, new_axis=new_axis)
    ins = [("float32", shape)]
    assert tuple(get("SplitToSequenceConcat").infer([TensorType(*ins[0])], a)[0].shape) == out
    for opset in (13, 24):
        _check("SplitToSequenceConcat", a, ins, opset)


def test_split_concat_refuses_what_does_not_concatenate():
    spec = get("SplitToSequenceConcat")
    x = [TensorType("float32", (5, 2))]
    assert not all_true(spec.requires(x, dict(_split("sizes", 0, [2, 3]), cat_axis=1, new_axis=0)))
    assert not all_true(spec.requires(x, dict(_split("scalar", 0, chunk=2), cat_axis=0, new_axis=1)))
    assert not all_true(spec.requires(x, dict(_split("sizes", 0, [2, 2]), cat_axis=0, new_axis=0)))
    assert not all_true(spec.requires([TensorType("float32", (3,))], dict(_split("none", 0, keepdims=0),
                                                                       cat_axis=0, new_axis=0)))


@pytest.mark.parametrize("dtype", dt.ALL)
def test_split_concat_dtypes(dtype):
    a = dict(_split("none", 1, keepdims=0), cat_axis=0, new_axis=1)
    _check("SplitToSequenceConcat", a, [(dtype, (2, 3))], 17)  # onnxruntime: no int8/uint8 kernel


def test_chunks_by_dynamic_size():
    """A split by chunks follows the axis' length: a dynamic binding keeps it valid."""
    spec = get("SplitToSequenceConcat")
    a = dict(_split("scalar", 0, chunk=2), cat_axis=1, new_axis=1)
    assert spec.infer([TensorType("float32", (6, 3))], a)[0].shape == (2, 3, 3)
    assert spec.infer([TensorType("float32", (8, 3))], a)[0].shape == (2, 4, 3)
    assert not all_true(spec.requires([TensorType("float32", (7, 3))], a))  # 2, 2, 2, 1: no stack


# -- SequenceAt ------------------------------------------------------------------------------

@pytest.mark.parametrize("split,pos,shape", [
    (_split("sizes", 0, [1, 4, 2]), 1, (7, 2)),
    (_split("sizes", 0, [1, 4, 2], idx="int32"), -3, (7, 2)),
    (_split("scalar", 1, chunk=4), 2, (2, 9)),    # the short last chunk
    (_split("scalar", 1, chunk=4), -1, (2, 9)),
    (_split("none", 0, keepdims=0), -2, (3, 2)),  # a row of an unbind
    (_split("none", 0, keepdims=0), 0, (3,)),     # a scalar
    (_split("none", 2, keepdims=1), 1, (2, 2, 3)),
])
@pytest.mark.parametrize("pos_idx", ["int64", "int32"])
def test_split_at(split, pos, shape, pos_idx):
    a = dict(split, pos=pos, pos_idx=pos_idx)
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    got = get("SplitToSequenceAt").torch(a, torch.from_numpy(x)).numpy()
    ax = split["axis"] % len(shape)
    d = shape[ax]
    sizes = {"sizes": split["split"], "none": [1] * d}.get(split["mode"]) or \
        [split["chunk"]] * (d // split["chunk"]) + [d % split["chunk"]] * (d % split["chunk"] > 0)
    want = np.split(x, np.cumsum(sizes)[:-1], axis=ax)[pos]
    if split["mode"] == "none" and split["keepdims"] == 0:
        want = want.squeeze(ax)
    assert np.array_equal(got, want)
    _check("SplitToSequenceAt", a, [("float32", shape)], 13)


# -- SequenceErase / SequenceInsert / SequenceLength --------------------------------------------

@pytest.mark.parametrize("split,erase,insert", [
    (_split("sizes", 0, [2, 3, 2]), None, None),  # erase the last, append
    (_split("sizes", 0, [2, 3, 2]), 0, 1),
    (_split("sizes", 0, [2, 3, 2], idx="int32"), -3, -1),  # -1: before the last
    (_split("sizes", 0, [2, 3, 2]), 1, -2),  # -2 = -m: the front
    (_split("sizes", 0, [2, 3, 2]), 1, 2),   # m: the end (onnx.reference wraps it to the front)
    (_split("scalar", 0, chunk=3), 2, 0),
    (_split("none", 0, keepdims=1), None, 3),
    (_split("sizes", 0, [7]), None, 0),      # a sequence emptied and refilled
])
def test_sequence_edit(split, erase, insert):
    a = dict(split, erase=erase, insert=insert, pos_idx="int64" if insert is None else "int32")
    x, y = np.arange(14, dtype=np.float32).reshape(7, 2), -np.ones((3, 2), np.float32)
    sizes = {"sizes": split["split"], "none": [1] * 7, "scalar": [3, 3, 1]}[split["mode"]]
    parts = np.split(x, np.cumsum(sizes)[:-1])
    del parts[-1 if erase is None else erase]
    parts.insert(len(parts) if insert is None else insert, y)
    z, n = get("SequenceEditConcat").torch(a, torch.from_numpy(x), torch.from_numpy(y))
    assert np.array_equal(z.numpy(), np.concatenate(parts)) and int(n) == len(parts)
    _check("SequenceEditConcat", a, [("float32", (7, 2)), ("float32", (3, 2))], 13)


def test_reference_inserts_at_the_end_at_the_front():
    """The defect ``reference_defect`` names: onnx.reference's SequenceInsert at position n."""
    spec = get("SequenceEditConcat")
    a = dict(_split("sizes", 0, [1, 1]), erase=None, insert=1, pos_idx="int64")
    ins = [TensorType("float32", (2, 1)), TensorType("float32", (1, 1))]
    assert spec.reference_defect(a, ins, 13) is not None
    assert spec.reference_defect(dict(a, insert=-1), ins, 13) is None
    b = Builder(13, random.Random(0))
    spec.onnx(b, a, ["x", "y"], ["z", "n"])
    g = helper.make_graph(b.nodes, "t", [helper.make_tensor_value_info("x", 1, [2, 1]),
                                         helper.make_tensor_value_info("y", 1, [1, 1])],
                          [helper.make_tensor_value_info("z", 1, [2, 1]), helper.make_tensor_value_info("n", 7, [])],
                          initializer=b.initializers)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    z = ReferenceEvaluator(m).run(None, {"x": np.array([[1.0], [2.0]], np.float32),
                                         "y": np.array([[9.0]], np.float32)})[0]
    assert z.ravel().tolist() == [9.0, 1.0]  # the spec: [1, 9]


@pytest.mark.parametrize("dtype", dt.ALL)
def test_sequence_edit_dtypes(dtype):
    a = dict(_split("sizes", 1, [1, 2]), erase=-1, insert=0, pos_idx="int64")
    _check("SequenceEditConcat", a, [(dtype, (2, 3)), (dtype, (2, 4))], 21)


# -- SequenceConstruct / SequenceAt ---------------------------------------------------------------

@pytest.mark.parametrize("pos", [0, 1, 2, -1, -2, -3])
def test_construct_at(pos):
    ins = [("float32", (2, 3)), ("float32", ()), ("float32", (4,))]
    y, n = _check("SequenceConstructAt", {"pos": pos, "pos_idx": "int32" if pos % 2 else "int64"}, ins, 13)
    assert y.shape == ins[pos][1] and int(n) == 3


@pytest.mark.parametrize("dtype", dt.ALL)
def test_construct_at_dtypes(dtype):
    _check("SequenceConstructAt", {"pos": -1, "pos_idx": "int64"}, [(dtype, (2,)), (dtype, (2,)), (dtype, (1, 3))], 18)


# -- SequenceEmpty / SequenceInsert / ConcatFromSequence ------------------------------------------

@pytest.mark.parametrize("pos,first", [(None, 0), (1, 0), (0, 1), (-1, 1)])
@pytest.mark.parametrize("new_axis,cat_axis", [(0, 0), (0, -1), (1, 0), (1, -1), (1, -3)])
def test_append_concat(pos, first, new_axis, cat_axis):
    shapes = [(2, 3), (2, 3)] if new_axis or cat_axis == 0 else [(2, 3), (2, 4)]
    shapes = shapes if new_axis or cat_axis != 0 else [(2, 3), (5, 3)]
    a = {"dtype": "float32", "write_dtype": pos is None, "pos": pos, "cat_axis": cat_axis, "new_axis": new_axis}
    (z,) = _check("SequenceAppendConcat", a, [("float32", s) for s in shapes], 13)
    x0, x1 = _feeds([TensorType("float32", s) for s in shapes], 0)
    order = [x1, x0] if first else [x0, x1]
    want = np.stack(order, axis=cat_axis) if new_axis else np.concatenate(order, axis=cat_axis)
    assert np.array_equal(z, want)


@pytest.mark.parametrize("dtype", dt.ALL)
def test_sequence_empty_dtype(dtype):
    """SequenceEmpty's dtype is written for every type but float32, the default."""
    a = {"dtype": dtype, "write_dtype": dtype != "float32", "pos": 0, "cat_axis": 0, "new_axis": 0}
    _check("SequenceAppendConcat", a, [(dtype, (1, 2)), (dtype, (2, 2))], 17)
    b = Builder(17, random.Random(0))
    get("SequenceAppendConcat").onnx(b, a, ["x", "y"], ["z"])
    empty = b.nodes[0]
    assert empty.op_type == "SequenceEmpty" and len(empty.attribute) == (dtype != "float32")


# -- SequenceMap -----------------------------------------------------------------------------------

def _map_cases():
    for dtype in dt.ALL:
        from dlgate.ops.sequence.sequence_map_unary import BINARY_BODY, UNARY_BODY, kind
        for op in UNARY_BODY[kind(dtype)]:
            yield "SequenceMapUnary", dtype, op
        for op in BINARY_BODY[kind(dtype)]:
            yield "SequenceMapBinary", dtype, op


@pytest.mark.parametrize("name,dtype,op", list(_map_cases()))
def test_sequence_map_bodies(name, dtype, op):
    for k, (split, yshape) in enumerate([(_split("sizes", 0, [1, 3]), (1, 3)),
                                         (_split("none", -1, keepdims=0), (4,)),
                                         (_split("scalar", 1, chunk=2, idx="int32"), ())]):
        a = dict(split, op=op, dtype=dtype, swap=k == 1)
        ins = [(dtype, (4, 3))] + ([(dtype, yshape)] if name == "SequenceMapBinary" else [])
        _check(name, a, ins, 17 + k, seed=k)


def test_sequence_map_extra_input_does_not_grow_pieces():
    spec = get("SequenceMapBinary")
    a = dict(_split("sizes", 0, [1, 3]), op="Add", dtype="float32", swap=False)
    x = TensorType("float32", (4, 3))
    assert all_true(spec.requires([x, TensorType("float32", (1, 3))], a))
    assert not all_true(spec.requires([x, TensorType("float32", (3, 3))], a))  # the pieces' lengths differ
    assert not all_true(spec.requires([x, TensorType("float32", (2, 1, 3))], a))  # a rank more


def test_sequence_map_flags_signed_overflow():
    spec = get("SequenceMapUnary")
    a = dict(_split("sizes", 0, [1, 1]), op="Neg", dtype="int8", swap=False)
    x = torch.tensor([-128, 3], dtype=torch.int8)
    assert "overflow" in spec.undefined(a, [x], spec.infer([TensorType("int8", (2,))], a))


# -- optionals -------------------------------------------------------------------------------------

@pytest.mark.parametrize("empty,typed,rank", [(False, False, None), (False, True, 2), (False, True, None),
                                              (True, True, None), (True, True, 2)])
@pytest.mark.parametrize("opset", [15, 18, 21])
def test_optional_coalesce(empty, typed, rank, opset):
    a = {"empty": empty, "typed": typed, "dtype": "float32", "rank": rank}
    ins = [("float32", (2, 3)), ("float32", (2, 3))]
    y, has = _check("OptionalCoalesce", a, ins, opset)  # onnx.reference: see its reference_defect
    x, d = _feeds([TensorType(*t) for t in ins], 0)
    assert np.array_equal(y, d if empty else x) and bool(has) is (not empty)


def test_reference_optional_defect_is_real():
    spec = get("OptionalCoalesce")
    a = {"empty": True, "typed": True, "dtype": "float32", "rank": None}
    assert spec.reference_defect(a, [], 15)
    b = Builder(15, random.Random(0))
    spec.onnx(b, a, ["x", "d"], ["y", "h"])
    vi = [helper.make_tensor_value_info(n, 1, [2]) for n in ("x", "d")]
    g = helper.make_graph(b.nodes, "t", vi, [helper.make_tensor_value_info("y", 1, [2]),
                                             helper.make_tensor_value_info("h", 9, [])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)])
    _, has = ReferenceEvaluator(m).run(None, {"x": np.zeros(2, np.float32), "d": np.ones(2, np.float32)})
    assert bool(has)  # the spec (and onnxruntime): an empty optional has no element


@pytest.mark.parametrize("dtype", dt.ALL)
def test_optional_dtypes(dtype):
    _check("OptionalCoalesce", {"empty": True, "typed": True, "dtype": dtype, "rank": 1},
           [(dtype, (3,)), (dtype, (3,))], 16)
    _check("OptionalGetElementTensor", {}, [(dtype, (2, 1))], 18)


def test_optional_get_element_on_tensors_needs_opset_18():
    spec = get("OptionalGetElementTensor")
    assert not schema.allowed(spec.onnx_op, ("float32",), 17) and schema.allowed(spec.onnx_op, ("float32",), 18)
    y, has = _check("OptionalGetElementTensor", {}, [("int32", ())], 21)
    assert y.shape == () and bool(has)


# -- every spec --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_opsets_and_gaps(name):
    """``min_opset`` is where every emitted operator exists; gaps are stated."""
    import onnx.defs

    spec = get(name)
    for op in (spec.onnx_op,) + spec.onnx_ops:
        onnx.defs.get_schema(op, spec.min_opset)  # raises where the operator does not exist yet
    assert schema.allowed(spec.onnx_op, spec.dtypes[0], spec.min_opset)
    if spec.min_opset > 13:
        assert not spec.available(spec.min_opset - 1)
    for what, why in type(spec).gaps:
        assert what and why
    assert spec.family == "sequence"


@pytest.mark.parametrize("name", NAMES)
def test_sampled_and_backward_instances(name):
    """Attributes drawn by the spec itself (forward) and instances made by ``backward``
    for a wanted output, at the spec's first opset and the newest it allows."""
    spec = all_specs()[name]
    opset = spec.max_opset or 28
    done = 0
    for i in range(24):
        ctx = Ctx(random.Random(i), opset=opset)
        dtype = ctx.choice(["float32", "int32", "bool", "float16"])
        rank = ctx.choice([r for r in spec.ranks if r <= 3])
        if i % 2:
            x = TensorType(dtype, ctx.shape(rank, 96))
            a = spec.sample(ctx, [x])
            ins = [x] + [spec.input_type(ctx, k, [x], a, dtype) for k in range(1, spec.arity)]
        else:
            want = TensorType(dtype, ctx.shape(rank, 96))
            res = spec.backward(ctx, want)
            if res is None:
                continue
            ins, a = res
            assert spec.infer(ins, a)[0] == want, (name, a, ins)
        if not all_true(spec.requires(ins, a)):
            continue
        _check(name, a, [(t.dtype, t.shape) for t in ins], max(spec.min_opset, 13 + i % 3 * 4), seed=i,
               ort=i % 4 < 2)
        done += 1
    assert done >= 8, done


# -- a TVM miscompilation injected into relax.concat is caught -------------------------------------

def test_injected_tvm_concat_miscompilation_is_caught(tmp_path):
    """TVM lowers ConcatFromSequence to ``relax.concat`` (after ``expand_dims`` for
    ``new_axis`` 1). With every ``relax.concat`` off by one, cases holding
    SequenceAppendConcat mismatch and the others pass. A case the healthy TVM 0.27 does
    not pass cannot tell the injected fault apart and is left out (e.g. it inserts at
    position -1 at the end, not before the last element); cases are generated until
    enough were compared."""
    from dlgate.backends.base import BackendSpec
    from dlgate.check import CheckConfig, check
    from dlgate.exec.worker import Pool
    from dlgate.graph.generator import GenConfig, Generator
    from dlgate.oracle import verdict as V
    from tests.helpers import generated_cases

    gen = Generator(GenConfig(ops=("SequenceAppendConcat", "Relu", "Neg"), dtypes=("float32",), max_nodes=3,
                              opset=18))
    broken = BackendSpec("tvm", options=(("extra_passes", ("dlgate.backends.testing:sequence_concat_plus_one",)),))
    cfg = CheckConfig([broken, BackendSpec("tvm")])
    caught = without = 0
    with Pool(timeout_s=120) as pool:
        for case in generated_cases(tmp_path, gen, "seq-e2e", "check", 60):
            bad, healthy = check(pool, case, cfg)["verdicts"]
            if healthy["verdict"] != V.PASS:
                continue
            if "SequenceAppendConcat" in case.graph.op_names():
                assert bad["verdict"] == V.MISMATCH, (case.id, bad)
                assert bad["comparison"]["max_abs"] > 0
                caught += 1
            else:
                assert bad["verdict"] == V.PASS, (case.id, bad)
                without += 1
            if caught >= 3 and without >= 2:
                break
    assert caught >= 3 and without >= 2, (caught, without)
