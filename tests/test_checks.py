"""The live check run (dlgate.github.checks) against the fake GitHub over real sockets:
created once, updated while the run goes (at most once per interval, only when the text
changed), completed with the exit status's conclusion and the summary's text within
GitHub's limit; a refusal (403) or any failure is one line and turns it off, never the
run's result; the token is never printed nor sent in a body."""
from __future__ import annotations

import json
import re
import time

import pytest

import entrypoint.plan as EP
from dlgate.cli import main
from dlgate.gate import progress as P
from dlgate.github import checks as K
from tests.github_fake import FakeGitHub
from tests.test_action import FAILING, HEAD, Runner, assert_token_hidden, pr_event
from tests.test_action import TOKEN as ACTION_TOKEN
from tests.test_gate import write_config

TOKEN = "ghs_" + "C" * 36  # shaped like an Actions token: redacted by shape as well as by value
SHA = "a" * 40


def actions_env(gh: FakeGitHub, **more) -> dict:
    return {"GITHUB_ACTIONS": "true", "GITHUB_API_URL": gh.url, "GITHUB_REPOSITORY": "acme/tvm",
            "GITHUB_SHA": SHA, "GITHUB_TOKEN": TOKEN, **more}


def wait_for(cond, seconds=10.0):
    end = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def section(done: int, total: int = 10) -> str:
    return (f"### dlgate `pr`: progress\n\n**{done} of {total}** cases run, **0** with failures, 3 s elapsed; "
            f"ETA after 6 cases.\n\nNow: running case 0000{done}-00c0ffee on tvm\\[cpu\\], 1 s; compiling on "
            f"tvm\\[cpu\\] for 1 s.\n\n<sub>The run's summary replaces this section when dlgate ends.</sub>")


def test_created_once_updated_when_the_text_changes_and_completed_with_the_summary():
    text, lines = [None], []
    with FakeGitHub(token=TOKEN) as gh:
        live = K.start("auto", "dlgate: pr 1/3", lambda: text[0], every_s=0.05, env=actions_env(gh),
                       log=lines.append)
        wait_for(lambda: gh.check_runs)
        run = gh.check_runs[0]
        assert (run["name"], run["head_sha"], run["status"]) == ("dlgate: pr 1/3", SHA, "in_progress")
        assert run["output"]["title"] == K.STARTING
        for done in range(1, 4):
            text[0] = section(done)
            wait_for(lambda n=done: gh.check_runs[0]["output"]["title"].startswith(f"{n} of 10"))
        time.sleep(0.2)  # the text holds still: no request
        patches = [x for x in gh.check_run_log if x[0] == "PATCH"]
        assert len(patches) == live.updates == 3
        assert run["output"]["title"] == "3 of 10 cases run, 0 with failures, 3 s elapsed; ETA after 6 cases."
        assert "compiling on tvm\\[cpu\\] for 1 s" in run["output"]["summary"]
        assert "replaces this section" not in run["output"]["summary"]  # true of the job summary, not of a check
        summary = "## dlgate `pr` on `0123456789ab`: ❌ 2 new failures\n\n### ❌ New failures\n\n| a | b |\n"
        live.complete(1, summary)
    assert [x[0] for x in gh.check_run_log].count("POST") == 1
    assert (run["status"], run["conclusion"]) == ("completed", "failure")
    assert run["output"] == {"title": "dlgate pr on 0123456789ab: ❌ 2 new failures", "summary": summary}
    assert lines == []


@pytest.mark.parametrize("status,conclusion", [(0, "success"), (1, "failure"), (143, "cancelled"), (130, "cancelled"),
                                               (2, "failure"), (3, "failure"), (4, "failure")])
def test_the_conclusion_follows_the_exit_status(status, conclusion):
    assert K.conclusion(status) == conclusion


def test_a_run_without_a_summary_completes_with_its_last_progress():
    with FakeGitHub(token=TOKEN) as gh:
        live = K.start("on", "dlgate: pr", lambda: section(4), every_s=60, env=actions_env(gh), log=print)
        wait_for(lambda: gh.check_runs)
        live.complete(3, None)
    out = gh.check_runs[0]["output"]
    assert gh.check_runs[0]["conclusion"] == "failure"
    assert out["title"] == "exit status 3, no summary"
    assert out["summary"].startswith("dlgate ended with exit status 3 before writing its summary")
    assert "4 of 10" in out["summary"]


def test_a_summary_over_githubs_limit_is_cut_at_a_line_and_says_so():
    long = "## dlgate `weekly` on `abc`: ❌ 900 new failures\n\n" + "".join(f"| row {i} | x |\n" for i in range(9000))
    assert len(long) > K.MAX_TEXT
    with FakeGitHub(token=TOKEN) as gh:
        live = K.start("auto", "dlgate: weekly", lambda: None, every_s=60, env=actions_env(gh), log=print)
        wait_for(lambda: gh.check_runs)
        live.complete(1, long)
    text = gh.check_runs[0]["output"]["summary"]  # the fake refuses (422) more than 65,535 characters
    assert gh.check_runs[0]["status"] == "completed" and len(text) <= K.MAX_TEXT
    kept, note = text.split("\n\n*(cut to GitHub's limit")
    assert long.startswith(kept + "\n") and "summary.md have the rest" in note


