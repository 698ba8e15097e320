"""A failure the base build shares is never new.

Head versus base compares one model on two builds of one compiler: a failure is shared
when it is the same failure, whatever each build's spelling of its message (source lines,
C++ signatures, object reprs, stack frames), and when the base build stops first at
another operator of the model, sharing is decided on the failure's reduced case. Two
different failures (other operators, other words) stay apart.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest
import yaml

from dlgate.backends.base import BackendSpec
from dlgate.check import CheckConfig, Prepared, check
from dlgate.cli import main
from dlgate.exec.worker import Pool
from dlgate.gate import baseline as B
from dlgate.gate import decide as D
from dlgate.gate import triage as T
from dlgate.gate.journal import read_records
from dlgate.graph.ir import Graph, Node
from dlgate.materialize.onnx_model import to_onnx
from dlgate.ops.base import TensorType
from dlgate.oracle import verdict as V
from dlgate.oracle.signature import cluster, essence, share_key
from dlgate.reduce.reducer import Reducer, Target
from tests.helpers import onnx_ops, seed_where

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# -- one failure, two builds' spellings ----------------------------------------------------------
ORT_POOL = ("[ONNXRuntimeError] : 1 : FAIL : Exception during initialization: /onnxruntime_src/onnxruntime/core/"
            "providers/cpu/nn/pool_attributes.h:{line} onnxruntime::PoolAttributes::PoolAttributes{fn} pads[dim] < "
            "kernel_shape[dim] && pads[dim + kernel_shape.size()] < kernel_shape[dim] was false. {words}\n")
#: onnxruntime before its pooling attributes took a templated kernel info, and 1.32 (as it prints it).
POOL_OLD = ORT_POOL.format(line=78, fn="(const onnxruntime::OpNodeProtoHelper<onnxruntime::ProtoHelperNodeContext>&, "
                           "const string&, int)", words="Pad should be smaller than kernel.")
POOL_NEW = ORT_POOL.format(line=88, fn="(const KernelInfoType&, const std::string&, int) [with KernelInfoType = "
                           "onnxruntime::OpKernelInfo; std::string = std::__cxx11::basic_string<char>]",
                           words="Pad should be smaller than kernel.")
KERNEL_OLD = "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Failed to find kernel for {op}(1) (node {op}). Kernel not found"
KERNEL_NEW = ("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Failed to find kernel for com.microsoft.{op}(1) "
              "(node:'{op}' ep:'CPUExecutionProvider'). Kernel not found")
#: TVM's Op repr in two releases (0.27 prints ``ty``), and the older ``Op(tir.x)`` after a C++ stack.
OP_STRUCT_INFO = ('unknown intrinsic ir.Op(span=None, struct_info_=None, name="tir.{f}", op_type=None, '
                  'description="", arguments=[], attrs_type_key="", num_inputs=1, support_level=10)')
OP_TY = ('unknown intrinsic ir.Op(span=None, ty=ir.Type(span=None), name="tirx.{f}", description="", arguments=(), '
         'attrs_type_key="", num_inputs=1, support_level=10)')
OP_TRACE = """Traceback (most recent call last):
  28: tvm::codegen::CodeGenLLVM::VisitStmt_(tvm::tir::AssertStmtNode const*)
        at /data/tvm/src/target/llvm/codegen_llvm.cc:2125
  0: tvm::codegen::CodeGenLLVM::CreateIntrinsic(tvm::tir::CallNode const*)
        at /data/tvm/src/target/llvm/codegen_llvm.cc:1512
  File "/data/tvm/src/target/llvm/codegen_llvm.cc", line 1512, in tvm::codegen::CodeGenLLVM::CreateIntrinsic(...)
    LOG(FATAL) << "unknown intrinsic " << op->op;
                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^
