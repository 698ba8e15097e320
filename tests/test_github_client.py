"""The GitHub client against a fake GitHub on a real loopback server: idempotent writes under every fault,
rate limits, errors, token secrecy and GitHub Enterprise URLs."""
from __future__ import annotations

import email.utils
import json
import socket
import time

import pytest
from urllib3.util.retry import Retry

from dlgate.github import GitHub, GitHubError, UncertainWrite
from tests.github_fake import FakeGitHub

TOKEN = "t0k3n-secret"
MARKER = "<!-- dlgate:sig-0123abcd -->"
BODY = f"TVM fails to compile a Conv+Relu graph.\n\n{MARKER}\n"


@pytest.fixture
def gh():
    with FakeGitHub(token=TOKEN, owner="acme", repo="tvm") as fake:
        yield fake


class Client:
    """Builds clients against the fake, recording their sleeps and log lines instead of waiting."""

    def __init__(self, gh: FakeGitHub):
        self.gh, self.sleeps, self.logs = gh, [], []

    def __call__(self, **kwargs) -> GitHub:
        kwargs = {"token": TOKEN, "api_url": self.gh.url, "timeout": 2.0, "sleep": self.sleeps.append,
                  "log": self.logs.append, **kwargs}
        return GitHub("acme/tvm", **kwargs)


@pytest.fixture
def client(gh):
    return Client(gh)


def open_issue(github: GitHub, marker: str = MARKER, body: str = BODY):
    return github.open_or_find(marker, "dlgate", "tvm: compile error in Conv", body, ["dlgate", "tvm"])


def posts(gh: FakeGitHub, path_end: str) -> int:
    return sum(1 for method, path, _ in gh.requests if method == "POST" and path.endswith(path_end))


# Idempotent creation

def test_open_or_find_creates_once_then_finds(gh, client):
    github = client()
    issue, created = open_issue(github)
    assert created and issue["number"] == 1 and issue["html_url"].endswith("/acme/tvm/issues/1")
    again, created = open_issue(github)
    assert not created and again["number"] == 1
    assert len(gh.issues) == 1 and posts(gh, "/issues") == 1
    assert {lb["name"] for lb in gh.issues[0]["labels"]} == {"dlgate", "tvm"}


def test_finds_issue_on_a_later_page_and_skips_pull_requests(gh, client):
    target = gh.add_issue("old failure", BODY, labels=["dlgate"], state="closed")
    for n in range(230):
        gh.add_issue(f"other failure {n}", f"<!-- dlgate:sig-{n} -->", labels=["dlgate"])
    gh.add_issue("a PR quoting the marker", BODY, labels=["dlgate"], pull_request=True)
    issue, created = open_issue(client())
    assert not created and issue["number"] == target["number"]
    assert len(gh.issues_containing(MARKER)) == 2 and posts(gh, "/issues") == 0
    pages = [path for method, path, _ in gh.requests if method == "GET"]
    assert len(pages) == 3 and "page=3" in pages[-1] and "state=all" in pages[0] and "labels=dlgate" in pages[0]


def test_find_issue_filters_on_label(gh, client):
    gh.add_issue("unlabelled", BODY, labels=["triage"])
    github = client()
    assert github.find_issue(MARKER, "dlgate") is None
    assert github.find_issue(MARKER)["title"] == "unlabelled"
    assert github.find_issue("<!-- no such marker -->") is None


def test_open_or_find_rejects_a_body_without_its_marker(client):
    with pytest.raises(ValueError, match="marker"):
        client().open_or_find(MARKER, "dlgate", "title", "no marker here", ["dlgate"])
    with pytest.raises(ValueError, match="label"):
        client().open_or_find(MARKER, "dlgate", "title", BODY, ["tvm"])


# Faults on writes: exactly one issue or comment afterwards

FAULTS = [
    pytest.param("500", {"count": 2}, id="500"),
    pytest.param("429", {"retry_after": 7}, id="429"),
    pytest.param("403-rate", {"reset_in": 40}, id="403-rate"),
    pytest.param("slow", {"seconds": 1.0}, id="slow"),
    pytest.param("drop-before", {"count": 2}, id="drop-before"),
    pytest.param("drop-after", {}, id="drop-after"),
]


