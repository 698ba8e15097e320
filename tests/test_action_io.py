"""The Action's inputs and outputs for budgets and layouts: ``budget``, ``working-directory``
and ``cache-dir`` in; ``repros``, ``cases``, ``planned``, ``stopped-by-budget`` and the
counts per class out; a named baseline file that does not exist warned about. End to end
through the entrypoint as GitHub runs it (tests/test_action.py's simulated runner), with
tiny batches and the fake backends."""
from __future__ import annotations

import json
import os

import pytest
import yaml

import entrypoint.inputs
import entrypoint.main
import entrypoint.plan
import entrypoint.results
from tests.test_action import ACTION, FAST, PASSING, SCHEDULE, Runner, active_commands

#: onnxruntime's answers after a compile of SLOW seconds: a budget of SLOW lets exactly one case
#: start per run (the first always starts; by the second, SLOW seconds have passed).
SLOW = 0.5
#: Operators onnxruntime runs right in float32, so the verdicts depend on the budget alone, not on
#: what a grown spec registry happens to draw.
SLOWCFG = dict(FAST, campaign="slow", operators=["Relu", "Add", "Mul", "Abs", "Neg"], dtypes=["float32"],
               backends=[{"name": "tests.fake_backends:SlowCompile", "options": {"seconds": SLOW}}])


def test_the_budget_input_stops_the_run_a_rerun_resumes_and_the_outputs_say_so(tmp_path):
    r = Runner(tmp_path, "schedule", SCHEDULE, SLOWCFG)
    res = r.run(models="3", budget=str(SLOW))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "--budget=0.5" in res.stdout
    out = r.outputs()
    assert (out["cases"], out["planned"], out["stopped-by-budget"], out["verdict"]) == ("1", "3", "true", "pass")
    notices = [c for c in active_commands(res.stdout) if c.startswith("::notice title=dlgate%3A budget spent")]
    assert notices == ["::notice title=dlgate%3A budget spent::stopped by the budget (0.5 s) after 1 of 3 cases: the "
                       "verdict is decided on the cases that ran; a rerun on the same output-dir resumes"]
    assert "The run was stopped by the budget (0.5 s) after 1 of 3 cases" in r.summary.read_text()
    v = json.loads((r.ws / "dlgate-out" / "verdict.json").read_text())
    assert (v["cases"], v["planned"], v["stopped_by_budget"], v["budget"]) == (1, 3, True, SLOW)
    # the same step again, on the same output folder: it resumes with a budget of its own
    r.output.write_text("")
    res = r.run(models="3", budget=str(SLOW))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "resuming dlgate-out: 1 of 3 cases already done" in res.stdout
    assert (r.outputs()["cases"], r.outputs()["stopped-by-budget"]) == ("2", "true")
    # without a budget it runs to the end
    r.output.write_text("")
    res = r.run(models="3")
    assert res.returncode == 0, res.stdout + res.stderr
    assert (r.outputs()["cases"], r.outputs()["planned"], r.outputs()["stopped-by-budget"]) == ("3", "3", "false")
    assert not [c for c in active_commands(res.stdout) if "budget spent" in c]


def test_budget_cut_shards_merge_and_update_the_baseline_as_the_weekly_workflow_does(tmp_path):
    """The weekly example's shards run with `budget`: a shard the budget cuts is done, not
    unfinished, so the merge job merges it, reports the cases that ran of those planned, and
    accepts the week's failures into the baseline (an empty week still writes the file). The
    same three steps check the ``merge`` input's plumbing: the shard folders a glob names,
    passed to ``dlgate merge`` after ``--``, into the ``output-dir`` the outputs name (three
    entrypoint runs, each starting dlgate and its workers afresh, are checked once)."""
    r = Runner(tmp_path, "schedule", SCHEDULE, SLOWCFG)
    for i in (1, 2):
        res = r.run(models="4", shard=f"{i}/2", output_dir=f"shards/s{i}", budget=str(SLOW))
        assert res.returncode == 0, res.stdout + res.stderr
        assert (r.outputs()["cases"], r.outputs()["planned"], r.outputs()["stopped-by-budget"]) == ("1", "2", "true")
        r.output.write_text("")
    res = r.run(merge="shards/*", output_dir="merged", update_baseline="true",
                baseline=".dlgate/weekly-baseline.json")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "--out=merged -- shards/s1 shards/s2" in res.stdout
    out = r.outputs()
    assert (out["verdict"], out["cases"], out["planned"], out["stopped-by-budget"]) == ("pass", "2", "4", "true")
    assert out["junit"] == "merged/junit.xml"
    merged = json.loads((r.ws / "merged" / "verdict.json").read_text())
    assert (merged["cases"], merged["planned"]) == (2, 4)  # one case of each shard
    assert "unfinished" not in res.stdout
    assert json.loads((r.ws / ".dlgate" / "weekly-baseline.json").read_text())["fingerprints"] == {}


