"""The oracle's parts: comparison, signatures, undefined behaviour, verdicts."""
from __future__ import annotations

import numpy as np

from dlgate.exec.worker import Outcome
from tests.helpers import judge_candidate
from dlgate.graph.ir import Graph, Node
from dlgate.ops.base import TensorType as T
from dlgate.oracle import rules, ub
from dlgate.oracle import verdict as V
from dlgate.oracle.compare import compare
from dlgate.oracle.signature import normalize, signature


def test_compare_exact_for_integers_and_positions_of_nonfinite():
    assert compare([np.array([1, 2], np.int32)], [np.array([1, 2], np.int32)]).ok
    c = compare([np.array([1, 2], np.int32)], [np.array([1, 3], np.int32)])
    assert not c.ok and c.kind == "values" and c.first_index == (1,)
    c = compare([np.array([1.0, np.nan], np.float32)], [np.array([1.0, 2.0], np.float32)])
    assert c.kind == "nonfinite" and "NaN" in c.detail
    c = compare([np.array([np.inf], np.float32)], [np.array([-np.inf], np.float32)])
    assert c.kind == "nonfinite"
    assert compare([np.array([np.nan, 1.0])], [np.array([np.nan, 1.0])]).ok


def test_compare_shape_dtype_and_scaled_tolerance():
    assert compare([np.zeros((2, 3), np.float32)], [np.zeros((3, 2), np.float32)]).kind == "shape"
    assert compare([np.zeros(3, np.float32)], [np.zeros(3, np.float64)]).kind == "dtype"
    ref = np.array([1000.0, 0.0], np.float32)
    # atol scales with the output's magnitude: 0.5 next to 1000 is within 1e-3 * 1000
    assert compare([ref], [np.array([1000.0, 0.5], np.float32)]).ok
    assert not compare([ref], [np.array([1000.0, 5.0], np.float32)]).ok
    c = compare([np.array([1.0], np.float32)], [np.array([1.5], np.float32)])
    assert not c.ok and abs(c.max_abs - 0.5) < 1e-9 and abs(c.max_rel - 0.5) < 1e-9
    assert compare([np.array([1.0], np.float32)], [np.array([1.5], np.float32)], {"float32": (1.0, 0.0)}).ok


def test_signatures_ignore_what_varies_between_occurrences():
    a = normalize("InternalError at 0x7f3a12: tensor t12 shape [3, 4] in /home/x/tvm/src/a.cc:120")
    b = normalize("InternalError at 0x55aa01: tensor t7 shape [8, 1] in /opt/tvm/src/a.cc:99")
    assert a == b and "0x" not in a and "t12" not in a
    # Relax binding names, numbered or not
    assert normalize("R.subtract(R.const(1.0), lv)") == normalize("R.subtract(R.const(2.5), lv17)")
    e1 = {"type": "TVMError", "message": "Check failed: 3 == 4 at 0x1", "frames": ["a.py:f", "b.py:g"]}
    e2 = {"type": "TVMError", "message": "Check failed: 7 == 9 at 0x2", "frames": ["a.py:f", "b.py:g"]}
    assert signature("crash", "tvm", e1)["id"] == signature("crash", "tvm", e2)["id"]
    assert signature("crash", "tvm", e1)["id"] != signature("crash", "onnxruntime", e1)["id"]
    assert signature("crash", "tvm", e1)["id"] != signature("compile_error", "tvm", e1)["id"]


def _graph(nodes, tensors, inputs, outputs, consts=(), values=None):
    return Graph(tensors=tensors, nodes=nodes, inputs=list(inputs), consts=list(consts), outputs=list(outputs),
                 opset=18, values=values or {})


