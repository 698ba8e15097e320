"""A run stopped by SIGTERM (a cancelled or timed-out CI job) or SIGINT (Ctrl-C) still
reports: summary.md, verdict.json and junit.xml cover the cases journaled so far, marked as
interrupted with the count, never a pass; the status is 143 or 130, no worker outlives it, and
the same command again resumes from the journal and ends with a normal report."""
from __future__ import annotations

import glob
import json
import os
import signal
import time
import xml.etree.ElementTree as ET

import pytest

from dlgate.cli import main
from dlgate.gate import decide as D
from dlgate.gate import report
from dlgate.gate.journal import OutLock
from tests.helpers import judge_candidate, seed_where
from tests.test_lifecycle import LINUX, alive, reap, records, run_cmd, slow, spawn, tree, wait_for, write_config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
XSD = os.path.join(REPO, "tests", "data", "junit.xsd")


def reports(out) -> tuple:
    """(summary.md, verdict.json, junit.xml's root) of a run folder."""
    with open(os.path.join(out, "summary.md"), encoding="utf-8") as f:
        summary = f.read()
    with open(os.path.join(out, "verdict.json"), encoding="utf-8") as f:
        verdict = json.load(f)
    import xmlschema

    xmlschema.XMLSchema(XSD).validate(os.path.join(out, "junit.xml"))
    return summary, verdict, ET.parse(os.path.join(out, "junit.xml")).getroot()


def interrupted_suite(root):
    """The testsuite that marks an interrupted run, or None."""
    return next((s for s in root.iter("testsuite") if s.get("name", "").endswith(" run")), None)


def stop_after_records(proc, out, sig, n=1, more=False):
    """Send ``sig`` once ``n`` cases are journaled (with ``more``, then SIGINT and SIGTERM in
    turn every 10 ms until the run ends); (stderr, the run's pids and process groups, as
    they were just before)."""
    try:
        wait_for(lambda: (os.path.exists(out / "results.jsonl") and len(records(out)) >= n) or proc.poll() is not None,
                 timeout=300, what=f"{n} record(s)")
        assert proc.poll() is None, proc.communicate()
        pids, groups = tree(proc.pid)
        proc.send_signal(sig)
        k = 0
        while more and proc.poll() is None:
            proc.send_signal((signal.SIGINT, signal.SIGTERM)[k % 2])
            k += 1
            time.sleep(0.01)
        _, err = proc.communicate(timeout=120)
    except BaseException:
        proc.kill()
        raise
    return err, pids, groups