@pytest.mark.parametrize("value", ["0", "-5", "1e3", "ten", "86401", "3; touch x"])
def test_a_budget_that_is_not_positive_seconds_is_a_usage_error(tmp_path, value):
    with pytest.raises(entrypoint.inputs.InputError, match="budget"):
        entrypoint.plan.plan({"INPUT_BUDGET": value}, entrypoint.inputs.Context(event_name="push", sha="a" * 40, workspace=str(tmp_path)))


def test_working_directory_resolves_relative_paths_and_outputs_stay_relative_to_the_workspace(tmp_path):
    r = Runner(tmp_path, "schedule", SCHEDULE)
    sub = r.ws / "compiler" / "ci"
    sub.mkdir(parents=True)
    (sub / "campaign.yaml").write_text(yaml.safe_dump(PASSING))
    res = r.run(models="2", working_directory="compiler/ci", config="campaign.yaml", output_dir="out",
                baseline="nope/baseline.json")
    assert res.returncode == 0, res.stdout + res.stderr
    out = r.outputs()
    assert out["junit"] == "compiler/ci/out/junit.xml" and out["repros"] == "compiler/ci/out/repros"
    assert (r.ws / out["junit"]).is_file() and (r.ws / out["summary"]).is_file()
    assert not (r.ws / "out").exists()
    # the missing baseline: a warning naming it as later steps see it, and a line in the job summary
    warnings = [c for c in active_commands(res.stdout) if c.startswith("::warning title=dlgate%3A no baseline")]
    assert len(warnings) == 1 and "no baseline at compiler/ci/nope/baseline.json: every failure counts as new" \
        in warnings[0]
    assert "no baseline at `nope/baseline.json`: every failure counts as new" in r.summary.read_text()
    assert json.loads((sub / "out" / "verdict.json").read_text())["baseline_missing"] is True


@pytest.mark.parametrize("wd", ["../elsewhere", "/", "missing", "-C"])
def test_a_working_directory_outside_the_workspace_or_missing_is_refused(tmp_path, wd):
    (tmp_path / "ws").mkdir()
    with pytest.raises(entrypoint.inputs.InputError, match="working-directory"):
        entrypoint.plan.plan({"INPUT_WORKING-DIRECTORY": wd, "INPUT_CONFIG": "configs/pr.yaml"},
                entrypoint.inputs.Context(event_name="push", sha="a" * 40, workspace=str(tmp_path / "ws")))