def test_signed_overflow_and_out_of_range_casts_are_undefined():
    g = _graph([Node("Mul", {}, [0, 1], [2])], [T("int32", (2,))] * 3, [0, 1], [2])
    big = np.array([70000, 3], np.int32)
    assert "overflow" in ub.undefined_values(g, [big, big])
    assert ub.undefined_values(g, [np.array([2, 3], np.int32)] * 2) is None
    g = _graph([Node("Cast", {"to": "uint8"}, [0], [1])], [T("float32", (2,)), T("uint8", (2,))], [0], [1])
    assert "outside" in ub.undefined_values(g, [np.array([-3.5, 2.0], np.float32)])
    assert "NaN" in ub.undefined_values(g, [np.array([np.nan, 2.0], np.float32)])
    assert ub.undefined_values(g, [np.array([3.5, 2.0], np.float32)]) is None


def test_rounding_boundary_before_floor_is_unstable():
    # x * 3 lands a rounding step from 1.0, then Floor: compilers may legitimately give 0 or 1
    g = _graph([Node("Mul", {}, [0, 1], [2]), Node("Floor", {}, [2], [3])],
               [T("float32", (64,))] * 4, [0, 1], [3])
    x = np.full(64, 1 / 3, np.float32)
    three = np.full(64, 3.0, np.float32)
    why = ub.instability(g, [x, three])
    assert why and "Floor" in why
    assert ub.instability(g, [np.full(64, 0.4, np.float32), three]) is None
    # a candidate off by one where Floor sits on the boundary is explained ...
    base = np.floor(x * three)
    assert ub.instability(g, [x, three], candidate=[base - 1]) is not None
    # ... one off by far more than rounding could cause is not
    assert ub.instability(g, [x, three], candidate=[base + 7]) is None
    # nor is a NaN where rounding cannot make the output non-finite
    nan = base.copy()
    nan[5] = np.nan
    assert ub.instability(g, [x, three], candidate=[nan]) is None


def _outcome(status="ok", outputs=None, error=None):
    return Outcome(status, outputs, error, 0.1, 0.01, 0.2, {"name": "x", "version": "1"})


def _excusing(*excuses):
    """An ``explain`` for ``verdict.judge`` whose only rule returns ``excuses``."""
    class Fixed(rules.Rule):
        name = "fixed"

        def excuses(self, ctx):
            return list(excuses)

    return lambda ref, got, tol: rules.settle(None, ref, got, tol, rules=(Fixed(),))


def test_judge_maps_failures_and_blames_mismatches():
    ref = [np.array([1.0, 2.0], np.float32)]
    bad = [np.array([1.0, 9.0], np.float32)]
    assert V.judge("x", "x[cpu]", _outcome(outputs=ref), ref).verdict == V.PASS
    crash = V.judge("x", "x[cpu]", _outcome("crash", error={"type": "Crash", "message": "m", "signal": "SIGSEGV"}), ref)
    assert crash.verdict == V.CRASH and crash.signature and crash.failed
    assert V.judge("x", "x", _outcome("timeout", error={"type": "Timeout", "message": ""}), ref).verdict == V.TIMEOUT
    assert V.judge("x", "x", _outcome("unsupported", error={"type": "E", "message": ""}), ref).verdict == V.UNSUPPORTED
    assert V.judge("x", "x", _outcome("unavailable", error={"type": "U", "message": "no GPU"}), ref).verdict == V.SKIPPED
    floor = rules.Excuse("instability", "unstable: Floor", {0: np.ones(2, bool)})
    v = V.judge("x", "x", _outcome(outputs=bad), ref, explain=_excusing(floor))
    assert v.verdict == V.UNDEFINED and "Floor" in v.detail and not v.failed and v.rule == "instability"
    # an excuse scoped to the element that agrees anyway explains nothing
    v = V.judge("x", "x", _outcome(outputs=bad), ref, explain=_excusing(
        rules.Excuse("instability", "unstable: Floor", {0: np.array([True, False])})),
                at_lowest=lambda: _outcome(outputs=ref), onnx_reference=lambda: _outcome(outputs=ref))
    assert v.verdict == V.MISMATCH and v.blame == "optimization" and v.comparison["max_abs"] == 7.0
    v = V.judge("x", "x", _outcome(outputs=bad), ref, at_lowest=lambda: _outcome(outputs=bad),
                onnx_reference=lambda: _outcome(outputs=ref))
    assert v.blame == "conversion"
    v = V.judge("x", "x", _outcome(outputs=bad), ref, at_lowest=lambda: _outcome(outputs=bad),
                onnx_reference=lambda: _outcome(outputs=bad))
    assert v.blame == "reference"
    shape = V.judge("x", "x", _outcome(outputs=[np.zeros(3, np.float32)]), ref)
    assert shape.verdict == V.SHAPE_MISMATCH
    dtype = V.judge("x", "x", _outcome(outputs=[ref[0].astype(np.float64)]), ref)
    assert dtype.verdict == V.DTYPE_MISMATCH


