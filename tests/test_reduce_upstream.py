"""An error that a wrong dtype made upstream is that wrong answer's cause.

A compiler whose ArgMax makes int32 indices (tests.fake_backends.ArgMaxInt32, as TVM 0.25's
TopK did) fails ArgMax -> Add to compile and returns a lone ArgMax as int32: one root cause,
which was two rows (the error reduces to ArgMax -> Add, since dropping either operator
changes the failure's class)."""
from __future__ import annotations

import numpy as np

from dlgate.backends.base import BackendSpec
from dlgate.check import CheckConfig, check, prepare
from dlgate.exec.worker import Pool
from dlgate.graph.ir import Graph, Node
from dlgate.materialize.onnx_model import to_onnx
from dlgate.ops.base import TensorType
from dlgate.reduce.identity import identity, upstream_cause
from dlgate.reduce.reducer import Reducer, Target

SPEC = BackendSpec("tests.fake_backends:ArgMaxInt32")


def _case(graph: Graph, name: str):
    meta = {"id": name, "seed": 0, "campaign": "upstream", "index": 0, "root": "u"}
    return prepare(meta, graph, to_onnx(graph, 0).SerializeToString())


def _argmax_add() -> Graph:
    """Relu(x) -> ArgMax -> Add(int64 constant) -> Neg: the int64 chain after the ArgMax."""
    t = [TensorType("float32", (3, 4)), TensorType("float32", (3, 4)), TensorType("int64", (3, 1)),
         TensorType("int64", (3, 1)), TensorType("int64", (3, 1)), TensorType("int64", (3, 1))]
    nodes = [Node("Relu", {}, [0], [1]), Node("ArgMax", {"axis": 1, "keepdims": 1, "select_last_index": 0}, [1], [2]),
             Node("Add", {}, [2, 3], [4]), Node("Neg", {}, [4], [5])]
    return Graph(tensors=t, nodes=nodes, inputs=[0], consts=[3], outputs=[5], opset=18,
                 values={3: np.array([[1], [2], [3]], dtype=np.int64)})


def _argmax_alone() -> Graph:
    t = [TensorType("float32", (3, 4)), TensorType("int64", (3, 1))]
    return Graph(tensors=t, nodes=[Node("ArgMax", {"axis": 1, "keepdims": 1, "select_last_index": 0}, [0], [1])],
                 inputs=[0], consts=[], outputs=[1], opset=18)


def test_an_error_a_wrong_dtype_made_upstream_is_that_wrong_answers_cause():
    """Catch: the error reduces to ArgMax -> Add, the reducer finds ArgMax alone a
    ``dtype_mismatch`` on this compiler, and the error's cause is the lone ArgMax's; the
    error keeps its own fingerprint and cluster."""
    cfg = CheckConfig([SPEC], crosscheck=False)
    with Pool(120) as pool:
        case = _case(_argmax_add(), "00000-upstream")
        v = check(pool, case, cfg)["verdicts"][0]
        assert v["verdict"] == "compile_error", v
        res = Reducer(pool, cfg, Target.of(SPEC, v)).reduce(case)
        assert res.case.graph.op_names() == ["ArgMax", "Add"], res.log
        assert res.upstream is not None, res.log
        assert res.upstream.case.graph.op_names() == ["ArgMax"]
        assert res.upstream.verdict.verdict == "dtype_mismatch"

        lone = _case(_argmax_alone(), "00001-alone")
        lv = check(pool, lone, cfg)["verdicts"][0]
        assert lv["verdict"] == "dtype_mismatch", lv
        lres = Reducer(pool, cfg, Target.of(SPEC, lv)).reduce(lone)
        assert lres.upstream is None  # a wrong answer has no upstream step
    err = identity("compile_error", SPEC.name, res.verdict.error, res.case.graph, res.matter, None)
    up = upstream_cause(err, "dtype_mismatch", SPEC.name, res.upstream.case.graph, res.upstream.matter,
                        res.upstream.verdict.comparison)
    alone = identity("dtype_mismatch", SPEC.name, None, lres.case.graph, lres.matter, lres.verdict.comparison)
    assert up["cause"] == alone["cause"] != err["cause"]
    assert up["upstream"]["error_cause"] == err["cause"]


def test_an_error_with_no_wrong_operator_upstream_keeps_its_own_cause():
    """Silent: a compiler that fails where an Add consumes a Relu and computes each on its own
    right (tests.fake_backends.ReluAddRaises): the error reduces to Relu -> Add, Relu alone
    passes, so there is no upstream and the error's cause is its cluster."""
    spec = BackendSpec("tests.fake_backends:ReluAddRaises")
    cfg = CheckConfig([spec], crosscheck=False)
    t = [TensorType("float32", (3, 4))] * 5
    g = Graph(tensors=t, nodes=[Node("Neg", {}, [0], [1]), Node("Relu", {}, [1], [2]), Node("Add", {}, [2, 0], [3]),
                                Node("Abs", {}, [3], [4])],
              inputs=[0], consts=[], outputs=[4], opset=18)
    with Pool(120) as pool:
        case = _case(g, "00002-fusion")
        v = check(pool, case, cfg)["verdicts"][0]
        assert v["verdict"] == "compile_error", v
        res = Reducer(pool, cfg, Target.of(spec, v)).reduce(case)
    assert res.case.graph.op_names() == ["Relu", "Add"], res.log
    assert res.upstream is None, res.log
    assert not any(x.startswith("upstream:") for x in res.log)
