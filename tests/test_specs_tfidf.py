"""TfIdfVectorizer (``dlgate/ops/index/tf_idf_vectorizer.py``): the spec's PyTorch
semantics against counts worked by hand from the specification's text (its own skip-gram
example, unigrams counted once whatever the skip, pool n-grams of lengths outside
[min, max] counting nothing, permuted and gapped output columns, the three weightings),
and against onnxruntime on the same one-node models; the two defects of onnx.reference the
spec names are shown real; drawn and backward instances agree with onnxruntime. End to end,
a correct onnxruntime passes every generated case and TVM 0.27 (which has no converter)
refuses the ones holding the operator, while an onnxruntime whose TfIdfVectorizer results
are off by one is caught on exactly those."""
from __future__ import annotations

import random

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from dlgate.backends.base import Model
from dlgate.backends.onnxruntime import OnnxRuntime
from dlgate.ops.base import Ctx, TensorType, all_true
from dlgate.ops.registry import get
from tests.helpers import check_against_reference, one_node_model

NAME = "TfIdfVectorizer"


def _attrs(mode="TF", lo=1, hi=1, skip=0, counts=(0,), cols=None, pool=(), weights=None):
    if cols is None:  # the identity: one column per pool n-gram, in pool order
        ends = list(counts[1:]) + [len(pool)]
        cols = range(sum((e - s) // n for n, (s, e) in enumerate(zip(counts, ends), 1)))
    cols = list(cols)
    return {"mode": mode, "min_gram_length": lo, "max_gram_length": hi, "max_skip_count": skip,
            "ngram_counts": list(counts), "ngram_indexes": cols, "pool_int64s": list(pool), "weights": weights}


def _run(a, x, dtype="int64", opset=21, reference="unless-defect"):
    """The spec's output on ``x``, checked against onnxruntime (and onnx.reference unless
    the spec names its defect) on the spec's own one-node model."""
    x = np.asarray(x, dtype=dtype)
    r = check_against_reference(NAME, a, [(dtype, x.shape)], opset, feeds=[x], shape_inference="compare",
                                reference=reference)
    return r.ours[0]


def test_the_specifications_skip_gram_example():
    """[94, 17, 36, 12, 28] with 2 skips has the 2-grams [94, 12] and [17, 28]; with all
    skips up to 2 counted, 0 skips add [94, 17] ... [12, 28] and 1 skip [94, 36] ..."""
    x = [94, 17, 36, 12, 28]
    a = _attrs(lo=2, hi=2, skip=2, counts=(0, 0), pool=(94, 12, 17, 28, 94, 17, 36, 28, 12, 94))
    assert _run(a, x).tolist() == [1, 1, 1, 1, 0]  # skip 2, 2, 0, 1; [12, 94] never
    a0 = dict(a, max_skip_count=0)
    assert _run(a0, x).tolist() == [0, 0, 1, 0, 0]


def test_unigrams_count_once_and_other_lengths_count_nothing():
    """x = 1 2 1 3 2. Pool: unigrams 1, 2, 3; bigrams (1, 2), (2, 1); the trigram
    (1, 3, 2). With min 1, max 2 and skips up to 2, the unigrams count once (2, 2, 1), not
    once per skip; (1, 2) is met at skip 0 (positions 0, 1) and skip 1 (positions 2, 4): 2;
    (2, 1) at skip 0 only: 1; the trigram, outside [1, 2], 0 though it is there (positions
    2 to 4)."""
    x = [1, 2, 1, 3, 2]
    a = _attrs(lo=1, hi=2, skip=2, counts=(0, 3, 7), pool=(1, 2, 3, 1, 2, 2, 1, 1, 3, 2))
    assert _run(a, x).tolist() == [2, 2, 1, 2, 1, 0]
    # min 2: the unigrams are not counted; min 3 max 3: only the trigram
    assert _run(dict(a, min_gram_length=2), x).tolist() == [0, 0, 0, 2, 1, 0]
    assert _run(dict(a, min_gram_length=3, max_gram_length=3), x).tolist() == [0, 0, 0, 0, 0, 1]


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_rows_columns_and_weightings(dtype):
    """Two rows; unigrams 1, 2, 3 put in columns 3, 0, 1 (column 2 has none: always 0);
    weights 10, 20, 30 belong to the pool's n-grams (1, 2, 3), wherever their columns are."""
    x = [[1, 2, 1, 3, 2], [3, 3, 3, 0, 0]]
    a = _attrs(cols=(3, 0, 1), pool=(1, 2, 3), weights=[10.0, 20.0, 30.0])
    counts = [[2, 1, 0, 2], [0, 3, 0, 0]]  # row 0: two 2s, one 3, two 1s; row 1: three 3s
    assert _run(dict(a, mode="TF"), x, dtype).tolist() == counts
    assert _run(dict(a, mode="IDF"), x, dtype).tolist() == [[20, 30, 0, 10], [0, 30, 0, 0]]
    assert _run(dict(a, mode="TFIDF"), x, dtype).tolist() == [[40, 30, 0, 20], [0, 90, 0, 0]]
    assert _run(dict(a, mode="IDF", weights=None), x, dtype).tolist() == [[1, 1, 0, 1], [0, 1, 0, 0]]
    assert _run(dict(a, mode="TFIDF", weights=None), x, dtype).tolist() == counts


def test_reference_defects_are_real():
    """onnx.reference weights output column i by weights[i] (the specification: the weight
    of the n-gram counted there) and takes len() of absent weights: the spec names both."""
    spec = get(NAME)
    x = np.array([1, 2, 1, 3, 2], np.int64)
    a = _attrs(mode="TFIDF", cols=(2, 0, 1), pool=(1, 2, 3), weights=[10.0, 20.0, 30.0])
    assert spec.reference_defect(a, [TensorType("int64", (5,))], 21)
    _, _, _, xs, model = one_node_model(NAME, a, [("int64", (5,))], 21, 8, 0)
    ref = ReferenceEvaluator(model).run(None, {xs[0]: x})[0]
    assert _run(a, x).tolist() == [40, 30, 20]  # onnxruntime agrees (checked in _run)
    assert ref.tolist() == [20, 20, 60]
    b = _attrs(mode="IDF", pool=(1, 2))
    assert spec.reference_defect(b, [TensorType("int64", (5,))], 21)
    _, _, _, xs, model = one_node_model(NAME, b, [("int64", (5,))], 21, 8, 0)
    with pytest.raises(Exception, match="len"):
        ReferenceEvaluator(model).run(None, {xs[0]: x})
    assert spec.reference_defect(_attrs(pool=(1, 2)), [TensorType("int64", (5,))], 21) is None


def test_drawn_and_backward_instances_agree_with_onnxruntime():
    """Attributes the spec draws (forward from an input, backward for a wanted output)
    give valid models whose onnxruntime result is the spec's, at opset 13 and 28; inputs
    drawn from the pool's tokens so n-grams are met (some counts are nonzero)."""
    spec = get(NAME)
    hits = 0
    for i in range(24):
        ctx = Ctx(random.Random(i), opset=28)
        if i % 2:
            x = TensorType(ctx.choice(["int32", "int64"]), ctx.shape(ctx.choice([1, 2]), 64))
            a = spec.sample(ctx, [x])
        else:
            want = TensorType("float32", ctx.shape(ctx.choice([1, 2]), 64))
            (x,), a = spec.backward(ctx, want)
            assert spec.infer([x], a)[0] == want
        assert all_true(spec.requires([x], a))
        assert len(set(a["ngram_indexes"])) == len(a["ngram_indexes"])
        feed = np.random.default_rng(i).integers(-3, 6, x.shape).astype(x.dtype)
        y = _run(a, feed, x.dtype, opset=13 + i % 2 * 15)
        hits += bool(y.any())
    assert hits >= 8, hits
    assert spec.backward(Ctx(random.Random(0)), TensorType("int64", (3,))) is None
    for i in range(20):  # a wide output: a pool of distinct n-grams still, most columns left 0
        (x,), a = spec.backward(Ctx(random.Random(i)), TensorType("float32", (2, 60)))
        assert max(a["ngram_indexes"]) == 59 and len(a["ngram_indexes"]) <= 8 and x.shape[0] == 2


# -- end to end ------------------------------------------------------------------------------

class OffByOneOnnxRuntime(OnnxRuntime):
    """onnxruntime whose every TfIdfVectorizer result is one too large (an Add of 1 written
    after each such node): a wrong kernel that only models holding the operator meet."""

    name = "tfidf-off-by-one-onnxruntime"

    def compile(self, model):
        import onnx

        m = onnx.load_from_string(model.onnx)
        nodes = []
        for node in m.graph.node:
            nodes.append(node)
            if node.op_type == NAME:
                y = node.output[0]
                node.output[0] = y + "_raw"
                one = helper.make_tensor(y + "_one", onnx.TensorProto.FLOAT, [], [1.0])
                m.graph.initializer.append(one)
                nodes.append(helper.make_node("Add", [y + "_raw", y + "_one"], [y]))
        del m.graph.node[:]
        m.graph.node.extend(nodes)
        return super().compile(Model(m.SerializeToString(), model.graph))


def test_end_to_end_onnxruntime_passes_tvm_refuses_an_injected_fault_is_caught(tmp_path):
    """Generated models of TfIdfVectorizer and Abs: a correct onnxruntime passes them all;
    TVM 0.27 refuses those holding TfIdfVectorizer ('unsupported', naming it) and passes the
    others; the off-by-one onnxruntime mismatches exactly where the operator is."""
    pytest.importorskip("tvm")
    from dlgate.backends.base import BackendSpec
    from dlgate.check import CheckConfig, check
    from dlgate.exec.worker import Pool
    from dlgate.graph.generator import GenConfig, Generator
    from dlgate.oracle import verdict as V
    from tests.helpers import generated_cases

    gen = Generator(GenConfig(ops=(NAME, "Abs"), dtypes=("int64", "int32", "float32"), max_nodes=3, opset=21))
    broken = BackendSpec("tests.test_specs_tfidf:OffByOneOnnxRuntime")
    cfg = CheckConfig([BackendSpec("onnxruntime"), BackendSpec("tvm"), broken])
    caught = without = 0
    with Pool(timeout_s=120) as pool:
        for case in generated_cases(tmp_path, gen, "tfidf-e2e", "check", 60):
            ort, tvm, bad = check(pool, case, cfg)["verdicts"]
            assert ort["verdict"] == V.PASS, (case.id, ort)
            if NAME in case.graph.op_names():
                assert tvm["verdict"] == V.UNSUPPORTED and NAME in tvm["detail"], (case.id, tvm)
                assert bad["verdict"] == V.MISMATCH and bad["comparison"]["max_abs"] > 0, (case.id, bad)
                caught += 1
            else:
                assert tvm["verdict"] == V.PASS and bad["verdict"] == V.PASS, (case.id, tvm, bad)
                without += 1
            if caught >= 3 and without >= 2:
                break
    assert caught >= 3 and without >= 2, (caught, without)