def _gelu_then(op, attrs, out_type):
    return _graph([Node("GeluTanhIdiom", {"dtype": "float32", "cube": "mul"}, [0], [1]), Node(op, attrs, [1], [2])],
                  [T("float32", (8,)), T("float32", (8,)), out_type], [0], [2])


def _gelu_tanh(x):
    import torch

    from dlgate.ops.registry import get
    return get("GeluTanhIdiom").torch({"dtype": "float32", "cube": "mul"}, torch.from_numpy(x)).numpy()


def test_fused_idiom_cancelling_to_zero_before_a_cast_to_bool_is_unstable():
    # Gelu's tanh spelling at x = -5: Tanh rounds to just above -1 in float32, so the reference keeps a
    # value of about -2e-7 that a fused Gelu kernel (one rounding, Tanh saturating) makes exactly 0;
    # Cast to bool then turns an error far below the tolerance into True versus False
    x = np.array([-5.05, -4.93, -5.7, 1.0, 2.0, -0.5, 0.75, 3.0], np.float32)
    g = _gelu_then("Cast", {"to": "bool"}, T("bool", (8,)))
    y = _gelu_tanh(x)
    assert y[0] != 0 and abs(y[0]) < 1e-6
    ref = y != 0
    fused = ref.copy()
    fused[:3] = np.abs(y[:3]) > 1e-6  # what a kernel that rounds once gives: exactly 0 there
    assert not np.array_equal(fused, ref)
    why = ub.instability(g, [x], candidate=[fused])
    assert why and "Cast" in why


def test_fused_idiom_tiny_value_before_ceil_excused_but_a_real_error_is_not():
    x = np.array([-5.05, -4.93, -5.7, 1.0, 2.0, -0.5, 0.75, 3.0], np.float32)
    g = _gelu_then("Ceil", {}, T("float32", (8,)))
    ref = np.ceil(_gelu_tanh(x))
    fused = ref.copy()
    fused[:3] = 1.0  # a fused kernel's Tanh overshooting -1 by a rounding step: Gelu of -5 a tiny positive
    assert ub.instability(g, [x], candidate=[fused]) is not None
    wrong = ref.copy()
    wrong[4] += 7  # Ceil(Gelu(2)) off by 7: no rounding explains it
    assert ub.instability(g, [x], candidate=[wrong]) is None
    # and far from zero the same graph is stable
    assert ub.instability(g, [np.linspace(0.3, 2.7, 8).astype(np.float32)]) is None


def test_instance_norm_of_a_constant_slice_is_ill_conditioned_not_a_bug():
    # one element a slice: x - mean is 0, but a kernel folding the mean into a bias rounds
    # x * scale / sqrt(epsilon) = 19075.79 * 0.36 * 316: a few units of that are 0.1
    g = _graph([Node("InstanceNormalization", {"epsilon": 1e-5}, [0, 1, 2], [3])],
               [T("float32", (1, 1, 1)), T("float32", (1,)), T("float32", (1,)), T("float32", (1, 1, 1))],
               [0, 1, 2], [3])
    ins = [np.full((1, 1, 1), 19075.79, np.float32), np.array([0.36], np.float32), np.array([0.54], np.float32)]
    assert ub.instability(g, ins, candidate=[np.full((1, 1, 1), 0.5, np.float32)]) is not None
    assert ub.instability(g, ins, candidate=[np.full((1, 1, 1), 3.5, np.float32)]) is None  # not rounding
    # a slice with spread and small values: a wrong bias is caught
    ins = [np.array([[[0.5, -1.0, 2.0, 0.25]]], np.float32).reshape(1, 1, 4), ins[1], ins[2]]
    g.tensors[0] = T("float32", (1, 1, 4))
    g.tensors[3] = T("float32", (1, 1, 4))
    assert ub.instability(g, ins) is None


