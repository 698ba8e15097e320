"""GitHub issues from a run's reduced failures, against a real HTTP server on loopback
that speaks GitHub's REST shapes and injects faults: one issue per cluster (cause), comments on
repeat runs, no duplicates and no losses under faults, and the token never leaks."""
from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest
import yaml

from dlgate.cli import main
from dlgate.github.client import GitHub
from dlgate.github.issues import findings, marker, publish
from tests.github_fake import FakeGitHub

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "ghs_dlgateTestToken0123456789abcdef"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A finished gate run with two distinct reduced failures (a wrong answer, a crash)."""
    tmp = tmp_path_factory.mktemp("issues")
    cfg = tmp / "c.yaml"
    cfg.write_text(yaml.safe_dump({
        "campaign": "iss", "models": 4, "max_nodes": 5, "opset": 18, "dtypes": ["float32"],
        "operators": ["Sigmoid", "Add", "Relu", "Mul", "Abs", "Neg", "Tanh"], "crosscheck": False,
        "backends": [{"name": "tests.fake_backends:EnvBug"}, {"name": "tests.fake_backends:Segfault"}],
        "timeout_s": 20, "reduce_seconds": 30,
        "findings_per_case": 1}))  # EnvBug is wrong everywhere: one finding a case keeps under the cap
    old = os.environ.get("FAKE_BUG")
    os.environ["FAKE_BUG"] = "1"
    try:
        out = str(tmp / "out")
        assert main(["run", "--config", str(cfg), "--seed", "issues", "--out", out]) == 1
    finally:
        if old is None:
            os.environ.pop("FAKE_BUG")
        else:
            os.environ["FAKE_BUG"] = old
    return out


def _env(run_id: str) -> dict:
    return {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/tvm", "GITHUB_RUN_ID": run_id}


def _client(gh) -> GitHub:
    return GitHub("acme/tvm", token=TOKEN, api_url=gh.url, timeout=2, backoff_s=0.01, sleep=lambda s: None)


def test_one_issue_per_cluster_then_one_comment_per_repeat_run(run_dir):
    found = findings(run_dir)
    # EnvBug is wrong on every operator, so its cases reduce to one operator each: one
    # fingerprint (and cluster) per operator; the crash's four cases share one cause
    kinds = {(f.doc["verdict"], f.doc["pattern"] if f.doc["verdict"] == "mismatch" else "") for f in found}
    assert len(found) == len(kinds) >= 2
    crash = [f for f in found if f.doc["verdict"] == "crash"]
    assert len(crash) == 1 and crash[0].cases == 4
    n = len(found)
    with FakeGitHub(token=TOKEN) as gh:
        s1 = publish(run_dir, _client(gh), env=_env("100"), log=lambda m: None)
        assert s1["opened"] == n and len(gh.issues) == n
        for f in found:
            (issue,) = gh.issues_containing(marker(f.cluster))
            assert [lb["name"] for lb in issue["labels"]] == ["dlgate"]
            assert "```mermaid" in issue["body"] and "def run(" in issue["body"] and "repro.py" in issue["body"]
            assert issue["title"].startswith("[dlgate] tests.fake_backends:")
        s2 = publish(run_dir, _client(gh), env=_env("101"), log=lambda m: None)
        assert s2["opened"] == 0 and s2["commented"] == n and len(gh.issues) == n
        assert all(len(gh.comments.get(i["number"], [])) == 1 for i in gh.issues)
        s3 = publish(run_dir, _client(gh), env=_env("101"), log=lambda m: None)  # a retried publication
        assert s3["commented"] == 0 and s3["unchanged"] == n
        assert all(len(gh.comments.get(i["number"], [])) == 1 for i in gh.issues)


@pytest.mark.parametrize("fault", ["500", "drop-after", "drop-before", "429", "slow"])
def test_faults_neither_duplicate_nor_lose(run_dir, fault):
    params = {"retry_after": 1} if fault == "429" else {"seconds": 3} if fault == "slow" else {}
    with FakeGitHub(token=TOKEN) as gh:
        gh.inject(fault, count=2, method="POST", **params)
        publish(run_dir, _client(gh), env=_env("200"), log=lambda m: None)
        gh.inject(fault, count=2, method="POST", **params)
        publish(run_dir, _client(gh), env=_env("201"), log=lambda m: None)
        assert len(gh.issues) == len(findings(run_dir))
        for f in findings(run_dir):
            (issue,) = gh.issues_containing(marker(f.cluster))
            assert len(gh.comments.get(issue["number"], [])) == 1


def test_cap_on_new_issues_and_dry_run(run_dir, tmp_path):
    with FakeGitHub(token=TOKEN) as gh:
        stats = publish(run_dir, _client(gh), max_issues=1, env=_env("300"), log=lambda m: None)
        n = len(findings(run_dir))
        assert stats["opened"] == 1 and stats["over_cap"] == n - 1 and len(gh.issues) == 1
    assert main(["issues", "--results", run_dir, "--repo", "acme/tvm", "--dry-run", str(tmp_path / "dry")]) == 0
    pages = sorted(glob.glob(str(tmp_path / "dry" / "issue-*.md")))
    assert len(pages) == len(findings(run_dir)) and all(open(p).read().startswith("# [dlgate]") for p in pages)


def test_the_gate_publishes_when_configured(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_BUG", "1")
    with FakeGitHub(token=TOKEN) as gh:
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        cfg = tmp_path / "c.yaml"
        cfg.write_text(yaml.safe_dump({
            "campaign": "pub", "models": 2, "max_nodes": 4, "dtypes": ["float32"], "crosscheck": False,
            "operators": ["Sigmoid", "Add", "Relu"], "backends": [{"name": "tests.fake_backends:EnvBug"}],
            "issues": {"repo": "acme/tvm", "api_url": gh.url}}))
        assert main(["run", "--config", str(cfg), "--seed", "pub", "--out", str(tmp_path / "o")]) == 1
        assert len(gh.issues) == len(findings(str(tmp_path / "o"))) >= 1


def test_the_token_never_appears_in_output_or_files(run_dir, tmp_path):
    with FakeGitHub(token=TOKEN) as gh:
        env = dict(os.environ, GITHUB_TOKEN=TOKEN, PYTHONPATH=REPO, **_env("400"))
        gh.inject("500", count=3, method="POST")
        res = subprocess.run([sys.executable, "-m", "dlgate", "issues", "--results", run_dir, "--repo", "acme/tvm",
                              "--api-url", gh.url], env=env, capture_output=True, text=True, timeout=120, cwd=REPO)
        assert res.returncode == 0, res.stderr
        assert gh.issues and any(h.get("Authorization") == f"Bearer {TOKEN}" for _, _, h in gh.requests)
        bad = subprocess.run([sys.executable, "-m", "dlgate", "issues", "--results", run_dir, "--repo", "acme/tvm",
                              "--api-url", gh.url], env=dict(env, GITHUB_TOKEN=TOKEN + "x"), capture_output=True,
                             text=True, timeout=120, cwd=REPO)
        assert bad.returncode == 1 and "401" in bad.stderr or "Bad credentials" in bad.stderr
    for text in (res.stdout, res.stderr, bad.stdout, bad.stderr):
        assert TOKEN not in text
    for path in glob.glob(os.path.join(run_dir, "**", "*"), recursive=True):
        if os.path.isfile(path):
            assert TOKEN.encode() not in open(path, "rb").read(), path


def test_one_comment_per_issue_per_workflow_run_whatever_the_attempt(run_dir):
    """A GitHub re-run of the same workflow run (GITHUB_RUN_ATTEMPT 2, 3) is the same
    occurrence: the run that opened the issues never comments on them, and a later run
    comments once on each however often it is re-run."""
    n = len(findings(run_dir))
    with FakeGitHub(token=TOKEN) as gh:
        for attempt in ("1", "2", "3"):
            publish(run_dir, _client(gh), env=dict(_env("500"), GITHUB_RUN_ATTEMPT=attempt), log=lambda m: None)
            assert len(gh.issues) == n and not gh.comments, attempt
        for attempt in ("1", "2", "3"):
            stats = publish(run_dir, _client(gh), env=dict(_env("501"), GITHUB_RUN_ATTEMPT=attempt),
                            log=lambda m: None)
            assert stats["commented"] == (n if attempt == "1" else 0) and stats["opened"] == 0
            assert len(gh.issues) == n
            assert [len(gh.comments.get(i["number"], [])) for i in gh.issues] == [1] * n, attempt
        posts = [p for m, p, _ in gh.requests if m == "POST" and p.endswith("/comments")]
        assert len(posts) == n  # found before posting: no attempt posted a second one
