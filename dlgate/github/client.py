"""A small GitHub REST client for filing compiler failures as issues, safe to re-run after any failure.

dlgate needs eight endpoints and one property generic clients lack: a write that failed half-way (the
connection dropped, the client timed out, GitHub answered 5xx) may still have been applied, so
retrying it blindly opens duplicate issues. The idempotent helpers :meth:`GitHub.open_or_find`,
:meth:`GitHub.comment_once` and :meth:`GitHub.report_once` (a private vulnerability report) key every
write on a marker string in its body and look for that marker before each retry; the plain writes :meth:`GitHub.create_issue` and :meth:`GitHub.comment` retry only
when the request surely never reached GitHub and otherwise raise :class:`UncertainWrite`.

Retries of a single request are urllib3's :class:`~urllib3.util.Retry`, mounted on the session through
requests' ``HTTPAdapter`` and set to GitHub's rules (:mod:`dlgate.github.retry`): reads retry on connection
errors, timeouts and 500/502/503/504 with exponential back-off; every request, a write included, waits out
rate limits (429, or 403 with ``Retry-After`` or ``X-RateLimit-Remaining: 0``) as GitHub documents, within
``max_wait_s``; a write is retried by the adapter only when it surely never reached GitHub (failed connect,
rate limit). The write-once logic above stays here: no library knows how to look for a write's marker.
The token is sent only as an ``Authorization: Bearer`` header and is redacted (``***``) from every
error message and log line; ``repr`` never shows it.
"""
from __future__ import annotations

import os
import re
import time
from urllib.parse import quote, urlsplit, urlunsplit

import requests
from requests.adapters import HTTPAdapter
from requests.auth import AuthBase

from dlgate.github.retry import IDEMPOTENT, RATE_LIMIT_STATUSES, RETRY_STATUSES, GitHubRetry, attempts, classify_failure
from dlgate.secrets import TOKEN_VAR, redact, remember

API_VERSION = "2022-11-28"
PER_PAGE = 100
_SEGMENT = re.compile(r"[A-Za-z0-9_.-]+")


class GitHubError(Exception):
    """A GitHub request that failed for good; the message names the method and path, never the token.

    ``status`` is the HTTP status (None when no response came back) and ``codes`` holds GitHub's
    validation error codes, e.g. ``("already_exists",)``, so callers can tell races from real errors.
    """

    def __init__(self, message: str, status: int | None = None, codes: tuple = ()):
        super().__init__(message)
        self.status = status
        self.codes = tuple(codes)


class UncertainWrite(GitHubError):
    """A write that may or may not have been applied: the request was sent but no answer says which.

    Raised by the plain writes instead of retrying them; the idempotent helpers resolve it by looking.
    """


class _Bearer(AuthBase):
    """Sends the token as a Bearer header. Set as the session's ``auth``, not as a default header, so that
    requests drops it on a redirect to another host and does not prefer ~/.netrc credentials over it."""

    def __init__(self, token: str):
        self._token = token

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        r.headers["Authorization"] = f"Bearer {self._token}"
        return r