def test_lrn_window_sum_drift_of_onnxruntime_is_excused_a_wrong_lrn_is_not():
    import onnxruntime as ort
    import torch
    from onnx import TensorProto, helper

    from dlgate.ops.registry import get

    attrs = {"size": 3, "alpha": 1e-4, "beta": 0.75, "bias": 1.0}
    g = _graph([Node("LRN", attrs, [0], [1])], [T("float32", (1, 8, 1, 1))] * 2, [0], [1])
    node = helper.make_node("LRN", ["x"], ["y"], **attrs)
    m = helper.make_model(helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 8, 1, 1))],
                                            [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 8, 1, 1))]),
                          opset_imports=[helper.make_opsetid("", 13)])
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    # one channel of 1e6 ahead of channels of 1: onnxruntime slides the window sum (adds the square that
    # enters, subtracts the one that leaves) and keeps 1e12's rounding in the small windows after it
    x = np.ones((1, 8, 1, 1), np.float32)
    x[0, 0] = 1e6
    got = sess.run(None, {"x": x})[0]
    ref = get("LRN").torch(attrs, torch.from_numpy(x)).numpy()
    assert not compare([ref], [got]).ok  # the drift is beyond the tolerance
    assert "LRN" in ub.instability(g, [x], candidate=[got])
    # without a dominant square the windows are well conditioned: a wrong value is caught
    x = np.linspace(0.5, 3.0, 8, dtype=np.float32).reshape(1, 8, 1, 1)
    got = sess.run(None, {"x": x})[0]
    ref = get("LRN").torch(attrs, torch.from_numpy(x)).numpy()
    assert compare([ref], [got]).ok
    wrong = ref.copy()
    wrong[0, 5] *= 1.5
    assert ub.instability(g, [x], candidate=[wrong]) is None


def test_names_a_compiler_derives_from_dlgates_tensor_names_normalize_alike():
    # onnxruntime names the Q node it inserts after tensor tmp_12 "tmp_12_q", after a motif's m_35 "m_35_q",
    # and the Cast it inserts for t13 "InsertedPrecisionFreeCast_t13": one cause, one signature
    assert normalize("Node (tmp_12_q) Op (QuantizeLinear) bad") == normalize("Node (m_35_q) Op (QuantizeLinear) bad")
    assert normalize("output arg (InsertedPrecisionFreeCast_t13) of node (n5_X)") == \
        normalize("output arg (InsertedPrecisionFreeCast_t4) of node (n1_X)")
    assert normalize("Node (Conv_3) failed") != normalize("Node (Gemm_3) failed")


def test_tan_a_rounding_step_from_its_pole_is_unbounded_but_far_from_it_is_checked():
    # float16 Tan of 1.5703125, a step below pi/2: a compiler computing the product feeding it in
    # float32 lands a step above and returns a large value of the other sign; nothing bounds it
    g = _graph([Node("Mul", {}, [0, 1], [2]), Node("Tan", {}, [2], [3])], [T("float16", (4,))] * 4, [0, 1], [3])
    x = np.array([1.5703125, 0.5, 1.0, 0.25], np.float16)
    one = np.ones(4, np.float16)
    ref = np.tan(x.astype(np.float32)).astype(np.float16)
    cand = ref.copy()
    cand[0] = np.float16(np.tan(np.float32(1.5709)))  # past the pole: about -9000
    assert ref[0] > 1000 > 0 > cand[0]
    assert "Tan" in ub.instability(g, [x, one], candidate=[cand])
    wrong = ref.copy()
    wrong[2] += 5  # Tan(1) off by 5, far from any pole
    x2 = np.array([1.25, 0.5, 1.0, 0.25], np.float16)
    ref2 = np.tan(x2.astype(np.float32)).astype(np.float16)
    wrong = ref2.copy()
    wrong[2] += 5
    assert ub.instability(g, [x2, one], candidate=[wrong]) is None