def test_a_refusal_is_one_line_and_the_feature_turns_off():
    lines = []
    with FakeGitHub(token=TOKEN) as gh:
        gh.checks_refused = 403
        live = K.start("auto", "dlgate: pr", lambda: section(1), every_s=0.02, env=actions_env(gh),
                       log=lines.append)
        wait_for(lambda: lines)
        time.sleep(0.2)
        live.complete(0, "## done")
        requests = [r for r in gh.requests if "/check-runs" in r[1]]
    assert len(requests) == 1 and live.id is None and not live.on
    assert lines == ["dlgate: the live check run is off: POST /repos/acme/tvm/check-runs: HTTP 403: Resource not "
                     f"accessible by integration; {K.NO_PERMISSION}"]


def test_a_failed_update_turns_updates_off_but_the_check_run_is_still_completed():
    text, lines = [section(1)], []
    with FakeGitHub(token=TOKEN) as gh:
        gh.inject("500", method="PATCH", path_contains="/check-runs/")
        live = K.start("auto", "dlgate: pr", lambda: text[0], every_s=0.02, env=actions_env(gh), log=lines.append)
        wait_for(lambda: gh.check_runs)
        text[0] = section(2)
        wait_for(lambda: lines)
        text[0] = section(3)
        time.sleep(0.2)
        live.complete(0, "## dlgate `pr`: ✅ no new failures\n")
    assert [x[0] for x in gh.check_run_log] == ["POST", "PATCH"]  # the 500 changed nothing; then the completion
    assert gh.check_runs[0]["conclusion"] == "success"
    assert len(lines) == 1 and "HTTP 500" in lines[0]


def test_the_token_is_never_printed_nor_sent_in_a_body():
    lines = []
    with FakeGitHub(token=TOKEN) as gh:
        gh.inject("error", method="POST", path_contains="/check-runs", status=422,
                  message=f"token {TOKEN} is not allowed here")  # a server that echoes the token back
        K.start("on", "dlgate: pr", lambda: section(1), every_s=60, env=actions_env(gh), log=lines.append)
        wait_for(lambda: lines)
        assert TOKEN not in lines[0] and "***" in lines[0]
        live = K.start("on", "dlgate: pr", lambda: section(1) + f"\n\nleaked {TOKEN}", every_s=60,
                       env=actions_env(gh), log=lines.append)
        wait_for(lambda: gh.check_runs)
        live.complete(0, f"## done\n\n{TOKEN}\n")
        bodies = [b for _, path, b in gh.bodies if "/check-runs" in path]
    assert len(bodies) == 3 and all(TOKEN not in b for b in bodies) and "leaked ***" in bodies[1]
    assert gh.requests[-1][2]["Authorization"] == f"Bearer {TOKEN}"  # sent as a header only
    assert repr(live.client).count("***") == 1


def test_off_not_in_actions_or_no_token_starts_nothing(capsys):
    lines = []
    with FakeGitHub(token=TOKEN) as gh:
        env = actions_env(gh)
        assert K.start("off", "x", lambda: None, env=env, log=lines.append) is None
        assert K.start("auto", "x", lambda: None, env=dict(env, GITHUB_TOKEN=""), log=lines.append) is None
        assert K.start("auto", "x", lambda: None, env=dict(env, GITHUB_ACTIONS=""), log=lines.append) is None
        assert lines == []  # auto: silently
        assert K.start("on", "x", lambda: None, env=dict(env, GITHUB_TOKEN=""), log=lines.append) is None
        assert lines == ["dlgate: no live check run: no token (GITHUB_TOKEN)"]
        assert gh.requests == []


def test_the_commit_is_the_pull_requests_head(tmp_path):
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"head": {"sha": "b" * 40}, "base": {"sha": "c" * 40}}}))
    assert K.head_sha({"GITHUB_SHA": "m" * 40, "GITHUB_EVENT_PATH": str(event)}) == "b" * 40
    event.write_text(json.dumps({"schedule": "0 0 * * 1"}))
    assert K.head_sha({"GITHUB_SHA": "m" * 40, "GITHUB_EVENT_PATH": str(event)}) == "m" * 40


def test_the_live_section_is_read_from_the_job_summary(tmp_path):
    path = str(tmp_path / "step")
    assert P.live_section(path) is None
    P.put_section(path, "### dlgate `pr`: progress\n\nfirst")
    with open(path, "a") as f:
        f.write("after\n")
    assert P.live_section(path) == "### dlgate `pr`: progress\n\nfirst"
    P.final_summary(path, "## the end")
    assert P.live_section(path) is None


