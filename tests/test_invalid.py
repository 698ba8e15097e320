"""Invalid models on purpose (dlgate.invalid): each rule's model breaks that rule and nothing
else, ONNX's full checker rejects it for that reason, the draw is deterministic; the oracle
passes a clean rejection and makes its own findings of a crash or an acceptance (fake
backends with those faults), never of a valid model's wrong answer; onnxruntime 1.32 and
TVM 0.27 reject a small batch cleanly; the campaign key runs it through the gate."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections import Counter

import numpy as np
import onnx
import pytest
import yaml
from onnx import TensorProto, helper

from dlgate.backends.base import BackendSpec
from dlgate.case import make_case
from dlgate.check import CheckConfig, check, prepare
from dlgate.exec.outcome import Outcome
from dlgate.exec.worker import Pool
from dlgate.gate.config import load as load_config
from dlgate.gate.fields import ConfigError
from dlgate.graph.generator import GenConfig, Generator
from dlgate.invalid import oracle as IO
from dlgate.invalid.base import PREFIX, rejection
from dlgate.invalid.case import chosen, make_invalid
from dlgate.invalid.registry import RULES, NotDisrupted, disrupt
from dlgate.oracle import verdict as V
from dlgate.seeds import sub_seed

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN = Generator(GenConfig(max_nodes=8, dynamic_share=0.25))


def _cases(rule: str, want: int = 3, root: str = "inv-rules", where=None):
    """The first ``want`` generated cases whose model ``rule`` can break (and, where given,
    that ``where(case)`` takes), with the result."""
    out = []
    for i in range(200):
        c = make_case(GEN, root, "t", i)
        if where is not None and not where(c):
            continue
        try:
            out.append((c, disrupt(c.model_bytes, sub_seed(c.seed, "invalid"), rules=(rule,))))
        except NotDisrupted:
            continue
        if len(out) == want:
            return out
    raise AssertionError(f"fewer than {want} of 200 cases can break {rule}")


def _strip(nodes, drop: str | None = None):
    """The nodes as comparable text, leaving out those whose name starts with ``drop``."""
    return [n.SerializeToString() for n in nodes if not (drop and n.name.startswith(drop))]


def _same_except_nodes(a: onnx.ModelProto, b: onnx.ModelProto) -> None:
    for key in ("input", "output", "initializer", "value_info"):
        assert [x.SerializeToString() for x in getattr(a.graph, key)] == \
            [x.SerializeToString() for x in getattr(b.graph, key)], key
    assert a.opset_import == b.opset_import and a.ir_version == b.ir_version


def _undo_inserted(valid, bad, info, kind: str) -> None:
    """dtype and shape: one node of ``kind`` inserted right before the target, whose input it
    replaces; removing it and restoring the input gives the valid model back."""
    i = info["index"]
    helper_node = bad.graph.node[i]
    assert helper_node.op_type == kind and helper_node.name.startswith(PREFIX)
    target = bad.graph.node[i + 1]
    j = info["input"]
    assert target.input[j] == helper_node.output[0]
    assert helper_node.input[0] == valid.graph.node[i].input[j]
    target.input[j] = helper_node.input[0]
    assert _strip(bad.graph.node, PREFIX) == _strip(valid.graph.node)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_each_rule_breaks_exactly_its_rule_and_the_full_checker_rejects_it(rule):
    for c, d in _cases(rule):
        valid = onnx.load_from_string(c.model_bytes)
        bad = onnx.load_from_string(d.model)
        assert rejection(valid) is None  # the case was valid
        why = rejection(bad)
        assert why is not None and why == d.info["checker"]
        info = d.info
        assert info["rule"] == rule and info["breaks"] == RULES[rule].breaks
        assert all("accepted" in r["why"] for r in info.get("redrawn", []))  # only rule asked: only its sites
        _same_except_nodes(valid, bad)
        node = valid.graph.node[info["index"]]
        assert (node.name, node.op_type) == (info["node"], info["op_type"])
        if rule == "dtype":
            _undo_inserted(valid, bad, info, "Cast")
            assert "unsupported type" in why and node.name in why
        elif rule == "shape":
            _undo_inserted(valid, bad, info, "Concat")
            assert "Incompatible dimensions" in why or "ncompatible" in why
        elif rule == "dangling":
            changed = [k for k, (a, b) in enumerate(zip(valid.graph.node, bad.graph.node)) if a != b]
            assert changed == [info["index"]] and len(valid.graph.node) == len(bad.graph.node)
            renamed = bad.graph.node[info["index"]].input[info["input"]]
            assert renamed not in {o for n in bad.graph.node for o in n.output} and renamed in why
            bad.graph.node[info["index"]].input[info["input"]] = node.input[info["input"]]
            assert _strip(bad.graph.node) == _strip(valid.graph.node)
        elif rule == "duplicate":
            twin = bad.graph.node[info["index"] + 1]
            assert twin.name.startswith(PREFIX) and list(twin.output) == list(node.output)
            assert list(twin.input) == list(node.input) and twin.attribute == node.attribute
            assert _strip(bad.graph.node, PREFIX) == _strip(valid.graph.node)
            assert "single static assignment" in why
        elif rule == "attribute":
            after = bad.graph.node[info["index"]]
            assert [n for k, n in enumerate(bad.graph.node) if k != info["index"]] == \
                [n for k, n in enumerate(valid.graph.node) if k != info["index"]]
            assert (after.op_type, list(after.input), list(after.output)) == \
                (node.op_type, list(node.input), list(node.output))
            values = {a.name: helper.get_attribute_value(a) for a in after.attribute}
            got = values[info["attribute"]]
            assert info["value"] == got or info["value"] in got  # the rank it lies past: the next test
        elif rule == "arity":
            after = bad.graph.node[info["index"]]
            schema = onnx.defs.get_schema(node.op_type, c.graph.opset)
            assert not schema.min_input <= len(after.input) <= schema.max_input
            assert (after.op_type, after.attribute, list(after.output)) == \
                (node.op_type, node.attribute, list(node.output))
            assert node.name in why and "input size" in why


def test_the_attribute_rule_puts_the_axis_outside_every_range():
    for c, d in _cases("attribute", want=4):
        bad = onnx.load_from_string(d.model)
        g = onnx.shape_inference.infer_shapes(onnx.load_from_string(c.model_bytes)).graph
        known = {vi.name: len(vi.type.tensor_type.shape.dim) for vi in list(g.value_info) + list(g.input)
                 + list(g.output)}
        known.update({i.name: len(i.dims) for i in bad.graph.initializer})
        rank = known[bad.graph.node[d.info["index"]].input[0]]
        assert d.info["value"] in (rank + 2, -rank - 2)


def test_a_change_the_checker_accepts_is_redrawn_never_kept():
    # LpNormalization's shape inference does not check its axis: not known invalid
    g = helper.make_graph([helper.make_node("LpNormalization", ["x"], ["y"], name="n0_LpNormalization", axis=1),
                           helper.make_node("Softmax", ["y"], ["z"], name="n1_Softmax", axis=1)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    seen_redrawn = False
    for seed in range(8):
        d = disrupt(m.SerializeToString(), seed, rules=("attribute",))
        assert d.info["op_type"] == "Softmax" and rejection(onnx.load_from_string(d.model))
        for r in d.info.get("redrawn", []):
            assert r["op_type"] == "LpNormalization" and "accepted" in r["why"]
            seen_redrawn = True
    assert seen_redrawn
    alone = helper.make_graph([g.node[0]], "g", list(g.input),
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    m2 = helper.make_model(alone, opset_imports=[helper.make_opsetid("", 17)])
    m2.ir_version = 8
    with pytest.raises(NotDisrupted, match="accepted"):
        disrupt(m2.SerializeToString(), 0, rules=("attribute",))
    with pytest.raises(ValueError, match="unknown invalid-model rule"):
        disrupt(m2.SerializeToString(), 0, rules=("nosuch",))


_DIGEST = """
import hashlib
from dlgate.case import make_case
from dlgate.graph.generator import GenConfig, Generator
from dlgate.invalid.case import make_invalid
gen = Generator(GenConfig(max_nodes=8, dynamic_share=0.25))
h = hashlib.sha256()
for i in range(12):
    c = make_case(gen, "inv-det", "t", i)
    p = make_invalid(c, c.meta())
    h.update(p.model if p else b"-")
    h.update(repr(sorted(p.meta["invalid"].items()) if p else None).encode())
    for x in (p.inputs if p else []):
        h.update(x.tobytes())