@LINUX
@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
def test_an_interrupted_run_reports_what_ran_then_a_rerun_resumes(tmp_path, sig, status):
    cfg = write_config(tmp_path, models=4, backends=[slow(tmp_path / "marks", seconds=0.5)])
    out, tmp = tmp_path / "o", tmp_path / "tmp"
    proc = spawn(run_cmd(cfg, out), tmp)
    err, pids, groups = stop_after_records(proc, out, sig)
    try:
        wait_for(lambda: not alive(pids, groups), timeout=10, what=f"the run's processes to end: {alive(pids, groups)}")
    finally:
        reap(pids, groups)
    n = len(records(out))
    assert proc.returncode == status and 1 <= n < 4, (n, err)
    assert f"dlgate: interrupted by {sig.name} after {n} of 4 cases; run the same command again to resume" in err, err
    assert "Traceback" not in err, err
    assert not glob.glob(str(tmp / "dlgate-worker-*")), os.listdir(tmp)  # worker logs removed
    assert not glob.glob(str(out / "*.tmp")), os.listdir(out)  # every report renamed into place

    summary, verdict, junit = reports(out)
    said = f"interrupted by {sig.name} after {n} of 4 cases"
    assert f"⏹️ {said}: not decided" in summary.splitlines()[0], summary
    assert "passed" not in summary and "run the same command on the same output folder again" in summary.lower()
    assert verdict["result"] == "interrupted" and verdict["exit_code"] == status and verdict["cases"] == n
    assert verdict["interrupted"] == {"signal": sig.name, "exit_code": status, "cases": n, "planned": 4,
                                      "result_so_far": "pass"}
    assert verdict["complete"] is False and not verdict["new"]
    suite = interrupted_suite(junit)
    assert suite is not None and suite.get("errors") == "1", ET.tostring(junit)[:2000]
    (error,) = suite.iter("error")
    assert error.get("type") == "interrupted" and said in error.get("message")
    props = [{p.get("name"): p.get("value") for p in s.iter("property")} for s in junit.iter("testsuite")]
    assert len(props) == 2 and all(p["interrupted"] == said for p in props)  # the backend's suite too
    assert sum(1 for _ in junit.iter("testcase")) == n + 1  # each journaled case, and the marker
    stats = json.load(open(out / "stats.json"))
    assert stats["cases_run"] == n

    lines = open(out / "results.jsonl").read().splitlines()
    again = spawn(run_cmd(cfg, out), tmp)
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert f"resuming {out}: {n} of 4 cases already done" in err, err
    assert open(out / "results.jsonl").read().splitlines()[:n] == lines  # not redone
    assert len(records(out)) == 4 and json.load(open(out / "stats.json"))["cases_run"] == 4 - n
    summary, verdict, junit = reports(out)
    assert summary.splitlines()[0].endswith("✅ passed") and "interrupted" not in summary
    assert verdict["result"] == "pass" and verdict["interrupted"] is None and verdict["cases"] == 4
    assert interrupted_suite(junit) is None and "interrupted" not in ET.tostring(junit, encoding="unicode")
    assert not glob.glob(str(tmp / "dlgate-worker-*")), os.listdir(tmp)  # nor after a normal run
    with OutLock(str(out)):
        pass
    if sig == signal.SIGTERM:  # interrupted and resumed, the journal is the uninterrupted run's, byte for byte
        whole = str(tmp_path / "whole")  # (one signal is enough: both stop the run alike; the reports differ)
        assert main(["run", "--config", cfg, "--seed", "life", "--out", whole, "--no-progress"]) == 0
        assert open(out / "results.jsonl").read() == open(os.path.join(whole, "results.jsonl")).read()


def _first_is_wrong_under_fake_bug(cfg: str, cases) -> bool:
    """Whether the oracle calls the batch's first case wrong when every float output is off
    by one, as FAKE_BUG makes it (a case whose float outputs are NaN, or so large that one is
    within the tolerance, passes)."""
    from dlgate.check import prepare
    from dlgate.gate import config as C
    from dlgate.materialize.torch_model import run_numpy

    c = cases[0]
    p = prepare(c.meta(), c.graph, c.model_bytes, C.load(cfg).search_steps)  # the inputs the run searches
    ref = run_numpy(p.graph, p.inputs)
    wrong = [o + 1 if o.dtype.kind == "f" else o for o in ref]
    return judge_candidate(p.graph, p.inputs, wrong, ref).verdict == "mismatch"


@LINUX
def test_an_interrupted_run_reports_the_new_failures_it_found(tmp_path, monkeypatch):
    """The catch: every case is wrong on this build (FAKE_BUG), so the first journaled one
    holds a new failure; the interrupted run names it in every report, and still is not a
    'fail' exit (143: the run did not finish), nor a pass."""
    monkeypatch.setenv("FAKE_BUG", "1")
    cfg = write_config(tmp_path, models=4, reduce=False, confirm_runs=0, dtypes=["float32"],
                       backends=[slow(tmp_path / "marks", seconds=0.5)])
    out = tmp_path / "o"
    proc = spawn(run_cmd(cfg, out, seed_where(cfg, lambda cases: _first_is_wrong_under_fake_bug(cfg, cases), "life")), tmp_path / "tmp")
    err, pids, groups = stop_after_records(proc, out, signal.SIGTERM)
    reap(pids, groups)
    n = len(records(out))
    assert proc.returncode == 143 and 1 <= n < 4, (n, err)
    summary, verdict, junit = reports(out)
    assert verdict["result"] == "interrupted" and verdict["interrupted"]["result_so_far"] == "fail"
    assert verdict["new"] and verdict["new"][0]["backend"] == "tests.fake_backends:SlowCompile[cpu]"
    assert verdict["new"][0]["verdict"] == "mismatch" and len(verdict["new"][0]["cases"]) == n
    head = summary.splitlines()[0]
    assert f"interrupted by SIGTERM after {n} of 4 cases: not decided, 1 new failure(s) so far" in head, head
    assert "New failures (fail the check)" in summary and "dlgate: new failure [" in err
    failures = [f for f in junit.iter("failure") if f.get("type") == "mismatch"]
    assert len(failures) == n and all(f.get("message").startswith("new mismatch") for f in failures)
    assert interrupted_suite(junit) is not None


