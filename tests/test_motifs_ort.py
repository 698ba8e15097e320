"""onnxruntime motifs (``dlgate/ops/motifs/ort_*/``) against the installed onnxruntime:
each, drawn inside its rewrite's preconditions, fires the rewrite at its level on
isolated single-motif graphs, and drawn with one condition broken, does not; the
transformer table (``dlgate.backends.ort_transformers``) covers every transformer the
installed onnxruntime registers; the session-log reading (``dlgate.backends.ort_log``)
names transformers and lets real errors through."""
from __future__ import annotations

import os
import warnings
from collections import Counter

import pytest

from tests.helpers import U8S8_SATURATING, saturating_cpu

from dlgate.backends import ort_log
from dlgate.backends import ort_transformers as T
from dlgate.backends import registry as backends
from dlgate.backends.base import Model
from dlgate.graph.generator import GenConfig, GenerationError, Generator
from dlgate.materialize.onnx_model import to_onnx
from dlgate.ops.motif import In, Motif, WholeMotif
from dlgate.ops.registry import all_specs

MOTIFS = {n: s for n, s in all_specs().items() if isinstance(s, Motif) and s.optimizer == "onnxruntime"}
#: Transformers only some machines register (MLAS's NCHWc block size; int8 QDQ preference).
MACHINE = ("NchwcTransformer", "QDQS8ToU8Transformer")
FIRES, PER_CONDITION, SEEDS = 8, 2, 48
#: Least share of instances on the expected side of the decision.
SHARE = 0.8
#: (motif, condition) -> why breaking it does not always make onnxruntime decline.
#: Motifs every draw of which breaks a condition (the rewrite's declining side only).
DECLINING: tuple = ()
LOOSE = {("NoopElimination", "one_element"): "an input of one element takes the constant's shape",
         ("PadAveragePoolFusion", "ceil_mode"): "ceil_mode changes nothing where the windows tile the input",
         ("TransposeResizeNhwc", "transpose_back"): "a Resize that keeps H and W lets the Transpose through"}


def _opsets(spec) -> tuple:
    return max(13, spec.min_opset), min(spec.max_opset or 24, 24)


def _fired(spec, kinds_or_error) -> bool:
    if isinstance(kinds_or_error, str):
        # the rewrite threw (onnxruntime names it), or made a node the CPU EP has no kernel for
        return f"::{spec.rewrite}::" in kinds_or_error or any(
            k.rsplit(":", 1)[1] in kinds_or_error for k in spec.expects if k.startswith("fused:"))
    return any(k in kinds_or_error for k in spec.expects)


def _draws(name: str):
    """(intent, fired) for single-motif graphs of ``name``, until enough of each side."""
    spec = MOTIFS[name]
    be = backends.load("onnxruntime")(opt_level=spec.level)
    # a motif whose rewrite needs symbolic dimensions is given them (the generator does so in
    # any campaign with dynamic_share > 0)
    gen = Generator(GenConfig(ops=(name,), min_nodes=1, max_nodes=1, dynamic_share=1.0 if spec.needs_dynamic else 0.0,
                              const_prob=0.0, extra_output_prob=0.0, opset_range=_opsets(spec)))
    seen: Counter = Counter()
    for seed in range(SEEDS):
        try:
            g = gen.generate(seed)
        except GenerationError:
            continue
        intent = spec.intent(g.nodes[0].attrs)
        want = FIRES if intent == "fires" else PER_CONDITION
        if seen[intent] >= want:
            continue
        seen[intent] += 1
        try:
            be.compile(Model(to_onnx(g, 1).SerializeToString(), g))
            result = be.rewrites(None) or []
        except Exception as e:  # noqa: BLE001 - the error text is judged
            result = str(e)
        yield intent, _fired(spec, result)
        if seen["fires"] >= FIRES and all(seen[f"declines:{c}"] >= PER_CONDITION for c in spec.conditions
                                          if c not in spec.forced):
            return


def test_there_are_many_onnxruntime_motifs():
    assert len(MOTIFS) >= 30, sorted(MOTIFS)
    families = {s.family for s in MOTIFS.values()}
    assert {"motifs.ort_conv", "motifs.ort_matmul", "motifs.ort_elim", "motifs.ort_block", "motifs.ort_qdq",
            "motifs.ort_nbits", "motifs.ort_attention"} <= families