def test_dft_rounding_of_its_twiddle_angles_is_excused_a_wrong_bin_is_not():
    import onnxruntime as ort
    import torch
    from onnx import TensorProto, helper

    from dlgate.ops.registry import get

    # a real signal of length 10 whose first sample dominates: the imaginary parts of bins 0 and 5
    # are exactly 0, onnxruntime's (Bluestein: a float32 chirp) a few units of L * sum|x| off
    # it, -2e-3 here; Sign turns that into -1 against 0
    attrs = {"axis": 1, "inverse": 0, "onesided": 1, "dft_length": 10}
    g = _graph([Node("DFT", attrs, [0], [1]), Node("Sign", {}, [1], [2])],
               [T("float32", (1, 10, 1)), T("float32", (1, 6, 2)), T("float32", (1, 6, 2))], [0], [2])
    x = np.array([3516.7456, 14.75032, 5.772068, 4.605674, 3.791766, 3.264421, 2.949136, 3.394504, 3.604177,
                  2.882706], np.float32).reshape(1, 10, 1)
    n1 = helper.make_node("DFT", ["x", "L"], ["d"], axis=1, inverse=0, onesided=1)
    n2 = helper.make_node("Sign", ["d"], ["y"])
    m = helper.make_model(helper.make_graph(
        [n1, n2], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 10, 1))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 6, 2))],
        initializer=[helper.make_tensor("L", TensorProto.INT64, [], [10])]), opset_imports=[helper.make_opsetid("", 17)])
    got = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    ref = np.sign(np.stack([np.fft.rfft(x[0, :, 0].astype(np.float64)).real,
                            np.fft.rfft(x[0, :, 0].astype(np.float64)).imag], -1))[None].astype(np.float32)
    assert ref[0, 0, 1] == 0 and not compare([ref], [got]).ok  # onnxruntime's bin 0 has an imaginary part
    assert "Sign" in ub.instability(g, [x], candidate=[got])
    # the DFT alone: onnxruntime's output is within the tolerance (scaled by the output's magnitude),
    # a bin wrong by more than rounding is caught, and the bound is a few units of L * sum|x|
    g1 = _graph([Node("DFT", attrs, [0], [1])], [T("float32", (1, 10, 1)), T("float32", (1, 6, 2))], [0], [1])
    full = np.fft.rfft(x[0, :, 0].astype(np.float64))
    ref1 = np.stack([full.real, full.imag], -1)[None].astype(np.float32)
    wrong = ref1.copy()
    wrong[0, 2, 0] *= 1.5
    assert not compare([ref1], [wrong]).ok and ub.instability(g1, [x], candidate=[wrong]) is None
    bound = ub.rounding_bound(get("DFT"), attrs, [torch.from_numpy(x)], torch.from_numpy(ref1))
    assert float(bound.max()) < 1e-4 * float(np.abs(x).sum())


