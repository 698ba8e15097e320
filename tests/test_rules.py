"""The oracle's rules (dlgate.oracle.rules): each excuse covers only what it explains.

Every rule has a silent test (a correct compiler's outputs are not findings) and a catch
test (a fault outside what the rule's excuse covers is found)."""
from __future__ import annotations

import numpy as np
import pytest

from dlgate.backends.base import BackendSpec
from dlgate.exec import worker as W
from dlgate.exec.worker import Outcome
from dlgate.graph.ir import Graph, Node
from dlgate.materialize.torch_model import run_numpy
from dlgate.ops.base import TensorType as T
from dlgate.oracle import rules
from dlgate.oracle import verdict as V
from dlgate.oracle.compare import WHOLE, compare_each
from dlgate.oracle.rules.scope import reach
from dlgate.oracle.rules.symbolic import declared, judge_symbolic
from tests.helpers import judge_candidate


def _graph(nodes, tensors, inputs, outputs, extreme=True) -> Graph:
    return Graph(tensors=tensors, nodes=nodes, inputs=list(inputs), consts=[], outputs=list(outputs), opset=18,
                 values={}, extreme={"kinds": ["test"]} if extreme else None)


def _cast_and_neg():
    """Output 0: Cast(1e20 -> int32), undefined; output 1: Neg(y), independent of it."""
    g = _graph([Node("Cast", {"to": "int32"}, [0], [1]), Node("Neg", {}, [2], [3])],
               [T("float32", (2,)), T("int32", (2,)), T("float32", (3,)), T("float32", (3,))], [0, 2], [1, 3])
    return g, [np.array([1e20, 3.0], np.float32), np.array([1.0, 2.0, 3.0], np.float32)]


# -- undefined values -----------------------------------------------------------------------------

def test_an_undefined_output_is_excused_alone():
    g, xs = _cast_and_neg()
    ref = run_numpy(g, xs)
    other = ref[0].copy()
    other[0] += 7
    v = judge_candidate(g, xs, [other, ref[1]])
    assert v.verdict == V.UNDEFINED and v.rule == "undefined" and "Cast (node 0)" in v.detail, v.detail


def test_an_independent_output_wrong_beside_an_undefined_one_is_caught():
    g, xs = _cast_and_neg()
    ref = run_numpy(g, xs)
    other, wrong = ref[0].copy(), ref[1].copy()
    other[0] += 7
    wrong[1] += 100.0
    v = judge_candidate(g, xs, [other, wrong])
    assert v.verdict == V.MISMATCH and v.comparison["output"] == 1, v.detail
    assert v.excused and v.excused[0]["rule"] == "undefined" and "Cast" in v.detail


def test_a_wrong_defined_element_hides_not_behind_an_undefined_ones_magnitude():
    """An undefined int32 (a huge float after a cast back) widens the output's tolerance to
    millions; the defined element beside it is compared on its own scale."""
    g = _graph([Node("Cast", {"to": "int32"}, [0], [1]), Node("Cast", {"to": "float32"}, [1], [2])],
               [T("float32", (2,)), T("int32", (2,)), T("float32", (2,))], [0], [2])
    xs = [np.array([3e9, 3.0], np.float32)]
    ref = run_numpy(g, xs)[0]
    assert abs(ref[0]) > 1e6  # the undefined element is huge in the reference
    same = ref.copy()
    same[0] = 12345.0  # another compiler's undefined value: silent
    assert judge_candidate(g, xs, [same]).verdict == V.UNDEFINED
    assert judge_candidate(g, xs, [ref.copy()]).verdict == V.PASS
    wrong = ref.copy()
    wrong[1] = 103.0  # within 1e-3 of the huge scale, but wrong
    assert compare_each([ref], [wrong]) == []  # the plain comparison is fooled
    v = judge_candidate(g, xs, [wrong])
    assert v.verdict == V.MISMATCH and v.comparison["first_index"] == [1], v.detail