@pytest.mark.parametrize("name", sorted(MOTIFS))
def test_motif_fires_inside_its_preconditions_and_declines_outside(name):
    spec = MOTIFS[name]
    registered = T.registered()
    needs = [k.split(":", 1)[1] for k in spec.expects if k.startswith("transformer:")] + [getattr(spec, "needs", "")]
    absent = [t for t in needs if t in MACHINE and t not in registered]
    sides: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for intent, fired in _draws(name):
            sides.setdefault(intent, []).append(fired)
    fires = sides.get("fires", [])
    if name in DECLINING:
        assert not fires and sides
    elif absent:  # this machine does not register the transformer: it never fires
        assert fires and not any(fires), (name, absent)
    else:
        assert len(fires) >= 4 and sum(fires) >= SHARE * len(fires), (name, fires)
    for intent, got in sides.items():
        cond = intent.split(":", 1)[1] if intent != "fires" else None
        if cond is None or (name, cond) in LOOSE:
            continue
        assert sum(not f for f in got) >= SHARE * len(got), (name, intent, got)


@pytest.mark.parametrize("name", sorted(MOTIFS))
def test_motif_reads_every_input_and_names_its_level(name):
    import random

    from dlgate.ops.base import Ctx, TensorType, all_true

    spec = MOTIFS[name]
    assert spec.level in ("basic", "extended", "all") and spec.expects
    lo, hi = _opsets(spec)
    made = 0
    for k in range(12):
        ctx = Ctx(random.Random(k), opset=hi)
        sig = spec.dtypes[k % len(spec.dtypes)]
        rank = spec.ranks[k % len(spec.ranks)]
        x = TensorType(sig[0], tuple(2 + (k + j) % 3 for j in range(rank)))
        a = spec.sample(ctx, [x])
        if isinstance(spec, WholeMotif):  # its lowering is its own: what it takes, it can type
            if all_true(spec.requires([x], a)):
                assert spec.infer([x], a), (name, a)
                made += 1
            continue
        read = {r.k for s in spec.steps(a) for r in s.inputs if isinstance(r, In)}
        assert read == set(range(spec.arity)), (name, a, read)
        made += 1
    assert made


def test_the_table_covers_every_transformer_the_installed_onnxruntime_registers():
    registered = T.registered()
    assert "Level1_RuleBasedTransformer" in registered and "ConstantFolding" in registered
    assert registered["Level1_RuleBasedTransformer"] == (1,) and registered["ConvActivationFusion"] == (2,)
    missing = sorted(set(registered) - set(T.TRANSFORMERS))
    assert not missing, f"transformers onnxruntime registers that the table does not describe: {missing}"
    specs = all_specs()
    expected = {k.split(":", 1)[1] for s in MOTIFS.values() for k in s.expects if k.startswith("transformer:")}
    for name, (kind, what) in list(T.TRANSFORMERS.items()) + [(k, v[1:]) for k, v in T.RULES.items()]:
        assert kind in (T.COVERED, T.UNREACHABLE, T.GAP) and what, name
        if kind != T.COVERED:
            assert name not in expected, f"{name} is {kind} but a motif expects it"
            continue
        if name.endswith("_RuleBasedTransformer"):
            continue
        names = T.covering_specs((kind, what))
        assert names and all(n in specs for n in names), (name, names)
        if name in T.TRANSFORMERS and all(n in MOTIFS for n in names):
            assert name in expected, f"{name}: its motifs {names} do not expect transformer:{name}"
    # every transformer a motif expects is one onnxruntime has
    assert expected <= set(T.TRANSFORMERS), sorted(expected - set(T.TRANSFORMERS))
    covered = [n for n, (k, _) in T.TRANSFORMERS.items() if k == T.COVERED]
    assert len(covered) >= 35