@LINUX
def test_a_second_signal_does_not_cut_the_reports_short(tmp_path):
    """SIGTERM, then SIGINT and SIGTERM over and over while the run stops (GitHub, cancelling
    a job, sends SIGINT and then SIGTERM), until it has ended: the status is the first
    signal's, the reports are whole and say the same."""
    cfg = write_config(tmp_path, models=4, backends=[slow(tmp_path / "marks", seconds=0.5)])
    out = tmp_path / "o"
    proc = spawn(run_cmd(cfg, out), tmp_path / "tmp")
    err, pids, groups = stop_after_records(proc, out, signal.SIGTERM, more=True)
    reap(pids, groups)
    n = len(records(out))
    # the first signal the run takes decides (a SIGINT sent just after a SIGTERM may be taken first)
    assert proc.returncode in (143, 130), err
    name = signal.Signals(proc.returncode - 128).name
    assert "Traceback" not in err and f"interrupted by {name} after {n} of 4 cases; run" in err, err
    _, verdict, _ = reports(out)
    assert verdict["interrupted"]["signal"] == name and verdict["exit_code"] == proc.returncode
    assert verdict["cases"] == n
    assert not glob.glob(str(out / "*.tmp")), os.listdir(out)


def test_the_stop_handler_raises_once_and_ignores_what_follows():
    from dlgate.gate.run.lifecycle import Interrupted, stopped_by_signals

    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    with stopped_by_signals():
        pass
    assert {s: signal.getsignal(s) for s in before} == before  # a run not interrupted: restored
    try:
        with stopped_by_signals():
            with pytest.raises(Interrupted) as got:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)  # the handler runs before this ends
            assert got.value.status == 143
            os.kill(os.getpid(), signal.SIGINT)  # while stopping: ignored
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)  # and after, on the way out of the process
        time.sleep(0.05)
        assert signal.getsignal(signal.SIGTERM) is signal.getsignal(signal.SIGINT) is not before[signal.SIGINT]
    finally:
        for s, h in before.items():
            signal.signal(s, h)


def _decision(failing: bool) -> D.Decision:
    d = D.Decision("r" * 40, "t", False, ["tvm[cpu]"], cases=51, planned=600)
    if failing:
        d.groups[D.NEW] = [{"class": D.NEW, "fingerprint": "f" * 16, "cluster": "c" * 16, "backend": "tvm[cpu]",
                            "verdict": "mismatch", "typed": "Sigmoid(float32)", "pattern": "Sigmoid", "text": "",
                            "detail": "wrong", "cases": ["x"], "bundles": [], "blame": None}]
    d.interrupted = {"signal": "SIGTERM", "exit_code": 143, "cases": 51, "planned": 600}
    return d


@pytest.mark.parametrize("failing", [False, True], ids=["nothing-found", "a-new-failure"])
@pytest.mark.parametrize("fail_on", ["new", "any", "none"])
def test_an_interrupted_decision_is_never_a_pass(failing, fail_on):
    d = _decision(failing)
    assert d.exit_code(fail_on) == 143 and d.result(fail_on) == "interrupted"
    doc = d.to_json(fail_on)
    assert doc["result"] == "interrupted" and doc["exit_code"] == 143
    assert doc["interrupted"]["result_so_far"] == ("fail" if failing and fail_on != "none" else "pass")
    text = report.summary(d, fail_on)
    assert "interrupted by SIGTERM after 51 of 600 cases: not decided" in text.splitlines()[0]
    assert "passed" not in text
    d.interrupted = None  # the same cases, run to the end
    assert d.to_json(fail_on)["result"] == ("fail" if failing and fail_on != "none" else "pass")
    assert d.to_json(fail_on)["interrupted"] is None


def test_a_shard_report_says_it_was_interrupted():
    text = report.summary(_decision(True), "new", shard="2/3")
    assert text.splitlines()[0].endswith("shard 2/3 report (interrupted by SIGTERM after 51 of 600 cases: not "
                                         "decided, 1 new failure(s) so far); the merge of all shards decides the check")