def test_bicubic_grid_sample_rounding_before_a_fmod_jump_is_excused_a_wrong_remainder_is_not():
    # onnxruntime's bicubic GridSample sums 16 taps of an image near 4 and lands 5e-7 from the
    # reference on a value of 0.0046 (a few units of max|X|, not of the result); fmod(t2, that)
    # with t2 / t3 = -234.03 then takes the next quotient: -0.0046 instead of -0.00013
    import torch

    from dlgate.ops.registry import get

    attrs = {"align_corners": 0, "mode": "cubic", "out": [1, 1], "padding_mode": "border", "volumetric_ok": False}
    g = _graph([Node("GridSample", attrs, [0, 1], [3]), Node("Mod", {}, [2, 3], [4])],
               [T("float32", (1, 1, 4, 4)), T("float32", (1, 2, 2, 2)), T("float32", (1, 1, 2, 2)),
                T("float32", (1, 1, 2, 2)), T("float32", (1, 1, 2, 2))], [0, 1, 2], [3, 4])
    rng = np.random.default_rng(3)
    x = rng.uniform(-4, 4, (1, 1, 4, 4)).astype(np.float32)
    grid = rng.uniform(-0.9, 0.9, (1, 2, 2, 2)).astype(np.float32)
    t3 = get("GridSample").torch(attrs, torch.from_numpy(x), torch.from_numpy(grid)).numpy()
    t2 = (-234.0005 * t3.astype(np.float64)).astype(np.float32)  # each remainder a hair from a jump
    fmod = get("Mod").torch({"fmod": 1}, torch.from_numpy(t2), torch.from_numpy(t3)).numpy()
    assert ub.instability(g, [x, grid, t2]) is not None
    kernel = t3.copy()
    kernel[0, 0, 0, 0] += np.float32(1e-5) * np.sign(t3[0, 0, 0, 0])  # a few units of max|X| = 4 over 16 taps
    got = np.fmod(t2, kernel)
    assert np.abs(got - fmod).max() > 1e-3 * max(1.0, float(np.abs(fmod).max()))  # a jump beyond the tolerance
    assert ub.instability(g, [x, grid, t2], candidate=[kernel, got]) is not None
    wrong = fmod.copy()
    wrong[0, 0, 1, 1] += 50  # a remainder is below |t3| whatever t3's rounding
    assert ub.instability(g, [x, grid, t2], candidate=[t3, wrong]) is None


def test_a_wrong_shape_describes_a_case_before_another_outputs_wrong_values():
    ref = [np.ones(3, np.float32), np.ones((2, 2), np.float32)]
    got = [np.full(3, 9.0, np.float32), np.ones((2, 0), np.float32)]
    c = compare(ref, got)
    assert c.kind == "shape" and c.output == 1
    assert compare(ref, [got[0], ref[1]]).kind == "values"  # and the values when the shapes agree


def _tan_and_gather():
    """Two outputs: float16 Tan of a product a rounding step from pi/2 (unbounded), and a
    well-conditioned float32 Neg."""
    g = _graph([Node("Mul", {}, [0, 1], [2]), Node("Tan", {}, [2], [3]), Node("Neg", {}, [4], [5])],
               [T("float16", (4,))] * 4 + [T("float32", (3,))] * 2, [0, 1, 4], [3, 5])
    x = np.array([1.5703125, 0.5, 1.0, 0.25], np.float16)
    one = np.ones(4, np.float16)
    y = np.array([1.0, 2.0, 3.0], np.float32)
    tan = np.tan(x.astype(np.float32)).astype(np.float16)
    past = tan.copy()
    past[0] = np.float16(np.tan(np.float32(1.5709)))  # the other side of the pole
    return g, [x, one, y], tan, past, -y


def _judge_outputs(g, inputs, ref, candidate):
    return judge_candidate(g, inputs, candidate, reference=ref)


def test_an_unstable_output_does_not_stand_for_another_outputs_error():
    g, inputs, tan, past, neg = _tan_and_gather()
    # silent: only the output past the pole differs, which rounding explains
    v = _judge_outputs(g, inputs, [tan, neg], [past, neg])
    assert v.verdict == V.UNDEFINED and "Tan" in v.detail
    assert v.rule == "instability" and rules.why(g, inputs, None, [past, neg])
    # caught: the well-conditioned output is wrong too; the finding is described by it
    wrong = neg.copy()
    wrong[1] += 1.0
    v = _judge_outputs(g, inputs, [tan, neg], [past, wrong])
    assert v.verdict == V.MISMATCH and v.comparison["output"] == 1
    assert v.detail.startswith("output 1:") and "instability: unstable" in v.detail
    assert v.excused[0]["rule"] == "instability" and list(v.excused[0]["outputs"]) == ["0"]
    assert rules.why(g, inputs, None, [past, wrong]) is None
    # a wrong shape there is a shape mismatch, whatever the unstable output holds
    v = _judge_outputs(g, inputs, [tan, neg], [past, neg[:2]])
    assert v.verdict == V.SHAPE_MISMATCH and v.comparison["output"] == 1
    # without the explanation's outputs (a plain reason), the first differing output describes it
    out = Outcome("ok", [past, wrong], None, 0.1, 0.01, 0.2, {"name": "fake", "version": "1"})
    v = V.judge("fake", "fake[cpu]", out, [tan, neg])
    assert v.verdict == V.MISMATCH and v.comparison["output"] == 0


