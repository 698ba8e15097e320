"""A check run on the commit under test that shows ``dlgate run``'s progress while it runs.

GitHub shows a step's job summary only once the step ends, so the live section that
:mod:`dlgate.gate.progress` keeps there cannot be watched. A check run can: its output (a
title and a Markdown summary) is shown on the pull request's Checks tab as soon as it is
updated. :class:`LiveCheck` creates one check run (``POST /repos/OWNER/NAME/check-runs``,
status ``in_progress``), follows a source of live text from a thread of its own and sends
it (``PATCH .../check-runs/ID``) when it changed, at most once per interval (30 s by
default: a run of an hour costs about 120 requests of the token's 1,000 an hour), and
completes it with the exit status's conclusion and the final summary's text.

It is a courtesy, never part of the gate: every request has a short timeout and no retry,
and the first failure (no ``checks: write`` permission, 403; no network; a rate limit)
prints one line and turns the feature off; the run and its exit status are unchanged.
Requests go through :class:`dlgate.github.client.GitHub`, which sends the token only as a
header and redacts it (and every other secret, :mod:`dlgate.secrets`) from what it sends
and from its error messages.

Two places drive it: ``dlgate run`` itself when its environment holds a token
(``--check-run``), and the action's entrypoint, which keeps the token out of ``dlgate
run`` and so out of the reach of the compiler under test, and follows the live section
``dlgate run`` writes to the job summary. Both follow that section
(:func:`dlgate.gate.progress.live_section`), so both show the same text.
"""
from __future__ import annotations

import json
import os
import re
import threading
import time

from dlgate.github.client import GitHub, GitHubError
from dlgate.secrets import TOKEN_VAR

#: ``--check-run`` and the action's ``check-run`` input: auto (when a token is there), on
#: (the same, and say why not when it cannot), off.
MODES = ("auto", "on", "off")
#: Seconds between two updates of the check run, at most one per interval.
DEFAULT_EVERY_S = 30.0
#: GitHub's limit on a check run's output summary (and text), in characters.
MAX_TEXT = 65_535
#: Each request's timeout: a slow API must not hold the run's end up for long.
TIMEOUT_S = 10.0
#: The conclusion of each of dlgate's exit statuses; any other status is a failure (a usage
#: error, dlgate's own error, a backend that cannot run: the gate decided nothing).
CONCLUSIONS = {0: "success", 1: "failure", 130: "cancelled", 143: "cancelled"}
#: What a refusal (HTTP 403) means, said after it.
NO_PERMISSION = "the job's token needs `permissions: checks: write` (dlgate init --check-run grants it)"
#: The title of a check run whose run has not written its progress yet.
STARTING = "starting"
_CUT_NOTE = "\n\n*(cut to GitHub's limit of {limit:,} characters: the job summary and summary.md have the rest)*"


def conclusion(exit_status: int) -> str:
    """success (0), failure (1, and the statuses where the gate decided nothing) or cancelled
    (130, 143: interrupted, so neither a pass nor a decided failure)."""
    return CONCLUSIONS.get(exit_status, "failure")


