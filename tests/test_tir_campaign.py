"""The TIR mode in a campaign (``tir_share``, :mod:`dlgate.gate.run.tir`): its keys, its place
in the plan, a planted TIR pass fault found through ``dlgate run`` head versus base (new when
only head has it, pre-existing when the base build shares it) and reduced to a short repro,
a run SIGKILLed in another process and resumed to the uninterrupted run's journal, and a step
regenerated from the run's folder."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest
import yaml

from dlgate.cli import main
from dlgate.gate import config as C
from dlgate.gate.journal import read_records
from dlgate.gate.run import plan as PL
from tests.helpers import pinned_where

pytest.importorskip("tvm")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
XSD = os.path.join(REPO, "tests", "data", "junit.xsd")
OPS = ["Sigmoid", "Add", "Relu", "Mul", "Abs", "Neg", "Tanh"]
FAULTY = {"name": "tests.tir_fault_backend:FaultyTvm"}
#: No performance verdict in these runs: timings would make the journals differ.
NO_SLOW = 1000.0


def write_config(path, **kw) -> str:
    doc = {"campaign": "tir", "models": 3, "max_nodes": 4, "opset": 18, "operators": OPS, "dtypes": ["float32"],
           "backends": ["tvm"], "crosscheck": False, "timeout_s": 120, "confirm_runs": 1, "tir_share": 1.0,
           "tir_slow_margin": NO_SLOW, "reduce_seconds": 90}
    doc.update(kw)
    p = os.path.join(path, f"cfg-{abs(hash(json.dumps(doc, sort_keys=True))) % 10**8}.yaml")
    with open(p, "w") as f:
        yaml.safe_dump(doc, f)
    return p


def verdict(out) -> dict:
    with open(os.path.join(out, "verdict.json")) as f:
        return json.load(f)


# -- keys and plan -------------------------------------------------------------------------------
def test_the_keys_default_off_and_leave_the_fingerprint_alone(tmp_path):
    plain = C.build({"backends": ["tvm"]})
    assert (plain.tir_share, plain.tir_n_max, plain.tir_slow_margin, plain.tir_slow_gates) == (0.0, 4, 2.0, False)
    on = C.build({"backends": ["tvm"], "tir_share": 0.2})
    assert plain.fingerprint() != on.fingerprint()
    assert C.build({"backends": ["tvm"], "tir_n_max": 4}).fingerprint() == plain.fingerprint()
    assert on.to_json()["tir_share"] == 0.2


@pytest.mark.parametrize("doc, words", [({"tir_share": 1.5}, "tir_share"), ({"tir_n_max": 0}, "tir_n_max"),
                                        ({"tir_slow_gates": "yes"}, "tir_slow_gates"),
                                        ({"tir_shares": 0.2}, "tir_share")])
def test_a_bad_tir_key_is_one_line_and_status_2(tmp_path, capsys, doc, words):
    cfg = write_config(str(tmp_path), **doc)
    assert main(["config", cfg]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


def test_the_plan_spreads_the_tir_steps_among_the_graph_cases_in_the_first_shard():
    cfg = C.build({"backends": ["tvm"], "models": 8, "tir_share": 0.25})
    items = PL.plan(cfg, None)
    assert [k for k, _ in items].count("tir") == 2 and [k for k, _ in items].count("batch") == 6
    assert [key for k, key in items if k == "tir"] == [0, 1]
    where = [i for i, (k, _) in enumerate(items) if k == "tir"]
    assert where[0] > 0 and where[1] < len(items) - 1  # spread, not bunched at either end
    assert not [k for k, _ in PL.plan(cfg, PL.Shard(2, 2)) if k == "tir"]
    assert [k for k, _ in PL.plan(cfg, PL.Shard(1, 2))].count("tir") == 2
    # no backend with a TIR mode (onnxruntime), or the mode off: the batch as before
    assert PL.plan(C.build({"backends": ["onnxruntime"], "models": 8, "tir_share": 0.25}), None) == \
        [("batch", i) for i in range(8)]
    assert PL.plan(C.build({"backends": ["tvm"], "models": 8}), None) == [("batch", i) for i in range(8)]


def test_tir_chains_spread_the_steps_over_the_shards_whatever_their_count():
    cfg = C.build({"backends": ["tvm"], "models": 12, "tir_share": 0.5, "tir_chains": 3})
    steps = lambda shard: [key for k, key in PL.plan(cfg, shard) if k == "tir"]  # noqa: E731
    assert steps(None) == list(range(6))
    # three shards: one chain each (step k is chain k % 3)
    assert [steps(PL.Shard(i, 3)) for i in (1, 2, 3)] == [[0, 3], [1, 4], [2, 5]]
    # two shards: chains 0 and 2 in the first, chain 1 in the second; never a chain split
    assert [steps(PL.Shard(i, 2)) for i in (1, 2)] == [[0, 2, 3, 5], [1, 4]]
    # more shards than chains: the extra shards run graph cases only
    assert [steps(PL.Shard(i, 4)) for i in (1, 2, 3, 4)] == [[0, 3], [1, 4], [2, 5], []]
    assert sorted(k for i in (1, 2, 3, 4) for k in steps(PL.Shard(i, 4))) == list(range(6))


# -- the planted fault, head versus base ---------------------------------------------------------
def _first_step_hits_the_fault(root: str, campaign: str) -> bool:
    """Whether step 0 of ``root``'s TIR mode builds a program the planted fault changes."""
    from dlgate.gate.run import tir as T
    from dlgate.tir.fuzz import Settings, propose
    from tests.tir_faults import loses_a_lane

    p = propose(T.seed_corpus(root, campaign), root, campaign, 0, Settings())
    return p.program is not None and p.kind == "ir" and loses_a_lane(p.program.text)


