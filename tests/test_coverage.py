"""Coverage features, the coverage state, and coverage-guided generation: deterministic
given seed and state, recorded with the run, and more coverage than plain draws."""
from __future__ import annotations

import json
import os
from collections import Counter

import pytest
import yaml

from dlgate.case import GuidedBatch, make_case
from dlgate.cli import main
from dlgate.coverage import features as F
from dlgate.coverage.guide import Guide
from dlgate.coverage.state import CoverageState, StateError
from dlgate.graph.generator import GenConfig, Generator
from dlgate.graph.ir import Graph, Node
from dlgate.ops.base import TensorType
from dlgate.ops.registry import get

OPS = ["Sigmoid", "Add", "Relu", "Mul", "Abs", "Neg", "Tanh"]


def _chain() -> Graph:
    t = TensorType("float32", (2, 3))
    return Graph(tensors=[t, t, t, t], nodes=[Node("Abs", {}, [0], [1]), Node("Relu", {}, [1], [2]),
                                              Node("Add", {}, [2, 1], [3])],
                 inputs=[0], consts=[], outputs=[3], opset=17)


def test_graph_features_are_hirfuzz_criteria_and_paths():
    feats = F.graph_features(_chain())
    assert feats == sorted(feats)
    assert {"op_dtype:Abs:float32", "op_dtype:Add:float32,float32", "op_shape:Relu:2x3",
            "edge:Abs>Relu", "edge:Relu>Add", "edge:Abs>Add", "path3:Abs>Relu>Add"} <= set(feats)
    assert Counter(F.criterion(f) for f in feats) == {"op_dtype": 3, "op_shape": 3, "edge": 3, "path3": 1}


def test_a_motif_is_a_feature_with_the_side_of_its_decision():
    g = Generator(GenConfig(ops=("ConvBnFusion",), max_nodes=1, dynamic_share=0, opset=18))
    sides = set()
    for s in range(30):
        graph = g.generate(s)
        sides |= {f for f in F.graph_features(graph) if f.startswith("motif:")}
    assert "motif:ConvBnFusion:fires" in sides
    assert any(f.startswith("motif:ConvBnFusion:declines:") for f in sides)


# -- the state --------------------------------------------------------------------------------
def test_state_round_trips_and_its_digest_is_stable(tmp_path):
    s = CoverageState({"edge:A>B", "op_dtype:A:float32"}, {"tvm[cpu]": {"pass:FuseOps"}})
    p = str(tmp_path / "s.json")
    s.save(p)
    t = CoverageState.load(p)
    assert t.features == s.features and t.rewrites == s.rewrites and t.digest() == s.digest()
    t.add_features(["edge:A>B"])
    assert t.digest() == s.digest()
    assert t.add_features(["edge:B>C"]) == 1 and t.digest() != s.digest()


@pytest.mark.parametrize("text, words", [
    ("{", "cannot read"),
    ('{"format": 2}', "not a dlgate coverage state"),
    ('{"format": 1, "features": [3]}', "'features'"),
    ('{"format": 1, "features": [], "rewrites": {"tvm": "x"}}', "'rewrites'"),
    ('{"format": 1, "extra": 1}', "unknown key"),
])
def test_a_bad_state_file_is_refused_with_its_name(tmp_path, text, words):
    p = tmp_path / "s.json"
    p.write_text(text)
    with pytest.raises(StateError) as e:
        CoverageState.load(str(p))
    assert str(p) in str(e.value) and words in str(e.value)


# -- guidance -------------------------------------------------------------------------------
def _batch(state=None, n=40, **kw):
    gen = Generator(GenConfig(**{"max_nodes": 8, "dynamic_share": 0, **kw}))
    b = GuidedBatch(gen, "guided", "t", state or CoverageState())
    return [b.case(i)[0].model_bytes for i in range(n)], b


def test_guided_generation_is_deterministic_given_seed_and_state():
    first, b1 = _batch()
    again, b2 = _batch()
    assert first == again and b1.state.features == b2.state.features
    # a case asked for on its own, out of order, is the one the batch made in order
    gen = Generator(GenConfig(max_nodes=8, dynamic_share=0))
    lone = GuidedBatch(gen, "guided", "t", CoverageState())
    assert lone.case(25)[0].model_bytes == first[25]
    assert lone.case(3)[0].model_bytes == first[3]  # backwards: replayed from the start


def test_the_starting_state_decides_the_batch_and_is_not_changed():
    plain, _ = _batch(n=30)
    start = CoverageState({f"op_dtype:{n}:float32" for n in ("Relu", "Add", "Mul")})
    before = start.copy()
    other, b = _batch(start, n=30)
    assert plain != other
    assert start.features == before.features and b.start is start
    assert _batch(start.copy(), n=30)[0] == other


