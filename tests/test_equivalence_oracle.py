"""The equivalence oracle (dlgate/rewrite/oracle.py): silent on real onnxruntime and TVM,
catches a compiler that mishandles ``x * 1`` with or without a reference, and in the gate
an inconsistency is a finding of its own class: confirmed, reduced, identified, reported,
never counted with the verdicts against the reference."""
import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from dlgate.backends.base import BackendSpec, Model
from dlgate.case import make_case
from dlgate.check import CheckConfig, check, prepare
from dlgate.cli import main
from dlgate.exec import worker as W
from dlgate.gate import decide as D
from dlgate.graph.config import NEWEST_OPSET, GenConfig
from dlgate.graph.generator import Generator
from dlgate.rewrite import make_twin
from dlgate.rewrite import oracle as EQ

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MUL_ONE_ORT = "dlgate.backends.testing:MulOneOnnxRuntime"


def _cases(n: int, root: str = "eq-tests", dynamic: float = 0.2, extreme: float = 0.1) -> list:
    gen = Generator(GenConfig(dynamic_share=dynamic, extreme_share=extreme))
    out = []
    for i in range(n):
        c = make_case(gen, root, "eq", i)
        out.append(prepare(c.meta(), c.graph, c.model_bytes))
    return out


def _mul_one_stream(root: str, seed: int | None = None, tries: int = 60):
    """The valid cases ``root``/eq/0, 1, ... (no dynamic or extreme draws; within ``tries``
    indices) that a ``mul_one`` twin applies to: a tensor ``x * 1`` can be inserted on, for
    the twin seed ``seed`` or, when None, the seed a run draws the case's twin from. Picked
    by that property, since a generator version draws other models from each index; each
    is prepared (its input search run) only once the twin applies."""
    gen = Generator(GenConfig(dynamic_share=0.0, extreme_share=0.0))
    for i in range(tries):
        c = make_case(gen, root, "eq", i)
        s = EQ.twin_seed(int(c.meta().get("seed") or 0)) if seed is None else seed
        if make_twin(c.graph, c.model_bytes, s, ("mul_one",)) is None:
            continue
        p = prepare(c.meta(), c.graph, c.model_bytes)
        if p.search["valid"]:
            yield p


def _mul_one_cases(n: int, root: str, seed: int | None = None) -> list:
    """The first ``n`` cases of :func:`_mul_one_stream`."""
    out = []
    for p in _mul_one_stream(root, seed):
        out.append(p)
        if len(out) == n:
            return out
    raise AssertionError(f"only {len(out)} of the {n} valid cases with a mul_one twin wanted among {root}/eq")


def _judged_mul_one(spec, n: int, root: str) -> list:
    """The records of the first ``n`` cases of :func:`_mul_one_stream` whose ``mul_one``
    twin ``spec`` judges (the case itself runs there: its importer takes the case's
    operators), each checked once."""
    recs = []
    for p in _mul_one_stream(root):
        recs.extend(r for r in _twins([spec], [p], kinds=("mul_one",))
                    if any(t["status"] != EQ.NOT_JUDGED for t in r["twins"]))
        if len(recs) == n:
            return recs
    raise AssertionError(f"only {len(recs)} of the {n} twinned cases wanted run on {spec.label()} among {root}/eq")


def _twins(backends, cases, kinds=None, reference=None) -> list:
    cfg = CheckConfig([BackendSpec.parse(b) if isinstance(b, str) else b for b in backends], timeout_s=120,
                      rewrite_share=1.0, rewrite_kinds=kinds)
    if reference is not None:
        cfg.reference = reference
    recs = []
    with W.Pool(cfg.timeout_s, cfg.memory_mb) as pool:
        for p in cases:
            recs.append(check(pool, p, cfg))
    return recs


def _statuses(recs) -> Counter:
    return Counter((t["backend"], r["rewrite"].get("kind"), t["status"]) for r in recs for t in r.get("twins", ()))