def test_an_undefined_value_through_a_reduction_covers_the_whole_output():
    g = _graph([Node("Cast", {"to": "int32"}, [0], [1]),
                Node("ReduceSum", {"axes": [0], "keepdims": 1, "noop": False}, [1], [2])],
               [T("float32", (2,)), T("int32", (2,)), T("int32", (1,))], [0], [2])
    xs = [np.array([1e20, 3.0], np.float32)]
    ref = run_numpy(g, xs)[0]
    assert judge_candidate(g, xs, [ref + 5]).verdict == V.UNDEFINED


def test_reach_carries_marks_elementwise_and_whole_elsewhere():
    g = _graph([Node("Neg", {}, [0], [1]), Node("Add", {}, [1, 2], [3]),
                Node("ReduceSum", {"axes": [0], "keepdims": 1, "noop": False}, [1], [4])],
               [T("float32", (3,)), T("float32", (3,)), T("float32", (1,)), T("float32", (3,)), T("float32", (1,))],
               [0, 2], [3, 4])
    from dlgate.oracle.precision import trace

    _, steps = trace(g, [np.ones(3, np.float32), np.ones(1, np.float32)])
    got = reach(g, steps, {0: [np.array([False, True, False])]})
    assert got[0].tolist() == [False, True, False] and got[1] == WHOLE
    assert reach(g, steps, {}) == {}


# -- special values the specification does not define -----------------------------------------------

def _relu_add():
    # Relu of NaN is undefined; element-wise, it reaches only its own element
    f = T("float32", (3,))
    g = _graph([Node("Relu", {}, [0], [1]), Node("Add", {}, [1, 2], [3])], [f, f, f, f], [0, 2], [3])
    return g, [np.array([np.nan, 1.0, -2.0], np.float32), np.array([1.0, 1.0, 1.0], np.float32)]


def test_a_nan_an_operator_leaves_open_excuses_its_element():
    g, xs = _relu_add()
    ref = run_numpy(g, xs)[0]
    other = ref.copy()
    other[0] = 1.0  # Relu(NaN) = 0 in this compiler
    v = judge_candidate(g, xs, [other])
    assert v.verdict == V.UNDEFINED and v.rule == "nonfinite" and "Relu" in v.detail, v.detail


def test_a_wrong_element_beside_a_nan_in_the_same_output_is_caught():
    g, xs = _relu_add()
    ref = run_numpy(g, xs)[0]
    wrong = ref.copy()
    wrong[0] = 1.0
    wrong[2] = 9.0  # Relu(-2) + 1 = 1
    v = judge_candidate(g, xs, [wrong])
    assert v.verdict == V.MISMATCH and v.comparison["first_index"] == [2], v.detail


# -- float16 rounding -------------------------------------------------------------------------------

def test_float16_rounding_excuses_the_elements_between_reference_and_float64_only():
    from tests.test_precision import _sum_tan

    g, ins, f32 = _sum_tan()  # a compiler that keeps the float16 graph in float32
    v = judge_candidate(g, ins, [f32])
    assert v.verdict == V.UNDEFINED and v.rule == "rounding", v.detail
    one = f32.copy()
    one[5] = -one[5]  # one element off by far more than rounding
    v = judge_candidate(g, ins, [one])
    assert v.verdict == V.MISMATCH and v.comparison["first_index"] == [5], v.detail
    assert "1 of" in v.detail and v.excused[0]["rule"] == "rounding"


# -- the judge: rules in order, scoped ---------------------------------------------------------------

class _Fixed(rules.Rule):
    def __init__(self, name, excuses):
        self.name, self._excuses = name, excuses

    def excuses(self, ctx):
        return list(self._excuses)


