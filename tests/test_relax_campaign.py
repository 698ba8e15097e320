"""The direct Relax path in campaigns: ``relax_share`` (Relax-native cases, run on both TVM
paths and judged as a pair) and the Relax invalid rules under ``invalid_share``.

Each key changes the batch only as documented (the cases it picks, by their seed alone,
are drawn from the operators the direct path lowers; every other case keeps its bytes) and
the same in any process; through the gate, a Relax pass fault only the direct path's module
meets is that path's finding, new against a base build without it, pre-existing against one
with it, and nothing on the healthy compiler; the pair's table on every side; the Relax
invalid rules appear in a campaign's records; ``dlgate init`` writes the key into the weekly
TVM campaign."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest
import yaml

tvm = pytest.importorskip("tvm")

from dlgate.backends import relax_pair as RP  # noqa: E402
from dlgate.backends.base import BackendSpec  # noqa: E402
from dlgate.backends.tvm_relax import structure_seed  # noqa: E402
from dlgate.case import make_case  # noqa: E402
from dlgate.cli import main  # noqa: E402
from dlgate.exec.outcome import Outcome  # noqa: E402
from dlgate.gate import config as C  # noqa: E402
from dlgate.gate import decide as D  # noqa: E402
from dlgate.gate.run.loop import _native_split  # noqa: E402
from dlgate.gate.run.plan import generator  # noqa: E402
from dlgate.init import campaigns, compilers  # noqa: E402
from dlgate.init.steps import Setup  # noqa: E402
from dlgate.invalid import case as IC  # noqa: E402
from dlgate.invalid import relax_case as RC  # noqa: E402
from dlgate.materialize.relax import COVERED  # noqa: E402
from dlgate.materialize.relax.invalid import RULES  # noqa: E402
from dlgate.materialize.relax.lowerings import covered  # noqa: E402
from dlgate.materialize.relax.module import to_relax  # noqa: E402
from dlgate.oracle import verdict as V  # noqa: E402
from dlgate.seeds import case_seed  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRECT = "tvm-relax[cpu]"
IMPORTER = "tvm[cpu]"
#: Element-wise float32 operators every path compiles, so a run's only failures are the fault's.
OPS = ["Add", "Mul", "Sigmoid", "Exp", "Neg", "Abs", "Sub"]
FAULT = "tests.relax_faults:shift_private_calls"


def test_the_gate_knows_the_lowered_operators_without_importing_tvm():
    assert COVERED == covered()
    assert RP.native_operators(None) == COVERED
    assert RP.native_operators(["Det", "Add", "Gather", "Exp"]) == ("Add", "Exp")


# -- the batch ----------------------------------------------------------------------------------
def _campaign(**kw) -> C.Campaign:
    base = dict(campaign="rb", models=16, max_nodes=6, opset=17, guidance=False, backends=["tvm"])
    return C.Campaign(**dict(base, **kw))


def _batch(cfg: C.Campaign, root: str) -> list:
    """The batch cases a run of ``cfg`` draws (guidance off: each case from its seed alone)."""
    pairs = RP.pairs_of([BackendSpec.parse(b) for b in cfg.backends])
    gen = _native_split(cfg, generator(cfg, [cfg.opset, cfg.opset]), pairs,
                        lambda ops: generator(replace(cfg, operators=list(ops)), [cfg.opset, cfg.opset]))
    return [make_case(gen, root, cfg.campaign, i) for i in range(cfg.models)]


def _root(cfg: C.Campaign, picked, least: int = 2) -> str:
    """The first root whose batch has at least ``least`` cases ``picked(seed)`` picks, and as
    many it does not: chosen by the property, which the seeds alone decide."""
    for k in range(1, 60):
        seeds = [case_seed(f"rc{k}", cfg.campaign, i) for i in range(cfg.models)]
        n = sum(map(picked, seeds))
        if least <= n <= len(seeds) - least:
            return f"rc{k}"
    raise AssertionError("no root draws the mix the test needs")


def test_relax_share_redraws_only_the_cases_it_picks_from_the_lowered_operators():
    on, off = _campaign(relax_share=0.5), _campaign()
    root = _root(on, lambda s: RP.selected(s, 0.5))
    native, plain = _batch(on, root), _batch(off, root)
    picked = 0
    for a, b in zip(native, plain):
        if RP.selected(a.seed, 0.5):
            picked += 1
            assert set(a.graph.op_names()) <= set(COVERED), a.id
        else:
            assert a.model_bytes == b.model_bytes, a.id
    assert picked >= 2
    # the picked cases are a function of the seed: a larger share keeps them
    assert all(RP.selected(c.seed, 0.75) for c in native if RP.selected(c.seed, 0.5))
    # without a tvm backend (or at share 0) the key changes nothing
    for cfg in (_campaign(relax_share=0.5, backends=["onnxruntime"]), _campaign(relax_share=0.0)):
        assert [c.model_bytes for c in _batch(cfg, root)] == [c.model_bytes for c in plain]


def test_invalid_share_on_tvm_breaks_a_quarter_at_the_relax_level_from_the_lowered_operators():
    seeds = [case_seed("ri", "rb", i) for i in range(800)]
    relax = [s for s in seeds if RC.chosen(s, 0.5)]
    assert all(IC.chosen(s, 0.5) for s in relax)  # a part of the invalid cases, never another case
    share = len(relax) / sum(IC.chosen(s, 0.5) for s in seeds)
    assert 0.18 < share < 0.32, share
    on = _campaign(invalid_share=1.0)
    root = _root(on, lambda s: RC.chosen(s, 1.0))
    native = _batch(on, root)
    assert all(set(c.graph.op_names()) <= set(COVERED) for c in native if RC.chosen(c.seed, 1.0))
    plain = _batch(_campaign(invalid_share=1.0, backends=["onnxruntime"]), root)
    assert all(a.model_bytes == b.model_bytes for a, b in zip(native, plain) if not RC.chosen(a.seed, 1.0))


_SCRIPT = """
import hashlib, json, sys
sys.path.insert(0, {root!r})
from tests.test_relax_campaign import _batch, _campaign
cfg = _campaign(relax_share=0.5, invalid_share=0.5)
print(json.dumps([[c.id, hashlib.sha256(c.model_bytes).hexdigest()] for c in _batch(cfg, "rx")]))
"""


def test_the_batch_is_the_same_in_another_process():
    cfg = _campaign(relax_share=0.5, invalid_share=0.5)
    here = [[c.id, hashlib.sha256(c.model_bytes).hexdigest()] for c in _batch(cfg, "rx")]
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONHASHSEED="4242")
    out = subprocess.run([sys.executable, "-c", _SCRIPT.format(root=ROOT)], env=env, capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == here


# -- the pair's table ---------------------------------------------------------------------------
def _v(label: str, verdict: str, error: dict | None = None) -> dict:
    return {"backend": label, "verdict": verdict, "detail": "", "error": error}


def _o(*outputs) -> Outcome:
    import numpy as np

    return Outcome("ok", [np.asarray(x, dtype="float32") for x in outputs])


def _pair(vi: dict, vd: dict, oi=None, od=None) -> dict:
    rec = {"verdicts": [vi, vd]}
    RP.judge_pairs(rec, RP.pairs_of([BackendSpec("tvm")]), {IMPORTER: oi, DIRECT: od})
    return rec


def test_the_pair_names_the_wrong_path_and_makes_a_shared_failure_one_finding():
    right, wrong = _o([1.0, 2.0]), _o([1.0, 5.0])
    rec = _pair(_v(IMPORTER, V.PASS), _v(DIRECT, V.PASS), right, right)
    assert rec["relax"]["pairs"] == [{"importer": IMPORTER, "direct": DIRECT, "finding": "none",
                                      "why": "both paths agree with the reference"}]
    rec = _pair(_v(IMPORTER, V.PASS), _v(DIRECT, V.MISMATCH), right, wrong)
    assert rec["relax"]["pairs"][0]["finding"] == "direct"
    assert rec["verdicts"][1]["pair"] == {"path": "direct", "other": IMPORTER, "other_agrees": True}
    assert rec["verdicts"][1]["detail"].endswith(f"[pair: {IMPORTER} (the ONNX importer path) agrees with the "
                                                 "reference on the same graph]")
    rec = _pair(_v(IMPORTER, V.COMPILE_ERROR, {"type": "TVMError", "message": "bad"}), _v(DIRECT, V.UNDEFINED))
    assert rec["relax"]["pairs"][0]["finding"] == "importer" and "pair" in rec["verdicts"][0]
    # both wrong, the same outputs: one finding, the importer path's; the direct verdict is not classified
    rec = _pair(_v(IMPORTER, V.MISMATCH), _v(DIRECT, V.MISMATCH), wrong, _o([1.0, 5.0]))
    assert rec["relax"]["pairs"][0]["finding"] == "shared"
    vi, vd = rec["verdicts"]
    assert RP.shares_finding(vd) and not RP.shares_finding(vi)
    assert D.classify({"kind": "batch"}, vd, _NoBaseline()) is None
    assert D.classify({"kind": "batch"}, vi, _NoBaseline()) == D.NEW
    # both wrong, differently: a finding each
    rec = _pair(_v(IMPORTER, V.MISMATCH), _v(DIRECT, V.MISMATCH), wrong, _o([7.0, 2.0]))
    assert rec["relax"]["pairs"][0]["finding"] == "both"
    assert not any(RP.shares_finding(v) for v in rec["verdicts"])
    err = {"type": "TVMError", "message": "Cannot find the intrinsic for asinh in float16"}
    rec = _pair(_v(IMPORTER, V.COMPILE_ERROR, err), _v(DIRECT, V.COMPILE_ERROR, dict(err)))
    assert rec["relax"]["pairs"][0]["finding"] == "shared"
    rec = _pair(_v(IMPORTER, V.COMPILE_ERROR, err), _v(DIRECT, V.COMPILE_ERROR, {"type": "TVMError", "message": "other"}))
    assert rec["relax"]["pairs"][0]["finding"] == "both"
    # a refusal leaves nothing to compare: the other path's failure stays its own
    rec = _pair(_v(IMPORTER, V.MISMATCH), _v(DIRECT, V.UNSUPPORTED), wrong)
    assert rec["relax"]["pairs"][0]["finding"] == "undecided" and not RP.shares_finding(rec["verdicts"][0])


def _found(v: dict, typed: str, *more: dict) -> dict:
    """``v`` identified as reduced to ``typed``, with the findings ``more`` made behind it."""
    v["identity"] = {"typed": typed, "fingerprint": typed, "cluster": typed}
    if more:
        v["more"] = list(more)
    return v


def test_a_defect_one_path_meets_whole_and_the_other_behind_a_refusal_is_one_finding():
    """The direct path refused an operator the importer path converts (ArgMax with
    select_last_index=1), cut it, and met the importer path's own compile error in the rest
    (weekly-27's case 00014: float16 Asin, 'unknown intrinsic'): one finding, the importer
    path's, as for a failure both paths share in the whole case. Another error, other reduced
    operators, or a wrong answer (outputs of another model) stay findings of their own."""
    err = {"type": "TVMError", "message": "unknown intrinsic tirx.acos for float16"}
    pairs = RP.pairs_of([BackendSpec("tvm")])

    def run(vi, vd):
        rec = {"verdicts": [vi, vd]}
        RP.judge_pairs(rec, pairs, {})
        RP.pair_behind(rec, pairs)
        return rec

    rec = run(_found(_v(IMPORTER, V.COMPILE_ERROR, err), "Asin(float16)"),
              _found(_v(DIRECT, V.UNSUPPORTED), "ArgMax(float16)",
                     _found(_v(DIRECT, V.COMPILE_ERROR, dict(err)), "Asin(float16)")))
    vi, vd = rec["verdicts"]
    behind = vd["more"][0]
    assert behind["pair"] == {"path": "direct", "same_as": IMPORTER, "behind": True}
    assert RP.shares_finding(behind) and D.classify({"kind": "batch"}, behind, _NoBaseline()) is None
    assert D.classify({"kind": "batch"}, vi, _NoBaseline()) == D.NEW and not RP.shares_finding(vi)
    assert f"{DIRECT} (the direct Relax path) fails the same way behind a failure" in vi["detail"]
    assert "Asin(float16)" in behind["detail"]
    assert rec["relax"]["pairs"][0]["finding"] == "undecided" and rec["relax"]["pairs"][0]["behind_shared"] == 1
    # the other way round: the importer path refused, the direct path fails the whole case
    rec = run(_found(_v(IMPORTER, V.UNSUPPORTED), "Foo(float16)",
                     _found(_v(IMPORTER, V.COMPILE_ERROR, err), "Asin(float16)")),
              _found(_v(DIRECT, V.COMPILE_ERROR, dict(err)), "Asin(float16)"))
    assert rec["verdicts"][1]["pair"]["same_as"] == IMPORTER
    # not the same defect: each stays a finding
    for vd in (_found(_v(DIRECT, V.COMPILE_ERROR, dict(err)), "Acosh(float16)"),
               _found(_v(DIRECT, V.COMPILE_ERROR, {"type": "TVMError", "message": "other words"}), "Asin(float16)"),
               _found(_v(DIRECT, V.RUN_ERROR, dict(err)), "Asin(float16)")):
        rec = run(_found(_v(IMPORTER, V.COMPILE_ERROR, err), "Asin(float16)"),
                  _found(_v(DIRECT, V.UNSUPPORTED), "ArgMax(float16)", vd))
        assert not RP.shares_finding(vd) and D.classify({"kind": "batch"}, vd, _NoBaseline()) == D.NEW
        assert "behind_shared" not in rec["relax"]["pairs"][0]
    wrong = _found(_v(DIRECT, V.MISMATCH), "Asin(float16)")
    run(_found(_v(IMPORTER, V.MISMATCH), "Asin(float16)"), _found(_v(DIRECT, V.UNSUPPORTED), "ArgMax(float16)", wrong))
    assert not RP.shares_finding(wrong)
    # two whole-case failures the pair judged different are not merged afterwards
    rec = run(_found(_v(IMPORTER, V.COMPILE_ERROR, err), "Asin(float16)"),
              _found(_v(DIRECT, V.COMPILE_ERROR, {"type": "TVMError", "message": "other"}), "Asin(float16)"))
    assert rec["relax"]["pairs"][0]["finding"] == "both" and not RP.shares_finding(rec["verdicts"][1])


class _NoBaseline:
    def knows(self, *_):
        return False


# -- through the gate ---------------------------------------------------------------------------
def _run(tmp_path, name: str, fault: bool, base_fixed: bool | None = None, models: int = 5) -> tuple:
    """A Relax-native campaign (every case on both paths) of element-wise operators; ``fault``:
    the pass that shifts calls to private functions on every TVM build; ``base_fixed``: a base
    build (this interpreter) with the fault fixed (True) or not (False); None: no base build."""
    from tests.relax_faults import PRIVATE_CALLS_FIXED_ENV

    tvm_entry = {"name": "tvm", "options": {"extra_passes": [FAULT]}} if fault else "tvm"
    doc = dict(campaign="rg", models=models, min_nodes=3, max_nodes=5, operators=OPS, dtypes=["float32"],
               opset=17, dynamic_share=0, extreme_share=0, relax_share=1.0, reduce=False, findings_per_case=1,
               backends=[tvm_entry], timeout_s=120)
    if base_fixed is not None:
        doc["base"] = {"python": sys.executable,
                       "env": {PRIVATE_CALLS_FIXED_ENV: "1" if base_fixed else "0", "PYTHONPATH": ROOT}}
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(yaml.safe_dump(doc))
    out = tmp_path / name
    code = main(["run", "--config", str(cfg), "--seed", "rg", "--out", str(out), "--fresh", "--no-progress"])
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return code, records, json.loads((out / "verdict.json").read_text())


def _by(rec: dict) -> dict:
    return {v["backend"]: v for v in rec["verdicts"]}


def _has_private_function(out, rec: dict) -> bool:
    """Whether the direct module of a failing case's graph (its bundle) calls a private function."""
    from dlgate.check import load_case

    _, graph, _ = load_case(str(out / rec["bundle"]))
    mod = to_relax(graph, structure_seed(graph))
    return any(f.attrs is None or "global_symbol" not in f.attrs
               for f in mod.functions.values() if isinstance(f, tvm.relax.Function))


def test_the_healthy_compiler_gives_the_pair_nothing(tmp_path):
    """Silent: on TVM as it is, both paths agree with the reference on every case they run."""
    code, records, verdict = _run(tmp_path, "healthy", fault=False)
    assert code == 0, verdict
    assert not verdict["new"] and not verdict["pre_existing"]
    findings = [p["finding"] for r in records for p in r["relax"]["pairs"]]
    assert set(findings) <= {"none", "undecided"} and findings.count("none") >= 3, findings
    assert all(set(_by(r)) == {IMPORTER, DIRECT} for r in records)
    assert verdict["counts"][DIRECT].get("pass", 0) >= 3


def test_a_fault_only_the_direct_module_meets_is_the_direct_paths_finding_new_against_a_fixed_base(tmp_path):
    """Catch: the pass that shifts calls to private functions runs on every TVM build, but only
    the direct path writes a private function: each case it makes wrong is wrong on the
    direct path alone, is the direct path's finding (the importer path of the same graph
    agrees with the reference), and is new against a base build with the fault fixed."""
    code, records, verdict = _run(tmp_path, "fault", fault=True, base_fixed=True)
    caught = [r for r in records if _by(r)[DIRECT]["verdict"] != V.PASS and _by(r)[DIRECT]["verdict"] in V.FAILURES]
    assert caught, [(_by(r)[DIRECT]["verdict"], _by(r)[IMPORTER]["verdict"]) for r in records]
    out = tmp_path / "fault"
    for r in caught:
        v = _by(r)[DIRECT]
        assert v["verdict"] == V.MISMATCH, v
        assert _by(r)[IMPORTER]["verdict"] == V.PASS
        assert r["relax"]["pairs"][0]["finding"] == "direct"
        assert v["pair"] == {"path": "direct", "other": IMPORTER, "other_agrees": True}
        assert v["base"]["reproduces"] is False  # the base build runs the same path, fixed
        assert _has_private_function(out, r)
    assert code == 1
    assert verdict["new"] and all(g["backend"] == DIRECT and g["verdict"] == V.MISMATCH for g in verdict["new"])
    assert all(f"[pair: {IMPORTER} (the ONNX importer path) agrees" in g["detail"] for g in verdict["new"])
    assert sum(len(g["cases"]) for g in verdict["new"]) == len(caught)
    # every case the fault leaves right passes on both paths
    assert all(p["finding"] in ("none", "undecided") for r in records if r not in caught for p in r["relax"]["pairs"])


def test_a_fault_both_paths_meet_one_of_them_only_behind_a_refusal_is_one_finding(tmp_path):
    """Through the gate: a pass that cannot compile a sine (both paths) on a dynamic case of
    Mul, Add and Sin whose Mul broadcasts a symbolic shape the direct path refuses (Relax
    infers no shape for it). The importer path fails the whole case; the direct path refuses
    it, cuts the Mul and fails the rest the same way: one finding, the importer path's, the
    direct one paired behind its refusal."""
    doc = dict(campaign="rb", models=1, min_nodes=2, max_nodes=4, operators=["Add", "Sin", "Mul"],
               dtypes=["float32"], opset=17, dynamic_share=1.0, extreme_share=0, relax_share=1.0, reduce=True,
               reduce_seconds=60, findings_per_case=2, backends=[{"name": "tvm", "options": {"extra_passes": [
                   "tests.relax_faults:refuse_sin"]}}], timeout_s=120)
    cfg = tmp_path / "rb.yaml"
    cfg.write_text(yaml.safe_dump(doc))
    out = tmp_path / "rb"
    code = main(["run", "--config", str(cfg), "--seed", "rb3", "--out", str(out), "--fresh", "--no-progress"])
    (rec,) = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    vi, vd = _by(rec)[IMPORTER], _by(rec)[DIRECT]
    assert vi["verdict"] == V.COMPILE_ERROR and vi["identity"]["typed"].startswith("Sin(")
    assert vd["verdict"] == V.UNSUPPORTED and "Mul on symbolic shapes" in vd["detail"], vd["detail"]
    (behind,) = vd["more"]
    assert behind["verdict"] == V.COMPILE_ERROR and behind["identity"]["typed"] == vi["identity"]["typed"]
    assert behind["pair"] == {"path": "direct", "same_as": IMPORTER, "behind": True}
    assert rec["relax"]["pairs"][0]["behind_shared"] == 1
    verdict = json.loads((out / "verdict.json").read_text())
    assert code == 1 and [g["backend"] for g in verdict["new"]] == [IMPORTER], verdict["new"]
    assert "fails the same way behind a failure of its own" in verdict["new"][0]["detail"]


def test_a_direct_path_finding_the_base_build_shares_is_pre_existing(tmp_path):
    code, records, verdict = _run(tmp_path, "shared", fault=True, base_fixed=False)
    assert code == 0, verdict
    assert not verdict["new"] and verdict["pre_existing"]
    assert all(g["backend"] == DIRECT for g in verdict["pre_existing"])


def test_the_relax_invalid_rules_run_in_a_campaign_with_invalid_share(tmp_path):
    """A TVM campaign with ``invalid_share``: the cases its Relax draw picks break a rule of
    ``main``'s parameters and run on the direct path's invalid backend alone, which TVM rejects
    cleanly (its VM's check of ``main``'s arguments, or its compile); the others break an ONNX
    rule on ``tvm``."""
    cfg = _campaign(models=8, invalid_share=1.0, opset=17)
    root = _root(cfg, lambda s: RC.chosen(s, 1.0), least=3)
    doc = dict(campaign=cfg.campaign, models=8, max_nodes=6, opset=17, guidance=False, backends=["tvm"],
               invalid_share=1.0, reduce=False, findings_per_case=1, timeout_s=120)
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "inv"
    code = main(["run", "--config", str(path), "--seed", root, "--out", str(out), "--fresh", "--no-progress"])
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    relax = [r for r in records if r["invalid"].get("level") == "relax"]
    picked = [r for r in records if RC.chosen(case_seed(root, cfg.campaign, r["index"]), 1.0)]
    assert relax and {r["case"] for r in relax} <= {r["case"] for r in picked}
    for r in relax:
        (v,) = r["verdicts"]
        assert v["backend"] == f"{RC.BACKEND}[cpu]" and r["invalid"]["rule"] in RULES
        assert v["verdict"] == V.PASS and v["detail"].startswith(f"rejected cleanly ({r['invalid']['rule']} at main)"), v
    for r in records:
        if r not in relax:
            assert r["invalid"]["rule"] not in RULES and [v["backend"] for v in r["verdicts"]] == [IMPORTER]
    assert code == 0


# -- dlgate init --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["tvm", "onnxruntime"])
def test_init_writes_relax_share_into_the_weekly_tvm_campaign_only(tmp_path, name):
    setup = Setup(compilers.COMPILERS[name], "org/dlgate@v1", "main")
    for weekly in (True, False):
        path = tmp_path / f"{name}-{weekly}.yaml"
        path.write_text(campaigns.campaign(setup, weekly))
        cfg = C.load(str(path))
        assert cfg.relax_share == (0.25 if weekly and name == "tvm" else 0.0)


# -- a scalar input in a TVMScript repro ---------------------------------------------------------
def test_a_tvmscript_repro_feeds_a_scalar_input_as_a_scalar(tmp_path):
    """A reduced direct-path finding of the campaign came with a 0-d input; its repro gave it
    to ``main`` as a 1-d tensor (``np.ascontiguousarray`` makes 0-d arrays 1-d), which TVM's
    VM rejects, so the repro failed on its own harness instead of showing the bug. The repro
    of a healthy module taking a scalar must run and find TVM right (exit 0)."""
    import numpy as np

    from dlgate.backends.tvm_passes import PIPELINE_PASSES, module_source
    from dlgate.reduce.candidates import _sliced
    from dlgate.reduce.passes import PassReduction
    from dlgate.reduce.tvmscript import SCRIPT, script_source

    assert _sliced(np.array(2.0, dtype="float32"), ()).shape == ()
    bb = tvm.relax.BlockBuilder()
    x = tvm.relax.Var("x", tvm.relax.TensorType((), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(tvm.relax.op.negative(x))
        bb.emit_func_output(y)
    text, _consts = module_source(bb.get())
    full = list(PIPELINE_PASSES["default_build"])
    red = PassReduction(full=full, passes=full, culprits=[], verdict=None)
    src, data = script_source(text, [], {"x": np.array(2.0, dtype="float32")}, {"y": np.array(-2.0, dtype="float32")},
                              None, red, {"verdict": V.MISMATCH, "backend": DIRECT}, "direct", "a test")
    (tmp_path / SCRIPT).write_text(src)
    assert not data
    r = subprocess.run([sys.executable, SCRIPT], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


def test_a_relax_level_invalid_case_is_not_judged_on_a_backend_that_reads_its_valid_onnx_model():
    """``dlgate check`` on a saved Relax-level invalid case with ``--backend tvm``: the ONNX
    model is valid, so running it says nothing about the broken module (never
    ``invalid_accepted``); only the direct path's invalid backend is judged on it."""
    from types import SimpleNamespace

    from dlgate.check import CheckConfig
    from dlgate.invalid.oracle import check_invalid

    info = {"rule": "param_dtype", "level": "relax", "node": "x", "op_type": "main", "index": 0}
    case = SimpleNamespace(id="c", meta={"invalid": info, "seed": 1}, graph=SimpleNamespace(opset=17), search={})
    (v,) = check_invalid(None, case, CheckConfig([BackendSpec("tvm")]))["verdicts"]
    assert v["verdict"] == V.UNSUPPORTED and "only TVM's direct path takes the broken module" in v["detail"]


# -- a Relax-level invalid finding's TVMScript repro ---------------------------------------------
CASTS = "tests.relax_faults:trust_param_casts"


def _fixed_casts(folder) -> None:
    """The planted pass made harmless beside a repro (TVM as it is: the bug fixed)."""
    os.makedirs(os.path.join(folder, "tests"), exist_ok=True)
    with open(os.path.join(folder, "tests", "relax_faults.py"), "w") as f:
        f.write("import tvm\n\n@tvm.transform.module_pass(opt_level=0, name='TrustParamCasts')\n"
                "def trust_param_casts(mod, _ctx):\n    return mod\n")


def test_a_relax_level_invalid_finding_gets_a_standalone_tvmscript_repro(tmp_path):
    """Catch: with a planted pass that redeclares each parameter of ``main`` as the type its
    body ``match_cast``s it to, TVM accepts a module whose parameter is declared wrongly and
    runs it (``invalid_accepted`` on ``tvm-relax-invalid[cpu]``). The finding's bundle holds
    ``repro_tvmscript.py``: the pass list reduced to the planted pass and the lowering, the
    wrong declaration, the inputs; run alone (TVM and NumPy, no dlgate), it exits 1 with
    BUG, and 0 (TVM raising) once the pass is made harmless."""
    from tests.test_tvm_passes import _clean_run, _with_fault_beside

    from dlgate.backends.tvm_passes import LOWERING, PIPELINE_PASSES
    from dlgate.reduce.tvmscript import SCRIPT

    cfg = _campaign(models=8, invalid_share=1.0, opset=17)
    root = _root(cfg, lambda s: RC.chosen(s, 1.0), least=3)
    doc = dict(campaign=cfg.campaign, models=8, max_nodes=6, opset=17, guidance=False, invalid_share=1.0,
               backends=[{"name": "tvm", "options": {"extra_passes": [CASTS]}}], reduce=False, findings_per_case=1,
               confirm_runs=1, timeout_s=120)
    path = tmp_path / "acc.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "acc"
    code = main(["run", "--config", str(path), "--seed", root, "--out", str(out), "--fresh", "--no-progress"])
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    accepted = [(r, v) for r in records if r["invalid"].get("level") == "relax" for v in r["verdicts"]
                if v["verdict"] == "invalid_accepted"]
    assert accepted, [(r["invalid"], [v["verdict"] for v in r["verdicts"]]) for r in records]
    assert code == 1
    assert all(v["backend"] == "tvm-relax-invalid[cpu]" and "a Relax module TVM must reject" in v["detail"]
               for _, v in accepted)
    verdict = json.loads((out / "verdict.json").read_text())
    assert any(g["backend"] == "tvm-relax-invalid[cpu]" for g in verdict["new"])
    assert "tvm-relax-invalid[cpu]" in (out / "junit.xml").read_text()
    r, v = accepted[0]
    d = out / v["identity"]["repro"]
    rj = json.loads((d / "repro.json").read_text())
    red = rj["tvmscript"]["passes"]
    assert red["full"] == [CASTS] + list(PIPELINE_PASSES["target-default"])
    assert red["culprits"] == [CASTS] and red["verdict"] == "invalid_accepted"
    assert red["passes"] == [CASTS] + [n for n in PIPELINE_PASSES["target-default"] if n in LOWERING]
    text = (d / SCRIPT).read_text()
    assert (d / "repro.py").read_text() == text
    assert r["invalid"]["detail"] in text and "# TVM's text of the invalid module:" in text
    assert "import dlgate" not in text and "import onnx" not in text
    if rj["tvmscript"]["module"] == "valid, redeclared":  # TVM's parser refuses the wrong declaration
        assert "def redeclare(" in text and rj["tvmscript"]["parser_refuses"]
    bug = tmp_path / "bug"
    shutil.copytree(d, bug)
    _with_fault_beside(str(bug))
    res = _clean_run(str(bug), str(tmp_path))
    assert res.returncode == 1, res.stdout + res.stderr[-3000:]
    assert res.stdout.startswith("BUG: TVM built a module that breaks " + r["invalid"]["rule"]), res.stdout
    assert "(the lowering alone): TVM rejects it" in res.stdout and "IMPORTED []" in res.stdout, res.stdout
    fixed = tmp_path / "fixed"
    shutil.copytree(d, fixed)
    _fixed_casts(str(fixed))
    res = _clean_run(str(fixed), str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    assert res.stdout.startswith("OK: TVM rejects the invalid module") and "ErrorContext(fn=main" in res.stdout, \
        res.stdout
    # a run journaled before the backend had its entry point says its module:Class path: resumed, it
    # decides and reports under that label as it did
    old = tmp_path / "old"
    shutil.copytree(out, old)
    for name in ("results.jsonl", "timings.jsonl"):
        p = old / name
        p.write_text(p.read_text().replace('"tvm-relax-invalid[cpu]"', f'"{RC.PATH}[cpu]"'))
    assert main(["run", "--config", str(path), "--seed", root, "--out", str(old), "--no-progress"]) == 1
    again = json.loads((old / "verdict.json").read_text())
    assert [g["backend"] for g in again["new"]] == [f"{RC.PATH}[cpu]"] * len(verdict["new"])
    assert f"{RC.PATH}[cpu]" in (old / "junit.xml").read_text()