def test_silent_on_onnxruntime():
    """30 cases, every one with a twin, on onnxruntime 1.32 (its full optimizations): no
    inconsistency, and most twins are judged."""
    recs = _twins(["onnxruntime"], _cases(30))
    st = _statuses(recs)
    assert not [k for k in st if k[2] == EQ.INCONSISTENT], st
    assert not [k for k in st if k[2] == EQ.REWRITE_ERROR], st
    judged = sum(n for k, n in st.items() if k[2] in (EQ.CONSISTENT, EQ.EXCUSED))
    assert judged >= 15, st
    assert len({k[1] for k in st if k[2] == EQ.CONSISTENT}) >= 5, st  # many kinds ran
    for r in recs:  # the verdicts against the reference are untouched by the twins
        assert all(v["verdict"] != EQ.INCONSISTENT for v in r["verdicts"])


def test_silent_on_tvm():
    """12 cases with twins on TVM 0.27's default pipeline: none inconsistent. TVM's importer
    has no model-local functions: a wrapped twin is refused, not a finding."""
    pytest.importorskip("tvm")
    recs = _twins(["tvm"], _cases(12, root="eq-tvm", dynamic=0.0, extreme=0.0))
    st = _statuses(recs)
    assert not [k for k in st if k[2] == EQ.INCONSISTENT], st
    assert sum(n for k, n in st.items() if k[2] == EQ.CONSISTENT) >= 4, st
    assert all(k[2] == EQ.REFUSED for k in st if k[1] == "wrap_function" and k[2] != EQ.NOT_JUDGED), st


def test_catches_mul_one_fault_with_and_without_reference():
    """onnxruntime computing ``x * 1`` as ``x + 1``: the case itself passes against the
    reference, its mul_one twin is inconsistent, and the record says the original side is
    the right one; with a reference that cannot run, the same inconsistency is found."""
    cases = [p for p in _cases(10, root="eq-catch", dynamic=0.0, extreme=0.0) if p.search["valid"]][:5]
    recs = _twins([MUL_ONE_ORT], cases, kinds=("mul_one",))
    found = [t for r in recs for t in EQ.findings(r)]
    assert len(found) >= 3, _statuses(recs)
    for r in recs:
        assert r["rewrite"]["kind"] in ("mul_one", None)  # None: no tensor Mul takes
        for v in r["verdicts"]:
            assert v["verdict"] not in ("mismatch", EQ.INCONSISTENT)  # the fault never shows against the reference
    t = found[0]
    assert t["how"] == "values" and t["confirm"] == {"runs": 1, "reproduced": True}
    assert t["reference"] == {"ran": True, "original": True, "twin": False}
    assert t["signature"]["text"].startswith("inconsistent :: ")
    # no reference: it raises on every case
    broken = BackendSpec("tests.fake_backends:Raises")
    recs2 = _twins([MUL_ONE_ORT], cases, kinds=("mul_one",), reference=broken)
    assert all(v["verdict"] == "reference_error" for r in recs2 for v in r["verdicts"])
    found2 = [t for r in recs2 for t in EQ.findings(r)]
    assert len(found2) == len(found)
    assert all(t["reference"] == {"ran": False} for t in found2)
    assert [t["signature"]["id"] for t in found2] == [t["signature"]["id"] for t in found]


def test_catches_tvm_pass_that_mishandles_mul_one():
    """TVM with a pass computing ``x * 1`` as ``x + 1``: among the first three valid cases
    whose mul_one twin TVM judges (TVM imports the case), an inconsistency is found."""
    pytest.importorskip("tvm")
    spec = BackendSpec("tvm", options=(("extra_passes", ("dlgate.backends.testing:mul_one_to_add",)),))
    recs = _judged_mul_one(spec, 3, "eq-tvm-catch")
    st = _statuses(recs)
    assert any(k[2] == EQ.INCONSISTENT for k in st), st


def test_status_inconsistency_and_refusal():
    """A twin the compiler fails on while it runs the case is inconsistent (``how``:
    status); one it declares it does not take is refused, not a finding. The cases are
    valid ones a mul_one twin applies to."""
    from dlgate.rewrite import make_twin

    cases = _mul_one_cases(2, "eq-status", seed=5)
    refuse = BackendSpec("dlgate.backends.testing:RefusingOnnxRuntime", options=(("refuse", "Mul"),))
    recs = _twins([refuse], cases, kinds=("mul_one",))
    for r in recs:
        for t in r["twins"]:
            if t["status"] != EQ.NOT_JUDGED:
                assert t["status"] == EQ.REFUSED, t
    p = cases[0]
    twin = make_twin(p.graph, p.model, 5, ("mul_one",))
    with W.Pool(60) as pool:
        orig = pool.execute(BackendSpec("onnxruntime"), Model(p.model, p.graph), p.inputs)
        t = EQ.judge_twin(pool, p, BackendSpec("tests.fake_backends:Raises"), orig, twin)
    assert t["status"] == EQ.INCONSISTENT and t["how"] == "status"
    assert "the case runs, its mul_one twin fails" in t["detail"]