def test_settle_runs_rules_in_order_and_records_the_deciding_rule():
    ref = [np.array([1.0, 2.0, 3.0], np.float32)]
    got = [np.array([9.0, 2.0, 7.0], np.float32)]
    first = _Fixed("a", [rules.Excuse("a", "first", {0: np.array([True, False, False])})])
    second = _Fixed("b", [rules.Excuse("b", "second", {0: np.array([False, False, True])})])
    never = _Fixed("c", [])
    s = rules.settle(None, ref, got, rules=(first, second, never))
    assert s.explained and [e.rule for e in s.excuses] == ["a", "b"] and s.rule == "a"
    s = rules.settle(None, ref, got, rules=(first, never))
    assert not s.explained and s.remaining[0].first_index == (2,)


def test_a_whole_output_excuse_covers_its_shape_a_dtype_never():
    ref = [np.zeros(3, np.float32)]
    whole = _Fixed("w", [rules.Excuse("w", "open", {0: WHOLE})])
    assert rules.settle(None, ref, [np.zeros(2, np.float32)], rules=(whole,)).explained
    assert not rules.settle(None, ref, [np.zeros(3, np.float64)], rules=(whole,)).explained
    elements = _Fixed("e", [rules.Excuse("e", "open", {0: np.ones(3, bool)})])
    assert not rules.settle(None, ref, [np.zeros(2, np.float32)], rules=(elements,)).explained


# -- symbolic dimensions ------------------------------------------------------------------------------

def _outcome(status, message="", type_="RuntimeError"):
    return Outcome(status, None, {"type": type_, "message": message}, 0.1, 0.0, 0.1, {"name": "x", "version": "1"})


def test_symbolic_rule_refuses_only_in_the_compilers_own_words():
    tvm_words = BackendSpec("tvm")
    from dlgate.backends.registry import load

    patterns = load(tvm_words.name).symbolic_refusals
    assert declared(patterns, {"type": "ValueError", "message": "Unsqueeze requires a statically known input rank."})
    assert declared(patterns, {"type": "NotImplementedError", "message": "Squeeze with symbolic axes not supported"})
    assert declared(patterns, {"type": "ValueError", "message": "Dynamic pads are not supported yet."})
    emit_te = {"type": "AssertionError", "message": "emit_te now only supports Tensor that has ShapeExpr shape"}
    assert declared(patterns, dict(emit_te, phase="import"))  # a converter's: TVM's refusal
    assert not declared(patterns, emit_te)  # LegalizeOps's, after an import that took the model: a finding
    broadcast = {"type": "ValueError", "message": "Cannot broadcast symbolic dimension batch with non-1 constant 4: "
                                                  "runtime value of batch is unknown at compile time"}
    assert declared(patterns, dict(broadcast, phase="import")) and not declared(patterns, broadcast)
    assert not declared(patterns, {"type": "InternalError", "message": "Check failed: (lhs == rhs) is false"})
    assert not declared(patterns, {"type": "TVMError", "message": "dynamic_cast failed in a pass"})
    declined = judge_symbolic(_outcome(W.COMPILE_ERROR, "Unsqueeze requires a statically known input rank."),
                              patterns, lambda: pytest.fail("not asked: the compiler said so"))
    assert declined.status == W.UNSUPPORTED
    internal = _outcome(W.COMPILE_ERROR, "InternalError: Check failed")
    found = judge_symbolic(internal, patterns, lambda: _outcome(W.OK))
    assert found.status == W.COMPILE_ERROR and "only with symbolic" in found.error["message"]
    assert judge_symbolic(internal, patterns, lambda: _outcome(W.UNSUPPORTED, "no kernel")).status == W.UNSUPPORTED
    both = judge_symbolic(internal, patterns, lambda: _outcome(W.COMPILE_ERROR, "InternalError: Check failed"))
    assert both.status == W.COMPILE_ERROR and "only with symbolic" not in both.error["message"]


@pytest.mark.parametrize("backend, verdict", [("SymbolicCompileFails", V.COMPILE_ERROR),
                                              ("SymbolicDeclines", V.UNSUPPORTED),
                                              ("AlwaysCompileFails", V.COMPILE_ERROR)])