def check_waits(kind: str, sleeps: list) -> None:
    """Rate limits wait as long as GitHub asks; other faults back off exponentially from backoff_s=1."""
    if kind == "429":
        assert sleeps == [7.0]
    elif kind == "403-rate":
        assert len(sleeps) == 1 and 39.0 <= sleeps[0] <= 42.0
    else:
        assert sleeps == [1.0, 2.0][:len(sleeps)] and sleeps


@pytest.mark.parametrize("kind,params", FAULTS)
def test_open_or_find_under_fault(gh, client, kind, params):
    gh.inject(kind, method="POST", path_contains="/issues", **params)
    github = client(timeout=0.3)
    issue, created = open_issue(github)
    assert created and len(gh.issues_containing(MARKER)) == 1 and len(gh.issues) == 1
    check_waits(kind, client.sleeps)
    again, created = open_issue(github)
    assert not created and again["number"] == issue["number"] and len(gh.issues) == 1


@pytest.mark.parametrize("kind,params", FAULTS)
def test_comment_once_under_fault(gh, client, kind, params):
    number = gh.add_issue("failure", BODY, labels=["dlgate"])["number"]
    gh.inject(kind, method="POST", path_contains="/comments", **params)
    github = client(timeout=0.3)
    note = f"Still failing at abc123.\n{MARKER}-seen-abc123"
    comment, created = github.comment_once(number, f"{MARKER}-seen-abc123", note)
    assert created and comment["body"] == note
    assert len(gh.comments[number]) == 1 and gh.issues[0]["comments"] == 1
    check_waits(kind, client.sleeps)
    assert github.comment_once(number, f"{MARKER}-seen-abc123", note) == (gh.comments[number][0], False)


@pytest.mark.parametrize("kind,params", [p for p in FAULTS if p.id != "drop-after"])
def test_reads_retry_under_fault(gh, client, kind, params):
    gh.add_issue("failure", BODY, labels=["dlgate"])
    gh.inject(kind, method="GET", **params)
    issue = client(timeout=0.3).find_issue(MARKER, "dlgate")
    assert issue["number"] == 1
    check_waits(kind, client.sleeps)


def test_one_fault_after_another_still_gives_one_issue(gh, client):
    for kind, params in [("429", {"retry_after": 3}), ("500", {}), ("drop-before", {}), ("drop-after", {})]:
        gh.inject(kind, method="POST", **params)
    issue, created = open_issue(client())
    assert created and len(gh.issues) == 1 and posts(gh, "/issues") == 4
    assert client.sleeps == [3.0, 1.0, 2.0, 4.0]


def test_plain_create_issue_does_not_retry_an_uncertain_write(gh, client):
    gh.inject("drop-after", method="POST")
    github = client()
    with pytest.raises(UncertainWrite, match="may have been applied"):
        github.create_issue("title", BODY, ["dlgate"])
    assert len(gh.issues) == 1 and client.sleeps == []
    assert open_issue(github)[1] is False and len(gh.issues) == 1


def test_plain_writes_wait_out_rate_limits(gh, client):
    gh.inject("429", method="POST", retry_after=5)
    gh.inject("403-rate", method="POST", reset_in=20)
    github = client()
    issue = github.create_issue("title", BODY, ["dlgate"])
    comment = github.comment(issue["number"], "a note")
    assert len(gh.issues) == 1 and gh.comments[1] == [comment] and github.list_comments(1) == [comment]
    assert client.sleeps[0] == 5.0 and 19.0 <= client.sleeps[1] <= 22.0
    assert "rate limited (HTTP 429); retry 1/6 in 5 s" in client.logs[0]


def test_a_refused_connection_is_retried_even_for_a_write(client):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    github = client(api_url=f"http://127.0.0.1:{port}", max_retries=3)
    with pytest.raises(GitHubError, match="could not connect; gave up after 4 attempts") as err:
        github.create_issue("title", BODY, [])
    assert not isinstance(err.value, UncertainWrite) and client.sleeps == [1.0, 2.0, 4.0]


def test_back_off_is_capped_and_retries_end(gh, client):
    gh.inject("500", count=10, method="GET")
    with pytest.raises(GitHubError, match=r"GET /repos/acme/tvm/issues: HTTP 500; gave up after 7 attempts") as err:
        client(max_wait_s=10).find_issue(MARKER)
    assert err.value.status == 500 and client.sleeps == [1, 2, 4, 8, 10, 10]