def test_decide_counts_twins_apart():
    """An inconsistent twin is grouped as a finding (new; flaky when its confirmation did
    not reproduce it; known when the baseline holds it); the verdict counts never see it."""
    class Base:
        path, fingerprints, signatures, corpus = None, {}, {}, {}

        def knows(self, fp, cl, sig):
            return sig == "known1"

    def rec(case, sig, reproduced=True):
        return {"case": case, "index": int(case[-1]), "verdicts": [{"backend": "ort[cpu]", "verdict": "pass"}],
                "twins": [{"backend": "ort[cpu]", "status": "inconsistent", "how": "values", "detail": "d",
                           "signature": {"id": sig, "text": f"inconsistent :: ort :: {sig}"},
                           "confirm": {"runs": 1, "reproduced": reproduced}},
                          {"backend": "tvm[cpu]", "status": "consistent"}]}

    d = D.decide([rec("c1", "new1"), rec("c2", "flaky1", False), rec("c3", "known1")], Base(), "r", "c",
                 ["ort[cpu]", "tvm[cpu]"], True)
    assert d.counts == {"ort[cpu]": {"pass": 3}}
    assert d.twins == {"ort[cpu]": {"inconsistent": 3}, "tvm[cpu]": {"consistent": 3}}
    assert [g["signature"] for g in d.of(D.NEW)] == ["new1"]
    assert [g["signature"] for g in d.of(D.FLAKY)] == ["flaky1"]
    assert [g["signature"] for g in d.of(D.KNOWN)] == ["known1"]
    assert d.of(D.NEW)[0]["verdict"] == "inconsistent"
    assert d.exit_code() == D.EXIT_FAIL


def test_decide_an_inconsistency_the_base_build_shares_is_pre_existing():
    """Head versus base: an inconsistent twin the base build's twin repeats the same way is
    pre-existing, one the base build's twin does not repeat is new."""
    class Base:
        path, fingerprints, signatures, corpus = None, {}, {}, {}

        def knows(self, fp, cl, sig):
            return False

    def rec(case, sig, base):
        return {"case": case, "index": int(case[-1]), "verdicts": [{"backend": "ort[cpu]", "verdict": "pass"}],
                "twins": [{"backend": "ort[cpu]", "status": "inconsistent", "how": "values", "detail": "d",
                           "signature": {"id": sig, "text": f"inconsistent :: ort :: {sig}"},
                           "confirm": {"runs": 1, "reproduced": True}, "base": base}]}

    d = D.decide([rec("c1", "shared", {"status": "inconsistent", "how": "values", "reproduces": True}),
                  rec("c2", "headonly", {"status": "consistent", "how": None, "reproduces": False})],
                 Base(), "r", "c", ["ort[cpu]"], True)
    assert [g["signature"] for g in d.of(D.PRE_EXISTING)] == ["shared"]
    assert [g["signature"] for g in d.of(D.NEW)] == ["headonly"]


def _mul_one_seed(cfg: str, prefix: str, pinned: str) -> str:
    """The first seed ``prefix``1, 2, ... (found once and pinned as ``pinned``, checked here:
    helpers.seed_where_pinned) whose batch of the campaign ``cfg`` holds a valid
    case the run twins by ``mul_one`` (every case is twinned, the rewrite drawn from the
    case's twin seed): only there does the faulty onnxruntime meet ``x * 1``. Every case of
    the batch must also load in onnxruntime at its full optimizations: its own bugs (e.g.
    its int8 -> uint8 QDQ rewrite that leaves a QuantizeLinear of mismatched types) would be
    findings of another class in a test of the inconsistencies alone. The campaign sets
    ``max_opset`` to the newest opset (what the probe finds on onnxruntime 1.32) so that its
    batch is known without running it."""
    from tests.helpers import ort_session, seed_where_pinned

    def loads(c) -> bool:
        try:
            ort_session(c.model_bytes, level=None, severity=4)
        except Exception:  # noqa: BLE001 - any load failure is a finding of its own
            return False
        return True

    def mul_one_twinned(cases) -> bool:
        if not all(loads(c) for c in cases):
            return False
        for c in cases:
            twin = make_twin(c.graph, c.model_bytes, EQ.twin_seed(int(c.meta().get("seed") or 0)))
            if twin is not None and twin.kind == "mul_one" and prepare(c.meta(), c.graph, c.model_bytes).search["valid"]:
                return True
        return False

    return seed_where_pinned(cfg, mul_one_twinned, prefix, pinned)