def test_session_log_lines_are_read_and_other_lines_pass_through(capfd):
    text = ("2026-01-02 03:04:05.123456789 [I:onnxruntime:, graph_transformer.cc:15 Apply] "
            "GraphTransformer ConvActivationFusion modified: 1 with status: OK\n"
            "2026-01-02 03:04:05.2 [I:onnxruntime:, graph_transformer.cc:15 Apply] "
            "GraphTransformer ConstantFolding modified: 0 with status: OK\n"
            "2026-01-02 03:04:05.3 [V:onnxruntime:, x.cc:1 f] Node placements\n"
            " All nodes placed on [CPUExecutionProvider]. Number of nodes: 2\n"
            "2026-01-02 03:04:05.4 [W:onnxruntime:, x.cc:1 f] a warning\n"
            "2026-01-02 03:04:05.5 [E:onnxruntime:, x.cc:1 f] a real error\n"
            "plain text a library wrote\n")
    assert ort_log.modified(text) == ["ConvActivationFusion"]
    assert ort_log.passthrough(text) == ("2026-01-02 03:04:05.5 [E:onnxruntime:, x.cc:1 f] a real error\n"
                                         "plain text a library wrote\n")
    capfd.readouterr()
    with ort_log.Fd2Capture() as cap:
        os.write(2, text.encode())
    assert cap.text == text
    err = capfd.readouterr().err
    assert "a real error" in err and "plain text" in err and "GraphTransformer" not in err and "a warning" not in err
    os.write(2, b"after\n")  # fd 2 is back
    assert capfd.readouterr().err == "after\n"


# ---- attention-block fusions: BERT's spelling --------------------------------------------
# The table's reasons, checked on the installed onnxruntime: BERT's attention block (with its
# embeddings) fuses into Attention and EmbedLayerNormalization at opset 12 with a symbolic
# batch dim, and neither fuses at opset 13 (dlgate's oldest) nor with static shapes at
# opset 12 (MatMulAddFusion takes the Q/K/V projections first). dlgate reaches the two
# transformers otherwise: AttentionFusionClip (the vision-block spelling, every opset) and
# EmbedLayerNormAttention (DistilBert's spelling at opset 13, symbolic dims).