print(h.hexdigest())
"""


def test_the_draw_is_deterministic_across_processes():
    digests = set()
    for hashseed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hashseed, PYTHONPATH=REPO)
        out = subprocess.run([sys.executable, "-c", _DIGEST], env=env, capture_output=True, text=True, check=True)
        digests.add(out.stdout.strip())
    here = {}
    exec(compile(_DIGEST.replace("print(h.hexdigest())", "here['d'] = h.hexdigest()"), "digest", "exec"),
         {"here": here})
    assert digests == {here["d"]}


def test_the_share_is_drawn_per_case_and_leaves_the_valid_cases_alone():
    seeds = [make_case(GEN, "inv-share", "t", i).seed for i in range(200)]
    picked = [s for s in seeds if chosen(s, 0.25)]
    assert 30 <= len(picked) <= 70 and not any(chosen(s, 0.0) for s in seeds)
    assert set(picked) <= {s for s in seeds if chosen(s, 0.5)}  # a larger share keeps the smaller's cases
    # the valid case generated at a seed does not depend on the share
    a, b = make_case(GEN, "inv-share", "t", 3), make_case(GEN, "inv-share", "t", 3)
    assert a.model_bytes == b.model_bytes


def _info(rule="dtype", op="Relu"):
    return {"rule": rule, "op_type": op, "node": "n0_" + op, "detail": "d", "checker": "c", "breaks": "b"}


@pytest.mark.parametrize("status,error,want", [
    ("compile_error", {"type": "Fail", "message": "Type Error", "stage": "compile"}, V.PASS),
    ("run_error", {"type": "RuntimeError", "message": "bad", "stage": "run"}, V.PASS),
    ("unsupported", {"type": "NotImplemented", "message": "no kernel"}, V.PASS),
    ("crash", {"type": "Crash", "message": "worker died: killed by SIGSEGV", "signal": "SIGSEGV"}, "invalid_crash"),
    ("timeout", {"type": "Timeout", "message": "no answer within 60 s"}, "invalid_timeout"),
    ("oom", {"type": "OutOfMemory", "message": "over 4096 MB"}, "invalid_oom"),
    ("ok", None, "invalid_accepted"),
])
def test_the_oracle_classes(status, error, want):
    v = IO.judge("onnxruntime", "onnxruntime[cpu]", Outcome(status, outputs=[] if status == "ok" else None,
                                                           error=error), _info())
    assert v.verdict == want
    assert (v.verdict in V.FAILURES) == (want != V.PASS)
    assert v.verdict not in V.VALUE_CLASSES
    if want != V.PASS:
        assert "dtype at Relu" in v.detail and v.signature["id"]
    else:
        assert v.detail.startswith("rejected cleanly (dtype at Relu)")


def test_tvms_tolerance_covers_what_its_check_warns_about_and_dtypes_it_casts_not_shapes_or_axes():
    ok = Outcome("ok", outputs=[])
    for rule in ("duplicate", "arity", "dangling", "dtype"):
        v = IO.judge("tvm", "tvm[cpu]", ok, _info(rule))
        assert v.verdict == V.PASS and "tolerated" in v.detail
        assert ("only warns" in v.detail) == (rule != "dtype")
        assert IO.judge("onnxruntime", "onnxruntime[cpu]", ok, _info(rule)).verdict == "invalid_accepted"
    for rule in ("shape", "attribute"):
        assert IO.judge("tvm", "tvm[cpu]", ok, _info(rule)).verdict == "invalid_accepted"
    crash = Outcome("crash", error={"type": "Crash", "message": "worker died: killed by SIGSEGV", "signal": "SIGSEGV"})
    assert IO.judge("tvm", "tvm[cpu]", crash, _info("arity")).verdict == "invalid_crash"


def test_identity_is_the_rule_the_operator_and_the_error_not_the_model():
    err = {"type": "Crash", "message": "worker died: killed by SIGSEGV", "signal": "SIGSEGV", "frames": []}
    a = IO.judge("tvm", "tvm[cpu]", Outcome("crash", error=err), _info("arity", "SequenceInsert")).to_json()
    b = IO.judge("tvm", "tvm[cpu]", Outcome("crash", error=err), dict(_info("arity", "SequenceInsert"),
                                                                      node="n7_SequenceInsert")).to_json()
    c = IO.judge("tvm", "tvm[cpu]", Outcome("crash", error=err), _info("dtype", "SequenceInsert")).to_json()
    ia, ib, ic = (IO.identity(x, i) for x, i in ((a, _info("arity", "SequenceInsert")),
                                                 (b, _info("arity", "SequenceInsert")),
                                                 (c, _info("dtype", "SequenceInsert"))))
    assert ia["fingerprint"] == ib["fingerprint"] and ia["cluster"] == ib["cluster"]
    assert ia["cluster"] != ic["cluster"]
    assert ia["memory_safety"]["signal"] == "SIGSEGV" and ia["reduced"] is False


def test_graph_readers_are_not_judged_on_an_invalid_model():
    assert IO.reads_graph("torch") and IO.reads_graph("inductor") and IO.reads_graph("tvm-relax")
    assert not IO.reads_graph("tvm") and not IO.reads_graph("onnxruntime")
    assert not IO.reads_graph("tests.invalid_backends:AcceptingOnnxRuntime")


def _invalid(rule: str, want: int = 1, root: str = "inv-rules", where=None):
    out = []
    for c, _ in _cases(rule, want, root, where):
        meta = c.meta()
        # make_invalid draws the rule from the seed: ask for this rule's by drawing it here
        d = disrupt(c.model_bytes, sub_seed(c.seed, "invalid"), rules=(rule,))
        p = make_invalid(c, meta)
        p.model, p.meta = d.model, dict(p.meta, invalid=d.info)
        out.append((c, p))
    return out


FAKE = "tests.invalid_backends:"


def _onnxruntime_loads(c) -> bool:
    """Whether onnxruntime (full optimizations) loads the valid model of case ``c``: what
    AcceptingOnnxRuntime runs in place of the invalid one, so only then does it accept."""
    from dlgate.materialize.onnx_model import to_onnx
    from tests.helpers import ort_session

    try:
        ort_session(to_onnx(c.graph, 0).SerializeToString(), level=None, severity=4)
    except Exception:  # noqa: BLE001 - onnxruntime's own error types
        return False
    return True


def test_catch_a_crash_on_an_invalid_dtype_and_an_accepting_compiler_and_nothing_on_valid_models():
    """The invalid cases are drawn among those whose valid model onnxruntime loads (the
    accepting compiler runs that one)."""
    cfg = CheckConfig([BackendSpec(FAKE + "SegfaultingOnnxRuntime"), BackendSpec(FAKE + "AcceptingOnnxRuntime"),
                       BackendSpec("torch")])
    with Pool(60, 4096) as pool:
        for _c, p in _invalid("dtype", 2, where=_onnxruntime_loads):
            rec = IO.check_invalid(pool, p, cfg)
            seg, acc, ref = rec["verdicts"]
            assert seg["verdict"] == "invalid_crash" and seg["error"]["signal"] == "SIGSEGV"
            assert acc["verdict"] == "invalid_accepted" and "dtype at" in acc["detail"]
            assert ref["verdict"] == V.UNSUPPORTED  # torch reads the graph: not judged
            assert rec["invalid"]["rule"] == "dtype"
        for _c, p in _invalid("dangling", 1, where=_onnxruntime_loads):
            rec = IO.check_invalid(pool, p, cfg)
            assert rec["verdicts"][0]["verdict"] == V.PASS  # no dtype fault: onnxruntime rejects it
            assert "rejected cleanly" in rec["verdicts"][0]["detail"]
            assert rec["verdicts"][1]["verdict"] == "invalid_accepted"
        # the same compilers on valid models: no invalid class, whatever the verdict
        cfg2 = CheckConfig([BackendSpec(FAKE + "SegfaultingOnnxRuntime"), BackendSpec(FAKE + "AcceptingOnnxRuntime"),
                            BackendSpec("dlgate.backends.testing:MisconvertingOnnxRuntime",
                                        options=(("convert_from", "Relu"), ("convert_to", "Abs")))],
                           crosscheck=False)
        gen = Generator(GenConfig(max_nodes=3, ops=("Relu", "Add"), dtypes=("float32",)))
        wrong = 0
        for i in range(4):
            c = make_case(gen, "inv-valid", "t", i)
            rec = check(pool, prepare(c.meta(), c.graph, c.model_bytes), cfg2)
            verdicts = [v["verdict"] for v in rec["verdicts"]]
            assert not set(verdicts) & set(V.INVALID_FINDINGS)
            assert verdicts[:2] == [V.PASS, V.PASS]
            wrong += verdicts[2] in V.VALUE_CLASSES
        assert wrong  # the misconverted Relu is a wrong answer, never an invalid-model finding


def test_a_hang_the_valid_model_shares_is_not_an_invalid_model_finding():
    """A compiler that hangs on any model holding Relu, before it looks at anything else (as
    TVM's importer hangs on a SplitToSequence pair converted before a broken node): on an
    invalid case whose valid model holds Relu, the valid model hangs too, so the case cannot
    judge the broken rule: ``invalid`` (not judged), not ``invalid_timeout``. On one without
    Relu it compiles as onnxruntime and rejects the model cleanly. (That a crash only the
    invalid model causes stays a finding is the test above.)"""
    spec = BackendSpec("tests.fake_backends:HangsOn", options=(("hang", "Relu"),))
    cfg = CheckConfig([spec])
    with Pool(2, 4096) as pool:
        (_c, p), = _invalid("dtype", 1, "inv-hang", where=lambda c: "Relu" in c.graph.op_names())
        (v,) = IO.check_invalid(pool, p, cfg)["verdicts"]
        assert v["verdict"] == V.INVALID, v
        assert v["detail"].startswith("not judged: the valid model this case was made from gives no answer too")
        assert "dtype at" in v["detail"]
        (_c, p), = _invalid("dtype", 1, "inv-hang", where=lambda c: "Relu" not in c.graph.op_names())
        (v,) = IO.check_invalid(pool, p, cfg)["verdicts"]
        assert v["verdict"] == V.PASS and v["detail"].startswith("rejected cleanly"), v
    assert IO.valid_model(p) == make_case(GEN, "inv-hang", "t", p.meta["index"]).model_bytes  # the very bytes


def test_onnxruntime_rejects_a_batch_of_invalid_models_cleanly():
    cfg = CheckConfig([BackendSpec("onnxruntime"), BackendSpec("onnxruntime", opt_level="disable")])
    with Pool(60, 4096) as pool:
        for rule in sorted(RULES):  # four models of each rule
            for c, p in _invalid(rule, 4, "inv-ort"):
                rec = IO.check_invalid(pool, p, cfg)
                for v in rec["verdicts"]:
                    assert v["verdict"] == V.PASS and v["detail"].startswith("rejected cleanly"), (c.id, v["detail"])


#: What TVM 0.27 does with an invalid model that is a real defect, hand-checked in a fresh
#: interpreter with TVM alone: SequenceInsert with its tensor input missing segfaults in
#: ``tvm::Tuple::Tuple`` (the converter builds a tuple of a missing input, after TVM's own
#: check warned about the input count).
TVM_DEFECTS = {("arity", "SequenceInsert"): "invalid_crash"}


def test_tvm_rejects_a_batch_of_invalid_models_cleanly_or_tolerates_them():
    pytest.importorskip("tvm")
    cfg = CheckConfig([BackendSpec("tvm")])
    tolerated = 0
    with Pool(120, 4096) as pool:
        for i in range(10):
            c = make_case(GEN, "inv-tvm", "t", i)
            p = make_invalid(c, c.meta())
            info = p.meta["invalid"]
            v = IO.check_invalid(pool, p, cfg)["verdicts"][0]
            want = TVM_DEFECTS.get((info["rule"], info["op_type"]), V.PASS)
            assert v["verdict"] == want, (c.id, info, v["detail"])
            tolerated += "tolerated" in v["detail"]
            if info["rule"] == "dtype" and info["op_type"] == "Div":  # case 4: a bool divided by a float32
                assert "casts mixed operands" in v["detail"]
    assert tolerated  # TVM's importer goes on past its own check's warning, and casts through dtypes


def test_tvm_segfaults_on_a_sequence_insert_without_its_tensor():
    pytest.importorskip("tvm")
    nodes = [helper.make_node("SequenceEmpty", [], ["s0"], name="n0_SequenceEmpty", dtype=TensorProto.FLOAT),
             helper.make_node("SequenceInsert", ["s0", "x"], ["s1"], name="n1_SequenceInsert"),
             helper.make_node("ConcatFromSequence", ["s1"], ["y"], name="n2_ConcatFromSequence", axis=0)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    assert rejection(m) is None
    d = None
    for seed in range(40):
        d = disrupt(m.SerializeToString(), seed, rules=("arity",))
        if d.info["op_type"] == "SequenceInsert" and d.info["inputs"] == 1:
            break
    assert d.info["op_type"] == "SequenceInsert" and d.info["inputs"] == 1
    code = ("import onnx, sys; from tvm.relax.frontend.onnx import from_onnx; "
            "from_onnx(onnx.load_from_string(sys.stdin.buffer.read()))")
    res = subprocess.run([sys.executable, "-c", code], input=d.model, capture_output=True, timeout=300)
    assert res.returncode == -11, res.stderr[-2000:]  # SIGSEGV, in TVM itself


def test_invalid_share_is_a_campaign_key(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("invalid_share: 0.25\n")
    assert load_config(str(p)).invalid_share == 0.25
    p.write_text("invalid_share: 2\n")
    with pytest.raises(ConfigError, match="invalid_share"):
        load_config(str(p))
    weekly = load_config(os.path.join(REPO, "configs", "weekly.yaml"))
    pr = load_config(os.path.join(REPO, "configs", "pr.yaml"))
    assert weekly.invalid_share > 0 and pr.invalid_share == 0
    assert load_config(os.path.join(REPO, "configs", "pr.yaml")).fingerprint() == pr.fingerprint()


def _campaign(tmp_path, name: str, **kw) -> str:
    doc = {"campaign": "inv", "models": 8, "min_nodes": 2, "max_nodes": 4, "opset": 17, "dtypes": ["float32"],
           "operators": ["Relu", "Add", "Softmax", "MatMul", "Exp"], "invalid_share": 0.5,
           "backends": [{"name": FAKE + "AcceptingOnnxRuntime"}], "timeout_s": 60, "confirm_runs": 1,
           "crosscheck": False, "reduce": False, "dynamic_share": 0, "extreme_share": 0}
    doc.update(kw)
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(doc))
    return str(p)


def _distinct_invalid(cases) -> bool:
    """Whether a batch holds a valid case and invalid ones (at the campaign's share, 0.5)
    of distinct rule and operator: each is then a group of its own (one repro, one corpus
    case), as the gate test counts them."""
    bad = []
    for c in cases:
        p = make_invalid(c, c.meta()) if chosen(c.seed, 0.5) else None
        bad.append(p and (p.meta["invalid"]["rule"], p.meta["invalid"]["op_type"]))
    made = [b for b in bad if b]
    return bool(made) and len(made) < len(bad) and len(set(made)) == len(made)


def test_the_gate_reports_invalid_findings_as_their_own_class_new_then_pre_existing(tmp_path):
    """The seed is the first whose batch :func:`_distinct_invalid` takes."""
    from dlgate.cli import main
    from tests.helpers import seed_where

    out, corpus = str(tmp_path / "out"), str(tmp_path / "corpus")
    seed = seed_where(_campaign(tmp_path, "pick"), _distinct_invalid, "inv-gate")
    assert main(["run", "--config", _campaign(tmp_path, "a", corpus=corpus), "--seed", seed, "--out", out]) == 1
    recs = [json.loads(x) for x in open(os.path.join(out, "results.jsonl"))]
    bad = [r for r in recs if r.get("invalid")]
    good = [r for r in recs if not r.get("invalid")]
    assert bad and good
    for r in bad:
        v = r["verdicts"][0]
        assert v["verdict"] == "invalid_accepted" and v["confirm"]["reproduced"]
        assert v["identity"]["rule"] == r["invalid"]["rule"] and "reference" not in r
        assert os.path.isfile(os.path.join(out, r["bundle"], "model.onnx"))
        saved = json.load(open(os.path.join(out, r["bundle"], "meta.json")))
        assert saved["invalid"] == r["invalid"]
        m = open(os.path.join(out, r["bundle"], "model.onnx"), "rb").read()
        assert rejection(onnx.load_from_string(m)) == r["invalid"]["checker"]
        assert hashlib.sha256(m).hexdigest() == saved["model_sha256"]
    for r in good:
        assert r["verdicts"][0]["verdict"] == V.PASS
    # each finding's repro bundle, as a reduced one's: repro.py runs the model on the backend's
    # compiler (onnxruntime, which rejects it: the fault was the fake's) and says so
    for r in bad:
        rel = r["verdicts"][0]["identity"]["repro"]
        doc = json.load(open(os.path.join(out, rel, "repro.json")))
        assert doc["verdict"] == "invalid_accepted" and doc["invalid"] == r["invalid"]
        res = subprocess.run([sys.executable, os.path.join(out, rel, "repro.py")], capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == 0 and res.stdout.startswith("OK: the compiler rejects"), res.stdout + res.stderr
    verdict = json.load(open(os.path.join(out, "verdict.json")))
    text = json.dumps(verdict)
    assert "invalid_accepted" in text and verdict["result"] == "fail"
    assert "invalid_accepted" in open(os.path.join(out, "summary.md")).read()
    assert "invalid_accepted" in open(os.path.join(out, "junit.xml")).read()
    # baseline mode: accepted into the baseline, they are known; the corpus keeps them as
    # invalid cases, run again by the invalid-model oracle
    bl = str(tmp_path / "baseline.json")
    assert main(["baseline", "update", out, "--baseline", bl]) == 0
    out1 = str(tmp_path / "out1")
    assert main(["run", "--config", _campaign(tmp_path, "k", corpus=corpus), "--seed", seed, "--out", out1,
                 "--baseline", bl]) == 0
    assert "known" in json.dumps(json.load(open(os.path.join(out1, "verdict.json"))))
    again = [json.loads(x) for x in open(os.path.join(out1, "results.jsonl"))]
    again = [r for r in again if r["kind"] == "corpus"]
    assert len(again) == len(bad)
    assert all(r["invalid"] and r["verdicts"][0]["verdict"] == "invalid_accepted" for r in again)
    # head versus base: a base build that accepts them too makes them pre-existing; one that
    # rejects them leaves them new
    base = {"python": sys.executable, "env": {"PYTHONPATH": REPO, "DLGATE_TEST_ACCEPT": "1"}}
    out2 = str(tmp_path / "out2")
    assert main(["run", "--config", _campaign(tmp_path, "b", base=base), "--seed", seed, "--out", out2]) == 0
    recs2 = [json.loads(x) for x in open(os.path.join(out2, "results.jsonl"))]
    assert all(r["verdicts"][0]["base"]["reproduces"] for r in recs2 if r.get("invalid"))
    base["env"]["DLGATE_TEST_ACCEPT"] = "0"
    out3 = str(tmp_path / "out3")
    assert main(["run", "--config", _campaign(tmp_path, "c", base=base), "--seed", seed, "--out", out3]) == 1
    recs3 = [json.loads(x) for x in open(os.path.join(out3, "results.jsonl"))]
    for r in recs3:
        if r.get("invalid"):
            b = r["verdicts"][0]["base"]
            assert b["verdict"] == V.PASS and not b["reproduces"]


def test_tvm_rejects_relax_modules_whose_parameters_are_declared_wrongly():
    """The first cases (of 1, 2, ... 200) of each rule, three of a parameter's dtype and one
    of its shape, that dlgate can make invalid on the direct path: each is rejected by the
    VM's check of main's arguments. A case whose module cannot be made invalid is passed over:
    where the parameter goes into a call (a private function, a call_tir) or an operator its
    new shape does not fit, rebinding it to the wrongly declared one makes TVM re-derive the
    types of its uses, which raises (ValueError) before anything is built; a shape is then
    rarely declarable. So is one whose valid module the direct path does not build and run
    (e.g. acos on float16, no TIR intrinsic): there is no argument check to reach."""
    pytest.importorskip("tvm")
    from dlgate.backends.base import Model
    from dlgate.invalid.relax import as_declared, describe
    from dlgate.materialize.relax.lowerings import covered

    gen = Generator(GenConfig(max_nodes=5, ops=tuple(covered()), dynamic_share=0.5))
    spec = BackendSpec("dlgate.invalid.relax:TVMRelaxInvalid")
    assert IO.reads_graph(spec.name)  # never run on an invalid ONNX case: it builds its own module
    want = {"param_dtype": 3, "param_shape": 1}
    seen = Counter()
    with Pool(120, 4096) as pool:
        for i in range(1, 201):
            if all(seen[r] >= n for r, n in want.items()):
                break
            c = make_case(gen, "rx", "t", i)
            try:
                info = describe(c.graph)
            except (TypeError, NotImplementedError):  # the direct path refuses the graph itself
                continue
            except ValueError:  # TVM's type inference rejects the rebound parameter's uses (see above)
                continue
            if seen[info["rule"]] >= want[info["rule"]]:
                continue
            assert describe(c.graph) == info  # drawn from the graph: the parent and the worker agree
            xs = IO.inputs(c.graph, sub_seed(c.seed, "rx"))
            if not pool.execute(BackendSpec("tvm-relax"), Model(c.model_bytes, c.graph), xs).ok:
                continue
            out = pool.execute(spec, Model(c.model_bytes, c.graph), xs)
            v = IO.judge(spec.name, spec.label(), out, info)
            # the VM checks main's arguments against what they are declared to be
            assert v.verdict == V.PASS and "ErrorContext(fn=main" in v.detail, (i, info, v.detail)
            seen[info["rule"]] += 1
    assert set(seen) == {"param_dtype", "param_shape"}
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert as_declared(x, {"dtype": "int32", "shape": [2, 4]}).tolist() == [[0, 1, 2, 0], [3, 4, 5, 0]]


def test_a_case_no_rule_can_break_runs_as_generated_saying_why(monkeypatch):
    c = make_case(GEN, "inv-none", "t", 0)
    meta = c.meta()
    assert make_invalid(c, meta) is not None and "not_invalid" not in meta
    import dlgate.invalid.case as IC

    def nothing(*_a, **_k):
        raise NotDisrupted("no rule made the model invalid: dtype: no node it applies to")

    monkeypatch.setattr(IC, "disrupt", nothing)
    meta = c.meta()
    assert IC.make_invalid(c, meta) is None and meta["not_invalid"].startswith("no rule made")

    def broken(*_a, **_k):
        raise RuntimeError("boom")

    monkeypatch.setattr(IC, "disrupt", broken)
    meta = c.meta()
    assert IC.make_invalid(c, meta) is None and "defect in dlgate" in meta["not_invalid"]


def _sequence_insert_short_of_its_tensor(tries: int = 400):
    """The invalid form of the first drawn case s1/inv/0, 1, ... that is a SequenceInsert
    left with one input (the sequence, without the tensor to insert): what TVM's importer
    dies on."""
    for i in range(tries):
        c = make_case(GEN, "s1", "inv", i)
        if "SequenceInsert" not in {n.op_type for n in onnx.load_from_string(c.model_bytes).graph.node}:
            continue  # the rule is drawn only where the operator is
        p = make_invalid(c, c.meta())
        info = p.meta["invalid"] if p is not None else {}
        if (info.get("rule"), info.get("op_type"), info.get("inputs")) == ("arity", "SequenceInsert", 1):
            return p
    raise AssertionError(f"no case among s1/inv/0..{tries - 1} is made a SequenceInsert short of its tensor")


def test_the_repro_of_tvms_crash_dies_as_tvm_does(tmp_path):
    pytest.importorskip("tvm")
    from dlgate.invalid.repro import write

    p = _sequence_insert_short_of_its_tensor()
    info = p.meta["invalid"]
    assert (info["rule"], info["op_type"], info["inputs"]) == ("arity", "SequenceInsert", 1)
    err = {"type": "Crash", "message": "worker died: killed by SIGSEGV", "signal": "SIGSEGV", "frames": []}
    v = IO.judge("tvm", "tvm[cpu]", Outcome("crash", error=err), info).to_json()
    v["identity"] = IO.identity(v, info)
    rel = write(str(tmp_path), p, BackendSpec("tvm"), v, info)
    assert rel == os.path.join("repros", v["identity"]["fingerprint"])
    doc = json.load(open(tmp_path / rel / "repro.json"))
    assert doc["memory_safety"]["signal"] == "SIGSEGV" and doc["package"] == "apache-tvm"
    res = subprocess.run([sys.executable, str(tmp_path / rel / "repro.py")], capture_output=True, timeout=300)
    assert res.returncode == -11, res.stdout[-2000:] + res.stderr[-2000:]


def test_the_relax_invalid_backend_has_a_short_name_and_its_old_path_still_loads():
    """``tvm-relax-invalid`` is an entry point of pyproject.toml, the name a campaign runs it
    under (so verdicts say ``tvm-relax-invalid[cpu]``); it loads where the installed metadata
    predates it (from the checkout's pyproject.toml), and so does the ``module:Class`` path
    older runs' verdicts name."""
    import tomllib

    from dlgate.backends import registry
    from dlgate.invalid import relax_case as RC

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        eps = tomllib.load(f)["project"]["entry-points"]["dlgate.backends"]
    assert RC.BACKEND == "tvm-relax-invalid" and eps[RC.BACKEND] == RC.PATH
    assert registry._checkout()[RC.BACKEND] == RC.PATH and RC.BACKEND in registry.names()
    cls = registry.load(RC.BACKEND)
    assert cls is registry.load(RC.PATH) and cls.name == RC.BACKEND == IO.RELAX_INVALID
    assert [s.label() for s in RC.specs_of([BackendSpec("tvm")])] == ["tvm-relax-invalid[cpu]"]
    with pytest.raises(KeyError, match="unknown backend"):
        registry.load("tvm-relax-invalid-nonesuch")