#: The root seed whose first TIR step meets the planted fault: the first of lane1..lane39
#: that does (:func:`_pick_lane_root`), found once rather than searched in every run (the
#: search builds a seed corpus a root tried, about a minute in all).
LANE_ROOT = "lane10"


def _pick_lane_root() -> str | None:
    """The first root of lane1..lane39 whose first TIR step meets the planted fault."""
    return next((f"lane{k}" for k in range(1, 40) if _first_step_hits_the_fault(f"lane{k}", "tir")), None)


@pytest.fixture(scope="module")
def lane_root():
    """A root seed whose first TIR step meets the planted fault (picked by that property,
    pinned, and checked by it here)."""
    return pinned_where(LANE_ROOT, lambda r: _first_step_hits_the_fault(r, "tir"), _pick_lane_root,
                        "draws a first TIR step the planted fault changes (lane1..lane39)")


def _run_repro(folder: str, faulty: bool) -> subprocess.CompletedProcess:
    """``repro.py`` in a fresh process, on TVM as installed or with the planted fault in it."""
    pre = "import sys; sys.path.insert(0, %r); import tests.tir_fault_backend as f; f.patch(); " % REPO if faulty else ""
    code = pre + "import runpy; runpy.run_path('repro.py', run_name='__main__')"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=300,
                          env=env)