def test_stft_rounding_of_its_twiddle_angles_is_excused_a_wrong_bin_is_not():
    import onnxruntime as ort
    from onnx import TensorProto, helper

    # frames of 10 samples every 2 of a real signal whose first sample dominates: bin 0's imaginary
    # part is exactly 0, onnxruntime's a few units of L * sum|x| off it; Sign turns that into -1
    x = np.array([3516.7456, 14.75032, 5.772068, 4.605674, 3.791766, 3.264421, 2.949136, 3.394504, 3.604177,
                  2.882706, 3.1, 2.2], np.float32).reshape(1, 12, 1)
    attrs = {"dtype": "float32", "frame_length": 10, "frame_step": 2, "window": "none", "spell_length": True,
             "onesided": 1, "seed": 0}
    g = _graph([Node("STFT", attrs, [0], [1]), Node("Sign", {}, [1], [2])],
               [T("float32", (1, 12, 1)), T("float32", (1, 2, 6, 2)), T("float32", (1, 2, 6, 2))], [0], [2])
    g.opset = 17
    m = helper.make_model(helper.make_graph(
        [helper.make_node("STFT", ["x", "s", "", "L"], ["d"], onesided=1), helper.make_node("Sign", ["d"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 12, 1))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[helper.make_tensor("L", TensorProto.INT64, [], [10]), helper.make_tensor("s", TensorProto.INT64, [], [2])]),
        opset_imports=[helper.make_opsetid("", 17)])
    got = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    frames = np.stack([np.fft.rfft(x[0, f:f + 10, 0].astype(np.float64)) for f in (0, 2)])
    spectrum = np.stack([frames.real, frames.imag], -1)[None]
    ref = np.sign(spectrum).astype(np.float32)
    assert ref[0, 0, 0, 1] == 0 and not compare([ref], [got]).ok  # onnxruntime's bin 0 has an imaginary part
    assert "Sign" in ub.instability(g, [x], candidate=[got])
    # the STFT alone: a bin wrong by more than rounding is caught
    g1 = _graph([Node("STFT", attrs, [0], [1])], [T("float32", (1, 12, 1)), T("float32", (1, 2, 6, 2))], [0], [1])
    g1.opset = 17
    wrong = spectrum.astype(np.float32)
    wrong[0, 1, 0, 0] *= 1.5  # the second frame, which misses the large sample: sum 35, off by 17
    assert not compare([spectrum.astype(np.float32)], [wrong]).ok and ub.instability(g1, [x], candidate=[wrong]) is None


def test_a_window_rounds_relative_to_its_cosine_terms_a_wrong_window_is_still_caught():
    # a symmetric Blackman window of size 2 is 0.42 - 0.5 + 0.08 = 0 at both ends: onnxruntime gives
    # +1.5e-8 and PyTorch -1.5e-8 in float32, which Sign turns into +1 against -1
    attrs = {"periodic": 0, "dtype": "float32", "size": 2, "int_dtype": "int64", "from_shape": False}
    g = _graph([Node("BlackmanWindow", attrs, [0], [1]), Node("Sign", {}, [1], [2])],
               [T("int64", (2,)), T("float32", (2,)), T("float32", (2,))], [0], [2])
    g.opset = 17
    size = np.array([2, 2], np.int64)
    from dlgate.oracle.precision import trace

    env, _ = trace(g, [size])
    ref = env[2].numpy()
    assert ref.tolist() == [-1.0, -1.0]
    got = np.array([1.0, 1.0], np.float32)
    assert not compare([ref], [got]).ok and "Sign" in ub.instability(g, [size], candidate=[got])
    # the window itself off by far more than its rounding is caught
    g1 = _graph([Node("BlackmanWindow", attrs, [0], [1])], [T("int64", (2,)), T("float32", (2,))], [0], [1])
    g1.opset = 17
    wrong = np.array([0.25, 0.0], np.float32)
    ref1 = trace(g1, [size])[0][1].numpy()
    assert not compare([ref1], [wrong]).ok and ub.instability(g1, [size], candidate=[wrong]) is None


def test_underflow_to_zero_before_a_jump_is_excused_a_wrong_floor_is_not():
    # a float16 product of about -2.4e-8 is -0.0 correctly rounded (below half the smallest
    # subnormal, 6e-8) and -6e-8 in float16 steps: Floor makes 0 of one and -1 of the other.
    # Underflow rounds in absolute steps, which relative noise never makes
    g = _graph([Node("Mul", {}, [0, 1], [2]), Node("Floor", {}, [2], [3])],
               [T("float16", (2,)), T("float16", (2,)), T("float16", (2,)), T("float16", (2,))], [0, 1], [3])
    xs = [np.array([2.0 ** -12, 0.5], np.float16), np.array([-2.0 ** -12, 3.0], np.float16)]
    from dlgate.oracle.precision import trace

    ref = trace(g, xs)[0][3].numpy()
    assert ref.tolist() == [-1.0, 1.0]
    flushed = np.array([0.0, 1.0], np.float16)
    assert not compare([ref], [flushed]).ok and "Floor" in ub.instability(g, xs, candidate=[flushed])
    # a Floor off by more than the jump can explain is caught (the bound is per output: twice the
    # largest deviation the perturbations made in it)
    wrong = np.array([-1.0, 5.0], np.float16)
    assert not compare([ref], [wrong]).ok and ub.instability(g, xs, candidate=[wrong]) is None


def test_a_motifs_steps_are_perturbed_one_by_one_a_wrong_motif_is_still_caught():
    # Cos of Exp inside one motif node: exp(13) = 442413.39 rounds by 0.03 in float32, which moves
    # Cos by 0.03; the motif's own output never shows that amplification
    attrs = {"op1": "Exp", "op2": "Cos", "violate": None, "seed": 0}
    g = _graph([Node("TvmElementwiseChain", attrs, [0], [1])], [T("float32", (2,)), T("float32", (2,))], [0], [1])
    xs = [np.array([13.0, 0.5], np.float32)]
    from dlgate.oracle.precision import trace

    ref = trace(g, xs)[0][1].numpy()
    one_off = np.array([np.cos(np.float32(442413.375)), ref[1]], np.float32)  # exp(13) one unit lower
    assert not compare([ref], [one_off]).ok and "TvmElementwiseChain" in ub.instability(g, xs, candidate=[one_off])
    # a wrong second step where Exp is small is caught
    sin = np.array([ref[0], np.sin(np.exp(np.float32(0.5)))], np.float32)
    assert not compare([ref], [sin]).ok and ub.instability(g, xs, candidate=[sin]) is None


def test_a_log_sum_exp_past_float64s_range_is_undefined_a_wrong_one_inside_it_is_not():
    # ONNX's ReduceLogSumExp (its function body) exponentiates in double without shifting by the
    # max: past exp's float64 range it gives inf (or -inf), a shifting implementation the value
    attrs = {"keepdims": 0, "axes": [0], "noop": False}
    g = _graph([Node("ReduceLogSumExp", attrs, [0], [1])], [T("float16", (2,)), T("float16", ())], [0], [1])
    from dlgate.oracle.precision import trace

    big = [np.array([0.0, 1107.0], np.float16)]
    assert trace(g, big)[0][1].item() == 1107.0
    assert "float64" in rules.why(g, big, candidate=[np.array(np.inf, np.float16)])
    # within float64's range every reading agrees: a wrong value is a finding
    small = [np.array([0.0, 700.0], np.float16)]
    ref = trace(g, small)[0][1].numpy()
    wrong = np.array(np.inf, np.float16)
    assert not compare([ref], [wrong]).ok and rules.why(g, small, candidate=[wrong]) is None