def fit(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` within ``limit`` characters: whole when it fits, else cut at the last line
    break that leaves room for a note saying where the rest is."""
    if len(text) <= limit:
        return text
    note = _CUT_NOTE.format(limit=limit)
    head = text[:limit - len(note)]
    cut = head.rfind("\n")
    return (head[:cut] if cut > 0 else head) + note


def plain(line: str) -> str:
    """A Markdown line as a title (plain text): no heading marks, bold, code ticks or
    backslash escapes."""
    line = re.sub(r"^#+\s*", "", line).replace("**", "").replace("`", "")
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", line).replace("\u2060", "").strip()


def live_output(section: str | None, every_s: float) -> tuple:
    """(title, summary) of the check run while the run goes, from the job summary's live
    section: the title is its line of counts ("3 of 20 cases run, ..."), the summary the
    section without its note about the job summary (which a check run does not replace)."""
    if not section:
        return STARTING, "dlgate is starting: generating the batch and starting the workers."
    paras = [p for p in section.strip().split("\n\n") if not p.startswith("<sub>")]
    body = [p for p in paras if not p.startswith("#")]
    title = plain(body[0].splitlines()[0]) if body else STARTING
    note = f"<sub>Updated at most every {every_s:g} s while dlgate runs; completed with its summary.</sub>"
    return title[:1000], fit("\n\n".join(paras + [note]))


def final_output(summary: str | None, exit_status: int, last: str | None) -> tuple:
    """(title, summary) of the completed check run: the run's summary.md (its first line as
    the title), or, when the run wrote none, what became of it above its last progress."""
    if summary and summary.strip():
        first = next((ln for ln in summary.splitlines() if ln.strip()), "")
        return plain(first)[:1000] or f"exit status {exit_status}", fit(summary)
    text = f"dlgate ended with exit status {exit_status} before writing its summary; see the job's log."
    if last:
        text += "\n\nIts last progress:\n\n" + live_output(last, DEFAULT_EVERY_S)[1]
    return f"exit status {exit_status}, no summary", fit(text)


def run_summary(out: str, since: float) -> str | None:
    """``OUT/summary.md`` when the run that started at ``since`` wrote it, else None (a run
    that died before its reports, or an older run's file): what completes the check run."""
    path = os.path.join(out, "summary.md")
    try:
        if os.path.getmtime(path) < since:
            return None
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def head_sha(env) -> str:
    """The commit a check run belongs on: a pull request's head commit (read from the event,
    ``GITHUB_EVENT_PATH``: ``GITHUB_SHA`` is then the temporary merge commit, which the pull
    request does not show), else ``GITHUB_SHA``."""
    path = env.get("GITHUB_EVENT_PATH")
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                event = json.load(f)
            sha = ((event.get("pull_request") or {}).get("head") or {}).get("sha")
            if isinstance(sha, str) and sha:
                return sha
        except (OSError, ValueError, AttributeError):
            pass
    return env.get("GITHUB_SHA", "")


def details_url(env) -> str | None:
    """The workflow run's page, which the check run links to."""
    server, repo, run = env.get("GITHUB_SERVER_URL"), env.get("GITHUB_REPOSITORY"), env.get("GITHUB_RUN_ID")
    return f"{server}/{repo}/actions/runs/{run}" if server and repo and run else None


class LiveCheck:
    """One check run named ``name`` on ``sha``, kept up to date from ``source()`` (the live
    text, or None before there is any) by a thread, at most every ``every_s`` seconds.
    ``log`` gets the one line said when the feature turns itself off."""

    def __init__(self, client: GitHub, name: str, sha: str, source, every_s: float = DEFAULT_EVERY_S, log=print,
                 url: str | None = None):
        self.client, self.name, self.sha, self.source, self.every_s = client, name, sha, source, every_s
        self.log, self.url = log, url
        self.id: int | None = None
        self.on = True
        self.updates = 0
        self._sent: tuple | None = None
        self._last: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _off(self, e: Exception) -> None:
        if self.on:
            self.on = False
            refused = getattr(e, "status", None) == 403 and "rate limit" not in str(e)
            hint = f"; {NO_PERMISSION}" if refused else ""
            self.log(f"dlgate: the live check run is off: {e}{hint}")

    def _read(self) -> str | None:
        try:
            text = self.source()
        except Exception:  # a source that cannot be read this time: the last text stands
            return self._last
        if text is not None:
            self._last = text
        return self._last

    def start(self) -> None:
        """Create the check run (in progress) and follow the source, both from a thread of
        its own: a slow or unreachable API never holds the run up."""
        self._thread = threading.Thread(target=self._follow, name="dlgate-check-run", daemon=True)
        self._thread.start()

    def create(self) -> bool:
        """Create the check run, in progress, with the source's text; False when it could
        not be (said in one line, and the feature is off)."""
        title, summary = live_output(self._read(), self.every_s)
        payload = {"name": self.name, "head_sha": self.sha, "status": "in_progress",
                   "started_at": _now(), "output": {"title": title, "summary": summary}}
        if self.url:
            payload["details_url"] = self.url
        try:
            with self._lock:
                self.id = int(self.client.create_check_run(payload)["id"])
        except (GitHubError, KeyError, TypeError, ValueError) as e:
            self._off(e)
            return False
        self._sent = (title, summary)
        return True

    def _follow(self) -> None:
        if not self.create():
            return
        while not self._stop.wait(self.every_s):
            self.update()

    def update(self) -> None:
        """Send the source's text when it changed since the last one sent."""
        if not self.on or self.id is None:
            return
        out = live_output(self._read(), self.every_s)
        if out == self._sent:
            return
        with self._lock:
            if self._stop.is_set() and threading.current_thread() is self._thread:
                return  # completing: the final text follows
            try:
                self.client.update_check_run(self.id, {"output": {"title": out[0], "summary": out[1]}})
            except GitHubError as e:
                self._off(e)
                return
        self._sent = out
        self.updates += 1

    def complete(self, exit_status: int, summary: str | None) -> None:
        """Stop following and complete the check run: the exit status's conclusion, the final
        summary's text (or, with none, the last progress). Tried even after an update failed
        (a check run left in progress would show as running on the pull request forever);
        nothing to do when none was created (no permission, or the API was unreachable)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(TIMEOUT_S + 1)
        if self.id is None:
            return
        title, text = final_output(summary, exit_status, self._read())
        payload = {"status": "completed", "conclusion": conclusion(exit_status), "completed_at": _now(),
                   "output": {"title": title, "summary": text}}
        with self._lock:
            try:
                self.client.update_check_run(self.id, payload)
            except GitHubError as e:
                self._off(e)


def start(mode: str, name: str, source, every_s: float = DEFAULT_EVERY_S, env=None, token: str | None = None,
          log=print) -> LiveCheck | None:
    """A started :class:`LiveCheck` for this GitHub Actions job (its check run is created
    by its thread), or None: ``mode`` off; not in GitHub Actions, no token (``token``, else
    ``GITHUB_TOKEN``), no repository or commit (silently with auto, in one line with on)."""
    env = os.environ if env is None else env
    if mode == "off":
        return None
    token = (env.get(TOKEN_VAR) if token is None else token) or ""
    repo, sha, api = env.get("GITHUB_REPOSITORY", ""), head_sha(env), env.get("GITHUB_API_URL", "")
    why = ("not running in GitHub Actions (GITHUB_ACTIONS, GITHUB_API_URL)" if env.get("GITHUB_ACTIONS") != "true"
           or not api else f"no token ({TOKEN_VAR})" if not token.strip() else
           "no repository (GITHUB_REPOSITORY)" if not repo else "no commit (GITHUB_SHA)" if not sha else None)
    if why:
        if mode == "on":
            log(f"dlgate: no live check run: {why}")
        return None
    try:
        client = GitHub(repo, token, api_url=api,
                        timeout=TIMEOUT_S, max_retries=0, max_wait_s=0.0)
    except GitHubError as e:
        log(f"dlgate: no live check run: {e}")
        return None
    live = LiveCheck(client, name, sha, source, every_s, log, details_url(env))
    live.start()
    return live


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
