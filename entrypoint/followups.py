"""On trusted events only: issues opened for new failures (``dlgate issues``) and the baseline
updated from the run."""
from __future__ import annotations

import json

from entrypoint.children import call, child_env, dlgate
from entrypoint.inputs import Context, trusted_event
from entrypoint.plan import Plan, here
from entrypoint.results import out_path
from entrypoint.workflow import EXIT_FAIL, EXIT_OK, command, emit, log


def open_issues(p: Plan, ctx: Context, env: dict, token: str, rc: int) -> None:
    """``dlgate issues`` for a finished run on a trusted event, with the token in its
    environment (GITHUB_TOKEN) only, never on its command line. Its failure is a warning:
    the gate's verdict stands."""
    trusted, why = trusted_event(ctx)
    if not trusted:
        log(f"not opening issues: {why}")
        return
    if rc not in (EXIT_OK, EXIT_FAIL):
        log(f"not opening issues: the run did not finish (exit status {rc})")
        return
    if not token:
        emit(command("warning", "open-issues is true but github-token is empty", title="dlgate: no token"))
        return
    # The API URL reaches it as GITHUB_API_URL (GitHub Enterprise included), kept in child_env().
    args = dlgate("issues", f"--results={p.out}", f"--repo={p.issue_repo}")
    log(f"opening issues in {p.issue_repo} ({why})")
    # As this process's user, not the workspace's owner: a process that the compiler under test
    # left behind runs as that owner and could read the environment of a child running as it.
    got = call(args, "dlgate issues", here(p, ctx), dict(child_env(env), GITHUB_TOKEN=token))
    if got != 0:
        emit(command("warning", f"dlgate issues failed (exit status {got}); the gate's verdict is unchanged",
                     title="dlgate: issues not opened"))


def update_baseline(p: Plan, ctx: Context, env: dict, rc: int, ids: tuple | None) -> None:
    """``dlgate baseline update`` after a complete run or merge on a trusted event: a pull
    request must never accept its own failures."""
    trusted, why = trusted_event(ctx)
    if not trusted:
        log(f"not updating the baseline: {why}")
        return
    if p.shard:
        log("not updating the baseline: this is one shard; update it after `merge`")
        return
    if rc not in (EXIT_OK, EXIT_FAIL):
        log(f"not updating the baseline: the run did not finish (exit status {rc})")
        return
    baseline = p.baseline or _manifest_baseline(out_path(p, ctx, "run.json"))
    if not baseline:
        emit(command("warning", "update-baseline is true but neither the baseline input nor the campaign names a "
                                "baseline file", title="dlgate: no baseline"))
        return
    got = call(dlgate("baseline", "update", f"--baseline={baseline}", "--", p.out), "dlgate baseline update",
               here(p, ctx), child_env(env), ids)
    if got != 0:
        emit(command("warning", f"dlgate baseline update failed (exit status {got})",
                     title="dlgate: baseline not updated"))


def _manifest_baseline(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return (json.load(f).get("config") or {}).get("baseline") or ""
    except (OSError, ValueError, AttributeError):
        return ""