@pytest.mark.parametrize("base_has_fault", [False, True])
def test_a_tir_pass_fault_is_found_head_versus_base(tmp_path, monkeypatch, lane_root, base_has_fault):
    monkeypatch.setenv("FAKE_TIR_FAULT", "1")  # the head build (this environment) has the faulty pass
    base = {"python": sys.executable, "env": {"FAKE_TIR_FAULT": "1" if base_has_fault else "0", "PYTHONPATH": REPO}}
    cfg = write_config(str(tmp_path), backends=[FAULTY], base=base, models=1)
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", lane_root, "--out", out]) == (0 if base_has_fault else 1)
    v = verdict(out)
    assert v["novelty"] == "base"
    step0 = read_records(os.path.join(out, "results.jsonl"))[0]
    assert step0["kind"] == "tir" and step0["index"] == 0
    x = step0["verdicts"][0]
    assert x["verdict"] == "tir_inconsistent", x
    assert x["base"]["reproduces"] is base_has_fault
    groups = v["pre_existing" if base_has_fault else "new"]
    assert groups and {g["verdict"] for g in groups} == {"tir_inconsistent"}
    assert not v["new" if base_has_fault else "pre_existing"]
    if base_has_fault:  # a pull request leaves a shared failure unreduced
        assert "reduction" not in x
        return
    # reduced: the faulty pass is the only one beyond the minimal sequence, the program short
    from dlgate.tir import passes as P

    red = x["reduction"]
    assert [n for n in red["passes"] if n not in P.REQUIRED] == ["LoopPartition"], red
    assert red["lines"] <= min(red["original_lines"], 8), red
    assert x["identity"]["pattern"] == "LoopPartition"
    repro = os.path.join(out, x["identity"]["repro"])
    doc = json.load(open(os.path.join(repro, "repro.json")))
    assert doc["verdict"] == "tir_inconsistent" and doc["tir"]["passes"] == red["passes"]
    src = open(os.path.join(repro, "repro.py")).read()
    assert "import onnx" not in src and "dlgate" not in src.split('"""', 2)[2]  # TVM and NumPy only
    got = _run_repro(repro, faulty=True)
    assert got.returncode == 1 and "reproduced" in got.stdout, got.stdout + got.stderr
    healthy = _run_repro(repro, faulty=False)
    assert healthy.returncode == 0 and "not reproduced" in healthy.stdout, healthy.stdout + healthy.stderr
    # the reports name it: JUnit (schema-valid), the summary
    import xmlschema

    xmlschema.XMLSchema(XSD).validate(os.path.join(out, "junit.xml"))
    junit = ET.parse(os.path.join(out, "junit.xml")).getroot()
    assert any("tir_inconsistent" in (f.get("message") or "") + (f.text or "") for f in junit.iter("failure"))
    summary = open(os.path.join(out, "summary.md")).read()
    assert "tir_inconsistent" in summary and x["identity"]["repro"] in summary
    # the HTML report, and one issue through the issue publisher (a local fake GitHub), once per cause
    assert main(["report", out]) == 0
    assert "tir_inconsistent" in open(os.path.join(out, "report.html")).read()
    from dlgate.github.client import GitHub
    from dlgate.github.issues import marker, publish
    from tests.github_fake import FakeGitHub

    token = "ghs_dlgateTirTestToken0123456789abcdef"
    env = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/tvm", "GITHUB_RUN_ID": "7"}
    with FakeGitHub(token=token) as gh:
        client = GitHub("acme/tvm", token=token, api_url=gh.url, timeout=2, backoff_s=0.01, sleep=lambda s: None)
        assert publish(out, client, env=env, log=lambda m: None)["opened"] == 1
        (issue,) = gh.issues_containing(marker(x["identity"]["cause"]))
        assert "tir inconsistent" in issue["title"] and "LoopPartition" in issue["title"]
        assert "T.prim_func" in issue["body"] and "TVM and NumPy" in issue["body"] and "onnx.helper" not in issue["body"]
        again = publish(out, client, env=dict(env, GITHUB_RUN_ID="8"), log=lambda m: None)
        assert again["opened"] == 0 and again["commented"] == 1


# -- a healthy TVM, a kill, a resume, another process ---------------------------------------------
def _cmd(cfg: str, out: str) -> list:
    return [sys.executable, "-m", "dlgate", "run", "--config", cfg, "--seed", "tirkill", "--out", out, "--no-progress"]


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    """An uninterrupted run on the installed TVM, 4 TIR steps in two chains among 2 graph
    cases: (config, folder)."""
    d = tmp_path_factory.mktemp("tir-healthy")
    # static graph cases: a TVM defect a symbolic graph may meet (emit_te's words from LegalizeOps)
    # is not what this run checks; the TIR steps do not depend on it
    cfg = write_config(str(d), models=6, tir_share=0.67, tir_chains=2, dynamic_share=0)
    out = str(d / "whole")
    status = main(["run", "--config", cfg, "--seed", "tirkill", "--out", out])
    return cfg, out, status


def test_a_healthy_tvm_gives_no_tir_crash_and_no_inconsistency(healthy):
    _, out, status = healthy
    recs = read_records(os.path.join(out, "results.jsonl"))
    kinds = [r.get("kind") for r in recs]
    assert kinds.count("tir") == 4 and kinds.count("batch") == 2
    verdicts = [r["verdicts"][0]["verdict"] for r in recs if r["kind"] == "tir"]
    assert not {"tir_crash", "tir_inconsistent"} & set(verdicts), verdicts
    assert status == (1 if "tir_exception" in verdicts else 0)
    steps = [r["tir"] for r in recs if r["kind"] == "tir"]
    assert all(s["digest"] or s["status"] is None for s in steps)


