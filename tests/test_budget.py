"""The campaign's time budget (``budget``, ``--budget``): a run stopped by it, resumed by a
rerun of the same command, cut only at its tail, decided on the cases that ran; per shard,
and merged; and a baseline file that is named but missing, said in the reports."""
from __future__ import annotations

import json
import os

import pytest

from dlgate.cli import main
from dlgate.gate import budget as BG
from dlgate.gate import config as C
from tests.test_gate import results, verdict, write_config

FAST = {"crosscheck": False, "confirm_runs": 0, "reduce": False}
#: onnxruntime's answers after a compile of SLOW seconds: each case takes at least that long.
SLOW = 0.4
SLOW_BACKEND = {"name": "tests.fake_backends:SlowCompile", "options": {"seconds": SLOW}}


def indexes(out) -> list:
    return sorted(r["index"] for r in results(out))


def journal(out) -> bytes:
    with open(os.path.join(out, "results.jsonl"), "rb") as f:
        return f.read()


def summary(out) -> str:
    with open(os.path.join(out, "summary.md")) as f:
        return f.read()


class StepClock:
    """A clock that moves one second each time the budget reads it: the budget reads it once
    before each case, so a budget of B seconds lets ceil(B) cases start, on any machine."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        t, self.now = self.now, self.now + 1.0
        return t


@pytest.fixture
def step_clock(monkeypatch):
    monkeypatch.setattr(BG, "CLOCK", StepClock())  # a fresh clock for each Budget would need this per run
    return lambda: monkeypatch.setattr(BG, "CLOCK", StepClock())


# -- the budget object -----------------------------------------------------------------------
def test_budget_starts_the_first_case_always_and_then_only_while_time_is_left():
    b = BG.Budget(2.5, clock=StepClock())
    assert [b.allows() for _ in range(5)] == [True, True, True, False, False]
    assert b.stopped
    unlimited = BG.Budget(None, clock=StepClock())
    assert all(unlimited.allows() for _ in range(100)) and not unlimited.stopped
    tiny = BG.Budget(0.001, clock=StepClock())
    assert tiny.allows() and not tiny.allows()  # even the smallest budget makes progress


# -- configuration ---------------------------------------------------------------------------
@pytest.mark.parametrize("value", [0, -1, "10", True, float("nan"), 86_401])
def test_a_budget_that_is_not_a_positive_number_of_seconds_is_refused(tmp_path, value):
    with pytest.raises(C.ConfigError, match="budget"):
        C.build({"budget": value, "backends": ["onnxruntime"]}, "x.yaml")


def test_the_budget_is_not_part_of_the_fingerprint_so_another_budget_resumes():
    a = C.build({"backends": ["onnxruntime"]})
    b = C.build({"backends": ["onnxruntime"], "budget": 30})
    assert b.budget == 30.0 and a.budget is None
    assert a.fingerprint() == b.fingerprint()
    assert "| `budget` |" in C.reference_markdown()


@pytest.mark.parametrize("text", ["0", "-3", "nan", "inf", "ten"])
def test_cli_budget_must_be_positive_seconds(tmp_path, text, capsys):
    cfg = write_config(str(tmp_path), models=2)
    assert main(["run", "--config", cfg, "--seed", "b", "--out", str(tmp_path / "o"), "--budget", text]) == 2
    assert "--budget" in capsys.readouterr().err


# -- a real run stopped by a budget, resumed ---------------------------------------------------
def test_a_budget_run_is_stopped_by_the_budget_resumes_and_ends_like_an_uncut_run(tmp_path, capsys):
    models = 5
    cfg = write_config(str(tmp_path), models=models, backends=[SLOW_BACKEND], **FAST)
    whole = str(tmp_path / "whole")
    assert main(["run", "--config", cfg, "--seed", "bud", "--out", whole]) == 0
    assert not verdict(whole)["stopped_by_budget"] and verdict(whole)["cases"] == models
    capsys.readouterr()

    out, seen, runs = str(tmp_path / "cut"), [], 0
    while not seen or seen[-1] < models:
        runs += 1
        assert runs <= models, "every budget run makes progress"
        assert main(["run", "--config", cfg, "--seed", "bud", "--out", out, "--budget", str(1.5 * SLOW)]) == 0
        err = capsys.readouterr().err
        done = indexes(out)
        assert done == list(range(len(done))), "only the tail is cut, never a case in between"
        v = verdict(out)
        assert v["cases"] == len(done) and v["planned"] == models and v["budget"] == 1.5 * SLOW
        if len(done) < models:
            assert v["stopped_by_budget"] and v["result"] == "pass"
            line = f"stopped by the budget ({1.5 * SLOW:g} s) after {len(done)} of {models} cases"
            assert line in err and "run the same command again to continue" in err
            assert line in summary(out) and "decided on the cases that ran" in summary(out)
        else:
            assert not v["stopped_by_budget"] and "budget" not in summary(out)
        if seen:
            assert f"resuming {out}: {seen[-1]} of {models} cases already done" in err
        with open(os.path.join(out, "stats.json")) as f:
            assert json.load(f)["cases_run"] == len(done) - (seen[-1] if seen else 0)
        seen.append(len(done))
    assert runs >= 2 and seen[0] < models, f"the budget never stopped the run: {seen}"
    # a case takes at least SLOW seconds, so a budget of 1.5 x SLOW starts at most two per run
    assert all(b - a <= 2 for a, b in zip([0] + seen, seen)), seen
    assert journal(out) == journal(whole), "the cases themselves do not depend on the budget"


# -- the same budget, the same cases: a deterministic clock --------------------------------------
def test_the_same_budget_gives_the_same_cases_and_a_verdict_on_those(tmp_path, step_clock, capsys):
    cfg = write_config(str(tmp_path), models=6, backends=["onnxruntime", {"name": "tests.fake_backends:Raises"}],
                       **FAST)
    outs = [str(tmp_path / f"o{k}") for k in range(2)]
    for out in outs:
        step_clock()
        assert main(["run", "--config", cfg, "--seed", "same", "--out", out, "--budget", "2.5"]) == 1
    assert indexes(outs[0]) == indexes(outs[1]) == [0, 1, 2]
    assert journal(outs[0]) == journal(outs[1])
    v = verdict(outs[0])
    # the verdict is decided on the three cases that ran: each fails on the injected backend
    assert v["result"] == "fail" and v["cases"] == 3 and v["planned"] == 6 and v["stopped_by_budget"]
    assert sum(len(g["cases"]) for g in v["new"]) == 3
    assert "stopped by the budget (2.5 s) after 3 of 6 cases" in capsys.readouterr().err
    # the rerun with the same budget resumes: the next three cases, and the batch is done
    step_clock()
    assert main(["run", "--config", cfg, "--seed", "same", "--out", outs[0], "--budget", "2.5"]) == 1
    assert indexes(outs[0]) == list(range(6))
    v = verdict(outs[0])
    assert v["cases"] == 6 and not v["stopped_by_budget"]
    whole = str(tmp_path / "whole")
    assert main(["run", "--config", cfg, "--seed", "same", "--out", whole]) == 1
    assert journal(outs[0]) == journal(whole)


def test_the_budget_applies_per_shard_and_the_merge_reports_the_cases_that_ran(tmp_path, step_clock, capsys):
    cfg = write_config(str(tmp_path), models=6, backends=["onnxruntime"], **FAST)
    shards = [str(tmp_path / f"s{i}") for i in (1, 2)]
    for i, d in enumerate(shards, 1):
        step_clock()
        assert main(["run", "--config", cfg, "--seed", "sh", "--out", d, "--shard", f"{i}/2", "--budget", "1.5"]) == 0
        assert verdict(d)["cases"] == 2 and verdict(d)["planned"] == 3 and verdict(d)["stopped_by_budget"]
    assert indexes(shards[0]) == [0, 2] and indexes(shards[1]) == [1, 3]  # each shard cut at its own tail
    merged = str(tmp_path / "m")
    assert main(["merge", *shards, "--out", merged]) == 0
    v = verdict(merged)
    assert v["cases"] == 4 and v["planned"] == 6 and v["stopped_by_budget"]
    assert "stopped by the budget (1.5 s) after 4 of 6 cases" in summary(merged)
    # a shard that was killed (not stopped by its budget) is still refused
    with open(os.path.join(shards[1], "run.json")) as f:
        m = json.load(f)
    m.pop("stopped_by_budget")
    with open(os.path.join(shards[1], "run.json"), "w") as f:
        json.dump(m, f)
    capsys.readouterr()
    assert main(["merge", *shards, "--out", str(tmp_path / "m2")]) == 2
    assert "unfinished (2 of 3 cases)" in capsys.readouterr().err


# -- a baseline file that is named but missing ---------------------------------------------------
def test_a_missing_baseline_file_is_said_in_the_summary_the_verdict_and_the_log(tmp_path, capsys):
    cfg = write_config(str(tmp_path), models=2, backends=["onnxruntime"], **FAST)
    out, missing = str(tmp_path / "o"), str(tmp_path / "nope" / "baseline.json")
    assert main(["run", "--config", cfg, "--seed", "nb", "--out", out, "--baseline", missing]) == 0
    line = f"no baseline at {missing}: every failure counts as new"
    assert f"no baseline at `{missing}`: every failure counts as new" in summary(out)  # a code span in Markdown
    assert line in capsys.readouterr().err
    assert verdict(out)["baseline_missing"] is True
    # a baseline that exists, or none named at all: nothing said
    os.makedirs(os.path.dirname(missing))
    with open(missing, "w") as f:
        json.dump({"dlgate_baseline": 2, "fingerprints": {}, "clusters": {}, "corpus": {}}, f)
    assert main(["run", "--config", cfg, "--seed", "nb", "--out", out, "--baseline", missing, "--fresh"]) == 0
    assert "no baseline at" not in summary(out) and verdict(out)["baseline_missing"] is False
    assert "no baseline at" not in capsys.readouterr().err
    assert main(["run", "--config", cfg, "--seed", "nb", "--out", out, "--fresh"]) == 0
    assert "no baseline at" not in summary(out) and verdict(out)["baseline_missing"] is False