def test_a_rate_limit_longer_than_max_wait_is_an_error(gh, client):
    gh.inject("403-rate", reset_in=3600)
    with pytest.raises(GitHubError, match="more than max_wait_s=300"):
        client().find_issue(MARKER)
    assert client.sleeps == []


def test_a_write_that_never_shows_up_gives_up(gh, client):
    gh.inject("500", count=10, method="POST")
    with pytest.raises(GitHubError, match="not there; gave up after 3 attempts") as err:
        open_issue(client(max_retries=2))
    assert not isinstance(err.value, UncertainWrite) and gh.issues == [] and client.sleeps == [1, 2, 4]


# Retries happen inside the session's adapter (urllib3's Retry), not in a loop of the client's

def sends(github: GitHub) -> list:
    """Counts the requests the client hands to its session; the adapter's retries are not among them."""
    calls, send = [], github._session.send
    github._session.send = lambda *args, **kwargs: calls.append(args) or send(*args, **kwargs)
    return calls


def test_reads_are_retried_by_the_adapter(gh, client):
    gh.add_issue("failure", BODY, labels=["dlgate"])
    gh.inject("error", count=2, method="GET", status=503, message="Service Unavailable")
    github = client()
    assert isinstance(github._session.get_adapter(gh.url).max_retries, Retry)
    handed = sends(github)
    assert github.find_issue(MARKER, "dlgate")["number"] == 1
    assert len(handed) == 1 and [m for m, _, _ in gh.requests] == ["GET"] * 3
    assert client.sleeps == [1.0, 2.0] and "GET /repos/acme/tvm/issues: HTTP 503; retry 1/6 in 1 s" in client.logs[0]


def test_retry_after_on_a_server_error_is_honoured(gh, client):
    gh.inject("error", method="GET", status=503, headers={"Retry-After": "9"})
    assert client().find_issue(MARKER) is None and client.sleeps == [9.0]


def test_retry_after_as_an_http_date_is_honoured(gh, client):
    gh.inject("429", method="GET", retry_after=email.utils.formatdate(time.time() + 30, usegmt=True))
    assert client().find_issue(MARKER) is None
    assert len(client.sleeps) == 1 and 27.0 <= client.sleeps[0] <= 31.0


def test_a_server_error_asking_longer_than_max_wait_is_an_error(gh, client):
    gh.inject("error", method="GET", status=503, headers={"Retry-After": "900"})
    with pytest.raises(GitHubError, match="HTTP 503; GitHub asks to wait 900 s, more than max_wait_s=300"):
        client().find_issue(MARKER)
    assert client.sleeps == [] and len(gh.requests) == 1


def test_a_post_is_not_retried_blindly_by_the_adapter(gh, client):
    gh.inject("error", method="POST", status=503, headers={"Retry-After": "1"})
    github = client()
    handed = sends(github)
    with pytest.raises(UncertainWrite, match="POST /repos/acme/tvm/issues: HTTP 503; it may have been applied"):
        github.create_issue("title", BODY, ["dlgate"])
    assert len(handed) == 1 and posts(gh, "/issues") == 1 and client.sleeps == []


def test_a_rate_limited_post_is_retried_by_the_adapter(gh, client):
    gh.inject("429", method="POST", retry_after=2)
    github = client()
    handed = sends(github)
    issue = github.create_issue("title", BODY, ["dlgate"])
    assert issue["number"] == 1 and len(gh.issues) == 1
    assert len(handed) == 1 and posts(gh, "/issues") == 2 and client.sleeps == [2.0]


def test_rate_limits_that_never_end_give_up(gh, client):
    gh.inject("429", count=10, method="POST", retry_after=1)
    with pytest.raises(GitHubError, match=r"rate limited \(HTTP 429\); gave up after 3 attempts") as err:
        client(max_retries=2).create_issue("title", BODY, [])
    assert not isinstance(err.value, UncertainWrite) and gh.issues == [] and client.sleeps == [1.0, 1.0]


# Comments and labels

def test_comment_once_is_idempotent_and_reads_every_page(gh, client):
    number = gh.add_issue("failure", BODY, labels=["dlgate"])["number"]
    for n in range(120):
        gh.add_comment(number, f"unrelated comment {n}")
    github = client()
    first, created = github.comment_once(number, "<!-- seen:abc -->", "seen at abc <!-- seen:abc -->")
    second, again = github.comment_once(number, "<!-- seen:abc -->", "seen at abc <!-- seen:abc -->")
    assert created and not again and first == second
    assert len(gh.comments_containing(number, "<!-- seen:abc -->")) == 1 and len(github.list_comments(number)) == 121
    with pytest.raises(ValueError, match="marker"):
        github.comment_once(number, "<!-- seen:def -->", "no marker")