def _head_vs_base_config(tmp_path, name: str, fixed: bool) -> str:
    """A head-versus-base campaign of the faulty onnxruntime with every case twinned; the
    base build is the same interpreter, with the fault fixed where ``fixed``."""
    from dlgate.backends.testing import MUL_ONE_FIXED_ENV

    env = f"{{{MUL_ONE_FIXED_ENV}: '1'}}" if fixed else "{}"
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(f"campaign: eqb\nmodels: 6\nbackends: [{MUL_ONE_ORT}]\nrewrite_share: 1.0\ndynamic_share: 0\n"
                   f"extreme_share: 0\nmax_opset: {NEWEST_OPSET}\nfail_on: new\nreduce: false\nbase:\n"
                   f"  python: {sys.executable}\n  env: {env}\n")
    return str(cfg)


def test_head_versus_base_an_inconsistency_the_base_build_shares_is_not_new(tmp_path, monkeypatch):
    """Silent: head and base are the same faulty build: every inconsistency is pre-existing
    and the gate passes. Catch: the base build has the fault fixed: they are new and the
    gate fails. The seed is one whose batch has a case twinned by ``mul_one`` (one seed for
    both campaigns: they differ in the base build's environment only, which draws nothing).
    Both runs are in this process (nothing here needs one of its own); the base builds run
    from this checkout."""
    monkeypatch.setenv("PYTHONPATH", ROOT)
    same, fixed = _head_vs_base_config(tmp_path, "same", False), _head_vs_base_config(tmp_path, "fixed", True)
    seed = _mul_one_seed(same, "eqs", "eqs7")
    assert main(["run", "--config", same, "--seed", seed, "--out", str(tmp_path / "same"), "--fresh"]) == 0
    v = json.loads((tmp_path / "same" / "verdict.json").read_text())
    assert not v["new"] and v["pre_existing"]
    assert all(g["verdict"] == "inconsistent" for g in v["pre_existing"])
    assert main(["run", "--config", fixed, "--seed", seed, "--out", str(tmp_path / "fixed"), "--fresh"]) == 1
    v = json.loads((tmp_path / "fixed" / "verdict.json").read_text())
    assert v["new"] and all(g["verdict"] == "inconsistent" for g in v["new"])


def _dlgate(*args, cwd=ROOT):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "dlgate", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)