class GitHub:
    """The issues, comments, labels and private vulnerability reports of one repository ``OWNER/NAME`` on github.com or GitHub Enterprise.

    ``token`` defaults to the ``GITHUB_TOKEN`` environment variable; ``api_url`` is the REST base, e.g.
    ``https://ghe.example.com/api/v3`` for GitHub Enterprise Server. Failed requests are retried up to
    ``max_retries`` times, waiting ``backoff_s * 2**attempt`` seconds (at most ``max_wait_s``); a rate limit
    asking for more than ``max_wait_s`` is an error rather than a long stall. All waits go through
    ``sleep`` and are announced through ``log`` (one line each) when given.
    """

    def __init__(self, repo: str, token: str | None = None, api_url: str = "https://api.github.com",
                 timeout: float = 30.0, max_retries: int = 6, backoff_s: float = 1.0,
                 max_wait_s: float = 300.0, sleep=time.sleep, log=None):
        self.repo = _check_repo(repo)
        self.api_url = _check_api_url(api_url)
        self.timeout, self.max_retries, self.backoff_s, self.max_wait_s = timeout, max_retries, backoff_s, max_wait_s
        self._sleep, self._log = sleep, log
        self._token = ((os.environ.get(TOKEN_VAR) if token is None else token) or "").strip() or None
        remember(self._token or "")  # redacted wherever dlgate redacts (dlgate.secrets), not only here
        self._session = requests.Session()
        self._retry = GitHubRetry(total=max_retries, other=0, allowed_methods=IDEMPOTENT,
                                   status_forcelist=RETRY_STATUSES, backoff_factor=backoff_s,
                                   raise_on_status=False, respect_retry_after_header=True)
        self._retry.client = self
        for prefix in ("https://", "http://"):
            self._session.mount(prefix, HTTPAdapter(max_retries=self._retry))
        self._session.headers.update({"Accept": "application/vnd.github+json",
                                      "X-GitHub-Api-Version": API_VERSION, "User-Agent": "dlgate"})
        if self._token:
            self._session.auth = _Bearer(self._token)

    def __repr__(self) -> str:
        token = "'***'" if self._token else "None"
        return f"GitHub(repo={self.repo!r}, api_url={_without_userinfo(self.api_url)!r}, token={token})"

    # Reads

    def find_issue(self, marker: str, label: str | None = None) -> dict | None:
        """The newest issue, open or closed, whose body contains ``marker``; pull requests are skipped.

        Filtering on ``label`` keeps the scan short in busy repositories, at the price of missing an
        issue whose label someone removed.
        """
        params = {"state": "all"}
        if label:
            params["labels"] = label
        for issue in self._paginate(f"/repos/{self.repo}/issues", params):
            if "pull_request" not in issue and marker in (issue.get("body") or ""):
                return issue
        return None

    def list_issues(self, label: str | None = None, state: str = "all"):
        """The repository's issues (pull requests left out), newest first, lazily page by page:
        ``state`` open, closed or all; each carries GitHub's ``state`` and ``state_reason``
        (``completed``, ``not_planned``, ``reopened`` or null)."""
        params = {"state": state}
        if label:
            params["labels"] = label
        for issue in self._paginate(f"/repos/{self.repo}/issues", params):
            if "pull_request" not in issue:
                yield issue

    def find_advisory(self, marker: str) -> dict | None:
        """The newest repository security advisory the token may read (draft, triage, published or
        closed; its own private reports among them) whose description contains ``marker``. Raises
        :class:`GitHubError` (status 403 or 404) when the token may read none."""
        for adv in self._paginate(f"/repos/{self.repo}/security-advisories", {}):
            if marker in (adv.get("description") or ""):
                return adv
        return None

    def list_comments(self, number: int) -> list:
        """All comments on issue ``number``, oldest first."""
        return list(self._paginate(f"/repos/{self.repo}/issues/{int(number)}/comments", {}))

    # Plain writes: retried only when the request surely never reached GitHub.

    def create_issue(self, title: str, body: str, labels: list) -> dict:
        """Open an issue. Retried on a failed connect and on rate limits only: any failure after the request
        was sent raises :class:`UncertainWrite`, since the issue may exist. Prefer :meth:`open_or_find`."""
        return self._post(f"/repos/{self.repo}/issues", {"title": title, "body": body, "labels": list(labels)})

    def comment(self, number: int, body: str) -> dict:
        """Comment on issue ``number``, retried as :meth:`create_issue` is; prefer :meth:`comment_once`."""
        return self._post(f"/repos/{self.repo}/issues/{int(number)}/comments", {"body": body})

    def report_vulnerability(self, summary: str, description: str, cwe_ids=(), severity: str | None = None) -> dict:
        """Report a vulnerability to the repository's maintainers through GitHub's private vulnerability
        reporting (``POST /repos/OWNER/NAME/security-advisories/reports``); the answer is the advisory, with
        its ``ghsa_id`` and ``html_url``. GitHub answers 403, 404 or 422 when the repository does not take
        private reports. Retried as :meth:`create_issue` is; prefer :meth:`report_once`."""
        return self._post(f"/repos/{self.repo}/security-advisories/reports",
                          _report_payload(summary, description, cwe_ids, severity))

    def ensure_label(self, name: str, color: str = "b60205", description: str = "") -> None:
        """Create label ``name`` unless it exists; losing a creation race to another job (422 already_exists)
        is fine."""
        payload = {"name": name, "color": color.lstrip("#"), "description": description}
        try:
            self._write_once(f"/repos/{self.repo}/labels", payload, lambda: self._label(name))
        except GitHubError as exc:
            if "already_exists" not in exc.codes:
                raise

    # Check runs (dlgate.github.checks): a live view of a run, so one try each; a failure is the caller's to judge.

    def create_check_run(self, payload: dict) -> dict:
        """Create a check run (``POST /repos/OWNER/NAME/check-runs``; ``payload``: its name,
        ``head_sha``, status and output); the answer holds its ``id``. Needs ``checks: write``."""
        return self._post(f"/repos/{self.repo}/check-runs", payload)

    def update_check_run(self, check_id: int, payload: dict) -> dict:
        """Update check run ``check_id`` (``PATCH .../check-runs/ID``): its output, or its
        completion (``status: completed`` with a ``conclusion``)."""
        return self._request("PATCH", self._url(f"/repos/{self.repo}/check-runs/{int(check_id)}"), payload=payload)[0]

    # Idempotent writes: safe to call again after any failure half-way.

    def open_or_find(self, marker: str, label: str, title: str, body: str, labels: list) -> tuple[dict, bool]:
        """``(issue, created)``: the issue whose body holds ``marker`` (and which carries ``label``), opened
        now if there is none. ``body`` must contain ``marker`` and ``labels`` must contain ``label``, or a
        re-check could never see the issue this call opened. ``created`` is also True when an attempt whose
        answer was lost turns out to have opened it.
        """
        _require(marker in body, "open_or_find: the body must contain the marker")
        _require(label in labels, "open_or_find: labels must contain the label it searches by")
        payload = {"title": title, "body": body, "labels": list(labels)}
        return self._write_once(f"/repos/{self.repo}/issues", payload, lambda: self.find_issue(marker, label))

    def comment_once(self, number: int, marker: str, body: str) -> tuple[dict, bool]:
        """``(comment, created)``: the comment on issue ``number`` that holds ``marker``, posted now (``body``,
        which must contain ``marker``) if there is none."""
        _require(marker in body, "comment_once: the body must contain the marker")
        path = f"/repos/{self.repo}/issues/{int(number)}/comments"
        return self._write_once(path, {"body": body}, lambda: self._find_comment(number, marker))

    def report_once(self, marker: str, summary: str, description: str, cwe_ids=(),
                    severity: str | None = None) -> tuple[dict, bool]:
        """``(advisory, created)``: the security advisory whose description holds ``marker``, reported
        privately now (:meth:`report_vulnerability`) if there is none. ``description`` must contain
        ``marker``; the token must be able to read the repository's advisories (:meth:`find_advisory`),
        or no re-check could see the report this call filed."""
        _require(marker in description, "report_once: the description must contain the marker")
        return self._write_once(f"/repos/{self.repo}/security-advisories/reports",
                                _report_payload(summary, description, cwe_ids, severity),
                                lambda: self.find_advisory(marker))

    # Internals

    def _find_comment(self, number: int, marker: str) -> dict | None:
        return next((c for c in self.list_comments(number) if marker in (c.get("body") or "")), None)

    def _label(self, name: str) -> dict | None:
        """The label ``name``, or None when the repository has none by that name."""
        try:
            return self._request("GET", self._url(f"/repos/{self.repo}/labels/{quote(name, safe='')}"))[0]
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise

    def _post(self, path: str, payload: dict) -> dict:
        return self._request("POST", self._url(path), payload=payload)[0]

    def _write_once(self, path: str, payload: dict, find) -> tuple[dict, bool]:
        """POST ``payload`` unless ``find()`` shows it is already there. After a failure that leaves the
        write's outcome unknown, wait, then look again before retrying: that is what keeps a dropped
        answer from turning into a duplicate. A write GitHub applies only after that look (its answer
        delayed beyond the timeout and the back-off) cannot be detected; the growing back-off makes it unlikely.
        """
        found = find()
        for attempt in range(self.max_retries + 1):
            if found is not None:
                return found, attempt > 0
            try:
                return self._post(path, payload), True
            except UncertainWrite as exc:
                uncertain = exc
            wait = self._backoff(attempt)
            self._pause(wait, f"{uncertain}; looking for it in {wait:g} s before retrying")
            found = find()
        if found is None:
            raise self._error(f"{uncertain}, but it is not there; gave up after {self.max_retries + 1} attempts",
                              uncertain.status)
        return found, True

    def _paginate(self, path: str, params: dict):
        """The items of a listing, page by page, fetched lazily so a search can stop early."""
        url, params = self._url(path), {**params, "per_page": PER_PAGE}
        while url:
            items, links = self._request("GET", url, params=params)
            yield from items
            url, params = links.get("next", {}).get("url"), None
            if url:
                url = self._on_api_host(url)

    def _on_api_host(self, url: str) -> str:
        """``url`` moved onto ``api_url``'s scheme and host. A ``Link`` header may name the server otherwise
        (GitHub Enterprise's configured hostname, a proxy), and the token must never follow it elsewhere."""
        base, link = urlsplit(self.api_url), urlsplit(url)
        return urlunsplit((base.scheme, base.netloc, link.path, link.query, ""))

    def _request(self, method: str, url: str, params: dict | None = None, payload: dict | None = None) -> tuple:
        """``(JSON answer, parsed Link header)`` of one API call. The session's adapter retries it
        (:mod:`dlgate.github.retry`); what comes back here is the answer or the last failure. A write whose
        outcome is unknown raises :class:`UncertainWrite`."""
        path = urlsplit(url).path
        payload = None if payload is None else self._redact_body(payload)
        try:
            resp = self._session.request(method, url, params=params, json=payload, timeout=self.timeout)
        except requests.RequestException as exc:
            failure = exc  # raised below, outside this handler: no exception chain carries the request out
        else:
            return self._answer(method, path, resp)
        reason, sent, tries = classify_failure(failure, self.timeout, self.max_retries)
        if sent and method not in IDEMPOTENT:
            raise self._error(f"{method} {path}: {reason}; it may have been applied", kind=UncertainWrite)
        raise self._error(f"{method} {path}: {reason}; gave up after {attempts(tries)}")

    def _answer(self, method: str, path: str, resp: requests.Response) -> tuple:
        """``(JSON answer, Link header)`` of a success; the error that a failed answer calls for."""
        status = resp.status_code
        wait = self._retry.server_wait(status, resp.headers) if status >= 500 or status in RATE_LIMIT_STATUSES \
            else None
        limited = status in RATE_LIMIT_STATUSES and wait is not None
        what = f"rate limited (HTTP {status})" if limited else f"HTTP {status}"
        if wait is not None and wait > self.max_wait_s:
            raise self._error(f"{method} {path}: {what}; GitHub asks to wait {wait:.0f} s, more than "
                              f"max_wait_s={self.max_wait_s:g}; try again later", status)
        if status >= 500 and method not in IDEMPOTENT:
            raise self._error(f"{method} {path}: {what}; it may have been applied", status, kind=UncertainWrite)
        if limited or status in RETRY_STATUSES:
            retries = getattr(resp.raw, "retries", None)
            tries = len(retries.history) + 1 if retries is not None else self.max_retries + 1
            raise self._error(f"{method} {path}: {what}; gave up after {attempts(tries)}", status)
        if status >= 400:
            raise self._http_error(method, path, resp)
        try:
            return resp.json(), resp.links
        except ValueError:
            raise self._error(f"{method} {path}: HTTP {status} with an answer that is not JSON; is "
                              f"{_without_userinfo(self.api_url)} a GitHub API?", status) from None

    def _http_error(self, method: str, path: str, resp: requests.Response) -> GitHubError:
        """GitHubError from a 4xx answer, with GitHub's message, its validation codes and a hint."""
        try:
            data = resp.json()
        except ValueError:
            data = None
        data = data if isinstance(data, dict) else {}
        codes = [e["code"] for e in data.get("errors") or [] if isinstance(e, dict) and e.get("code")]
        text = f"{method} {path}: HTTP {resp.status_code}: {data.get('message') or resp.reason}"
        if codes:
            text += f" ({', '.join(codes)})"
        if resp.status_code == 401:
            text += "; check the token (GITHUB_TOKEN)"
        elif resp.status_code == 404:
            text += "; GitHub also says 404 for a private repository the token cannot see"
        return self._error(text, resp.status_code, codes)

    def _error(self, message: str, status: int | None = None, codes=(), kind=GitHubError) -> GitHubError:
        return kind(self._redact(message), status, codes)

    def _redact(self, text: str) -> str:
        """``text`` without the token, in case a server or proxy echoed it back, nor any other secret."""
        return redact(text.replace(self._token, "***") if self._token else text)

    def _redact_body(self, payload):
        """A request body with every string redacted: an issue quotes a compiler's output, which must not
        carry the token or any other secret (dlgate.secrets) to GitHub."""
        if isinstance(payload, str):
            return self._redact(payload)
        if isinstance(payload, dict):
            return {self._redact_body(k): self._redact_body(v) for k, v in payload.items()}
        if isinstance(payload, (list, tuple)):
            return [self._redact_body(x) for x in payload]
        return payload

    def _backoff(self, attempt: int) -> float:
        return min(self.backoff_s * 2 ** attempt, self.max_wait_s)

    def _pause(self, seconds: float, message: str) -> None:
        if self._log:
            self._log(self._redact(f"GitHub: {message}"))
        self._sleep(seconds)

    def _url(self, path: str) -> str:
        return self.api_url + path


def _check_repo(repo: str) -> str:
    parts = repo.split("/") if isinstance(repo, str) else []
    if len(parts) != 2 or not all(_SEGMENT.fullmatch(p) and p not in (".", "..") for p in parts):
        raise GitHubError(f"repository {repo!r} is not OWNER/NAME")
    return repo


def _check_api_url(api_url: str) -> str:
    parts = urlsplit(api_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise GitHubError(f"API URL {_without_userinfo(api_url)!r} is not an http(s) URL")
    return api_url.rstrip("/")


def _without_userinfo(url: str) -> str:
    """``url`` without any ``user:password@`` part, for messages."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def _report_payload(summary: str, description: str, cwe_ids, severity: str | None) -> dict:
    """The body of a private vulnerability report: GitHub takes a summary of at most 1,024 characters."""
    payload = {"summary": summary[:1024], "description": description}
    if cwe_ids:
        payload["cwe_ids"] = list(cwe_ids)
    if severity:
        payload["severity"] = severity
    return payload


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)
