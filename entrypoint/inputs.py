"""The action's inputs (``INPUT_<NAME>``) and the event that started the run: a pull request
(and whether it comes from a fork), the commit that seeds the batch, and whether the event
is trusted to write to the repository."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from entrypoint.workflow import log

#: Events whose runs may write to the repository (issues, the baseline): the code that
#: runs comes from the default branch, not from a pull request.
TRUSTED_EVENTS = ("schedule", "workflow_dispatch")
PR_EVENTS = ("pull_request", "pull_request_target", "pull_request_review", "pull_request_review_comment")


class InputError(Exception):
    """An input the action cannot use: reported as an error annotation, exit status 2."""


def get_input(env: dict, name: str) -> str:
    """An input's value, stripped; "" when unset. GitHub names the variable ``INPUT_`` plus
    the name upper-cased with spaces as underscores and hyphens kept (``INPUT_OPEN-ISSUES``);
    the underscore spelling (``INPUT_OPEN_ISSUES``) is accepted too, for ``docker run -e``
    and shells, which cannot export a name with a hyphen."""
    key = "INPUT_" + name.replace(" ", "_").upper()
    for k in (key, key.replace("-", "_")):
        value = env.get(k)
        if value is not None and value.strip():
            return value.strip()
    return ""


def get_bool(env: dict, name: str) -> bool:
    """A boolean input, with the spellings of YAML 1.2's core schema, as actions/core reads them."""
    value = get_input(env, name)
    if value in ("", "false", "False", "FALSE"):
        return False
    if value in ("true", "True", "TRUE"):
        return True
    raise InputError(f"{name}: expected true or false, got {value!r}")


@dataclass
class Context:
    """What the run needs from GitHub's environment."""

    event_name: str = ""
    event: dict = field(default_factory=dict)
    repository: str = ""
    sha: str = ""
    ref: str = ""
    workspace: str = "."


def load_context(env: dict) -> Context:
    event: dict = {}
    path = env.get("GITHUB_EVENT_PATH")
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                event = json.load(f)
        except (OSError, ValueError) as e:
            log(f"cannot read the event file {path}: {e}; seeding from GITHUB_SHA")
    return Context(event_name=env.get("GITHUB_EVENT_NAME", ""), event=event if isinstance(event, dict) else {},
                   repository=env.get("GITHUB_REPOSITORY", ""), sha=env.get("GITHUB_SHA", ""),
                   ref=env.get("GITHUB_REF", ""), workspace=env.get("GITHUB_WORKSPACE") or os.getcwd())


def pull_request(ctx: Context) -> dict | None:
    pr = ctx.event.get("pull_request")
    return pr if ctx.event_name in PR_EVENTS and isinstance(pr, dict) else None


def _repo_name(side: dict) -> str | None:
    repo = (side or {}).get("repo")
    return repo.get("full_name") if isinstance(repo, dict) else None


def is_fork(pr: dict) -> bool:
    """Whether a pull request comes from another repository. A deleted fork (head.repo null)
    counts as one: nothing shows that its code is the base repository's."""
    head = _repo_name(pr.get("head") or {})
    return head is None or head != _repo_name(pr.get("base") or {})


def seed_commit(ctx: Context) -> str:
    """The commit that seeds the batch: a pull request's head commit (GITHUB_SHA is then the
    temporary merge commit, new for every change of the base branch), else GITHUB_SHA."""
    pr = pull_request(ctx)
    if pr is not None:
        head, base = (pr.get("head") or {}).get("sha", ""), (pr.get("base") or {}).get("sha", "")
        log(f"pull request #{pr.get('number')}: base {base[:12]}, head {head[:12]}"
            f"{' (from a fork)' if is_fork(pr) else ''}")
        if head:
            return head
    return ctx.sha


def trusted_event(ctx: Context) -> tuple:
    """(trusted, why): whether this event may open issues or update the baseline. Only
    events that run the default branch's code are: a push to the default branch, schedule and
    workflow_dispatch. A pull request never is, from a fork (its token is read-only and its
    code is anyone's) or not (its failures are reported on the pull request itself)."""
    name = ctx.event_name
    pr = pull_request(ctx)
    if name in PR_EVENTS:
        if pr is not None and is_fork(pr):
            return False, (f"{name} event from a fork ({_repo_name(pr.get('head') or {}) or 'a deleted repository'} "
                           f"into {_repo_name(pr.get('base') or {})}): a fork's pull request never gets a write token")
        return False, f"{name} event: a pull request's failures are reported on the pull request, not as issues"
    if name in TRUSTED_EVENTS:
        return True, f"{name} event"
    if name == "push":
        default = (ctx.event.get("repository") or {}).get("default_branch")
        if default and ctx.ref == f"refs/heads/{default}":
            return True, f"push to the default branch {default}"
        return False, f"push to {ctx.ref or 'an unknown ref'}, not to the default branch {default or '(unknown)'}"
    return False, (f"{name or 'unknown'} event: only a push to the default branch, schedule and workflow_dispatch "
                   f"are trusted")