def _bert_block(opset: int, symbolic: bool):
    """Embeddings, a decomposed layer norm and BERT's attention block with its mask."""
    import numpy as np
    from onnx import TensorProto as TP, helper as h, numpy_helper as nh

    B, S, N, H, V = ("b" if symbolic else 2), 3, 2, 4, 10
    W = N * H
    rng = np.random.default_rng(0)
    inits, nodes = [], []
    f32 = lambda *shape: rng.uniform(-0.5, 0.5, shape).astype(np.float32)  # noqa: E731

    def c(v):
        inits.append(nh.from_array(np.asarray(v), f"c{len(inits)}"))
        return inits[-1].name

    def n(op, ins, **kw):
        nodes.append(h.make_node(op, ins, [f"n{len(nodes)}"], **kw))
        return nodes[-1].output[0]

    def unsqueeze(x, axis):
        return n("Unsqueeze", [x], axes=[axis]) if opset < 13 else n("Unsqueeze", [x, c(np.array([axis]))])

    i64 = lambda v: c(np.int64(v))  # noqa: E731
    pos = n("Expand", [unsqueeze(n("Range", [i64(0), n("Gather", [n("Shape", ["ids"]), i64(1)]), i64(1)]), 0),
                       n("Shape", ["ids"])])
    x = n("Add", [n("Add", [n("Gather", [c(f32(V, W)), "ids"]), n("Gather", [c(f32(S, W)), pos])]),
                  n("Gather", [c(f32(2, W)), "seg"])])
    mean = n("ReduceMean", [x], axes=[2])
    d = n("Sub", [x, mean])
    var = n("ReduceMean", [n("Pow", [d, c(np.float32(2))])], axes=[2])
    ln = n("Div", [d, n("Sqrt", [n("Add", [var, c(np.float32(1e-5))])])])
    ln = n("Add", [n("Mul", [ln, c(f32(W) + 1)]), c(f32(W))])
    heads = [n("Transpose", [n("Reshape", [n("Add", [n("MatMul", [ln, c(f32(W, W))]), c(f32(W))]),
                                           c(np.array([0, 0, N, H]))])], perm=perm)
             for perm in ([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3])]
    mask = n("Mul", [n("Sub", [c(np.float32(1)), n("Cast", [unsqueeze(unsqueeze("mask", 1), 2)], to=TP.FLOAT)]),
                     c(np.float32(-10000))])
    scores = n("Add", [n("Div", [n("MatMul", heads[:2]), c(np.float32(np.sqrt(H)))]), mask])
    ctx = n("Transpose", [n("MatMul", [n("Softmax", [scores], axis=3), heads[2]])], perm=[0, 2, 1, 3])
    n("Add", [n("Add", [n("MatMul", [n("Reshape", [ctx, c(np.array([0, 0, W]))]), c(f32(W, W))]), c(f32(W))]), ln])
    nodes[-1].output[0] = "y"
    g = h.make_graph(nodes, "bert", [h.make_tensor_value_info(k, TP.INT64, [B, S]) for k in ("ids", "seg", "mask")],
                     [h.make_tensor_value_info("y", TP.FLOAT, [B, S, W])], initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("opset, symbolic, fuses", [(12, True, True), (12, False, False), (13, True, False)])
def test_attention_and_embed_layer_norm_fusions_fuse_bert_only_where_the_table_says(opset, symbolic, fuses):
    import onnx
    import onnxruntime as ort

    m = _bert_block(opset, symbolic)
    onnx.checker.check_model(m, full_check=True)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 0
    so.log_verbosity_level = 0
    with ort_log.Fd2Capture() as log:
        ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    done = set(ort_log.modified(log.text))
    assert "LayerNormFusionL2" in done  # the block's layer norm is there either way
    assert ({"AttentionFusion", "EmbedLayerNormFusion"} <= done) == fuses, sorted(done)
    if not fuses:
        assert not {"AttentionFusion", "EmbedLayerNormFusion"} & done, sorted(done)
    assert T.TRANSFORMERS["EmbedLayerNormFusion"][0] == T.COVERED


def test_bias_skip_layer_norm_fusion_takes_the_bias_skip_layer_norm_fusion_leaves():
    """Every in-precondition draw fires (MatMulAddFusion kept off by the MatMul's second
    reader or its rank-3 weight); with the bias second (``bias_first`` broken)
    SkipLayerNormFusion takes the bias itself and leaves nothing to fuse."""
    sides: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for intent, fired in _draws("BiasSkipLayerNormFusion"):
            sides.setdefault(intent, []).append(fired)
    assert sides["fires"] and all(sides["fires"]), sides
    assert sides["declines:bias_first"] and not any(sides["declines:bias_first"]), sides


# -- GatherToSlice, SliceConcatSpaceToDepth, DynamicQuantizeMatMul -----------------------------
# (their firing and declining runs through the parametrized tests above; these pin what the
# transformer table says of them and that the fused models compute what the reference does)

NEW_FUSIONS = {"GatherToSliceFusion": "GatherToSlice", "SliceConcatToSpaceToDepthFusion": "SliceConcatSpaceToDepth",
               "DynamicQuantizeMatMulFusion": "DynamicQuantizeMatMul"}


def test_range_focus_and_dynamic_quantization_fusions_are_covered_by_their_motifs():
    for transformer, motif in NEW_FUSIONS.items():
        kind, what = T.TRANSFORMERS[transformer]
        assert kind == T.COVERED and T.covering_specs((kind, what)) == [motif], transformer
        assert f"transformer:{transformer}" in MOTIFS[motif].expects


def _known_defect(name: str, a: dict) -> bool:
    """Draws that meet an onnxruntime 1.32 defect when the rewrite fires: GatherToSliceFusion
    turns a Range starting below 0 into a Slice (negative starts count from the end there,
    not by wrapping each index), and MatMulIntegerToFloatFusion fuses int8 A with uint8 B
    into a node the CPU has no kernel for."""
    if a.get("violate") is not None:
        return False
    if name == "GatherToSlice":
        return a["g"]["start"] < 0
    if name == "MatMulIntegerToFloat":
        return (a["mmi"]["at"], a["mmi"]["bt"]) == ("int8", "uint8")
    return False


def _single(name: str, seeds: int):
    """(graph, inputs, the reference's output) of single-motif graphs of ``name``."""
    import numpy as np
    import torch

    from dlgate.graph.ir import random_values

    spec = MOTIFS[name]
    # a motif whose rewrite needs symbolic dimensions is given them (the generator does so in
    # any campaign with dynamic_share > 0)
    gen = Generator(GenConfig(ops=(name,), min_nodes=1, max_nodes=1, dynamic_share=1.0 if spec.needs_dynamic else 0.0,
                              const_prob=0.0, extra_output_prob=0.0, opset_range=_opsets(spec)))
    rng = np.random.default_rng(0)
    for seed in range(seeds):
        try:
            g = gen.generate(seed)
        except GenerationError:
            continue
        xs = [random_values(rng, g.tensors[t]) for t in g.inputs]
        if name == "DynamicQuantizeMatMul":
            xs[0] = xs[0] + np.float32(0.5)  # never all zeros (DynamicQuantizeLinear's scale 0)
        args = [torch.from_numpy(np.array(x)) for x in xs]
        consts = {t: torch.from_numpy(np.array(v)) for t, v in g.values.items()}
        node = g.nodes[0]
        ins = [args[g.inputs.index(t)] if t in g.inputs else consts[t] for t in node.inputs]
        want = spec.torch(node.attrs, *ins)
        yield g, xs, (want[0] if isinstance(want, tuple) else want).numpy()


def _ort(g, xs, level):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.log_severity_level = 3
    sess = ort.InferenceSession(to_onnx(g, 1).SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), xs)})[0]