def test_gate_reduces_and_reports_an_inconsistency(tmp_path):
    """A campaign with rewrite_share 1 on the faulty onnxruntime: the inconsistency is new,
    confirmed, reduced to a small case with its twin and a repro script, and twice the same
    results.jsonl. The seed is one whose batch has a case twinned by ``mul_one``."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"campaign: eq\nmodels: 8\nbackends: [{MUL_ONE_ORT}]\nrewrite_share: 1.0\ndynamic_share: 0\n"
                   f"extreme_share: 0\nmax_opset: {NEWEST_OPSET}\nfail_on: new\n")
    seed = _mul_one_seed(str(cfg), "eqs", "eqs12")
    outs = [tmp_path / "out0", tmp_path / "out1"]
    # once in this process, once in a fresh interpreter (its own hash seed, nothing carried over)
    assert main(["run", "--config", str(cfg), "--seed", seed, "--out", str(outs[0]), "--fresh"]) == 1
    r = _dlgate("run", "--config", str(cfg), "--seed", seed, "--out", str(outs[1]), "--fresh")
    assert r.returncode == 1, r.stderr[-2000:]
    verdict = json.loads((outs[0] / "verdict.json").read_text())
    assert verdict["new"] and all(g["verdict"] == "inconsistent" for g in verdict["new"])
    assert verdict["twins"][f"{MUL_ONE_ORT}[cpu]"].get("inconsistent", 0) >= 1
    assert all(v != "inconsistent" for c in verdict["counts"].values() for v in c)
    g = verdict["new"][0]
    assert g.get("repro"), g
    d = outs[0] / g["repro"]
    for f in ("model.onnx", "twin.onnx", "twin.json", "inputs.npz", "repro.py"):
        assert (d / f).exists(), f
    recs = [json.loads(x) for x in (outs[0] / "results.jsonl").read_text().splitlines()]
    t = [t for r in recs for t in EQ.findings(r)][0]
    assert t["reduced"]["nodes"] <= t["reduced"]["from_nodes"]
    assert t["identity"]["fingerprint"] == g["fingerprint"]
    assert (outs[0] / "results.jsonl").read_bytes() == (outs[1] / "results.jsonl").read_bytes()
    summary = (outs[0] / "summary.md").read_text()
    assert "inconsistent" in summary and "backend (twins)" in summary
    junit = (outs[0] / "junit.xml").read_text()
    assert '/twin"' in junit and 'type="inconsistent"' in junit
    import xmlschema
    xmlschema.XMLSchema(os.path.join(ROOT, "tests", "data", "junit.xsd")).validate(str(outs[0] / "junit.xml"))


def test_check_command_runs_a_twin(tmp_path, capsys):
    """The commands in this process: nothing here needs a process of its own."""
    assert main(["gen", "--seed", "eqcli", "--count", "4", "--out", str(tmp_path / "g")]) == 0
    capsys.readouterr()
    assert main(["check", str(tmp_path / "g"), "--backend", "onnxruntime", "--rewrite", "add_zero"]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "unknown rewrite" in err, err
    status = main(["check", str(tmp_path / "g"), "--backend", MUL_ONE_ORT, "--rewrite", "mul_one",
                   "--out", str(tmp_path / "c")])
    ok = capsys.readouterr()
    recs = [json.loads(x) for x in (tmp_path / "c" / "results.jsonl").read_text().splitlines()]
    assert all(r["rewrite"]["kind"] in ("mul_one", None) for r in recs)
    assert any(EQ.findings(r) for r in recs), [r.get("twins") for r in recs]
    assert status == 1 and "inconsistent" in ok.out, ok.out + ok.err
    assert any((tmp_path / "c" / "cases").glob("*/twin.onnx"))


def test_campaign_key_rewrite_share(tmp_path):
    """On in the weekly campaign (shipped and written by `dlgate init`), off in the pull
    request's; out of range is a configuration error naming the key; a run's fingerprint
    changes only when it is set."""
    from dlgate.gate import config as C
    from dlgate.init.campaigns import campaign

    assert C.load(os.path.join(ROOT, "configs", "weekly.yaml")).rewrite_share == 0.25
    assert C.load(os.path.join(ROOT, "configs", "pr.yaml")).rewrite_share == 0.0
    p = tmp_path / "bad.yaml"
    p.write_text("rewrite_share: 1.5\n")
    with pytest.raises(C.ConfigError, match="rewrite_share"):
        C.load(str(p))
    assert C.Campaign().fingerprint() == C.Campaign(rewrite_share=0.0).fingerprint()
    assert C.Campaign().fingerprint() != C.Campaign(rewrite_share=0.5).fingerprint()
    from dlgate.gate.run.plan import check_config
    assert check_config(C.Campaign(rewrite_share=0.5)).rewrite_share == 0.5
    import inspect
    assert "rewrite_share: 0.25" in inspect.getsource(campaign)


def test_tensorrt_takes_the_same_path():
    """TensorRT parses each twin's ONNX like any model. Where it cannot run (no GPU, no
    tensorrt package) the case is skipped and so is its twin (``not_judged``, never a
    finding); on a GPU runner its twins must all be consistent."""
    from dlgate.backends.registry import load

    why = load("tensorrt").unavailable_reason("cuda")
    cases = [p for p in _cases(4, root="eq-trt", dynamic=0.0, extreme=0.0) if p.search["valid"]][:2]
    recs = _twins(["tensorrt:cuda"], cases)
    twins = [t for r in recs for t in r["twins"]]
    assert len(twins) == len(cases)
    if why or all(v["verdict"] == "skipped" for r in recs for v in r["verdicts"]):
        assert all(t["status"] == EQ.NOT_JUDGED for t in twins), twins
        pytest.skip(f"TensorRT cannot run here: {why or 'skipped'}")
    assert not [t for t in twins if t["status"] == EQ.INCONSISTENT], twins


def test_inductor_compiles_the_twins_graph():
    """Inductor compiles dlgate's graph, so its twin is the edited graph: consistent on a
    correct compiler; a rewrite of the ONNX form only is not for it (nothing runs)."""
    from dlgate.rewrite import make_twin

    p = [p for p in _cases(6, root="eq-ind", dynamic=0.0, extreme=0.0)
         if p.search["valid"] and make_twin(p.graph, p.model, 1, ("mul_one",))][0]
    recs = _twins(["inductor"], [p], kinds=("mul_one",))
    assert [t["status"] for t in recs[0]["twins"]] == [EQ.CONSISTENT], recs[0]["twins"]
    from dlgate.backends.registry import load

    assert EQ.reads_graph(load("inductor")) and EQ.reads_graph(load("tvm-relax"))
    assert not EQ.reads_graph(load("tvm")) and not EQ.reads_graph(load("onnxruntime"))
    wrapped = make_twin(p.graph, p.model, 1, ("wrap_function",))
    t = EQ.judge_twin(None, p, BackendSpec("inductor"), None, wrapped)
    assert t["status"] == EQ.NOT_JUDGED and "ONNX form only" in t["detail"]


def _dynamic_mul_one_cases(n: int, root: str = "eq-bindings", tries: int = 80) -> list:
    """The first ``n`` valid dynamic cases (with further bindings) of ``root``/eq whose own
    twin draw is a ``mul_one`` rewrite: picked by that property."""
    gen = Generator(GenConfig(dynamic_share=1.0, extreme_share=0.0))
    out = []
    for i in range(tries):
        c = make_case(gen, root, "eq", i)
        if not c.graph.dynamic:
            continue
        if make_twin(c.graph, c.model_bytes, EQ.twin_seed(int(c.meta().get("seed") or 0)), ("mul_one",)) is None:
            continue
        p = prepare(c.meta(), c.graph, c.model_bytes)
        if p.search["valid"] and p.shapes:
            out.append(p)
            if len(out) == n:
                return out
    raise AssertionError(f"only {len(out)} of {n} valid dynamic cases with a mul_one twin among {root}/eq/0..{tries - 1}")


def test_a_dynamic_cases_twin_is_compared_at_every_binding():
    """Silent: real onnxruntime, dynamic cases compiled once for their symbolic shapes and
    run at each binding: every twin consistent there, and the record says at how many
    bindings it was compared. Catch: a compiler whose ``x * 1`` goes wrong only at shapes
    other than the first binding: the twin is inconsistent at a further binding (``shape``
    names it), which a comparison at the first binding alone would miss."""
    cases = _dynamic_mul_one_cases(3)
    healthy = _twins(["onnxruntime"], cases, kinds=("mul_one",))
    judged = [t for r in healthy for t in r["twins"] if t["status"] != EQ.NOT_JUDGED]
    assert judged and all(t["status"] in (EQ.CONSISTENT, EQ.EXCUSED) for t in judged), _statuses(healthy)
    assert any(t.get("bindings", 1) > 1 for t in judged), judged
    faulty = _twins(["tests.fake_backends:MulOneAtFurtherBindings"], cases, kinds=("mul_one",))
    found = [t for r in faulty for t in EQ.findings(r)]
    assert found, _statuses(faulty)
    for t in found:
        assert t["shape"]["index"] >= 1 and t["shape"]["binding"], t
        assert t["confirm"] == {"runs": 1, "reproduced": True}, t
        assert "compiled for symbolic shapes, first run at" in t["detail"], t["detail"]
        assert t["signature"]["text"].endswith("| dynamic"), t["signature"]["text"]
    for r in faulty:  # at the first binding the faulty compiler is right: no verdict against the reference
        assert all(v["verdict"] not in ("mismatch", EQ.INCONSISTENT) or v.get("shape") for v in r["verdicts"])