def test_sigkill_in_another_process_then_resume_gives_the_same_journal(healthy, tmp_path, capsys):
    cfg, whole, status = healthy
    killed = str(tmp_path / "killed")
    proc = subprocess.Popen(_cmd(cfg, killed), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO,
                            start_new_session=True)
    path = os.path.join(killed, "results.jsonl")
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline:
        if os.path.exists(path) and any(r.get("kind") == "tir" for r in read_records(path)):
            break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    n_before = len(read_records(path))
    assert 1 <= n_before < 6, n_before
    # the resume runs in this process: only the SIGKILL needs a process of its own, and this
    # one has TVM and PyTorch warm already (a fresh interpreter would import both again); the
    # steps journaled before the kill were made in the killed process, so the journal compared
    # below still holds TIR steps regenerated in another process than the whole run's
    capsys.readouterr()
    assert main(_cmd(cfg, killed)[3:]) == status
    err = capsys.readouterr().err
    assert f"{n_before} of 6 cases already done" in err, err
    assert open(path).read() == open(os.path.join(whole, "results.jsonl")).read()
    assert verdict(killed)["counts"] == verdict(whole)["counts"]


def test_a_chains_shard_journals_the_unsharded_runs_steps(healthy, tmp_path, capsys):
    cfg, whole, _ = healthy
    out = str(tmp_path / "shard2")
    capsys.readouterr()
    main(["run", "--config", cfg, "--seed", "tirkill", "--out", out, "--shard", "2/2"])
    mine = [r for r in read_records(os.path.join(out, "results.jsonl")) if r["kind"] == "tir"]
    theirs = {r["index"]: r for r in read_records(os.path.join(whole, "results.jsonl")) if r["kind"] == "tir"}
    assert [r["index"] for r in mine] == [1, 3]  # chain 1, in its order
    for r in mine:  # the same programs, passes, outcomes and verdicts as in the unsharded run
        assert r["tir"] == theirs[r["index"]]["tir"] and r["case"] == theirs[r["index"]]["case"]
        assert [v["verdict"] for v in r["verdicts"]] == [v["verdict"] for v in theirs[r["index"]]["verdicts"]]


def test_a_step_is_regenerated_from_the_run_folder(healthy, capsys):
    _, out, _ = healthy
    recs = [r for r in read_records(os.path.join(out, "results.jsonl")) if r["kind"] == "tir"]
    last = max(recs, key=lambda r: r["index"])
    assert main(["tir-step", out, str(last["index"]), "--json"]) == 0
    step = json.loads(capsys.readouterr().out)
    assert step["case"] == last["case"] and step["passes"] == last["tir"]["passes"]
    if step["text"] is not None:
        from dlgate.tir.program import Program

        assert Program(step["text"]).digest() == last["tir"]["digest"]
    assert main(["tir-step", out, "99"]) == 2
    assert "no TIR step 99" in capsys.readouterr().err


# -- dlgate init ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name, weekly_share", [("tvm", 0.1), ("onnxruntime", 0.0)])
def test_init_turns_the_tir_mode_on_in_tvms_weekly_campaign_only(tmp_path, name, weekly_share):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    assert main(["init", "--dir", str(repo), "--compiler", name, "--action-ref", "owner/dlgate@v1"]) == 0
    weekly = C.load(str(repo / ".dlgate" / "weekly.yaml"))
    assert weekly.tir_share == weekly_share and weekly.tir_n_max == 4
    assert C.load(str(repo / ".dlgate" / "campaign.yaml")).tir_share == 0.0  # pull requests: off
    if weekly_share:  # 500 steps in eight chains, one per shard of the weekly matrix
        assert PL.tir_steps(weekly) == 500 and weekly.tir_chains == 8
        assert [[k for k, _ in PL.plan(weekly, PL.Shard(i, 8))].count("tir") for i in range(1, 9)] == [63] * 4 + [62] * 4