def test_a_compile_error_on_symbolic_dims_is_judged_against_static_shapes(backend, verdict):
    from dlgate.case import make_case
    from dlgate.check import CheckConfig, check, prepare
    from dlgate.graph.generator import GenConfig, Generator

    spec = BackendSpec(f"tests.fake_backends:{backend}")
    gen = Generator(GenConfig(min_nodes=2, max_nodes=4, dtypes=("float32",), opset=18, dynamic_share=1.0,
                              ops=("Add", "Relu", "Mul", "Abs", "Neg")))
    cfg = CheckConfig([spec], crosscheck=False)
    with W.Pool(60) as pool:
        for i in range(20):
            c = make_case(gen, "symrule", "r", i)
            if not c.graph.dynamic:
                continue
            v = check(pool, prepare(c.meta(), c.graph, c.model_bytes), cfg)["verdicts"][0]
            assert v["verdict"] == verdict, v
            assert ("only with symbolic" in v["detail"]) == (backend == "SymbolicCompileFails"), v["detail"]
            return
    pytest.fail("no dynamic case among 20")


# -- reference defects --------------------------------------------------------------------------------

def _maxpool(auto_pad: str):
    a = {"kernel": [2, 2], "strides": [1, 1], "dilations": [1, 1], "pads": [0, 0, 0, 0], "ceil_mode": 0,
         "auto_pad": auto_pad}
    x = T("float32", (1, 1, 4, 4))
    return _graph([Node("MaxPool", a, [0], [1])], [x, T("float32", (1, 1, 4, 4) if auto_pad != "VALID" else
                                                       (1, 1, 3, 3))], [0], [1], extreme=False)


def test_onnx_reference_is_not_consulted_where_it_computes_the_model_wrongly():
    from dlgate.oracle.rules.base import Context
    from dlgate.oracle.rules.reference_defect import defect

    x = [np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)]
    assert defect(Context(_maxpool("VALID"), x)) is None  # silent: an instance it computes right
    why = defect(Context(_maxpool("SAME_LOWER"), x))
    assert why and "SAME_LOWER" in why and "MaxPool (node 0)" in why
    ref = [np.zeros(3, np.float32)]
    bad = [np.ones(3, np.float32)]
    ok = Outcome(W.OK, bad, None, 0.1, 0.0, 0.1, {"name": "x", "version": "1"})
    # an onnx.reference that sides with the compiler blames the reference, unless it is not consulted
    assert V.judge("x", "x", ok, ref, onnx_reference=lambda: ok).blame == "reference"
    v = V.judge("x", "x", ok, ref, onnx_reference=lambda: why)
    assert v.blame == "unknown" and v.crosscheck["onnx_reference"]["reason"] == why


def test_the_symbolic_words_are_declared_with_the_refusal_table():
    from dlgate.backends import refusals

    for backend, marks in refusals.SYMBOLIC.items():
        assert marks and all(m.kind == "regex" and m.where for m in marks), backend
    assert refusals.symbolic_patterns("onnxruntime") == ()  # takes symbolic dims: every error is judged
    assert declared(refusals.symbolic_patterns("tensorrt"),
                    {"type": "TensorRTParseError", "message": "UNSUPPORTED_NODE_DYNAMIC: Reshape"})