def test_ensure_label_creates_a_missing_label_and_keeps_an_existing_one(gh, client):
    github = client()
    github.ensure_label("dlgate: new failure", color="#d93f0b", description="opened by dlgate")
    assert gh.labels["dlgate: new failure"]["color"] == "d93f0b"
    github.ensure_label("dlgate: new failure", color="000000")
    assert gh.labels["dlgate: new failure"]["color"] == "d93f0b" and posts(gh, "/labels") == 1


def test_ensure_label_tolerates_losing_a_creation_race(gh, client):
    gh.add_label("dlgate")
    gh.inject("error", method="GET", path_contains="/labels/", status=404, message="Not Found")
    client().ensure_label("dlgate")
    assert posts(gh, "/labels") == 1 and len(gh.labels) == 1


# Private vulnerability reports

def report(github: GitHub, marker: str = MARKER, body: str = BODY):
    return github.report_once(marker, "tvm: crash (SIGSEGV) in Conv", body, ["CWE-119"])


@pytest.mark.parametrize("kind,params", FAULTS)
def test_report_once_under_fault(gh, client, kind, params):
    gh.inject(kind, method="POST", path_contains="/security-advisories/reports", **params)
    github = client(timeout=0.3)
    adv, created = report(github)
    assert created and len(gh.advisories_containing(MARKER)) == 1 and len(gh.advisories) == 1
    assert adv["ghsa_id"].startswith("GHSA-") and adv["html_url"].endswith(f"/security/advisories/{adv['ghsa_id']}")
    check_waits(kind, client.sleeps)
    again, created = report(github)
    assert not created and again["ghsa_id"] == adv["ghsa_id"] and len(gh.advisories) == 1
    assert not gh.issues and posts(gh, "/issues") == 0


def test_a_report_carries_githubs_fields_and_finds_its_marker_on_any_page(gh, client):
    for k in range(150):
        gh.add_advisory(f"other {k}", f"unrelated advisory {k}", state="published" if k % 2 else "closed")
    github = client()
    adv, created = report(github)
    assert created and adv["state"] == "triage" and adv["cwe_ids"] == ["CWE-119"] and adv["severity"] is None
    body = next(json.loads(b) for m, p, b in gh.bodies if p.endswith("/security-advisories/reports"))
    assert body == {"summary": "tvm: crash (SIGSEGV) in Conv", "description": BODY, "cwe_ids": ["CWE-119"]}
    for k in range(150):  # now the report is the newest: put it behind a page of others
        gh.add_advisory(f"later {k}", f"unrelated advisory {k}")
    assert github.find_advisory(MARKER)["ghsa_id"] == adv["ghsa_id"]
    assert report(github)[1] is False and len(gh.advisories) == 301


@pytest.mark.parametrize("status", [403, 404, 422])
def test_a_repository_without_private_reporting_is_a_clear_error(gh, client, status):
    gh.reports_refused = status
    with pytest.raises(GitHubError, match=f"POST /repos/acme/tvm/security-advisories/reports: HTTP {status}") as e:
        report(client())
    assert e.value.status == status and not gh.advisories and client.sleeps == []


def test_a_token_that_cannot_read_advisories_is_a_clear_error(gh, client):
    gh.advisories_readable = False
    with pytest.raises(GitHubError, match="GET /repos/acme/tvm/security-advisories: HTTP 403") as e:
        report(client())
    assert e.value.status == 403 and posts(gh, "/reports") == 0


def test_report_once_rejects_a_description_without_its_marker(client):
    with pytest.raises(ValueError, match="marker"):
        client().report_once(MARKER, "summary", "no marker here")


# Errors

def test_bad_token_is_a_clear_401(gh, client):
    with pytest.raises(GitHubError, match="GET /repos/acme/tvm/issues: HTTP 401: Bad credentials; check the") as e:
        client(token="wrong").find_issue(MARKER)
    assert e.value.status == 401 and client.sleeps == []