def test_without_guidance_cases_are_independent_and_unchanged():
    gen = Generator(GenConfig(max_nodes=8, dynamic_share=0))
    a = [make_case(gen, "plain", "t", i).model_bytes for i in (7, 2)]
    gen2 = Generator(GenConfig(max_nodes=8, dynamic_share=0))
    assert a == [make_case(gen2, "plain", "t", i).model_bytes for i in (7, 2)]


def _paired(root: str, n: int):
    """(plain state, plain nodes, guided state, guided nodes) of the first ``n`` cases of
    ``root``: the plain draws use the guided batch's seeds."""
    gen = Generator(GenConfig(max_nodes=10, dynamic_share=0))
    plain, plain_nodes = CoverageState(), 0
    for i in range(n):
        g = make_case(gen, root, "t", i).graph
        plain.add_features(F.graph_features(g))
        plain_nodes += len(g.nodes)
    b = GuidedBatch(Generator(GenConfig(max_nodes=10, dynamic_share=0)), root, "t", CoverageState())
    guided_nodes = sum(len(b.case(i)[0].graph.nodes) for i in range(n))
    return plain, plain_nodes, b.state, guided_nodes


def test_guidance_covers_more_than_plain_draws():
    # paired: the plain draws use the guided batch's seeds, so both batches hold graphs of
    # about the same sizes and only guidance differs (unpaired, seeds that draw 7% more nodes
    # gave the plain batch more edges: 1125 of 1441 nodes against guidance's 1073 of 1350).
    # Guidance changes which operators are drawn, and some insert fewer nodes than others:
    # the root is the first of guided, guided-1, ... whose two batches hold within 2% as
    # many nodes (generator 16's "guided": 1288 guided against 1357 plain, 5% fewer)
    n = 250
    for k in range(6):
        root = "guided" if k == 0 else f"guided-{k}"
        plain, plain_nodes, guided, guided_nodes = _paired(root, n)
        if abs(guided_nodes - plain_nodes) <= 0.02 * plain_nodes:
            break
    else:
        raise AssertionError("no root among guided, guided-1..5 draws paired batches of about the same size")
    count = lambda s, c: sum(1 for f in s.features if F.criterion(f) == c)  # noqa: E731
    for c in ("op_dtype", "edge", "path3"):
        assert count(guided, c) > count(plain, c), (root, c, guided_nodes, plain_nodes)


def test_weights_favour_what_is_not_covered():
    spec, sigs = get("Relu"), [("float32",), ("float16",)]
    fresh = Guide(CoverageState())
    half = Guide(CoverageState({"op_dtype:Relu:float32"}))
    full = Guide(CoverageState({"op_dtype:Relu:float32", "op_dtype:Relu:float16"}))
    assert fresh.spec_weight(spec, sigs) > half.spec_weight(spec, sigs) > full.spec_weight(spec, sigs) == 1.0
    assert half.sig_weights("Relu", sigs)[1] > half.sig_weights("Relu", sigs)[0]
    assert full.link_weight("Relu", "Abs", []) > Guide(CoverageState({"edge:Abs>Relu"})).link_weight("Relu", "Abs", [])
    assert full.link_weight("Relu", None, []) == 1.0


def test_a_motif_whose_rewrite_never_fired_is_favoured_once_the_backend_is_known():
    m = get("ConvBnFusion")
    sides = {F.motif(m.name, "fires")} | {F.motif(m.name, f"declines:{c}") for c in m.conditions}
    covered = sides | {F.op_dtype(m.name, s) for s in m.dtypes}
    unknown = Guide(CoverageState(set(covered)))
    unfired = Guide(CoverageState(set(covered), {"onnxruntime[cpu]@all": {"removed:Identity"}}))
    fired = Guide(CoverageState(set(covered), {"onnxruntime[cpu]@all": set(m.expects)}))
    other = Guide(CoverageState(set(covered), {"tvm[cpu]": {"pass:FuseOps"}}))
    w = lambda g: g.spec_weight(m, m.dtypes)  # noqa: E731
    assert w(unfired) > w(fired) == w(unknown) == w(other) == 1.0


