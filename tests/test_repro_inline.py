"""repro.py that needs no file: a small reduced model built inline with onnx.helper (checked
to be the model in model.onnx: same graph, attributes and initializer arrays), inputs and
expected outputs as exact NumPy literals, onnx.reference's and a float64 evaluation's values
beside expected versus actual; larger models read from the bundle's files; for TensorRT, the
Polygraphy command and its inputs.json."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import numpy as np
import onnx
import onnx.reference
import pytest
from onnx import TensorProto, helper, numpy_helper

from dlgate.backends.base import BackendSpec
from dlgate.graph.generator import GenConfig, Generator
from dlgate.reduce import inline as IN
from dlgate.reduce.bundle import write_repro
from dlgate.reduce.polygraphy import load_polygraphy_inputs, polygraphy_command, polygraphy_inputs
from tests.helpers import draw_cases

VERDICT = {"verdict": "mismatch", "backend": "onnxruntime[cpu]", "detail": "output 0 differs",
           "signature": {"id": "abc", "text": "mismatch"}, "versions": {"name": "onnxruntime", "version": "1.32.0"}}
INFO = {"campaign": "t", "case": "00000", "root": "r", "original_nodes": 9}


def _cases(n, ops, dtypes=("float32",), min_nodes=1, max_nodes=4, opset=18, small=False):
    """The first ``n`` valid cases; ``small``: only those whose inputs fit the inline limit with
    room to spare (1 KB), so a test of the inline form does not hang on which shapes a seed draws."""
    gen = Generator(GenConfig(min_nodes=min_nodes, max_nodes=max_nodes, dtypes=dtypes, opset=opset, ops=ops))
    return draw_cases(gen, "inline", "t", n, keep=lambda p: p.search["valid"] and (
        not small or sum(np.asarray(x).nbytes for x in p.inputs) <= 1024))


def _fresh(script: str, cwd: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, script], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


def _same_by_hand(a, b) -> None:
    """The built model against the original, field by field (independent of inline.differences)."""
    assert [(o.domain, o.version) for o in a.opset_import] == [(o.domain, o.version) for o in b.opset_import]
    for ga, gb in ((a.graph, b.graph),):
        assert [(n.op_type, n.domain, list(n.input), list(n.output)) for n in ga.node] == \
               [(n.op_type, n.domain, list(n.input), list(n.output)) for n in gb.node]
        for na, nb in zip(ga.node, gb.node):
            va = {x.name: helper.get_attribute_value(x) for x in na.attribute}
            vb = {x.name: helper.get_attribute_value(x) for x in nb.attribute}
            assert va.keys() == vb.keys()
            for k in va:
                if isinstance(va[k], onnx.TensorProto):
                    x, y = numpy_helper.to_array(va[k]), numpy_helper.to_array(vb[k])
                    assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
                elif not isinstance(va[k], onnx.GraphProto):
                    assert np.array_equal(np.asarray(va[k]), np.asarray(vb[k]), equal_nan=isinstance(va[k], float))
        for v in ("input", "output"):
            assert [x.SerializeToString() for x in getattr(ga, v)] == [x.SerializeToString() for x in getattr(gb, v)]
        ia = {t.name: numpy_helper.to_array(t) for t in ga.initializer}
        ib = {t.name: numpy_helper.to_array(t) for t in gb.initializer}
        assert ia.keys() == ib.keys()
        for k in ia:
            assert ia[k].dtype == ib[k].dtype and ia[k].shape == ib[k].shape and ia[k].tobytes() == ib[k].tobytes()


@pytest.mark.parametrize("ops,dtypes", [
    (("Add", "Mul", "Sigmoid", "Relu", "Clip", "Gemm"), ("float32",)),
    (("Add", "Cast", "Concat", "Reshape", "Transpose", "ReduceSum"), ("float16", "int64")),
    (("If", "Loop", "Add", "Mul"), ("float32",)),
    (("Conv", "MaxPool", "Softmax", "LeakyRelu"), ("float32",)),
])
def test_the_model_built_inline_is_the_model_in_model_onnx(ops, dtypes):
    built = 0
    for case in _cases(6, ops, dtypes, max_nodes=6):
        try:
            src = IN.model_source(case.model)
        except IN.NotInline as e:
            assert "more than" in str(e), e  # only size keeps these generated models out
            continue
        assert "helper.make_node(" in src and "onnx.load" not in src
        original = onnx.load_from_string(case.model)
        rebuilt = IN.build(src)
        assert IN.differences(original, rebuilt) == []
        _same_by_hand(original, rebuilt)
        onnx.checker.check_model(rebuilt, full_check=True)
        built += 1
    assert built >= 3


def test_differences_sees_a_changed_constant_an_attribute_and_a_type():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    w = numpy_helper.from_array(np.array([1.5, -0.0], dtype=np.float32), "w")

    def model(alpha=0.1, w=w, xt=x):
        g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["s"]),
                               helper.make_node("LeakyRelu", ["s"], ["y"], alpha=alpha)], "g", [xt], [y], [w])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])

    base = model()
    assert IN.differences(base, IN.build(IN.model_source(base.SerializeToString()))) == []
    assert IN.differences(base, model(alpha=0.2))
    assert IN.differences(base, model(w=numpy_helper.from_array(np.array([1.5, 0.0], dtype=np.float32), "w")))
    assert IN.differences(base, model(xt=helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])))
    # the same values stored another way (typed float_data instead of raw_data) are the same model
    typed = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.5, -0.0])
    assert IN.differences(base, model(w=typed)) == []


@pytest.mark.parametrize("a", [
    np.array([np.nan, np.inf, -np.inf, -0.0, 0.1, 1e-45, 3.4028235e38], dtype=np.float32),
    np.array([np.nan, -np.inf, 6e-08, 65504.0, -0.0, 0.1], dtype=np.float16).reshape(2, 3),
    np.array([0.1, 1 / 3, 5e-324, -1.7976931348623157e308, np.nan], dtype=np.float64),
    np.array([-128, 0, 127], dtype=np.int8),
    np.array([0, 18446744073709551615], dtype=np.uint64),
    np.array([-9223372036854775808, 9223372036854775807], dtype=np.int64).reshape(1, 2, 1),
    np.array([True, False, True]),
    np.array(2.5, dtype=np.float32),
    np.zeros((0, 3), dtype=np.float32),
    np.arange(600, dtype=np.float32).reshape(20, 30) / 7,
])
def test_array_literals_give_back_every_bit(a):
    text = IN.array_source(a)
    back = eval(text, {"np": np})
    assert back.dtype == a.dtype and back.shape == a.shape and back.tobytes() == a.tobytes()
    assert all(len(line) <= 110 for line in text.splitlines())


def test_what_a_literal_cannot_spell_stays_in_the_files():
    payload = np.array([0x7FC00001], dtype=np.uint32).view(np.float32)  # a NaN with a payload
    with pytest.raises(IN.NotInline, match="round-trip"):
        IN.array_source(payload)
    with pytest.raises(IN.NotInline, match="bytes"):
        IN.data_source({"x": np.zeros(2048, dtype=np.float32)}, "load_inputs", "the inputs")
    big = _cases(1, ("Add", "Mul", "Sigmoid", "Relu", "Neg", "Abs"), min_nodes=22, max_nodes=24)[0]
    with pytest.raises(IN.NotInline, match="more than 20 operators"):
        IN.model_source(big.model)


def test_a_small_repro_is_self_contained_and_prints_the_references(tmp_path):
    case = _cases(1, ("Add", "Mul", "Sigmoid", "Tanh"), min_nodes=2, max_nodes=3, small=True)[0]
    ref = onnx.reference.ReferenceEvaluator(onnx.load_from_string(case.model)).run(
        None, {case.graph.name(t): x for t, x in zip(case.graph.inputs, case.inputs)})
    d = write_repro(str(tmp_path / "bundle"), case, BackendSpec.parse("onnxruntime"), VERDICT, ref, INFO)
    doc = json.load(open(os.path.join(d, "repro.json")))
    assert doc["self_contained"] and doc["repro_reads"] == {"model": "inline", "inputs": "inline", "expected": "inline"}
    text = open(os.path.join(d, "repro.py")).read()
    assert "def build_model():" in text and "onnx.load(" not in text and "np.load(" not in text
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "repro.py").write_text(text)  # the script alone, as pasted from an issue
    res = _fresh(str(alone / "repro.py"), str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith("OK:") and "Expected versus actual" in res.stdout
    assert "onnx.reference" in res.stdout and "max abs error vs expected 0" in res.stdout
    assert "float64 evaluation" in res.stdout and "not applicable" not in res.stdout
    assert sorted(os.listdir(alone)) == ["repro.py"]  # it wrote nothing
    # the compiler giving a wrong answer: the bug, with expected versus actual at the worst element
    broken = text.replace("def run(model_bytes, input_names, inputs, output_names):",
                          "def run(model_bytes, input_names, inputs, output_names):\n"
                          "    return [o + 1 for o in _real_run(model_bytes, input_names, inputs, output_names)]\n\n\n"
                          "def _real_run(model_bytes, input_names, inputs, output_names):", 1)
    (alone / "repro.py").write_text(broken)
    res = _fresh(str(alone / "repro.py"), str(tmp_path))
    assert res.returncode == 1 and "BUG: wrong result (mismatch)" in res.stdout, res.stdout + res.stderr
    assert "actual (compiler)" in res.stdout and "max abs error vs expected 1" in res.stdout


def test_an_integer_model_has_no_float64_evaluation(tmp_path):
    case = _cases(1, ("Add", "Mul", "Neg"), dtypes=("int32",), min_nodes=2, max_nodes=3, small=True)[0]
    feeds = {case.graph.name(t): x for t, x in zip(case.graph.inputs, case.inputs)}
    ref = onnx.reference.ReferenceEvaluator(onnx.load_from_string(case.model)).run(None, feeds)
    d = write_repro(str(tmp_path / "b"), case, BackendSpec.parse("onnxruntime"), VERDICT, ref, INFO)
    res = _fresh(os.path.join(d, "repro.py"), str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "float64 evaluation     not applicable: the model has no float16, bfloat16 or float32 tensor" in res.stdout
    assert "equal to expected" in res.stdout


def test_a_large_repro_reads_the_bundle_files(tmp_path):
    case = _cases(1, ("Add", "Mul", "Sigmoid", "Relu", "Neg", "Abs"), min_nodes=22, max_nodes=24)[0]
    feeds = {case.graph.name(t): x for t, x in zip(case.graph.inputs, case.inputs)}
    ref = onnx.reference.ReferenceEvaluator(onnx.load_from_string(case.model)).run(None, feeds)
    d = write_repro(str(tmp_path / "b"), case, BackendSpec.parse("onnxruntime"), VERDICT, ref, INFO)
    doc = json.load(open(os.path.join(d, "repro.json")))
    assert not doc["self_contained"] and doc["repro_reads"]["model"].startswith("model.onnx: it has more than 20")
    text = open(os.path.join(d, "repro.py")).read()
    assert 'onnx.load(os.path.join(HERE, "model.onnx"))' in text and "def build_model" not in text
    res = _fresh(os.path.join(d, "repro.py"), str(tmp_path))
    assert res.returncode == 0 and res.stdout.startswith("OK:"), res.stdout + res.stderr


def test_tensorrt_repros_carry_the_polygraphy_command_and_its_inputs(tmp_path):
    case = _cases(1, ("Add", "Mul", "Sigmoid"), min_nodes=2, max_nodes=3, small=True)[0]
    feeds = {case.graph.name(t): x for t, x in zip(case.graph.inputs, case.inputs)}
    ref = onnx.reference.ReferenceEvaluator(onnx.load_from_string(case.model)).run(None, feeds)
    refs = {case.graph.name(t): np.asarray(x) for t, x in zip(case.graph.outputs, ref)}
    spec = BackendSpec("tensorrt", "cuda", "O2", (("fp16", True), ("workspace_mb", 512)))
    cmd = polygraphy_command(spec, case.model, feeds, refs)
    args = shlex.split(cmd)
    assert args[:7] == ["polygraphy", "run", "model.onnx", "--trt", "--onnxrt", "--load-inputs", "inputs.json"]
    assert args[args.index("--builder-optimization-level") + 1] == "2" and "--fp16" in args
    assert args[args.index("--pool-limit") + 1] == "workspace:512M"
    atol = args[args.index("--atol") + 1:args.index("--rtol")]
    assert [a.split(":")[0] for a in atol] == list(refs)
    for a in atol:  # dlgate's atol, scaled by the output's largest magnitude as its oracle does
        name, value = a.rsplit(":", 1)
        assert float(value) == pytest.approx(1e-3 * max(1.0, float(np.abs(refs[name]).max())), rel=1e-5)
    assert polygraphy_command(BackendSpec.parse("onnxruntime"), case.model, feeds, refs) is None

    trt = BackendSpec.parse("tensorrt:cuda")
    d = write_repro(str(tmp_path / "b"), case, trt, dict(VERDICT, backend="tensorrt[cuda]"), ref, INFO)
    doc = json.load(open(os.path.join(d, "repro.json")))
    assert doc["polygraphy"].startswith("polygraphy run model.onnx --trt --onnxrt --load-inputs inputs.json")
    # inputs.json as Polygraphy's save_json writes a list of feed dicts: every array exact
    raw = json.load(open(os.path.join(d, "inputs.json")))
    assert isinstance(raw, list) and len(raw) == 1 and list(raw[0]) == list(feeds)
    assert all(v["polygraphy_class"] == "ndarray" and set(v) == {"array", "polygraphy_class"} for v in raw[0].values())
    (loaded,) = load_polygraphy_inputs(open(os.path.join(d, "inputs.json")).read())
    for k, v in feeds.items():
        assert loaded[k].dtype == v.dtype and loaded[k].shape == v.shape and loaded[k].tobytes() == v.tobytes()
    try:
        from polygraphy.json import load_json
    except ImportError:
        load_json = None
    if load_json is not None:  # Polygraphy's own reader, where it is installed
        (theirs,) = load_json(os.path.join(d, "inputs.json"))
        assert all(theirs[k].tobytes() == v.tobytes() for k, v in feeds.items())
    # the script alone (from an issue) writes model.onnx and inputs.json for the command
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "repro.py").write_text(open(os.path.join(d, "repro.py")).read())
    res = _fresh(str(alone / "repro.py"), str(tmp_path))
    assert doc["polygraphy"] in res.stdout and "(wrote model.onnx, inputs.json)" in res.stdout, res.stdout
    assert open(alone / "inputs.json").read() == open(os.path.join(d, "inputs.json")).read()
    assert IN.differences(onnx.load(str(alone / "model.onnx")), onnx.load_from_string(case.model)) == []
    assert "tensorrt has no standalone driver" in res.stderr and "Polygraphy command" in res.stderr
    assert res.returncode == 2, res.returncode  # nothing ran: not "the bug is present" (1)


def test_the_repro_is_deterministic(tmp_path):
    case = _cases(1, ("Add", "Mul", "Sigmoid"), min_nodes=2, max_nodes=3, small=True)[0]
    feeds = {case.graph.name(t): x for t, x in zip(case.graph.inputs, case.inputs)}
    ref = onnx.reference.ReferenceEvaluator(onnx.load_from_string(case.model)).run(None, feeds)
    texts = []
    for k in range(2):
        d = write_repro(str(tmp_path / f"b{k}"), case, BackendSpec.parse("tensorrt:cuda"), VERDICT, ref, INFO)
        texts.append((open(os.path.join(d, "repro.py")).read(), open(os.path.join(d, "inputs.json")).read()))
    assert texts[0] == texts[1] and polygraphy_inputs(feeds) == texts[0][1]


def test_polygraphy_inputs_keep_a_scalar_input_rank_0():
    """A rank-0 feed stays rank 0 in ``inputs.json`` (``np.ascontiguousarray`` would make it [1],
    and TensorRT would then be fed another shape than the model declares)."""
    feeds = {"x": np.array(-3.5, np.float32), "y": np.arange(6, dtype=np.int64).reshape(2, 3)}
    (loaded,) = load_polygraphy_inputs(polygraphy_inputs(feeds))
    assert {k: (v.dtype, v.shape) for k, v in loaded.items()} == {"x": (np.float32, ()), "y": (np.int64, (2, 3))}
    assert all(loaded[k].tobytes() == v.tobytes() for k, v in feeds.items())