# -- dlgate run ----------------------------------------------------------------------------------

SLOW = {"name": "tests.fake_backends:SlowCompile", "options": {"seconds": 0.3}}


def _run(tmp_path, monkeypatch, gh, *extra):
    step = tmp_path / "step-summary.md"
    step.write_text("")
    for k, v in actions_env(gh, GITHUB_STEP_SUMMARY=str(step), CI="1", **{P.HEARTBEAT_ENV: "0.5"}).items():
        monkeypatch.setenv(k, v)
    cfg = write_config(str(tmp_path), models=4, crosscheck=False, confirm_runs=0, findings_per_case=1,
                       backends=[SLOW], reduce=False)
    return main(["run", "--config", cfg, "--seed", "live", "--out", str(tmp_path / "o"), "--no-progress",
                 "--check-run-every", "0.2", *extra])


def test_dlgate_run_shows_its_progress_as_a_check_run(tmp_path, monkeypatch, capsys):
    with FakeGitHub(token=TOKEN) as gh:
        status = _run(tmp_path, monkeypatch, gh)
    err = capsys.readouterr().err
    assert status == 0, err
    assert [x[0] for x in gh.check_run_log].count("POST") == 1 and len(gh.check_runs) == 1
    run = gh.check_runs[0]
    assert (run["name"], run["head_sha"], run["conclusion"]) == ("dlgate: t", SHA, "success")
    live = [x[2]["output"]["title"] for x in gh.check_run_log if x[0] == "PATCH" and "status" not in x[2]]
    assert len(live) >= 2, live  # updated while it ran, from the job summary's live section
    assert all(re.match(r"\d of 4 cases run", t) for t in live), live
    assert run["output"]["summary"] == (tmp_path / "o" / "summary.md").read_text()
    assert TOKEN not in err and "check run" not in err


def test_a_403_leaves_the_runs_result_alone_in_one_line(tmp_path, monkeypatch, capsys):
    with FakeGitHub(token=TOKEN) as gh:
        gh.checks_refused = 403
        status = _run(tmp_path, monkeypatch, gh)
        tried = [r for r in gh.requests if "/check-runs" in r[1]]
    err = capsys.readouterr().err
    assert status == 0 and len(tried) == 1
    said = [ln for ln in err.splitlines() if "check run" in ln]
    assert said == ["dlgate: the live check run is off: POST /repos/acme/tvm/check-runs: HTTP 403: Resource not "
                    f"accessible by integration; {K.NO_PERMISSION}"]
    assert TOKEN not in err


# -- the action's entrypoint ---------------------------------------------------------------------

def test_the_action_writes_the_check_run_itself_and_dlgate_run_never_gets_the_token(tmp_path):
    """The entrypoint, as GitHub runs it, on a pull request: the check run is on the head
    commit (not the merge commit), updated from the live section while dlgate runs (a slow
    backend keeps it running a few seconds), completed as the gate concluded; the token is
    masked first and shows nowhere else."""
    slow = {"name": "tests.fake_backends:SlowCompile", "options": {"seconds": 0.3}}
    r = Runner(tmp_path, "pull_request", pr_event(fork=False), dict(FAILING, models=4, backends=["onnxruntime", slow,
                                                                                                 *FAILING["backends"][1:]]))
    with FakeGitHub(token=ACTION_TOKEN) as gh:
        r.env.update(GITHUB_API_URL=gh.url, DLGATE_HEARTBEAT_S="0.5")
        res = r.run(check_run_every="0.2")
    assert res.returncode == 1, res.stdout[-3000:]
    assert_token_hidden(res)
    assert len(gh.check_runs) == 1 and [x[0] for x in gh.check_run_log].count("POST") == 1
    run = gh.check_runs[0]
    assert (run["name"], run["head_sha"], run["conclusion"]) == ("dlgate: fail", HEAD, "failure")
    assert run["details_url"] is None  # the simulated runner sets no GITHUB_RUN_ID
    live = [x[2]["output"]["title"] for x in gh.check_run_log if x[0] == "PATCH" and "status" not in x[2]]
    assert live and all(re.match(r"\d of 4 cases run", t) for t in live), live
    assert run["output"]["summary"] == (r.ws / "dlgate-out" / "summary.md").read_text()


def test_the_action_inputs_are_checked():
    assert EP.check_run({}) == ("auto", 30.0)
    assert EP.check_run({"INPUT_CHECK-RUN": "false", "INPUT_CHECK-RUN-EVERY": "5"}) == ("off", 5.0)
    assert EP.check_run({"INPUT_CHECK-RUN": "true"})[0] == "on"
    for env, message in (({"INPUT_CHECK-RUN": "yes"}, "check-run: expected auto, true or false, got 'yes'"),
                         ({"INPUT_CHECK-RUN-EVERY": "-1"}, "check-run-every: expected a number of seconds")):
        with pytest.raises(EP.InputError, match=re.escape(message)):
            EP.check_run(env)