def test_a_narrow_motif_that_wants_coverage_draws_its_opset_and_is_inserted_first():
    # EmbedLayerNormAttention exists at opset 13 only: even draws over 13-28 rarely meet it
    eln = get("EmbedLayerNormAttention")
    sides = {F.motif(eln.name, "fires")}
    want = Guide(CoverageState(set(sides), {"onnxruntime[cpu]@all": {"removed:Identity"}}))  # drawn, never fired
    done = Guide(CoverageState(set(sides), {"onnxruntime[cpu]@all": set(eln.expects)}))
    assert want.wants(eln) and not done.wants(eln) and Guide(CoverageState()).wants(eln)
    specs = [get("Relu"), eln, get("AttentionFusionClip")]
    assert want.focus(specs, 13, 28) == [(eln, [13])] and done.focus(specs, 13, 28) == []
    assert want.focus(specs, 13, 14) == []  # within a range this narrow, no motif is narrow

    def batch(state, n=None):
        """The batch's first ``n`` cases, or (n None) its cases up to the third focused one."""
        gen = Generator(GenConfig(max_nodes=6, dynamic_share=0.25))
        b = GuidedBatch(gen, "focus", "t", state)
        out = []
        while len(out) < (n if n is not None else 600) and (n is not None or len(focus_of(out)) < 3):
            out.append(b.case(len(out))[0])
        return out

    def focus_of(cases):
        return [c for c in cases if c.graph.opset == 13 and c.graph.nodes and
                any(n.op == eln.name and n.inputs[0] in c.graph.inputs for n in c.graph.nodes)]

    state = CoverageState(set(), {"onnxruntime[cpu]@all": {"removed:Identity"}})
    cases = batch(state.copy())
    focused = focus_of(cases)
    # OPSET_FOCUS of the cases (a share of it for each narrow motif that wants coverage): one
    # in 40 or so, which seed draws them aside; three within 600, against fewer once it fired
    assert len(focused) >= 3, len(cases)
    # the ids are a graph input, and the model has symbolic dims there
    assert any(c.graph.dynamic and any(c.graph.inputs[p] in
                                       {n.inputs[0] for n in c.graph.nodes if n.op == eln.name}
                                       for p, _, _ in c.graph.dynamic["dims"]) for c in focused)
    assert [c.model_bytes for c in batch(state.copy())] == [c.model_bytes for c in cases]  # deterministic
    # once drawn on its firing side and its rewrite fired, no case is drawn for it: the motif
    # is met by chance only (in as many cases)
    fired = CoverageState(set(sides), {"onnxruntime[cpu]@all": set(eln.expects)})
    held = [c for c in batch(fired, len(cases)) if any(n.op == eln.name for n in c.graph.nodes)]
    assert len(held) < len(focused)


def test_a_motif_that_needs_symbolic_dims_gets_them_whenever_any_model_may():
    eln = get("EmbedLayerNormAttention")
    for share, dynamic in ((0.0, False), (0.01, True)):
        gen = Generator(GenConfig(ops=(eln.name, "Relu"), dtypes=("int64", "float32"), min_nodes=1, max_nodes=2,
                                  opset=13, dynamic_share=share))
        graphs = []
        for i in range(40):
            try:
                graphs.append(make_case(gen, "dyn", "t", i).graph)
            except Exception:  # noqa: BLE001 - a draw that fits nothing
                continue
        held = [g for g in graphs if any(n.op == eln.name for n in g.nodes)]
        assert len(held) >= 3
        assert all(bool(g.dynamic) == dynamic for g in held if len(g.nodes) == 1), share


# -- the gate records and reuses the state --------------------------------------------------------
def _config(tmp_path, **kw) -> str:
    doc = {"campaign": "cov", "models": 5, "max_nodes": 4, "opset": 18, "operators": OPS, "dtypes": ["float32"],
           "backends": ["onnxruntime"], "crosscheck": False, "reduce": False, "dynamic_share": 0}
    doc.update(kw)
    p = tmp_path / f"c{len(list(tmp_path.iterdir()))}.yaml"
    p.write_text(yaml.safe_dump(doc))
    return str(p)


def _lines(path):
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


def test_a_run_saves_its_coverage_and_every_case_regenerates(tmp_path):
    out = str(tmp_path / "run")
    ops = OPS + ["Identity", "Transpose"]  # onnxruntime eliminates these: rewrites to carry on
    cfg = _config(tmp_path, operators=ops, dtypes=None)  # dlgate gen takes no dtypes
    assert main(["run", "--config", cfg, "--seed", "cov", "--out", out]) == 0
    start, end = os.path.join(out, "coverage-start.json"), os.path.join(out, "coverage-state.json")
    run = json.load(open(os.path.join(out, "run.json")))
    assert run["coverage_start"] == CoverageState.load(start).digest()
    cases = _lines(os.path.join(out, "coverage.jsonl"))
    assert [c["index"] for c in cases] == list(range(5))
    state = CoverageState.load(end)
    assert set().union(*[set(c["features"]) for c in cases]) <= state.features
    assert state.rewrites.get("onnxruntime[cpu]")  # what the compiler applied is carried on
    stats = json.load(open(os.path.join(out, "stats.json")))
    assert stats["coverage"]["features"]["op_dtype"] == sum(1 for f in state.features if f.startswith("op_dtype:"))
    # dlgate gen with the run's starting state makes the run's models, byte for byte
    regen = str(tmp_path / "gen")
    assert main(["gen", "--seed", "cov", "--campaign", "cov", "--count", "2", "--start", "3", "--out", regen,
                 "--max-nodes", "4", "--opset", "18", "--ops", ",".join(ops), "--dynamic-share", "0",
                 "--coverage-state", start]) == 0
    recs = {r["case"]: r for r in _lines(os.path.join(out, "results.jsonl"))}
    for c in cases[3:]:
        meta = json.load(open(os.path.join(regen, c["case"], "meta.json")))
        assert meta["operators"] == recs[c["case"]]["operators"]
        assert sorted(F.graph_features(Graph.from_json(meta["graph"]))) == c["features"]