@LINUX
def test_the_action_forwards_the_cancel_and_reports_it(tmp_path):
    """GitHub cancels a container step with SIGINT to its first process, the entrypoint: it
    reaches dlgate, whose status (130) the step keeps; the outputs say "interrupted" with the
    counts, an error annotation says the check is not decided, the job summary holds the
    interrupted report, and the baseline is not updated from an unfinished run."""
    import subprocess
    import sys

    from tests.test_action import ENTRYPOINT, SCHEDULE, Runner, active_commands
    from tests.test_action_io import SLOWCFG

    r = Runner(tmp_path, "schedule", SCHEDULE, SLOWCFG)
    env = dict(r.env, **{"INPUT_MODELS": "4", "INPUT_UPDATE-BASELINE": "true", "INPUT_BASELINE": "b.json"})
    proc = subprocess.Popen([sys.executable, str(ENTRYPOINT)], env=env, cwd=r.ws, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    out = r.ws / "dlgate-out"
    stdout = stderr = ""
    pids, groups = set(), set()
    try:
        wait_for(lambda: (os.path.exists(out / "results.jsonl") and len(records(out)) >= 1) or proc.poll() is not None,
                 timeout=300, what="a record")
        assert proc.poll() is None, proc.communicate()
        pids, groups = tree(proc.pid)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        reap(pids, groups)
    n = len(records(out))
    assert proc.returncode == 130 and 1 <= n < 4, stdout + stderr
    got = r.outputs()
    assert (got["verdict"], got["cases"], got["planned"]) == ("interrupted", str(n), "4"), got
    errors = [c for c in active_commands(stdout) if c.startswith("::error title=dlgate%3A interrupted::")]
    assert errors == [f"::error title=dlgate%3A interrupted::interrupted by SIGINT after {n} of 4 cases: the check is "
                      "not decided (the reports cover the cases that ran); a rerun on the same output-dir resumes"]
    assert f"interrupted by SIGINT after {n} of 4 cases: not decided" in r.summary.read_text()
    assert "not updating the baseline: the run did not finish (exit status 130)" in stdout
    assert not (r.ws / "b.json").exists()
    assert "verdict: interrupted (exit status 130)" in stdout


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished run of 2 cases: its folder."""
    from dlgate.cli import main

    d = tmp_path_factory.mktemp("finished")
    out = str(d / "o")
    assert main(["run", "--config", write_config(d, models=2), "--seed", "int", "--out", out]) == 0
    return out


def test_an_interrupted_folder_opens_no_issues(finished, tmp_path, capsys):
    import shutil

    from dlgate.cli import main

    out = str(tmp_path / "o")
    shutil.copytree(finished, out)
    assert main(["issues", "--results", out, "--repo", "acme/tvm", "--dry-run", str(tmp_path / "md")]) == 0  # finished: fine
    path = os.path.join(out, "verdict.json")
    doc = json.load(open(path))
    doc.update(result="interrupted", exit_code=143,
               interrupted={"signal": "SIGTERM", "exit_code": 143, "cases": 2, "planned": 5, "result_so_far": "pass"})
    with open(path, "w") as f:
        json.dump(doc, f)
    capsys.readouterr()
    assert main(["issues", "--results", out, "--repo", "acme/tvm", "--dry-run", str(tmp_path / "md")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"dlgate issues: {out}: the run was interrupted by SIGTERM after 2 of 5 cases; run it "
                           "again to finish it first"), err


def test_an_unfinished_folder_does_not_update_the_baseline(finished, tmp_path, capsys):
    import shutil

    from dlgate.cli import main

    out = str(tmp_path / "o")
    shutil.copytree(finished, out)
    lines = open(os.path.join(out, "results.jsonl")).readlines()
    with open(os.path.join(out, "results.jsonl"), "w") as f:
        f.writelines(lines[:1])  # as a signal (or a kill) leaves it: 1 of 2 cases
    baseline = str(tmp_path / "b.json")
    assert main(["baseline", "update", out, "--baseline", baseline, "--prune"]) == 2
    assert f"{out} is unfinished (1 of 2 cases)" in capsys.readouterr().err
    assert not os.path.exists(baseline)
    shutil.rmtree(out)
    shutil.copytree(finished, out)
    assert main(["baseline", "update", out, "--baseline", baseline]) == 0
