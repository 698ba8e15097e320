"""Issue publishing at the end of a complete run, where the campaign's ``issues`` asks for it."""
from __future__ import annotations

import os

from dlgate.github.client import GitHub, GitHubError
from dlgate.github.issues import publish
from dlgate.github.releases import publish_hook


def publish_issues(out: str, conf: dict, log=print) -> None:
    """The config's ``issues``: open or update issues; a GitHub failure is reported, and
    does not change the gate's verdict (the run's findings are in the reports either way)."""
    if not os.environ.get("GITHUB_TOKEN"):
        log("dlgate: issues: not published: GITHUB_TOKEN is not set")
        return
    try:
        stats = publish(out, GitHub(conf["repo"], api_url=conf["api_url"], log=log), conf["label"],
                        conf["max_per_run"], log=log, memory_safety=conf.get("memory_safety", "private"),
                        bisect=publish_hook(conf.get("bisect_releases"), log=log))
    except GitHubError as e:
        log(f"dlgate: issues: not published: GitHub: {e}")
        return
    log(f"dlgate: issues: {stats['opened']} opened, {stats['commented']} commented, {stats['reported']} reported "
        f"privately, {stats['withheld']} withheld, {stats['unchanged']} up to date, {stats['over_cap']} over the cap")