def test_unknown_issue_is_a_clear_404(gh, client):
    with pytest.raises(GitHubError, match="POST /repos/acme/tvm/issues/99/comments: HTTP 404: Not Found") as e:
        client().comment(99, "hello")
    assert e.value.status == 404


def test_validation_failure_is_a_clear_422(gh, client):
    with pytest.raises(GitHubError, match=r"HTTP 422: Validation Failed \(missing_field\)") as e:
        client().create_issue("", BODY, [])
    assert e.value.codes == ("missing_field",) and gh.issues == []


def test_a_403_that_is_no_rate_limit_is_not_retried(gh, client):
    gh.inject("error", status=403, message="Resource not accessible by integration")
    with pytest.raises(GitHubError, match="HTTP 403: Resource not accessible by integration") as e:
        client().find_issue(MARKER)
    assert e.value.status == 403 and client.sleeps == []


def test_bad_label_color_is_not_swallowed(gh, client):
    with pytest.raises(GitHubError, match=r"Validation Failed \(invalid\)"):
        client().ensure_label("dlgate", color="red")


@pytest.mark.parametrize("repo", ["acme", "acme/tvm/extra", "", "acme/", "/tvm", "acme/t vm", "../tvm", "acme/..",
                                  "acme/tvm?x=1", None])
def test_malformed_repo_is_rejected(repo):
    with pytest.raises(GitHubError, match="is not OWNER/NAME"):
        GitHub(repo, token=TOKEN)


def test_api_url_must_be_http():
    with pytest.raises(GitHubError, match="not an http"):
        GitHub("acme/tvm", token=TOKEN, api_url="ftp://ghe.example.com")


# Token secrecy and request headers

def test_token_never_leaks(gh, client):
    gh.inject("500", method="GET")
    gh.inject("429", method="GET", retry_after=1)
    gh.inject("error", method="POST", status=400, message=f"token {TOKEN} is not allowed here")
    github = client()
    assert TOKEN not in repr(github) and "'***'" in repr(github)
    with pytest.raises(GitHubError) as err:
        open_issue(github)
    assert TOKEN not in str(err.value) and "token *** is not allowed" in str(err.value)
    assert err.value.__cause__ is None and err.value.__context__ is None
    assert len(client.logs) == 2 and not any(TOKEN in line for line in client.logs)


def test_token_leaks_nowhere_even_from_a_dropped_connection(gh, client):
    gh.inject("drop-after", method="POST")
    with pytest.raises(UncertainWrite) as err:
        client().create_issue("title", BODY, [])
    assert TOKEN not in str(err.value) and err.value.__context__ is None


def test_requests_carry_bearer_token_and_api_headers(gh, client):
    open_issue(client())
    assert gh.requests
    for _, _, headers in gh.requests:
        assert headers["Authorization"] == f"Bearer {TOKEN}"
        assert headers["Accept"] == "application/vnd.github+json"
        assert headers["X-GitHub-Api-Version"] == "2022-11-28" and headers["User-Agent"] == "dlgate"


def test_token_comes_from_the_environment(gh, client, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    issue, created = open_issue(client(token=None))
    assert created and repr(client(token=None)).endswith("token='***')")
    monkeypatch.delenv("GITHUB_TOKEN")
    with pytest.raises(GitHubError, match="HTTP 401"):
        client(token=None).find_issue(MARKER)
    assert "Authorization" not in gh.requests[-1][2]


# GitHub Enterprise

def test_enterprise_api_url_with_a_path_prefix(gh, client):
    for n in range(150):
        gh.add_issue(f"other {n}", f"body {n}", labels=["dlgate"])
    github = client(api_url=gh.url + "/api/v3/")
    assert github.api_url == gh.url + "/api/v3"
    issue, created = open_issue(github)
    again, created_again = open_issue(github)
    assert created and not created_again and again["number"] == issue["number"] == 151
    assert github.comment_once(issue["number"], "<!-- m -->", "note <!-- m -->")[1]
    github.ensure_label("dlgate")
    assert all(path.startswith("/api/v3/repos/acme/tvm/") for _, path, _ in gh.requests)
    assert any("page=2" in path for _, path, _ in gh.requests)


def test_repr_hides_url_credentials():
    github = GitHub("acme/tvm", token=TOKEN, api_url="https://bot:hunter2@ghe.example.com/api/v3")
    assert "hunter2" not in repr(github) and "ghe.example.com/api/v3" in repr(github)