def test_output_dir_and_cache_dir_are_relative_to_the_working_directory_and_confined(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    ctx = entrypoint.inputs.Context(event_name="push", sha="a" * 40, workspace=str(ws))
    env = {"INPUT_WORKING-DIRECTORY": "sub", "INPUT_CONFIG": "configs/pr.yaml", "INPUT_OUTPUT-DIR": "../top",
           "INPUT_CACHE-DIR": ".dlgate-cache"}
    p = entrypoint.plan.plan(env, ctx)
    assert p.wd == "sub" and entrypoint.results.display_path(p, "junit.xml") == "top/junit.xml"
    assert p.cache_dir == os.path.realpath(ws / "sub" / ".dlgate-cache")
    for name in ("INPUT_OUTPUT-DIR", "INPUT_CACHE-DIR"):
        with pytest.raises(entrypoint.inputs.InputError, match=name[6:].lower()):
            entrypoint.plan.plan(dict(env, **{name: "../../outside"}), ctx)


def test_dlgate_runs_in_the_working_directory_with_the_cache_dir(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    ctx = entrypoint.inputs.Context(event_name="push", sha="a" * 40, workspace=str(ws))
    p = entrypoint.plan.plan({"INPUT_WORKING-DIRECTORY": "sub", "INPUT_CONFIG": "configs/pr.yaml", "INPUT_CACHE-DIR": "c"}, ctx)
    calls = []
    monkeypatch.setattr(entrypoint.main, "call", lambda args, title, cwd, env, ids=None: calls.append((args, cwd, env)) or 0)
    assert entrypoint.main.finish(p, ctx, {"PATH": "/bin", "INPUT_GITHUB-TOKEN": "t"}, "t", None, "") == 0
    (args, cwd, env), = calls
    assert args[-len(p.dlgate_args):] == p.dlgate_args and cwd == str(ws / "sub")
    assert env["DLGATE_CACHE"] == os.path.realpath(ws / "sub" / "c") and "INPUT_GITHUB-TOKEN" not in env


def test_a_relative_dlgate_cache_is_taken_from_the_current_folder(tmp_path, monkeypatch):
    from dlgate.probe.support import cache_dir, cache_path

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DLGATE_CACHE", ".dlgate-cache")
    assert cache_dir() == str(tmp_path / ".dlgate-cache")
    assert cache_path("tvm", "0.27.0").startswith(str(tmp_path / ".dlgate-cache" / "support" / "tvm-0.27.0-"))
    monkeypatch.setenv("DLGATE_CACHE", "")
    assert cache_dir() == os.path.join(os.path.expanduser("~"), ".cache", "dlgate")


def test_the_counts_are_outputs_named_after_verdict_json():
    report = {"result": "pass", "exit_code": 0, "cases": 40, "planned": 100, "stopped_by_budget": True,
              **{key: [{}] * k for k, (key, _) in enumerate(entrypoint.results.COUNTS, 1)}}
    out = entrypoint.results.outputs(entrypoint.plan.Plan([], "o", wd="w"), 0, report)
    assert {name: out[name] for _, name in entrypoint.results.COUNTS} == {"new": "1", "regressions": "2", "known": "3",
                                                           "pre-existing": "4", "fixed": "5", "flaky": "6"}
    assert (out["cases"], out["planned"], out["stopped-by-budget"]) == ("40", "100", "true")
    assert out["new-failures"] == "3" and out["repros"] == "w/o/repros"
    assert set(out) == set(ACTION["outputs"])
    none = entrypoint.results.outputs(entrypoint.plan.Plan([], "o"), 2, None)  # a usage error: nothing ran
    assert (none["verdict"], none["cases"], none["new"], none["stopped-by-budget"]) == ("usage-error", "0", "0", "false")


def test_the_inputs_are_declared(tmp_path):
    for name in ("budget", "working-directory", "cache-dir"):
        spec = ACTION["inputs"][name]
        assert spec["default"] == "" and spec["required"] is False


# -- the change under test ----------------------------------------------------------------

def test_changed_from_diff_compiler_repo_and_target_share_become_dlgate_run_arguments(tmp_path):
    (tmp_path / "c.yaml").write_text("campaign: x\n")
    (tmp_path / "tvm").mkdir()
    ctx = entrypoint.inputs.Context(event_name="pull_request", sha="m" * 40, workspace=str(tmp_path))
    base = {"INPUT_CONFIG": "c.yaml"}
    p = entrypoint.plan.plan(dict(base, **{"INPUT_CHANGED-FROM": "a" * 40, "INPUT_COMPILER-REPO": "tvm",
                              "INPUT_TARGET-SHARE": "0.6"}), ctx)
    assert p.dlgate_args[-3:] == [f"--changed-from={'a' * 40}", "--repo=tvm", "--target-share=0.6"]
    p = entrypoint.plan.plan(dict(base, **{"INPUT_DIFF": "pr.diff"}), ctx)
    assert p.dlgate_args[-1] == "--diff=pr.diff"
    assert not [a for a in entrypoint.plan.plan(base, ctx).dlgate_args if a.startswith(("--changed-from", "--diff", "--repo"))]


@pytest.mark.parametrize("inputs,message", [
    ({"INPUT_CHANGED-FROM": "--output=/etc/x"}, "changed-from: expected a commit SHA or ref name"),
    ({"INPUT_CHANGED-FROM": "abc; rm -rf /"}, "changed-from: expected a commit SHA or ref name"),
    ({"INPUT_CHANGED-FROM": "abc", "INPUT_DIFF": "x.diff"}, "give one of them, not both"),
    ({"INPUT_DIFF": "-x"}, "diff: '-x' starts with '-'"),
    ({"INPUT_COMPILER-REPO": "../elsewhere", "INPUT_CHANGED-FROM": "abc"}, "is not a folder inside the workspace"),
    ({"INPUT_TARGET-SHARE": "1.5"}, "target-share: expected a number from 0 to 1"),
    ({"INPUT_TARGET-SHARE": "nan"}, "target-share: expected a number from 0 to 1"),
])
def test_bad_change_inputs_are_refused(tmp_path, inputs, message):
    (tmp_path / "c.yaml").write_text("campaign: x\n")
    ctx = entrypoint.inputs.Context(event_name="pull_request", workspace=str(tmp_path))
    with pytest.raises(entrypoint.inputs.InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        entrypoint.plan.plan(dict({"INPUT_CONFIG": "c.yaml"}, **inputs), ctx)


def test_a_bad_diff_input_is_one_line_and_exit_status_2(tmp_path):
    r = Runner(tmp_path, "schedule", SCHEDULE, dict(FAST, campaign="aimed", backends=["onnxruntime"]))
    (r.ws / "pr.diff").write_text("not a diff\n")
    res = r.run(models="2", diff="pr.diff")
    assert res.returncode == 2 and "no file diff found" in res.stdout
    assert r.outputs()["verdict"] == "usage-error"


def _git(repo, *args):
    import subprocess

    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t",
                            GIT_COMMITTER_EMAIL="t@e"))


def test_changed_from_aims_the_batch_at_the_pull_request_s_change(tmp_path):
    """The workspace is the compiler's checkout; changed-from is the pull request's base: the
    run maps the change with onnxruntime's table and the summary opens with what it touches."""
    cfg = dict(FAST, campaign="aimed", backends=["onnxruntime"], dtypes=["float32"])
    r = Runner(tmp_path, "schedule", SCHEDULE, cfg)
    kernel = r.ws / "onnxruntime" / "core" / "providers" / "cpu" / "activation"
    kernel.mkdir(parents=True)
    (kernel / "activations.cc").write_text("int a = 1;\n")
    _git(r.ws, "init", "-q", "-b", "main")
    _git(r.ws, "add", "-A")
    _git(r.ws, "commit", "-qm", "base")
    base = __import__("subprocess").run(["git", "-C", str(r.ws), "rev-parse", "HEAD"], capture_output=True,
                                       text=True).stdout.strip()
    (kernel / "activations.cc").write_text("int a = 2;\n")
    (r.ws / "README.md").write_text("docs\n")
    _git(r.ws, "add", "-A")
    _git(r.ws, "commit", "-qm", "change")
    res = r.run(models="6", **{"changed_from": base})
    assert res.returncode in (0, 1), res.stdout + res.stderr
    assert f"--changed-from={base}" in res.stdout
    summary = (r.ws / "dlgate-out" / "summary.md").read_text()
    assert "### 🎯 What this change touches" in summary
    assert "onnxruntime/core/providers/cpu/activation/activations.cc" in summary and "`README.md`: docs only" in summary
    v = json.loads((r.ws / "dlgate-out" / "verdict.json").read_text())
    assert v["change"]["compiler"] == "onnxruntime" and v["change"]["rows"]
    assert sum(row["aimed"] for row in v["change"]["rows"]) >= 3