def test_tvms_importer_refusal_of_a_symbolic_broadcast_is_a_refusal_and_says_where():
    """TVM's importer refuses Min of [batch, 3] and [4, 3] in its own words ("Cannot
    broadcast symbolic dimension"): the worker's error record says the importer raised it
    (``phase: import``) and the symbolic rule makes it a refusal, not a finding."""
    pytest.importorskip("tvm")
    from onnx import TensorProto, helper

    from dlgate.backends.base import Model
    from dlgate.backends.registry import load

    g = helper.make_graph([helper.make_node("Min", ["x", "y"], ["z"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3]),
                           helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    proto = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    graph = Graph(tensors=[T("float32", (4, 3)), T("float32", (4, 3)), T("float32", (4, 3))],
                  nodes=[Node("Min", {}, [0, 1], [2])], inputs=[0, 1], consts=[], outputs=[2], opset=17)
    with W.Pool(120) as pool:
        out = pool.execute(BackendSpec("tvm"), Model(proto.SerializeToString(), graph), [])
    assert out.status == W.COMPILE_ERROR and out.error.get("phase") == "import", out.error
    assert "Cannot broadcast symbolic dimension" in out.error["message"]
    judged = judge_symbolic(out, load("tvm").symbolic_refusals, lambda: pytest.fail("not asked: TVM said so"))
    assert judged.status == W.UNSUPPORTED


def _tvm_import_error(nodes, inits, rank):
    """TVM's worker outcome on a static model (input x: float32 [4, 3])."""
    from onnx import TensorProto, helper
    from onnx import numpy_helper as nh

    from dlgate.backends.base import Model

    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [None] * rank)],
                          [nh.from_array(v, k) for k, v in inits.items()])
    proto = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    graph = Graph(tensors=[T("float32", (4, 3)), T("float32", (4, 3))], nodes=[Node("Relu", {}, [0], [1])],
                  inputs=[0], consts=[], outputs=[1], opset=17)  # the worker reads the ONNX bytes only
    with W.Pool(120) as pool:
        return pool.execute(BackendSpec("tvm"), Model(proto.SerializeToString(), graph), [np.zeros((4, 3), np.float32)])


def test_a_size_tvms_importer_cannot_know_is_a_refusal_on_a_static_model():
    """Static inputs, a size only run time knows (a NonZero count broadcast against 3; a
    Range of a Size squeezed): TVM's importer declines it in its own words, which the
    symbolic rule reads as a refusal; without the importer's phase the same words are not one."""
    pytest.importorskip("tvm")
    from onnx import TensorProto, helper

    from dlgate.backends.registry import load
    from dlgate.oracle.rules.symbolic import judge_unknown_sizes

    patterns = load("tvm").symbolic_refusals
    nonzero = _tvm_import_error(
        [helper.make_node("NonZero", ["c"], ["nz"]), helper.make_node("Cast", ["nz"], ["f"], to=TensorProto.FLOAT),
         helper.make_node("Min", ["f", "k"], ["z"])],
        {"c": np.array([[1, 0, 2], [0, 3, 0]], np.int64), "k": np.ones((2, 3), np.float32)}, 2)
    squeeze = _tvm_import_error(
        [helper.make_node("Size", ["one"], ["n"]), helper.make_node("Range", ["s0", "n", "d1"], ["r"]),
         helper.make_node("Gather", ["x", "r"], ["g"]), helper.make_node("Squeeze", ["g", "ax"], ["z"])],
        {"one": np.array([4.0], np.float32), "s0": np.array(0, np.int64), "d1": np.array(1, np.int64),
         "ax": np.array([0], np.int64)}, 1)
    for out, words in ((nonzero, "Cannot broadcast symbolic dimension"), (squeeze, "symbolic extent")):
        assert out.status == W.COMPILE_ERROR and out.error.get("phase") == "import" and words in out.error["message"]
        judged = judge_unknown_sizes(out, patterns)
        assert judged.status == W.UNSUPPORTED and "cannot know before run time" in judged.error["message"]
        bare = _outcome(W.COMPILE_ERROR, out.error["message"], out.error["type"])  # no phase: a pass said it
        assert judge_unknown_sizes(bare, patterns).status == W.COMPILE_ERROR
    other = _outcome(W.COMPILE_ERROR, "InternalError: Check failed: (lhs == rhs) is false")
    other.error["phase"] = "import"
    assert judge_unknown_sizes(other, patterns).status == W.COMPILE_ERROR  # a converter's crash stays a finding