tvm.error.InternalError: unknown intrinsic Op(tir.{f})"""


#: TVM 0.25 and 0.26 spelling one converter's dtype error (Elu of float64), and one hint
DTYPES_OLD = ("Binary operators must have the same datatype for both operands.  However, R.subtract(R.const(1.0, "
              "\"float32\"), lv) uses datatype float32 on the LHS (StructInfo of R.Tensor((), dtype=\"float32\")), and "
              "datatype float64 on the RHS (StructInfo of R.Tensor((2, 3), dtype=\"float64\")).")
DTYPES_NEW = DTYPES_OLD.replace("datatype float", "datatype T.float").replace("StructInfo of", "Type of")
HINT = "Cannot use and / or / not operator to Expr, hint: use tvm.tirx.all / tvm.tirx.any instead"


def err(message: str, type_: str = "Fail", frames=("onnxruntime_inference_collection.py:_create_inference_session",)):
    return {"type": type_, "message": message, "frames": list(frames)}


def test_one_failure_spelled_by_two_releases_is_shared():
    assert essence(POOL_OLD) == essence(POOL_NEW) and "Pad should be smaller than kernel" in essence(POOL_NEW)
    assert essence(KERNEL_OLD.format(op="QuickGelu")) == essence(KERNEL_NEW.format(op="QuickGelu"))
    assert essence(OP_STRUCT_INFO.format(f="asinh")) == essence(OP_TY.format(f="asinh")) == \
        essence(OP_TRACE.format(f="asinh"))
    # the same pairs as whole failures: another exception class and other stack frames too
    tvm_new = err(OP_TY.format(f="asinh"), "InternalError",
                  ["build.py:codegen_build", "function.pxi:tvm_ffi.core.Function.__call__",
                   "codegen_llvm.cc:virtual llvm::Value* tvm::codegen::CodeGenLLVM::CreateIntrinsic(const tvm::CallNode*)"])
    tvm_old = err(OP_STRUCT_INFO.format(f="asinh"), "TVMError", ["build_module.py:build", "_ctypes/packed_func.py:__call__"])
    assert share_key("compile_error", "tvm", tvm_new) == share_key("compile_error", "tvm", tvm_old)
    assert share_key("compile_error", "onnxruntime", err(POOL_OLD)) == \
        share_key("compile_error", "onnxruntime", err(POOL_NEW, "RuntimeException"))
    # TVM 0.27 prints the assertion's condition before the message TVM 0.26 printed alone
    # (Shrink of uint8, replayed on the two releases)
    assert share_key("compile_error", "tvm", err("cannot make uint from negative value -1", "InternalError")) == \
        share_key("compile_error", "tvm", err("Check failed: (value >= 0) is false: cannot make uint from negative "
                                              "value -1", "InternalError"))
    # TVM 0.26 prints a dtype as TVMScript does and a struct info as a type, and lengthens a hint
    # (Elu, Selu of float64 and Sum of float64, replayed on 0.25 and 0.26)
    assert share_key("compile_error", "tvm", err(DTYPES_OLD, "TypeError")) == \
        share_key("compile_error", "tvm", err(DTYPES_NEW, "TypeError"))
    assert share_key("compile_error", "tvm", err(HINT, "ValueError")) == share_key(
        "compile_error", "tvm", err(HINT.replace(" instead", ", if it is None checking, use node is not None"), "ValueError"))
    # a change to the file the error comes from moves its line: still the same failure
    assert share_key("compile_error", "onnxruntime", err(POOL_NEW)) == \
        share_key("compile_error", "onnxruntime", err(POOL_NEW.replace(".h:88", ".h:131")))


#: TVM 0.25's and 0.26's bare IndexError on one reduced SplitToSequence (bool, position -1),
#: as each release raised it: 0.26's ``__getitem__`` forwards to its FFI's ``_getitem``.
BARE_025 = ["onnx_frontend.py:from_onnx", "onnx_frontend.py:_construct_nodes", "onnx_frontend.py:_convert_operator",
            "onnx_frontend.py:_impl_v11", "expr.py:__getitem__"]
BARE_026 = ["onnx_frontend.py:_construct_nodes", "onnx_frontend.py:_convert_operator", "onnx_frontend.py:_impl_v11",
            "expr.py:__getitem__", "__init__.py:_getitem"]


def test_a_bare_error_is_shared_by_its_type_and_where_it_was_raised():
    """A message with no words: the same exception raised by the same function from the same
    caller is one failure, a forwarding wrapper of the same name aside; another type, another
    raising function or another caller is another failure."""
    key = lambda e: share_key("compile_error", "tvm", e)  # noqa: E731
    bare = key(err("", "IndexError", BARE_025))
    assert bare == key(err("", "IndexError", BARE_026))
    assert bare != key(err("", "KeyError", BARE_025))
    assert bare != key(err("", "IndexError", BARE_025[:-1] + ["shape_expr.py:_index"]))
    assert bare != key(err("", "IndexError", BARE_025[:-2] + ["onnx_frontend.py:_impl_v13", "expr.py:__getitem__"]))
    assert bare != key(err("", "IndexError", BARE_025[:-1]))
    # a message with words is decided on them, whatever raised it
    assert key(err("ShapeExpr index out of range", "IndexError", BARE_025)) != bare


def test_different_failures_stay_apart():
    """Other operators, other intrinsics, other words, another class: never one failure."""
    key = lambda m, kind="compile_error": share_key(kind, "onnxruntime", err(m))  # noqa: E731
    assert key(KERNEL_NEW.format(op="QuickGelu")) != key(KERNEL_NEW.format(op="Gelu"))
    assert key(KERNEL_OLD.format(op="QuickGelu")) != key(KERNEL_NEW.format(op="BiasGelu"))
    assert key(POOL_NEW) != key(POOL_NEW.replace("Pad should be smaller than kernel.",
                                                 "Dilations dimensions should match kernel shape"))
    assert key(POOL_NEW) != key(POOL_NEW, "run_error")
    assert share_key("compile_error", "tvm", err(OP_TY.format(f="asinh"))) != \
        share_key("compile_error", "tvm", err(OP_TY.format(f="acos")))
    # float16 intrinsics: one cluster (one cause whatever the function), never one shared failure
    a, b = (err(f"unknown intrinsic tirx.{f}", "TVMError", ["codegen_llvm.cc:12"]) for f in ("asinh", "acos"))
    assert cluster("compile_error", "tvm", a) == cluster("compile_error", "tvm", b)
    assert share_key("compile_error", "tvm", a) != share_key("compile_error", "tvm", b)
    # other dtypes, or another operator before the hint, stay apart
    assert share_key("compile_error", "tvm", err(DTYPES_NEW, "TypeError")) != share_key(
        "compile_error", "tvm", err(DTYPES_NEW.replace("T.float64", "T.int64"), "TypeError"))
    assert share_key("compile_error", "tvm", err(HINT, "ValueError")) != share_key(
        "compile_error", "tvm", err(HINT.replace("and / or / not", "if"), "ValueError"))
    # an assertion with no message of its own is told apart by its condition
    assert share_key("compile_error", "tvm", err("Check failed: (tensor_ty) is false:", "InternalError")) != \
        share_key("compile_error", "tvm", err("Check failed: (remap_.count(source) == 0) is false:", "InternalError"))
    assert share_key("compile_error", "tvm", err("Check failed: (value >= 0) is false: cannot make uint", "E")) != \
        share_key("compile_error", "tvm", err("Check failed: (value >= 0) is false: cannot make int", "E"))
    # a message with no words is told apart by where it stops: its frames and signal
    segv = {"type": "", "message": "", "frames": ["a.py:run", "b.py:kernel"], "signal": "SIGSEGV"}
    assert share_key("crash", "tvm", segv) != share_key("crash", "tvm", dict(segv, frames=["a.py:run", "c.py:pack"]))
    assert share_key("crash", "tvm", segv) != share_key("crash", "tvm", dict(segv, signal="SIGABRT"))


def _v(verdict: str, error=None, comparison=None) -> dict:
    return {"backend": "onnxruntime[cpu]", "verdict": verdict, "error": error, "comparison": comparison}


def test_same_compares_class_message_and_for_wrong_answers_the_output():
    assert T.same(_v("compile_error", err(POOL_NEW)), _v("compile_error", err(POOL_OLD)))
    assert not T.same(_v("compile_error", err(POOL_NEW)), _v("run_error", err(POOL_OLD)))
    assert not T.same(_v("compile_error", err(POOL_NEW)), _v("undefined"))
    wrong = _v("mismatch", comparison={"output": 1, "kind": "values"})
    assert T.same(wrong, _v("mismatch", comparison={"output": 0, "differing": [0, 1]}))
    assert not T.same(wrong, _v("mismatch", comparison={"output": 0}))


# -- the base build stops first elsewhere: the reduced case decides ------------------------------
def _case() -> Prepared:
    """``Sigmoid(Abs(x))`` and ``Relu(x)``: Abs comes first, the fault is in Sigmoid."""
    f = TensorType("float32", (2, 3))
    g = Graph([f] * 4, [Node("Abs", {}, [0], [1]), Node("Sigmoid", {}, [1], [2]), Node("Relu", {}, [0], [3])],
              inputs=[0], consts=[], outputs=[2, 3], opset=18)
    model = to_onnx(g, 7, doc="sharing").SerializeToString()
    x = np.random.default_rng(3).uniform(-1, 1, (2, 3)).astype(np.float32)
    return Prepared("sharing", {"id": "sharing", "seed": 7}, g, model, [x], {"valid": True, "method": "test",
                                                                            "reason": ""})


def _env(**kw) -> dict:
    return dict({"PYTHONPATH": REPO, "FAKE_SPELLING": "old"}, **kw)


SPEC = BackendSpec("tests.fake_backends:EnvFaults")


def _head_then_base(base_env: dict) -> dict:
    cfg = CheckConfig([SPEC], crosscheck=False)
    case = _case()
    head = Pool(120, python=sys.executable, env=_env(FAKE_FAULT="Sigmoid", FAKE_SPELLING="new"))
    base = Pool(120, python=sys.executable, env=base_env)
    with head, base:
        ref: list = []
        v = check(head, case, cfg, ref)["verdicts"][0]
        assert v["verdict"] == "compile_error", v
        res = Reducer(head, cfg, Target.of(SPEC, v), max_seconds=60).reduce(case)
        assert res.case.graph.op_names() == ["Sigmoid"], res.log
        T.on_base(base, case, cfg, SPEC, ref, v, res, head)
    return v


def _decide(v: dict) -> D.Decision:
    rec = {"case": "c1", "kind": "batch", "index": 1, "verdicts": [dict(v, confirm={"runs": 1, "reproduced": True})]}
    return D.decide([rec], B.Baseline(), "r", "pr", ["envfaults[cpu]"], True, mode="base")


def test_a_failure_the_base_build_hides_behind_an_earlier_refusal_is_pre_existing():
    """Base has head's fault (spelled as the older release spells it) and lacks a kernel for
    Abs, which comes first: it refuses the model, and fails the reduced case as head does."""
    v = _head_then_base(_env(FAKE_FAULT="Sigmoid", FAKE_REFUSE="Abs"))
    base = v["base"]
    assert base["reproduces"] and base["decided_on"] == "reduced case", base
    assert base["whole"]["verdict"] == "unsupported" and base["verdict"] == "compile_error"
    d = _decide(v)
    assert [g["class"] for g in d.failure_groups()] == ["pre-existing"] and d.exit_code() == D.EXIT_OK


def test_a_head_only_fault_behind_a_base_refusal_stays_new():
    v = _head_then_base(_env(FAKE_REFUSE="Abs"))
    base = v["base"]
    assert not base["reproduces"] and base["decided_on"] == "reduced case" and base["verdict"] == "pass", base
    d = _decide(v)
    assert [g["class"] for g in d.failure_groups()] == ["new"] and d.exit_code() == D.EXIT_FAIL
    assert "on the reduced case" in D_summary(d)


def test_a_base_build_that_passes_the_model_is_not_asked_about_the_reduced_case():
    v = _head_then_base(_env())
    assert v["base"] == dict(v["base"], verdict="pass", reproduces=False, decided_on="case") and "whole" not in v["base"]


def D_summary(d: D.Decision) -> str:
    from dlgate.gate.report import summary

    return summary(d, "new")


# -- end to end: dlgate run, head versus base ----------------------------------------------------
def _cfg(tmp_path, base_env: dict, **kw) -> str:
    doc = {"campaign": "share", "models": 4, "min_nodes": 3, "max_nodes": 5, "opset": 18,
           "operators": ["Abs", "Sigmoid", "Relu", "Neg"], "dtypes": ["float32"],
           "backends": ["tests.fake_backends:EnvFaults"], "timeout_s": 120, "confirm_runs": 1, "crosscheck": False,
           "reduce_seconds": 30, "base": {"python": sys.executable, "env": base_env}}
    doc.update(kw)
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(doc))
    return str(p)


@pytest.mark.parametrize("base_fault, expect", [("Sigmoid", 0), ("", 1)])
def test_run_decides_sharing_on_the_reduced_case(tmp_path, monkeypatch, base_fault, expect):
    monkeypatch.chdir(tmp_path)
    for k, x in _env(FAKE_FAULT="Sigmoid", FAKE_SPELLING="new").items():
        monkeypatch.setenv(k, x)
    cfg = _cfg(tmp_path, _env(FAKE_FAULT=base_fault, FAKE_REFUSE="Abs"))
    # a batch with a model where Abs comes before a Sigmoid: the base build meets the Abs it
    # refuses first, so it fails that model otherwise and only the reduced case can decide
    seed = seed_where(cfg, lambda cases: any(_abs_before_sigmoid(onnx_ops(c)) for c in cases), "s")
    assert main(["run", "--config", cfg, "--seed", seed, "--out", "o"]) == expect
    v = json.load(open("o/verdict.json"))
    groups = v["pre_existing"] if base_fault else v["new"]
    assert groups and not (v["new"] if base_fault else v["pre_existing"])
    decided = [v["base"] for r in read_records("o/results.jsonl") for v in r["verdicts"] if v["verdict"] != "pass"]
    assert all(b["reproduces"] is bool(base_fault) for b in decided), decided
    # models where Abs comes before Sigmoid: the base build refuses them whole, the reduced case decides
    assert "reduced case" in {b["decided_on"] for b in decided}, decided


def _abs_before_sigmoid(ops: list) -> bool:
    return "Abs" in ops and "Sigmoid" in ops[ops.index("Abs"):]


# -- not reduced: the failure's cone decides -----------------------------------------------------
def _cone_case(dynamic_dims: bool = False) -> Prepared:
    """``Sigmoid(x)`` and ``Relu(Abs(x))``: Abs comes first, outside Sigmoid's cone. With
    ``dynamic_dims``, the batch axis is symbolic and bound to 4 too."""
    from dlgate.graph import dynamic

    f = TensorType("float32", (2, 3))
    g = Graph([f] * 4, [Node("Abs", {}, [0], [1]), Node("Sigmoid", {}, [0], [2]), Node("Relu", {}, [1], [3])],
              inputs=[0], consts=[], outputs=[2, 3], opset=18)
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    shapes = []
    if dynamic_dims:
        g.dynamic = {"dims": [[0, 0, "batch"]], "bindings": [{"batch": 4}]}
        shapes = [({"batch": 4}, dynamic.at(g, 1), [rng.uniform(-1, 1, (4, 3)).astype(np.float32)])]
    model = to_onnx(g, 7, doc="cone").SerializeToString()
    return Prepared("cone", {"id": "cone", "seed": 7}, g, model, [x], {"valid": True, "method": "test", "reason": ""},
                    shapes)


def test_the_cone_is_what_the_failure_depends_on_with_the_case_s_own_inputs():
    from dlgate.gate.cone import cone_case

    case = _cone_case(dynamic_dims=True)
    fault = {"verdict": "compile_error", "error": err("lower_sigmoid.cc:78 Sigmoid lowering needs a 4-D input.")}
    cone, keep = cone_case(case, fault)
    assert keep == [1] and cone.graph.op_names() == ["Sigmoid"] and np.array_equal(cone.inputs[0], case.inputs[0])
    assert cone.graph.dynamic == {"dims": [[0, 0, "batch"]], "bindings": [{"batch": 4}]}  # still symbolic
    (b, g4, xs4), = cone.shapes
    assert b == {"batch": 4} and g4.tensors[g4.outputs[0]].shape == (4, 3) and xs4[0] is case.shapes[0][2][0]
    wrong = {"verdict": "mismatch", "comparison": {"output": 1}}  # Relu's output: Abs and Relu
    assert cone_case(case, wrong)[1] == [0, 2]
    # no place known (nothing named, no output), or a cone that is the whole model: no cone
    assert cone_case(case, {"verdict": "crash", "error": err("worker died: killed by SIGSEGV")}) is None
    assert cone_case(_case(), {"verdict": "mismatch", "comparison": {"output": 0}})[1] == [0, 1]
    f = TensorType("float32", (2, 3))
    chain = Graph([f] * 3, [Node("Abs", {}, [0], [1]), Node("Sigmoid", {}, [1], [2])], inputs=[0], consts=[],
                  outputs=[2], opset=18)
    whole = Prepared("chain", {"id": "chain", "seed": 1}, chain, to_onnx(chain, 1).SerializeToString(),
                     list(case.inputs), {"valid": True, "method": "test", "reason": ""})
    assert cone_case(whole, fault) is None


def _unreduced(tmp_path, head_env: dict, base_env: dict) -> dict:
    """Head's failure on the cone case, triaged with ``reduce: false`` against the base build."""
    cfg = CheckConfig([SPEC], crosscheck=False)
    case = _cone_case()
    head = Pool(120, python=sys.executable, env=_env(**head_env))
    base = Pool(120, python=sys.executable, env=base_env)
    with head, base:
        ref: list = []
        v = check(head, case, cfg, ref)["verdicts"][0]
        assert v["verdict"] != "pass", v
        tri = T.Triage(head, cfg, str(tmp_path), "share", "r", confirm_runs=1, reduce=False, base_pool=base)
        assert tri.failure(case, SPEC, ref, v) is None  # not reduced
    return v


