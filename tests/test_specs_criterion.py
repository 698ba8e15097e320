"""The criterion family (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, with and
without weights): each spec's lowering on one-node models against onnx.reference and
onnxruntime for every reduction, ignore_index absent / a class / outside the classes,
N-D inputs, the log_prob output; the mean's denominator; and TVM's verdict end to end
(TVM 0.27 converts neither operator, so no miscompilation can be injected into it)."""
from __future__ import annotations

import random

import numpy as np
import pytest

from dlgate.ops.base import Ctx, TensorType, all_true
from dlgate.ops.registry import get
from tests.helpers import check_against_reference, tensor_types

LOSSES = ("NegativeLogLikelihoodLoss", "NegativeLogLikelihoodLossWeighted", "SoftmaxCrossEntropyLoss",
          "SoftmaxCrossEntropyLossWeighted")


def _check(name, a, ins, opset, feeds=None, seed=0):
    """One node from the spec's lowering: onnx.reference (unless the spec reports its
    defect), onnxruntime and the spec's torch agree."""
    if feeds is None:
        rng, ts = np.random.default_rng(seed), tensor_types(ins)
        feeds = [rng.uniform(-3, 3, size=ts[0].shape)] + [rng.uniform(0.25, 2.0, size=t.shape) for t in ts[1:]]
    return check_against_reference(name, a, ins, opset, seed=seed, feeds=feeds, coerce_feeds=True).ours


def _targets(shape, c, ignore=None, seed=0, p=0.3):
    rng = np.random.default_rng(seed)
    t = rng.integers(0, c, size=shape)
    if ignore is not None:
        t = np.where(rng.random(shape) < p, ignore, t)
        t.reshape(-1)[0] = 0 if ignore != 0 else 1  # one target kept
    return t.tolist()


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("ignore", [None, 1, -1, -100, 4])
@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 3), (2, 4, 2, 3)])
def test_loss_regimes(name, reduction, ignore, shape, opset=13):
    c = shape[1]
    tshape = (shape[0],) + shape[2:]
    a = {"reduction": reduction, "ignore_index": ignore, "targets": _targets(tshape, c, ignore)}
    if name.startswith("Softmax"):
        a["log_prob"] = reduction != "sum"
    ins = [("float32", shape)] + ([("float32", (c,))] if name.endswith("Weighted") else [])
    _check(name, a, ins, opset)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("dtype,opset", [("float64", 22), ("float16", 17), ("float32", 28)])
def test_loss_dtypes_and_opsets(name, dtype, opset):
    a = {"reduction": "mean", "ignore_index": 2, "targets": [[0, 2, 1], [2, 2, 0]], "log_prob": True}
    ins = [(dtype, (2, 3, 3))] + ([(dtype, (3,))] if name.endswith("Weighted") else [])
    _check(name, a, ins, opset)


@pytest.mark.parametrize("name", LOSSES)
def test_int32_targets(name):
    a = {"reduction": "none", "ignore_index": -100, "targets": [[1, -100], [0, 2]], "target_dtype": "int32"}
    ins = [("float32", (2, 3, 2))] + ([("float32", (3,))] if name.endswith("Weighted") else [])
    _check(name, a, ins, 18)


def test_weighted_mean_divides_by_the_applied_weights():
    x = np.array([[0.0, -1.0, -2.0], [-3.0, -4.0, -5.0]], dtype=np.float32)  # (N=2, C=3)
    w = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    a = {"reduction": "mean", "ignore_index": None, "targets": [2, 1]}
    y = _check("NegativeLogLikelihoodLossWeighted", a, [("float32", (2, 3)), ("float32", (3,))], 18, feeds=[x, w])
    assert float(y[0]) == pytest.approx((2.0 * 4 + 4.0 * 2) / (4 + 2))
    a["ignore_index"] = 2  # the first target is ignored: its weight leaves the denominator
    y = _check("NegativeLogLikelihoodLossWeighted", a, [("float32", (2, 3)), ("float32", (3,))], 18, feeds=[x, w])
    assert float(y[0]) == pytest.approx(4.0)


def test_unweighted_mean_counts_the_targets_kept():
    x = np.array([[0.0, -1.0], [-3.0, -4.0], [-5.0, -6.0]], dtype=np.float32)
    a = {"reduction": "mean", "ignore_index": 0, "targets": [1, 0, 1]}
    y = _check("NegativeLogLikelihoodLoss", a, [("float32", (3, 2))], 18, feeds=[x])
    assert float(y[0]) == pytest.approx((1.0 + 6.0) / 2)