@pytest.mark.parametrize("name", sorted(NEW_FUSIONS.values()) + ["MatMulIntegerToFloat", "WeightBiasQuantization"])
def test_fused_models_agree_with_the_reference(name):
    import numpy as np
    import onnxruntime as ort

    checked = 0
    for g, xs, want in _single(name, 16):
        if _known_defect(name, g.nodes[0].attrs):
            continue
        got = _ort(g, xs, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
        checked += 1
        if name in U8S8_SATURATING and saturating_cpu() and not np.allclose(got, want, rtol=1e-5, atol=1e-5):
            continue  # onnxruntime's documented u8s8 saturation on this CPU (tests.helpers)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert checked >= 4


def test_gather_to_slice_fusion_drops_wrapped_indices():
    """onnxruntime 1.32's GatherToSliceFusion makes Range(start, limit, delta) -> Gather a
    Slice(start, limit, delta) without looking at the signs: a Range starting below 0 (Gather
    wraps each negative index from the end of the axis, which ONNX defines) becomes a
    Slice whose negative start counts from the end as a whole, a different and usually
    empty result. The motif generates such draws on its firing side; without graph
    optimizations onnxruntime agrees with the reference, with them it does not. Should a
    new onnxruntime fix the fusion, this fails and ``_known_defect`` wants updating."""
    import numpy as np
    import onnxruntime as ort

    wrong = 0
    for g, xs, want in _single("GatherToSlice", 64):
        if not _known_defect("GatherToSlice", g.nodes[0].attrs):
            continue
        np.testing.assert_array_equal(_ort(g, xs, ort.GraphOptimizationLevel.ORT_DISABLE_ALL), want)
        got = _ort(g, xs, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
        wrong += got.shape != want.shape or not np.array_equal(got, want)
    assert wrong >= 2


def test_4bit_constants_are_written_packed_and_read_back_as_the_reference_sees_them():
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from dlgate.materialize.onnx_model import int4_tensor

    signed = np.array([[-8, 7, 0], [3, -1, 5]], dtype=np.int8)
    t = int4_tensor(signed, "w")
    assert t.data_type == onnx.TensorProto.INT4 and list(t.dims) == [2, 3]
    assert numpy_helper.to_array(t).astype(np.int64).tolist() == signed.tolist()
    unsigned = np.array([0, 15, 9], dtype=np.uint8)
    assert numpy_helper.to_array(int4_tensor(unsigned, "u")).astype(np.int64).tolist() == [0, 15, 9]
    assert int4_tensor(unsigned, "u").data_type == onnx.TensorProto.UINT4
    with pytest.raises(ValueError, match="4 bits"):
        int4_tensor(np.array([8], dtype=np.int8), "x")
    with pytest.raises(TypeError):
        int4_tensor(np.array([1], dtype=np.int16), "x")
    # a generated 4-bit motif holds its weights and zero points as 4-bit initializers
    gen = Generator(GenConfig(ops=("DQMatMulNBits",), min_nodes=1, max_nodes=1, opset_range=(21, 21),
                              dynamic_share=0.0))
    kinds = set()
    for seed in range(12):
        g = gen.generate(seed)
        if g.nodes[0].attrs["dq"]["bits"] == 4:
            m = to_onnx(g, 1)
            onnx.checker.check_model(m, full_check=True)
            kinds |= {i.data_type for i in m.graph.initializer}
    assert kinds & {onnx.TensorProto.INT4, onnx.TensorProto.UINT4}