def test_next_run_starts_from_the_previous_state_and_shards_share_it(tmp_path, capsys):
    first = str(tmp_path / "week1")
    assert main(["run", "--config", _config(tmp_path), "--seed", "w", "--out", first]) == 0
    carried = os.path.join(first, "coverage-state.json")
    cfg = _config(tmp_path, coverage_state=carried, models=4)
    whole = str(tmp_path / "week2")
    assert main(["run", "--config", cfg, "--seed", "w2", "--out", whole]) == 0
    assert "coverage state from" in capsys.readouterr().err
    assert open(os.path.join(whole, "coverage-start.json")).read() == open(carried).read()
    shards = [str(tmp_path / f"s{i}") for i in (1, 2)]
    for i, d in enumerate(shards, 1):
        assert main(["run", "--config", cfg, "--seed", "w2", "--out", d, "--shard", f"{i}/2"]) == 0
    merged = str(tmp_path / "merged")
    assert main(["merge", *shards, "--out", merged]) == 0
    assert _lines(os.path.join(merged, "coverage.jsonl")) == _lines(os.path.join(whole, "coverage.jsonl"))
    assert CoverageState.load(os.path.join(merged, "coverage-state.json")).features == \
        CoverageState.load(os.path.join(whole, "coverage-state.json")).features


def test_a_missing_state_starts_empty_and_a_bad_one_is_a_usage_error(tmp_path, capsys):
    out = str(tmp_path / "a")
    cfg = _config(tmp_path, coverage_state=str(tmp_path / "none.json"), models=2)
    assert main(["run", "--config", cfg, "--seed", "m", "--out", out]) == 0
    assert "does not exist yet; starting empty" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    out2 = str(tmp_path / "b")
    assert main(["run", "--config", _config(tmp_path, coverage_state=str(bad), models=2), "--seed", "m",
                 "--out", out2]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(bad) in err[0]


def test_a_resumed_run_refuses_a_changed_starting_state(tmp_path, capsys):
    out = str(tmp_path / "r")
    cfg = _config(tmp_path, models=2)
    assert main(["run", "--config", cfg, "--seed", "r", "--out", out]) == 0
    with open(os.path.join(out, "coverage-start.json"), "w") as f:
        f.write(CoverageState({"edge:A>B"}).dumps())
    os.remove(os.path.join(out, "results.jsonl"))
    assert main(["run", "--config", cfg, "--seed", "r", "--out", out]) == 2
    assert "changed since the run started" in capsys.readouterr().err


# -- the Action carries the state from week to week ---------------------------------------------
def test_the_action_passes_a_coverage_state_and_the_weekly_example_carries_it(tmp_path):
    import entrypoint.inputs
    import entrypoint.plan

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    (tmp_path / "c.yaml").write_text("models: 1\n")
    env = {"INPUT_CONFIG": "c.yaml", "INPUT_COVERAGE-STATE": ".dlgate/cov.json", "INPUT_SEED": "s"}
    p = entrypoint.plan.plan(env, entrypoint.inputs.Context(event_name="push", sha="a" * 40, workspace=str(tmp_path)))
    assert "--coverage-state=.dlgate/cov.json" in p.dlgate_args
    action = yaml.safe_load(open(os.path.join(root, "action.yml")))
    assert "coverage-state" in action["inputs"]
    weekly = yaml.safe_load(open(os.path.join(root, ".github", "workflows", "examples", "dlgate-weekly.yml")))
    state = ".dlgate/weekly-coverage-state.json"
    shard = next(s for s in weekly["jobs"]["campaign"]["steps"] if s.get("uses", "").startswith("org/dlgate"))
    assert shard["with"]["coverage-state"] == state
    merge_steps = weekly["jobs"]["merge"]["steps"]
    carry = next(k for k, s in enumerate(merge_steps) if "coverage-state.json" in s.get("run", ""))
    save = next(k for k, s in enumerate(merge_steps) if s.get("uses", "").startswith("actions/cache/save"))
    assert carry < save and state in merge_steps[save]["with"]["path"]