# -- change-aware: TIR passes and code generation ------------------------------------------------
TIR_DIFF = os.path.join(REPO, "tests", "data", "change", "tvm", "tir_loop_partition.diff")


def _change():
    from dlgate.change import diff
    from dlgate.change.compilers import map_change

    return map_change(diff.from_file(TIR_DIFF, None), "tvm", None)


def test_a_change_to_a_tir_pass_maps_to_that_pass_and_codegen_to_the_tir_mode():
    by_path = {f.path: [t.key for t in f.targets] for f in _change().files}
    assert by_path["src/s_tir/transform/loop_partition.cc"] == ["tir:LoopPartition"]
    assert by_path["src/target/llvm/codegen_llvm.h"] == ["tir:codegen"]
    assert by_path["python/tvm/tirx/stmt_functor.py"] == ["tir:any"]
    assert by_path["src/relax/transform/attach_global_symbol.cc"] == []  # Relax: not the TIR mode's


def test_the_tir_targets_raise_the_tir_share_and_lead_the_sequences():
    from dlgate.change.aim import resolve
    from dlgate.gate.run import tir as T

    doc = _change().to_json()
    assert resolve([t for t in _change().targets], "tvm") == ([], {})  # no graph aim, no gap
    pr = C.build({"backends": ["tvm"], "models": 10, "target_share": 0.8})
    raised = T.aimed(pr, doc)
    assert raised.tir_share == 0.8 and PL.tir_steps(raised) == 8  # every target is the TIR mode's
    assert T.aimed(C.build({"backends": ["onnxruntime"], "models": 10}), doc).tir_share == 0.0
    assert T.front_passes(doc) == ["LoopPartition"]


def test_a_pr_run_on_a_tir_pass_change_runs_steps_led_by_the_pass(tmp_path):
    cfg = write_config(str(tmp_path), models=3, tir_share=0.0, target_share=0.67)
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "pr", "--out", out, "--diff", TIR_DIFF]) in (0, 1)
    recs = read_records(os.path.join(out, "results.jsonl"))
    steps = [r for r in recs if r["kind"] == "tir"]
    assert len(steps) == 2 and len(recs) == 3
    assert all(r["tir"]["passes"][0] == "LoopPartition" for r in steps)
    ran = [r for r in steps if r["tir"]["digest"]]  # a mutation TVM rejected ran nothing
    rows = {r["target"]: r for r in verdict(out)["change"]["rows"]}
    for key in ("tir:LoopPartition", "tir:codegen", "tir:any"):
        assert rows[key]["models"] == len(ran), rows[key]


# -- the performance class -----------------------------------------------------------------------
@pytest.mark.parametrize("gates, base_shares, cls", [(False, False, None), (True, False, "new"),
                                                     (True, True, "pre_existing")])
def test_tir_slow_is_reported_and_gates_only_where_the_campaign_says(gates, base_shares, cls):
    from dlgate.gate import baseline as B
    from dlgate.gate.decide import decide

    ident = {"fingerprint": "f" * 16, "cluster": "c" * 16, "cause": "c" * 16, "pattern": "UnrollLoop", "typed": "t",
             "text": "tir :: slow"}
    slow = {"backend": "tvm[cpu]", "verdict": "tir_slow", "detail": "runs more than 2x", "gates": gates,
            "identity": ident, "base": {"verdict": "tir_slow" if base_shares else "pass", "reproduces": base_shares}}
    ok = {"backend": "tvm[cpu]", "verdict": "pass"}
    recs = [{"case": "tir/00000-a", "kind": "tir", "verdicts": [slow]}, {"case": "tir/00001-b", "kind": "tir",
                                                                        "verdicts": [ok]}]
    d = decide(recs, B.load(None), "r", "c", ["tvm[cpu]"], True, mode="base")
    assert d.counts["tvm[cpu]"] == {"pass": 1, "tir_slow": 1}  # counted either way
    assert d.exit_code() == (1 if cls == "new" else 0)
    found = {k: [g["verdict"] for g in d.of(k)] for k in ("new", "pre-existing")}
    if cls is None:
        assert found == {"new": [], "pre-existing": []}
    else:
        assert found[cls.replace("_", "-")] == ["tir_slow"]
