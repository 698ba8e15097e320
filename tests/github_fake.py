"""A fake GitHub REST API on a real loopback HTTP server, so the client is tested over real sockets.

It serves the endpoints dlgate uses (issues, with their ``state`` and ``state_reason``, and
closing them by ``PATCH``; comments, labels, repository security advisories and private
vulnerability reports; check runs, created and updated) with GitHub's JSON shapes, status codes,
``per_page``/``page`` pagination and ``Link`` headers, under an optional GitHub Enterprise ``/api/v3``
prefix, and injects faults into chosen requests. The fault that matters most is ``drop-after``: the
server applies a write and then closes the connection unanswered, which makes naive clients open duplicates.

    with FakeGitHub(token="t0k3n-secret", owner="acme", repo="tvm") as gh:
        gh.inject("drop-after", method="POST", path_contains="/issues")
        client = GitHub("acme/tvm", token="t0k3n-secret", api_url=gh.url)
"""
from __future__ import annotations

import itertools
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlencode, urlsplit, parse_qsl

DOCS = "https://docs.github.com/rest"
FAULTS = ("500", "429", "403-rate", "slow", "drop-before", "drop-after", "error")
ENTERPRISE_PREFIX = "/api/v3"
LABEL_COLOR = re.compile(r"[0-9a-fA-F]{6}")
CWE_ID = re.compile(r"CWE-\d+")
SEVERITIES = ("critical", "high", "medium", "low")
STATE_REASONS = ("completed", "not_planned", "reopened")
GHSA_CHARS = "23456789cfghjmpqrvwx"  # the alphabet of GHSA ids
CHECK_STATUSES = ("queued", "in_progress", "completed")
CHECK_CONCLUSIONS = ("action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out")
CHECK_TEXT_MAX = 65535  # characters of a check run's output summary or text