def test_reference_defect_ignore_index_minus_one():
    """onnx.reference's NLL without weights takes ignore_index -1 for absent: its mean
    divides by every target; onnxruntime (checked by _check) divides by the kept ones."""
    spec = get("NegativeLogLikelihoodLoss")
    a = {"reduction": "mean", "ignore_index": -1, "targets": [1, -1, 0]}
    ins = [TensorType("float32", (3, 2))]
    assert spec.reference_defect(a, ins, 18)
    x = np.array([[0.0, -1.0], [-3.0, -4.0], [-5.0, -6.0]], dtype=np.float32)
    y = _check("NegativeLogLikelihoodLoss", a, [("float32", (3, 2))], 18, feeds=[x])
    assert float(y[0]) == pytest.approx((1.0 + 5.0) / 2)
    assert not spec.reference_defect(dict(a, targets=[1, 1, 0]), ins, 18)  # -1 not hit
    assert not get("SoftmaxCrossEntropyLoss").reference_defect(a, ins, 18)


def test_sampled_attributes():
    """Every reduction and ignore_index kind is drawn, ignored targets are hit, and a mean
    always keeps a target."""
    spec = get("SoftmaxCrossEntropyLoss")
    seen, hits = set(), 0
    for i in range(300):
        ctx = Ctx(random.Random(i), opset=18)
        shape = ctx.choice(((4, 1), (3, 5), (2, 3, 4), (2, 2, 2, 2)))
        a = spec.sample(ctx, [TensorType("float32", shape)])
        t, ii = np.asarray(a["targets"]), a["ignore_index"]
        kind = None if ii is None else "class" if 0 <= ii < shape[1] else "outside"
        seen.add((a["reduction"], kind, a["log_prob"]))
        hits += int(ii is not None and (t == ii).any())
        if a["reduction"] == "mean":
            assert (t != ii).any()
        assert all_true(spec.requires([TensorType("float32", shape)], a))
    assert len(seen) == 18 and hits > 50


@pytest.mark.parametrize("name", LOSSES)
def test_sampled_instances_match(name):
    spec = get(name)
    done = 0
    for i in range(25):
        ctx = Ctx(random.Random(i), opset=21)
        out = TensorType(ctx.choice(("float32", "float64")), ctx.shape(ctx.choice((0, 0, 1, 2)), 32))
        res = spec.backward(ctx, out)
        if res is None:
            continue
        ins, a = res
        assert spec.infer(ins, a)[0] == out
        _check(name, a, [(t.dtype, t.shape) for t in ins], 21, seed=i)
        done += 1
    assert done >= 15


def test_too_many_targets_are_refused():
    spec = get("NegativeLogLikelihoodLoss")
    x = TensorType("float32", (2, 2, 16, 16))  # 512 targets
    a = spec.sample(Ctx(random.Random(0)), [x])
    assert not all_true(spec.requires([x], a))


def test_tvm_does_not_convert_the_losses(tmp_path):
    """TVM 0.27 has no converter for either loss: its verdict is 'unsupported' naming the
    ONNX operators (never a crash or a mismatch) while onnxruntime passes the same cases.
    Its frontend refuses such a model before converting anything, so no other TVM bug can
    show there; models of Neg alone pass. A case with no numeric-valid input ('invalid' for
    every backend: e.g. a weighted mean whose weights are an all-ignored loss, all zero) is
    left out; cases are generated until enough of each kind were checked."""
    pytest.importorskip("tvm")
    from dlgate.backends.base import BackendSpec
    from dlgate.check import CheckConfig, check
    from dlgate.exec.worker import Pool
    from dlgate.graph.generator import GenConfig, Generator
    from dlgate.oracle import verdict as V
    from tests.helpers import generated_cases

    gen = Generator(GenConfig(ops=LOSSES + ("Neg",), dtypes=("float32",), max_nodes=4, opset=18))
    cfg = CheckConfig([BackendSpec("onnxruntime"), BackendSpec("tvm")])
    with_loss = without = 0
    with Pool(timeout_s=120) as pool:
        for case in generated_cases(tmp_path, gen, "e2e", "criterion", 40):
            if not case.search["valid"]:
                continue
            ort, tvm = check(pool, case, cfg)["verdicts"]
            assert ort["verdict"] == V.PASS, (case.id, ort)
            onnx_ops = {get(op).onnx_op for op in case.graph.op_names() if op in LOSSES}
            if onnx_ops:
                with_loss += 1
                assert tvm["verdict"] == V.UNSUPPORTED and "OpNotImplemented" in tvm["detail"], (case.id, tvm)
                assert all(op in tvm["detail"] for op in onnx_ops), (case.id, onnx_ops, tvm)
            else:
                without += 1
                assert tvm["verdict"] == V.PASS, (case.id, tvm)
            if with_loss >= 4 and without >= 2:
                break
    assert with_loss >= 4 and without >= 2, (with_loss, without)
