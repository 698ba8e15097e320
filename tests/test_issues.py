"""GitHub issues from a run's reduced failures, against a real HTTP server on loopback
that speaks GitHub's REST shapes and injects faults: one issue per cause, comments on
repeat runs, no duplicates and no losses under faults, and the token never leaks. A crash that
may be a memory-safety bug (SIGSEGV, SIGBUS, glibc's ``free(): invalid pointer``) goes to
GitHub's private vulnerability reporting, once, and never into anything public."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from dlgate.cli import main
from dlgate.gate import config as C
from dlgate.gate.journal import read_records
from dlgate.gate.run.publish import publish_issues
from dlgate.github.client import GitHub
from dlgate.github.issues import cluster_marker, findings, marker, publish, title
from tests.github_fake import FakeGitHub

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "ghs_dlgateTestToken0123456789abcdef"
#: One xdist worker runs the module: its two finished runs (minutes of reductions) are made once.
pytestmark = pytest.mark.xdist_group("issues")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A finished gate run with two distinct reduced failures (a wrong answer, a crash)."""
    tmp = tmp_path_factory.mktemp("issues")
    cfg = tmp / "c.yaml"
    cfg.write_text(yaml.safe_dump({
        "campaign": "iss", "models": 4, "max_nodes": 5, "opset": 18, "dtypes": ["float32"],
        "operators": ["Sigmoid", "Add", "Relu", "Mul", "Abs", "Neg", "Tanh"], "crosscheck": False,
        "backends": [{"name": "tests.fake_backends:EnvBug"}, {"name": "tests.fake_backends:SegfaultOn", "options": {"on": "Tanh"}}],
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


@pytest.fixture(scope="module")
def crash_dir(tmp_path_factory):
    """A finished gate run whose compilers die by SIGBUS, by glibc's abort on an invalid free(),
    by a plain SIGABRT (an assertion: no memory-safety bug) and with an exception: one case,
    on which all four fail (four causes, one reduction each)."""
    tmp = tmp_path_factory.mktemp("crashes")
    cfg = tmp / "c.yaml"
    cfg.write_text(yaml.safe_dump({
        "campaign": "sec", "models": 1, "max_nodes": 3, "opset": 18, "dtypes": ["float32"],
        "operators": ["Sigmoid", "Add", "Relu"], "crosscheck": False, "timeout_s": 20, "reduce_seconds": 20,
        "backends": [{"name": f"tests.fake_backends:{b}"} for b in ("BusError", "BadFree", "Abort", "Raises")],
        "findings_per_case": 1}))
    out = str(tmp / "out")
    assert main(["run", "--config", str(cfg), "--seed", "sec", "--out", out]) == 1
    return out


def _env(run_id: str) -> dict:
    return {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/tvm", "GITHUB_RUN_ID": run_id}


def _client(gh) -> GitHub:
    return GitHub("acme/tvm", token=TOKEN, api_url=gh.url, timeout=2, backoff_s=0.01, sleep=lambda s: None)


def _split(found) -> tuple:
    """(possible memory-safety bugs, the rest)."""
    return [f for f in found if f.memory_safety], [f for f in found if not f.memory_safety]


def _public_texts(gh) -> list:
    """Everything public: issues' titles and bodies, comments, and every request body sent to an issues
    or labels endpoint (whatever its outcome)."""
    texts = [t for i in gh.issues for t in (i["title"], i["body"] or "")]
    texts += [c["body"] for cs in gh.comments.values() for c in cs]
    texts += [b for m, p, b in gh.bodies if m == "POST" and "/security-advisories" not in p]
    return texts


def _assert_nowhere_public(gh, f) -> None:
    """Nothing of cause ``f`` in anything public: neither its marker, its cluster, its fingerprints,
    its title, nor its signature (which its repro.py holds)."""
    needles = [marker(f.cause), f.cluster, title(f), f.doc["signature"]] + [fp for fp, _, _ in f.fingerprints]
    for text in _public_texts(gh):
        for needle in needles:
            assert needle not in text, needle


def _results_with_issues(run_dir: str, tmp_path, **issues) -> str:
    """A copy of the run folder whose recorded campaign (run.json) sets ``issues`` to the
    fake repository's settings plus ``issues``, as a campaign file would."""
    results = str(tmp_path / "results")
    shutil.copytree(run_dir, results)
    manifest = json.load(open(os.path.join(results, "run.json")))
    manifest["config"]["issues"] = {"repo": "acme/tvm", "label": "dlgate", "api_url": "https://api.github.com",
                                    **issues}
    with open(os.path.join(results, "run.json"), "w") as f:
        json.dump(manifest, f)
    return results


def test_one_issue_per_cluster_then_one_comment_per_repeat_run(run_dir):
    found = findings(run_dir)
    # EnvBug is wrong on every operator, so its cases reduce to one operator each: one
    # fingerprint (and cluster) per operator; the crash (on Tanh) in every case holding it is one cause
    kinds = {(f.doc["verdict"], f.doc["pattern"]) for f in found}
    assert len(found) == len(kinds) >= 2
    crash = [f for f in found if f.doc["verdict"] == "crash"]
    crashed = [r for r in read_records(os.path.join(run_dir, "results.jsonl"))
               if any(v["verdict"] == "crash" for v in r["verdicts"])]
    assert len(crash) == 1 and crash[0].doc["pattern"] == "Tanh" and crash[0].cases == len(crashed) >= 2
    private, public = _split(found)
    assert private == crash and len(public) >= 1  # the SIGSEGV is reported privately, the rest in public
    n = len(public)
    with FakeGitHub(token=TOKEN) as gh:
        s1 = publish(run_dir, _client(gh), env=_env("100"), log=lambda m: None)
        assert s1["opened"] == n and len(gh.issues) == n and s1["reported"] == 1 and len(gh.advisories) == 1
        for f in public:
            (issue,) = gh.issues_containing(marker(f.cause))
            assert [lb["name"] for lb in issue["labels"]] == ["dlgate", "fuzzer-generated"]
            assert "```mermaid" in issue["body"] and "def run(" in issue["body"] and "repro.py" in issue["body"]
            assert issue["title"].startswith("[dlgate] tests.fake_backends:")
        s2 = publish(run_dir, _client(gh), env=_env("101"), log=lambda m: None)
        assert s2["opened"] == 0 and s2["commented"] == n and len(gh.issues) == n
        assert s2["reported"] == 0 and s2["unchanged"] == 1 and len(gh.advisories) == 1
        assert all(len(gh.comments.get(i["number"], [])) == 1 for i in gh.issues)
        s3 = publish(run_dir, _client(gh), env=_env("101"), log=lambda m: None)  # a retried publication
        assert s3["commented"] == 0 and s3["unchanged"] == n + 1
        assert all(len(gh.comments.get(i["number"], [])) == 1 for i in gh.issues)
        assert len(gh.advisories) == 1
        _assert_nowhere_public(gh, crash[0])


@pytest.mark.parametrize("fault", ["500", "drop-after", "drop-before", "429", "slow"])
def test_faults_neither_duplicate_nor_lose(run_dir, fault):
    params = {"retry_after": 1} if fault == "429" else {"seconds": 3} if fault == "slow" else {}
    with FakeGitHub(token=TOKEN) as gh:
        gh.inject(fault, count=2, method="POST", **params)
        publish(run_dir, _client(gh), env=_env("200"), log=lambda m: None)
        gh.inject(fault, count=2, method="POST", **params)
        publish(run_dir, _client(gh), env=_env("201"), log=lambda m: None)
        private, public = _split(findings(run_dir))
        assert len(gh.issues) == len(public) and len(gh.advisories) == len(private) == 1
        for f in public:
            (issue,) = gh.issues_containing(marker(f.cause))
            assert len(gh.comments.get(issue["number"], [])) == 1
        (adv,) = gh.advisories_containing(marker(private[0].cause))
        _assert_nowhere_public(gh, private[0])


def test_cap_on_new_issues_and_dry_run(run_dir, tmp_path):
    with FakeGitHub(token=TOKEN) as gh:
        stats = publish(run_dir, _client(gh), max_issues=1, env=_env("300"), log=lambda m: None)
        n = len(findings(run_dir))
        # issues and private reports share the cap
        assert stats["opened"] + stats["reported"] == 1 and stats["over_cap"] == n - 1
        assert len(gh.issues) + len(gh.advisories) == 1
    assert main(["issues", "--results", run_dir, "--repo", "acme/tvm", "--dry-run", str(tmp_path / "dry")]) == 0
    private, public = _split(findings(run_dir))
    pages = sorted(glob.glob(str(tmp_path / "dry" / "issue-*.md")))
    assert len(pages) == len(public) and all(open(p).read().startswith("# [dlgate]") for p in pages)
    (report,) = glob.glob(str(tmp_path / "dry" / "private-report-*.md"))
    assert report.endswith(f"private-report-{private[0].cause}.md") and "memory-safety" in open(report).read()


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
    n = len(_split(findings(run_dir))[1])
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


def test_a_segfault_is_reported_privately_once_and_nowhere_public(run_dir, tmp_path):
    (crash,), public = _split(findings(run_dir))
    assert crash.memory_safety == {"kind": "invalid memory access", "cwe": "CWE-119", "signal": "SIGSEGV"}
    summary, logs = tmp_path / "summary.md", []
    with FakeGitHub(token=TOKEN) as gh:
        for run_id in ("600", "601", "601"):
            stats = publish(run_dir, _client(gh), env=dict(_env(run_id), GITHUB_STEP_SUMMARY=str(summary)),
                            log=logs.append)
            assert stats["withheld"] == 0 and len(gh.advisories) == 1
        (adv,) = gh.advisories_containing(marker(crash.cause))
        assert adv["summary"] == title(crash) and "killed by SIGSEGV" in adv["summary"]
        assert adv["cwe_ids"] == ["CWE-119"] and adv["state"] == "triage"
        assert "memory-safety bug" in adv["description"] and "def run(" in adv["description"]
        reports = [p for m, p, _ in gh.requests if m == "POST" and p.endswith("/security-advisories/reports")]
        assert reports == ["/repos/acme/tvm/security-advisories/reports"]  # the reruns found it
        assert len(gh.issues) == len(public)
        _assert_nowhere_public(gh, crash)
    text = summary.read_text()  # nothing withheld: no notice, only the issues' account
    assert "not filed" not in text and text.count("### dlgate: issues") == 3
    assert crash.cluster not in text and "1 reported privately" in text
    assert any(adv["ghsa_id"] in m and "reported privately" in m for m in logs)


def test_sigbus_and_an_invalid_free_are_private_an_abort_and_an_exception_are_public(crash_dir):
    found = findings(crash_dir)
    by = {f.doc["backend"].split("[")[0].split(":")[1]: f for f in found}
    assert set(by) == {"BusError", "BadFree", "Abort", "Raises"}
    assert by["BusError"].memory_safety == {"kind": "invalid memory access", "cwe": "CWE-119", "signal": "SIGBUS"}
    assert by["BadFree"].memory_safety == {"kind": "invalid free", "cwe": "CWE-763", "signal": "SIGABRT"}
    assert by["Abort"].memory_safety is None and by["Abort"].doc["verdict"] == "crash"  # an assertion's abort
    assert by["Raises"].memory_safety is None
    with FakeGitHub(token=TOKEN) as gh:
        stats = publish(crash_dir, _client(gh), env=_env("700"), log=lambda m: None)
        assert stats["reported"] == 2 and stats["opened"] == 2
        for name in ("BusError", "BadFree"):
            assert len(gh.advisories_containing(marker(by[name].cause))) == 1
            _assert_nowhere_public(gh, by[name])
        for name in ("Abort", "Raises"):  # the public path, as before
            (issue,) = gh.issues_containing(marker(by[name].cause))
            assert issue["title"] == title(by[name]) and not gh.advisories_containing(marker(by[name].cause))
        assert not any("SIGBUS" in t or "invalid pointer" in t or "memory-safety" in t for t in _public_texts(gh))


@pytest.mark.parametrize("status", [403, 404, 422])
def test_where_private_reporting_is_not_enabled_the_crash_is_withheld_with_a_notice(run_dir, tmp_path, status):
    (crash,), public = _split(findings(run_dir))
    summary, logs = tmp_path / "summary.md", []
    summary.write_text("## earlier step\n")
    with FakeGitHub(token=TOKEN) as gh:
        gh.reports_refused = status
        for run_id in ("800", "801"):
            stats = publish(run_dir, _client(gh), env=dict(_env(run_id), GITHUB_STEP_SUMMARY=str(summary)),
                            log=logs.append)
            assert stats["withheld"] == 1 and stats["reported"] == 0
        assert not gh.advisories and len(gh.issues) == len(public)  # the rest is filed as usual
        _assert_nowhere_public(gh, crash)
    lines = [m for m in logs if crash.cluster in m]
    assert len(lines) == 2 and all("not filed" in m and "no public issue" in m and "\n" not in m for m in lines)
    assert all(f"HTTP {status}" in m and "private vulnerability reporting" in m for m in lines)
    text = summary.read_text()
    assert text.startswith("## earlier step\n") and text.count("possible memory-safety bugs, not filed") == 2
    assert f"`{crash.cluster}`" in text and "invalid memory access (SIGSEGV)" in text and TOKEN not in text


def test_a_token_that_cannot_read_advisories_withholds_rather_than_risking_a_duplicate(run_dir):
    (crash,), public = _split(findings(run_dir))
    logs = []
    with FakeGitHub(token=TOKEN) as gh:
        gh.advisories_readable = False
        stats = publish(run_dir, _client(gh), env=_env("900"), log=logs.append)
        assert stats["withheld"] == 1 and not gh.advisories and len(gh.issues) == len(public)
        assert not [p for m, p, _ in gh.requests if m == "POST" and "/security-advisories" in p]
        _assert_nowhere_public(gh, crash)
    assert any("cannot read acme/tvm's security advisories" in m and "HTTP 403" in m for m in logs)


def test_the_campaign_option_files_them_as_public_issues(run_dir, tmp_path, monkeypatch):
    """``issues.memory_safety: public`` in the campaign (as the run recorded it in run.json) opens an
    issue for the crash like for any failure; ``--memory-safety`` overrides the campaign."""
    (crash,), public = _split(findings(run_dir))
    results = _results_with_issues(run_dir, tmp_path, max_per_run=5, memory_safety="public")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    for k, v in _env("1000").items():
        monkeypatch.setenv(k, v)
    with FakeGitHub(token=TOKEN) as gh:
        assert main(["issues", "--results", results, "--repo", "acme/tvm", "--api-url", gh.url]) == 0
        (issue,) = gh.issues_containing(marker(crash.cause))
        assert issue["title"] == title(crash) and not gh.advisories and len(gh.issues) == len(public) + 1
    with FakeGitHub(token=TOKEN) as gh:
        assert main(["issues", "--results", results, "--repo", "acme/tvm", "--api-url", gh.url,
                     "--memory-safety", "private"]) == 0
        assert len(gh.advisories_containing(marker(crash.cause))) == 1 and len(gh.issues) == len(public)
        _assert_nowhere_public(gh, crash)
    # the gate's own publication (a campaign with `issues:`) passes the option on
    for option, issues, advisories in (("public", len(public) + 1, 0), ("private", len(public), 1)):
        with FakeGitHub(token=TOKEN) as gh:
            publish_issues(results, C.build({"issues": {"repo": "acme/tvm", "api_url": gh.url,
                                                        "memory_safety": option}}).issues, log=lambda m: None)
            assert (len(gh.issues), len(gh.advisories)) == (issues, advisories), option


def test_a_step_summary_that_cannot_be_written_leaves_the_log_line(run_dir, tmp_path):
    (crash,), _ = _split(findings(run_dir))
    logs = []
    with FakeGitHub(token=TOKEN) as gh:
        gh.reports_refused = 403
        stats = publish(run_dir, _client(gh), env=dict(_env("1100"), GITHUB_STEP_SUMMARY=str(tmp_path)),
                        log=logs.append)  # a folder: not writable as a file
        assert stats["withheld"] == 1 and not gh.advisories
        _assert_nowhere_public(gh, crash)
    assert any(crash.cluster in m and "not filed" in m for m in logs)
    assert any(m.startswith("dlgate: cannot add the notice to the step summary: ") for m in logs)


def test_a_run_from_before_the_record_is_classed_by_its_crash_signal(run_dir, tmp_path):
    """verdict.json and repro.json written before ``memory_safety`` was recorded: the crash's
    detail, dlgate's own words for the signal, still keeps it out of public issues."""
    results = str(tmp_path / "old")
    shutil.copytree(run_dir, results)
    with open(os.path.join(results, "verdict.json")) as f:
        v = json.load(f)
    stripped = 0
    for cls in ("new", "regressions", "pre_existing"):
        for g in v.get(cls, []):
            stripped += g.pop("memory_safety", None) is not None
    with open(os.path.join(results, "verdict.json"), "w") as f:
        json.dump(v, f)
    for path in glob.glob(os.path.join(results, "repros", "*", "repro.json")):
        with open(path) as f:
            doc = json.load(f)
        stripped += doc.pop("memory_safety", None) is not None
        with open(path, "w") as f:
            json.dump(doc, f)
    assert stripped >= 2
    (crash,), public = _split(findings(results))
    assert crash.memory_safety == {"kind": "invalid memory access", "cwe": "CWE-119", "signal": "SIGSEGV"}
    with FakeGitHub(token=TOKEN) as gh:
        publish(results, _client(gh), env=_env("1200"), log=lambda m: None)
        assert len(gh.advisories) == 1 and len(gh.issues) == len(public)
        _assert_nowhere_public(gh, crash)


def test_the_cap_takes_the_most_severe_then_the_most_frequent_and_lists_the_rest(run_dir, tmp_path):
    from dlgate.github.issues import ISSUES_RECORD, Finding, rank

    def f(cluster, verdict, cases, classes=("new",), ms=None):
        return Finding(cluster, "", {"verdict": verdict}, [], cases, list(classes), [], ms)

    order = sorted([f("a", "compile_error", 40), f("b", "mismatch", 2), f("c", "mismatch", 9),
                    f("d", "crash", 1, ms={"kind": "invalid memory access"}), f("e", "crash", 50),
                    f("f", "mismatch", 9, ("pre_existing",)), f("g", "mismatch", 9, ("regressions",))], key=rank)
    assert [x.cluster for x in order] == ["d", "g", "c", "f", "b", "e", "a"]

    results = str(tmp_path / "results")
    shutil.copytree(run_dir, results)
    private, public = _split(findings(results))
    expected = sorted(public, key=rank)
    summary = tmp_path / "summary.md"
    with FakeGitHub(token=TOKEN) as gh:
        gh.reports_refused = 403  # the crash is withheld: the cap is all the public issues'
        stats = publish(results, _client(gh), max_issues=1, env=dict(_env("1300"), GITHUB_STEP_SUMMARY=str(summary)),
                        log=lambda m: None)
        assert stats["opened"] == 1 and stats["over_cap"] == len(public) - 1
        (issue,) = gh.issues
        assert marker(expected[0].cause) in issue["body"]  # the first by rank got the issue
    record = json.load(open(os.path.join(results, ISSUES_RECORD)))
    assert record["cap"] == 1 and [r["cluster"] for r in record["causes"]] == [x.cluster for x in sorted(
        findings(results), key=rank)]
    over = [r for r in record["causes"] if r["outcome"] == "over the cap"]
    assert [r["cluster"] for r in over] == [x.cluster for x in expected[1:]]
    text = summary.read_text()
    assert "Not filed this run (over the cap" in text and all(f"`{r['cluster']}`" in text for r in over)
    assert all(r["repro"].startswith("repros/") for r in over)
    # the run's own report still lists every cause
    report = open(os.path.join(results, "summary.md")).read()
    assert all(x.doc["fingerprint"] in report or x.cluster in report for x in public)


def test_the_report_counts_dlgate_issues_closed_as_fixed(run_dir, tmp_path):
    private, public = _split(findings(run_dir))
    summary = tmp_path / "summary.md"
    with FakeGitHub(token=TOKEN) as gh:
        gh.add_issue("fixed one", marker("0000000000000001"), ["dlgate"], state="closed", state_reason="completed")
        gh.add_issue("fixed two", marker("0000000000000002"), ["dlgate"], state="closed")
        gh.add_issue("won't fix", marker("0000000000000003"), ["dlgate"], state="closed", state_reason="not_planned")
        gh.add_issue("a user's", "no marker here", ["dlgate"], state="closed", state_reason="completed")
        gh.add_issue("a pull request", marker("0000000000000004"), ["dlgate"], state="closed", pull_request=True)
        stats = publish(run_dir, _client(gh), env=dict(_env("1400"), GITHUB_STEP_SUMMARY=str(summary)),
                        log=lambda m: None)
        assert stats["tally"] == {"filed": 3 + len(public), "open": len(public), "fixed": 2, "not_planned": 1,
                                  "closed_other": 0}
        # a maintainer closes one of this run's issues as fixed (PATCH, as GitHub takes it)
        number = gh.issues_containing(marker(public[0].cause))[0]["number"]
        import requests
        r = requests.patch(f"{gh.url}/repos/acme/tvm/issues/{number}", json={"state": "closed",
                           "state_reason": "completed"}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5)
        assert r.status_code == 200 and r.json()["state_reason"] == "completed"
        closed = list(_client(gh).list_issues("dlgate", state="closed"))
        assert sorted(i["title"] for i in closed) == sorted(["fixed one", "fixed two", "won't fix", "a user's",
                                                             title(public[0])])
        stats = publish(run_dir, _client(gh), env=dict(_env("1401"), GITHUB_STEP_SUMMARY=str(summary)),
                        log=lambda m: None)
        assert stats["tally"]["fixed"] == 3 and stats["tally"]["open"] == len(public) - 1
        assert stats["commented"] == len(public)  # a closed issue is found again, not duplicated
    assert "**3 closed as fixed**" in summary.read_text()


def test_a_regression_range_goes_into_the_issue(run_dir, tmp_path):
    from dlgate.github.releases import RESULT

    results = str(tmp_path / "results")
    shutil.copytree(run_dir, results)
    calls = []

    def bisect(repro_dir):  # what dlgate bisect-releases writes
        calls.append(repro_dir)
        with open(os.path.join(repro_dir, RESULT), "w") as f:
            json.dump({"package": "fakecc", "summary": "fakecc 1.1 is the oldest release with the bug; 1.0 is the "
                       "newest without it (2 release(s) probed, 3 s).", "newest_without": "1.0", "oldest_with": "1.1",
                       "probes": [{"version": "1.2", "outcome": "bug", "seconds": 1.5, "line": "BUG: wrong result"},
                                  {"version": "1.0", "outcome": "clean", "seconds": 1.5, "line": "OK: ..."}]}, f)

    private, public = _split(findings(results))
    with FakeGitHub(token=TOKEN) as gh:
        publish(results, _client(gh), env=_env("1500"), log=lambda m: None, bisect=bisect)
        assert sorted(calls) == sorted(f.repro for f in public)  # new issues only; never the private report
        for f in public:
            body = gh.issues_containing(marker(f.cause))[0]["body"]
            assert "### Regression range" in body and "fakecc 1.1 is the oldest release with the bug" in body
            assert "| `1.2` | bug |" in body
        publish(results, _client(gh), env=_env("1501"), log=lambda m: None, bisect=bisect)
        assert len(calls) == len(public)  # a comment on a known issue bisects nothing


def test_dlgate_issues_takes_the_cap_from_the_campaign(run_dir, tmp_path, monkeypatch):
    results = _results_with_issues(run_dir, tmp_path, max_per_run=1, memory_safety="public", bisect_releases=False)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    for k, v in _env("1600").items():
        monkeypatch.setenv(k, v)
    with FakeGitHub(token=TOKEN) as gh:
        assert main(["issues", "--results", results, "--repo", "acme/tvm", "--api-url", gh.url]) == 0
        assert len(gh.issues) == 1
    with FakeGitHub(token=TOKEN) as gh:
        assert main(["issues", "--results", results, "--repo", "acme/tvm", "--api-url", gh.url,
                     "--max-issues", "2"]) == 0
        assert len(gh.issues) == 2
    assert main(["issues", "--results", results, "--repo", "acme/tvm", "--max-issues", "-1",
                 "--dry-run", str(tmp_path)]) == 2


# -- one issue per cause, as the gate's summary counts them -----------------------------------
def _one_cause(run_dir: str, tmp_path) -> tuple:
    """A copy of the run whose first two public causes are one cause spanning both their
    clusters, as one converter's bug met in two dtypes is (the gate's ``cause``, on every
    group of either); (results folder, the merged clusters in the run's order (the order of
    the verdict's groups, which a cause lists them in, whatever order the findings take),
    the other public findings)."""
    results = str(tmp_path / "merged")
    shutil.copytree(run_dir, results)
    private, public = _split(findings(results))
    assert len(public) >= 2, [f.doc["pattern"] for f in public]
    a, b = public[0], public[1]
    p = os.path.join(results, "verdict.json")
    v = json.load(open(p))
    merged = []
    for key in ("new", "regressions", "pre_existing"):
        for g in v.get(key, []):
            if g["cluster"] in a.clusters + b.clusters:
                g["cause"] = "one-converter-bug"
                merged += [] if g["cluster"] in merged else [g["cluster"]]
    assert sorted(merged) == sorted(a.clusters + b.clusters)
    json.dump(v, open(p, "w"))
    return results, merged, public[2:]


def test_one_issue_per_cause_listing_its_clusters(run_dir, tmp_path):
    results, merged, rest = _one_cause(run_dir, tmp_path)
    (one,) = [f for f in findings(results) if f.cause == "one-converter-bug"]
    assert one.clusters == merged and len(one.fingerprints) == 2
    with FakeGitHub(token=TOKEN) as gh:
        stats = publish(results, _client(gh), env=_env("1500"), log=lambda m: None)
        assert stats["opened"] == 1 + len(rest) and len(gh.issues) == 1 + len(rest)  # not one per cluster
        (issue,) = gh.issues_containing(marker("one-converter-bug"))
        assert all(c in issue["body"] for c in merged) and "1 more reduced pattern(s)" in issue["body"]
    record = json.load(open(os.path.join(results, "issues.json")))
    (row,) = [r for r in record["causes"] if r["cause"] == "one-converter-bug"]
    assert row["clusters"] == merged and row["outcome"] == "opened"


@pytest.mark.parametrize("states", [("open", "closed"), ("closed", "open"), ("closed", "closed")])
def test_issues_filed_per_cluster_before_get_the_cause_s_comment_not_a_duplicate(run_dir, tmp_path, states):
    """Issues opened before causes were grouped carry their cluster's marker: a cause whose
    clusters have one gets a comment there (the open one when one is open), never a new
    issue; a cause none of whose clusters has one gets its own issue."""
    results, merged, rest = _one_cause(run_dir, tmp_path)
    with FakeGitHub(token=TOKEN) as gh:
        old = [gh.add_issue(f"old {c}", f"body\n{cluster_marker(c)}\n", ["dlgate"], state=st)
               for c, st in zip(merged, states)]
        stats = publish(results, _client(gh), env=_env("1600"), log=lambda m: None)
        assert not gh.issues_containing(marker("one-converter-bug")) and stats["opened"] == len(rest)
        want = next((i for i in old if i["state"] == "open"), old[0])
        assert [len(gh.comments.get(i["number"], [])) for i in old] == [int(i is want) for i in old]
        assert "one-converter-bug" in gh.comments[want["number"]][0]["body"]
        again = publish(results, _client(gh), env=_env("1600"), log=lambda m: None)  # a retried publication
        assert again["opened"] == again["commented"] == 0 and len(gh.comments[want["number"]]) == 1
        assert stats["tally"]["filed"] == len(gh.issues)  # the old markers count as dlgate's issues