class FakeGitHub:
    """One repository's issues, comments and labels in memory, served over HTTP while the context is open.

    ``requests`` logs every request as ``(method, path with query, headers)``, and ``bodies`` every
    request's body as ``(method, path with query, body text)``. State may be read directly
    (``issues``, ``comments``, ``labels``, ``advisories``) and seeded with :meth:`add_issue`,
    :meth:`add_label` and :meth:`add_advisory`.

    Private vulnerability reporting is on; ``reports_refused`` set to 403, 404 or 422 makes the
    repository refuse private reports as GitHub does where the feature is not enabled, and
    ``advisories_readable`` False makes the advisory listing answer 403, as it does for a token
    without the repository-advisories permission.

    Check runs are kept in ``check_runs`` (oldest first), each request that changed one in
    ``check_run_log`` as ``(method, id, payload)``; ``checks_refused`` set to 403 makes
    every check-run request answer as GitHub does for a token without ``checks: write``.
    """

    def __init__(self, token: str | None = "t0k3n-secret", owner: str = "acme", repo: str = "tvm"):
        self.token, self.owner, self.repo = token, owner, repo
        self.issues: list = []      # oldest first
        self.comments: dict = {}    # issue number -> comments, oldest first
        self.labels: dict = {}      # lower-case name -> label
        self.advisories: list = []  # repository security advisories, private reports among them, oldest first
        self.reports_refused: int | None = None
        self.advisories_readable = True
        self.check_runs: list = []
        self.check_run_log: list = []
        self.checks_refused: int | None = None
        self.requests: list = []
        self.bodies: list = []      # (method, path with query, body as text), in arrival order
        self.url = None
        self._faults: list = []
        self._ids = itertools.count(1000)
        self._lock = threading.Lock()
        self._server = None

    def __enter__(self) -> FakeGitHub:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Handler,), {"fake": self}))
        # A short poll interval keeps shutdown, and so each test's teardown, quick.
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    # Test controls

    def inject(self, kind: str, count: int = 1, method: str | None = None, path_contains: str | None = None,
               **params) -> None:
        """Apply fault ``kind`` to the next ``count`` requests matching ``method`` and ``path_contains``.

        ``500``: answer 500, doing nothing. ``429``: answer 429, with ``Retry-After: retry_after`` when given.
        ``403-rate``: answer 403 with ``X-RateLimit-Remaining: 0`` and a reset ``reset_in`` seconds from now.
        ``slow``: apply the request, then wait ``seconds`` before answering (the write happens, the answer
        is late). ``drop-before``: close the connection without doing anything. ``drop-after``: apply the
        request, then close the connection without answering. ``error``: answer ``status`` with ``message``
        (and ``headers``, a dict, when given).
        """
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; known: {', '.join(FAULTS)}")
        with self._lock:
            self._faults.append({"kind": kind, "count": count, "method": method, "path_contains": path_contains,
                                 **params})

    def add_issue(self, title: str, body: str, labels=(), state: str = "open", pull_request: bool = False,
                  state_reason: str | None = None) -> dict:
        """Seed an issue (or, with ``pull_request``, a pull request, which the issue list also returns);
        a closed one is closed as ``completed`` unless ``state_reason`` says otherwise."""
        if state_reason not in (None,) + STATE_REASONS:
            raise ValueError(f"unknown state_reason {state_reason!r}")
        with self._lock:
            issue = self._new_issue(title, body, labels)
            issue["state"] = state
            if state == "closed":
                issue["state_reason"] = state_reason or "completed"
                issue["closed_at"] = _now()
            if pull_request:
                issue["pull_request"] = {"url": issue["url"].replace("/issues/", "/pulls/")}
            return issue

    def close_issue(self, number: int, state_reason: str = "completed") -> dict:
        """Close issue ``number`` as a maintainer does (``completed``: fixed; ``not_planned``)."""
        return self._edit_issue(number, {"state": "closed", "state_reason": state_reason})[1]

    def add_comment(self, number: int, body: str) -> dict:
        with self._lock:
            return self._new_comment(number, body)

    def add_label(self, name: str, color: str = "ededed", description: str = "") -> dict:
        with self._lock:
            return self._new_label(name, color, description)

    def add_advisory(self, summary: str, description: str, state: str = "triage") -> dict:
        with self._lock:
            adv = self._new_advisory({"summary": summary, "description": description})
            adv["state"] = state
            return adv

    def advisories_containing(self, marker: str) -> list:
        return [a for a in self.advisories if marker in (a["description"] or "")]

    def issues_containing(self, marker: str) -> list:
        return [i for i in self.issues if marker in (i["body"] or "")]

    def comments_containing(self, number: int, marker: str) -> list:
        return [c for c in self.comments.get(number, []) if marker in c["body"]]

    # Request handling, called by the handler thread

    def take_fault(self, method: str, path: str) -> dict | None:
        """The first queued fault matching this request, used up by one."""
        with self._lock:
            for fault in self._faults:
                if fault["method"] not in (None, method) or (fault["path_contains"] or "") not in path:
                    continue
                fault["count"] -= 1
                if fault["count"] <= 0:
                    self._faults.remove(fault)
                return fault
        return None

    def dispatch(self, method: str, target: str, body: bytes, headers, host: str) -> tuple[int, object, dict]:
        """``(status, JSON payload, extra headers)`` for one request, applying it to the state."""
        split = urlsplit(target)
        prefix = ENTERPRISE_PREFIX if split.path.startswith(ENTERPRISE_PREFIX + "/") else ""
        path, query = split.path[len(prefix):], dict(parse_qsl(split.query))
        if self.token and headers.get("Authorization") not in (f"Bearer {self.token}", f"token {self.token}"):
            return 401, {"message": "Bad credentials", "documentation_url": DOCS}, {}
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            return 400, {"message": "Problems parsing JSON", "documentation_url": DOCS}, {}
        base = f"http://{host}{prefix}"
        with self._lock:
            return self._route(method, path, query, payload, base)

    def _route(self, method, path, query, payload, base):
        repo = f"/repos/{self.owner}/{self.repo}"
        routes = [
            ("GET", rf"{repo}/issues", lambda m: self._list_issues(query, base + path)),
            ("POST", rf"{repo}/issues", lambda m: self._create_issue(payload)),
            ("PATCH", rf"{repo}/issues/(\d+)", lambda m: self._update_issue(int(m[1]), payload)),
            ("GET", rf"{repo}/issues/(\d+)/comments", lambda m: self._list_comments(int(m[1]), query, base + path)),
            ("POST", rf"{repo}/issues/(\d+)/comments", lambda m: self._create_comment(int(m[1]), payload)),
            ("GET", rf"{repo}/labels/([^/]+)", lambda m: self._get_label(unquote(m[1]))),
            ("POST", rf"{repo}/labels", lambda m: self._create_label(payload)),
            ("GET", rf"{repo}/security-advisories", lambda m: self._list_advisories(query, base + path)),
            ("POST", rf"{repo}/security-advisories/reports", lambda m: self._report(payload)),
            ("POST", rf"{repo}/check-runs", lambda m: self._check_run(None, payload)),
            ("PATCH", rf"{repo}/check-runs/(\d+)", lambda m: self._check_run(int(m[1]), payload)),
            ("GET", rf"{repo}/check-runs/(\d+)", lambda m: self._get_check_run(int(m[1]))),
        ]
        for verb, pattern, handle in routes:
            match = re.fullmatch(pattern, path)
            if match and verb == method:
                return handle(match)
        return _not_found()

    def _list_issues(self, query, url):
        state = query.get("state", "open")
        wanted = {n.lower() for n in query.get("labels", "").split(",") if n}
        items = [i for i in reversed(self.issues)
                 if state in ("all", i["state"]) and wanted <= {lb["name"].lower() for lb in i["labels"]}]
        return _page(items, query, url)

    def _create_issue(self, payload):
        if not isinstance(payload, dict) or not payload.get("title"):
            return _invalid("Issue", "missing_field", "title")
        return 201, self._new_issue(payload["title"], payload.get("body"), payload.get("labels") or []), {}

    def _update_issue(self, number, payload):
        """``PATCH .../issues/N``: ``state`` (open, closed) and ``state_reason``, as GitHub takes them."""
        if not isinstance(payload, dict):
            return _invalid("Issue", "invalid", "state")
        return self._edit_issue(number, payload, locked=True)

    def _edit_issue(self, number, payload, locked=False):
        if not locked:
            with self._lock:
                return self._edit_issue(number, payload, locked=True)
        issue = self._issue(number)
        if not issue:
            return _not_found()
        state = payload.get("state", issue["state"])
        reason = payload.get("state_reason")
        if state not in ("open", "closed") or reason not in (None,) + STATE_REASONS:
            return _invalid("Issue", "invalid", "state" if state not in ("open", "closed") else "state_reason")
        if state == "closed":
            issue.update(state="closed", state_reason=reason or "completed", closed_at=_now())
        elif issue["state"] == "closed":
            issue.update(state="open", state_reason="reopened", closed_at=None)
        issue["updated_at"] = _now()
        return 200, issue, {}

    def _list_comments(self, number, query, url):
        if not self._issue(number):
            return _not_found()
        return _page(self.comments.get(number, []), query, url)

    def _create_comment(self, number, payload):
        if not self._issue(number):
            return _not_found()
        if not isinstance(payload, dict) or not payload.get("body"):
            return _invalid("IssueComment", "missing_field", "body")
        return 201, self._new_comment(number, payload["body"]), {}

    def _get_label(self, name):
        label = self.labels.get(name.lower())
        return (200, label, {}) if label else _not_found()

    def _create_label(self, payload):
        if not isinstance(payload, dict) or not payload.get("name"):
            return _invalid("Label", "missing_field", "name")
        if payload["name"].lower() in self.labels:
            return _invalid("Label", "already_exists", "name")
        color = payload.get("color", "ededed")
        if not LABEL_COLOR.fullmatch(color):
            return _invalid("Label", "invalid", "color")
        return 201, self._new_label(payload["name"], color, payload.get("description") or ""), {}

    def _list_advisories(self, query, url):
        if not self.advisories_readable:
            return 403, {"message": "Resource not accessible by integration", "documentation_url": DOCS}, {}
        state = query.get("state")
        return _page([a for a in reversed(self.advisories) if state in (None, a["state"])], query, url)

    def _report(self, payload):
        """``POST .../security-advisories/reports``: 201 and the advisory, in state ``triage``."""
        if self.reports_refused is not None:
            message = {403: "Private vulnerability reporting is not enabled for this repository.",
                       404: "Not Found", 422: "Private vulnerability reporting is disabled for this repository."}
            return self.reports_refused, {"message": message.get(self.reports_refused, "Error"),
                                          "documentation_url": DOCS}, {}
        if not isinstance(payload, dict):
            return _invalid("RepositoryAdvisory", "missing_field", "summary")
        for name in ("summary", "description"):
            if not isinstance(payload.get(name), str) or not payload[name]:
                return _invalid("RepositoryAdvisory", "missing_field", name)
        if len(payload["summary"]) > 1024:
            return _invalid("RepositoryAdvisory", "invalid", "summary")
        if payload.get("severity") is not None and payload.get("cvss_vector_string") is not None:
            return _invalid("RepositoryAdvisory", "invalid", "severity")
        if payload.get("severity") not in (None,) + SEVERITIES:
            return _invalid("RepositoryAdvisory", "invalid", "severity")
        cwes = payload.get("cwe_ids") or []
        if not isinstance(cwes, list) or not all(isinstance(c, str) and CWE_ID.fullmatch(c) for c in cwes):
            return _invalid("RepositoryAdvisory", "invalid", "cwe_ids")
        return 201, self._new_advisory(payload), {}

    def _get_check_run(self, cid):
        run = next((r for r in self.check_runs if r["id"] == cid), None)
        return (200, run, {}) if run else _not_found()

    def _check_run(self, cid, payload):
        """``POST .../check-runs`` (``cid`` None) and ``PATCH .../check-runs/ID``, checked as
        GitHub checks them: a name and head_sha to create; a known status and conclusion, a
        conclusion to complete, an output with a title and a summary of at most 65,535
        characters."""
        if self.checks_refused is not None:
            return self.checks_refused, {"message": "Resource not accessible by integration",
                                         "documentation_url": DOCS}, {}
        run = None
        if cid is not None:
            run = next((r for r in self.check_runs if r["id"] == cid), None)
            if run is None:
                return _not_found()
        if not isinstance(payload, dict):
            return _invalid("CheckRun", "invalid", "body")
        if run is None:
            for name in ("name", "head_sha"):
                if not isinstance(payload.get(name), str) or not payload[name]:
                    return _invalid("CheckRun", "missing_field", name)
        status, conclusion = payload.get("status"), payload.get("conclusion")
        if status is not None and status not in CHECK_STATUSES:
            return _invalid("CheckRun", "invalid", "status")
        if conclusion is not None and conclusion not in CHECK_CONCLUSIONS:
            return _invalid("CheckRun", "invalid", "conclusion")
        if status == "completed" and conclusion is None:
            return _invalid("CheckRun", "missing_field", "conclusion")
        output = payload.get("output")
        if output is not None:
            if not isinstance(output, dict) or not all(isinstance(output.get(k), str) and output[k]
                                                       for k in ("title", "summary")):
                return _invalid("CheckRun", "missing_field", "output")
            if len(output["summary"]) > CHECK_TEXT_MAX or len(output.get("text") or "") > CHECK_TEXT_MAX:
                return _invalid("CheckRun", "invalid", "output")
        created = run is None
        if created:
            cid = next(self._ids)
            run = {"id": cid, "name": payload["name"], "head_sha": payload["head_sha"], "status": "queued",
                   "conclusion": None, "started_at": _now(), "completed_at": None, "output": {},
                   "details_url": None, "html_url": f"https://github.com/{self.owner}/{self.repo}/runs/{cid}"}
            self.check_runs.append(run)
        for key in ("name", "details_url", "started_at", "completed_at", "status"):
            if payload.get(key) is not None:
                run[key] = payload[key]
        if conclusion is not None:
            run.update(conclusion=conclusion, status="completed")
        if output is not None:
            run["output"] = dict(output)
        self.check_run_log.append(("POST" if created else "PATCH", run["id"], payload))
        return (201 if created else 200), run, {}

    # State, under the lock

    def _issue(self, number):
        return next((i for i in self.issues if i["number"] == number), None)

    def _new_issue(self, title, body, labels):
        number = len(self.issues) + 1
        api = f"https://api.github.com/repos/{self.owner}/{self.repo}/issues/{number}"
        labels = [self.labels.get(n.lower()) or self._new_label(n, "ededed", "") for n in labels]
        issue = {"id": next(self._ids), "number": number, "title": title, "body": body, "labels": labels,
                 "state": "open", "url": api,
                 "html_url": f"https://github.com/{self.owner}/{self.repo}/issues/{number}",
                 "user": {"login": "dlgate-bot", "type": "Bot"}, "created_at": _now(), "updated_at": _now(),
                 "closed_at": None, "state_reason": None, "comments": 0}
        self.issues.append(issue)
        return issue

    def _new_comment(self, number, body):
        issue = self._issue(number)
        cid = next(self._ids)
        comment = {"id": cid, "body": body, "html_url": f"{issue['html_url']}#issuecomment-{cid}",
                   "user": {"login": "dlgate-bot", "type": "Bot"}, "created_at": _now(), "updated_at": _now()}
        self.comments.setdefault(number, []).append(comment)
        issue["comments"] += 1
        return comment

    def _new_advisory(self, payload):
        n = next(self._ids)
        digits = "".join(GHSA_CHARS[n // len(GHSA_CHARS) ** k % len(GHSA_CHARS)] for k in range(12))
        ghsa = f"GHSA-{digits[:4]}-{digits[4:8]}-{digits[8:]}"
        adv = {"ghsa_id": ghsa, "cve_id": None,
               "url": f"https://api.github.com/repos/{self.owner}/{self.repo}/security-advisories/{ghsa}",
               "html_url": f"https://github.com/{self.owner}/{self.repo}/security/advisories/{ghsa}",
               "summary": payload["summary"], "description": payload["description"],
               "severity": payload.get("severity"), "state": "triage",
               "cwe_ids": list(payload.get("cwe_ids") or []), "vulnerabilities": payload.get("vulnerabilities"),
               "author": {"login": "dlgate-bot", "type": "Bot"}, "submission": {"accepted": False},
               "created_at": _now(), "updated_at": _now(), "published_at": None, "closed_at": None}
        self.advisories.append(adv)
        return adv

    def _new_label(self, name, color, description):
        label = {"id": next(self._ids), "name": name, "color": color, "description": description, "default": False}
        self.labels[name.lower()] = label
        return label


class _Handler(BaseHTTPRequestHandler):
    """Reads a request, applies any queued fault, and answers from ``fake`` (set on a subclass)."""

    fake: FakeGitHub
    protocol_version = "HTTP/1.0"   # one request per connection: a dropped connection is unambiguous

    def do_GET(self):
        self._handle()

    def do_POST(self):
        self._handle()

    def do_PATCH(self):
        self._handle()

    def log_message(self, format, *args):
        """Quiet: pytest shows failures, the server's access log would only be noise."""

    def _handle(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        fake, method = self.fake, self.command
        with fake._lock:
            fake.requests.append((method, self.path, dict(self.headers)))
            fake.bodies.append((method, self.path, body.decode("utf-8", "replace")))
        fault = fake.take_fault(method, self.path) or {"kind": None}
        kind = fault["kind"]
        if kind in ("drop-before", "drop-after"):
            self.close_connection = True
            if kind == "drop-before":
                return
        answer = _fault_answer(fault) or fake.dispatch(method, self.path, body, self.headers, self.headers["Host"])
        if kind == "drop-after":
            return
        if kind == "slow":
            time.sleep(fault.get("seconds", 1.0))
        self._send(*answer)

    def _send(self, status: int, payload, headers: dict) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass   # the client gave up waiting (a "slow" fault): nothing to answer to


def _fault_answer(fault: dict) -> tuple[int, object, dict] | None:
    """The answer a fault gives in place of the real one, or None when the request goes through."""
    kind = fault["kind"]
    if kind == "500":
        return 500, {"message": "Server Error"}, {}
    if kind == "429":
        headers = {"Retry-After": str(fault["retry_after"])} if "retry_after" in fault else {}
        return 429, {"message": "You have exceeded a secondary rate limit.", "documentation_url": DOCS}, headers
    if kind == "403-rate":
        reset = int(time.time()) + int(fault.get("reset_in", 60))
        headers = {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset),
                   "X-RateLimit-Resource": "core"}
        return 403, {"message": "API rate limit exceeded for user ID 1.", "documentation_url": DOCS}, headers
    if kind == "error":
        return (fault.get("status", 500), {"message": fault.get("message", "Error"), "documentation_url": DOCS},
                dict(fault.get("headers", {})))
    return None


def _page(items: list, query: dict, url: str) -> tuple[int, list, dict]:
    """One page of ``items`` as GitHub pages them (``per_page`` at most 100), with ``next``/``last`` links."""
    per_page = max(1, min(int(query.get("per_page", 30)), 100))
    page = max(1, int(query.get("page", 1)))
    last = max(1, -(-len(items) // per_page))
    links = []
    if page < last:
        links.append(f'<{url}?{urlencode({**query, "page": page + 1})}>; rel="next"')
        links.append(f'<{url}?{urlencode({**query, "page": last})}>; rel="last"')
    return 200, items[(page - 1) * per_page:page * per_page], {"Link": ", ".join(links)} if links else {}


def _invalid(resource: str, code: str, field: str) -> tuple[int, dict, dict]:
    error = {"resource": resource, "code": code, "field": field}
    return 422, {"message": "Validation Failed", "errors": [error], "documentation_url": DOCS}, {}


def _not_found() -> tuple[int, dict, dict]:
    return 404, {"message": "Not Found", "documentation_url": DOCS}, {}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