@pytest.mark.parametrize("head_env, shared", [
    ({"FAKE_FAULT": "Sigmoid", "FAKE_SPELLING": "new"}, {"FAKE_FAULT": "Sigmoid"}),  # an error
    ({"FAKE_BUG": "first"}, {"FAKE_BUG": "first"}),  # a wrong answer at Sigmoid's output
])
@pytest.mark.parametrize("base_shares", [True, False])
def test_an_unreduced_failure_is_shared_or_new_on_its_cone(tmp_path, head_env, shared, base_shares):
    """The base build refuses Abs, which comes first: the whole model cannot tell. On the
    cone (Sigmoid alone) a base build with head's fault shares it (pre-existing), one
    without passes it (new)."""
    v = _unreduced(tmp_path, head_env, _env(FAKE_REFUSE="Abs", **(shared if base_shares else {})))
    base = v["base"]
    assert base["decided_on"] == "cone case" and base["cone"] == {"operators": 1, "of": 3}, base
    assert base["whole"]["verdict"] == "unsupported" and base["reproduces"] is base_shares, base
    alike = V.VALUE_CLASSES if v["verdict"] in V.VALUE_CLASSES else (v["verdict"],)
    assert base["verdict"] in alike if base_shares else base["verdict"] == "pass", base
    d = _decide(v)
    assert [g["class"] for g in d.failure_groups()] == ["pre-existing" if base_shares else "new"]
