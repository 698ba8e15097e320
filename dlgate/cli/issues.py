"""``dlgate issues``: GitHub issues opened or updated for a run's reduced failures."""
from __future__ import annotations

import json
import os
import sys

from dlgate.cli.args import log
from dlgate.cli.parser import UsageError
from dlgate.gate.journal import MANIFEST
from dlgate.github.client import GitHub, GitHubError
from dlgate.github.releases import publish_hook


def add_parser(sub) -> None:
    iss = sub.add_parser("issues", help="open or update GitHub issues for a run's reduced failures")
    iss.add_argument("--results", required=True, help="output folder of `dlgate run` or `dlgate merge`")
    iss.add_argument("--repo", required=True, help="OWNER/NAME of the repository to file issues in")
    iss.add_argument("--api-url", default=os.environ.get("GITHUB_API_URL", "https://api.github.com"),
                     help="REST API base (GitHub Enterprise: https://HOST/api/v3; default GITHUB_API_URL or api.github.com)")
    iss.add_argument("--label", default="dlgate", help="label carried by dlgate's issues (default dlgate)")
    iss.add_argument("--max-issues", type=int, help="most new issues one run opens, most severe and most frequent first "
                                                   "(default: the campaign's issues.max_per_run, else 5)")
    iss.add_argument("--bisect-releases", nargs="?", const=True, metavar="PACKAGE",
                     help="before opening an issue, find its regression range among the compiler's published releases "
                          "(`dlgate bisect-releases`; PACKAGE defaults to the backend's; default: the campaign's "
                          "issues.bisect_releases, else off)")
    iss.add_argument("--dry-run", metavar="DIR", help="write each issue's Markdown to DIR instead of calling GitHub")
    iss.add_argument("--memory-safety", choices=("private", "public"),
                     help="where a crash that may be a memory-safety bug (SIGSEGV, SIGBUS, a corrupted heap or stack) "
                          "goes: private, GitHub's private vulnerability reporting, never an issue; public, an issue "
                          "(default: the campaign's issues.memory_safety, else private)")


def command(args) -> int:
    from dlgate.github.issues import publish  # local: imports torch; off the CLI start-up

    if not os.path.exists(os.path.join(args.results, "verdict.json")):
        raise UsageError(f"dlgate issues: {args.results}: no verdict.json (not a finished dlgate run)")
    stopped = _interrupted(os.path.join(args.results, "verdict.json"))
    if stopped:
        raise UsageError(f"dlgate issues: {args.results}: the run was interrupted by {stopped.get('signal')} after "
                         f"{stopped.get('cases')} of {stopped.get('planned')} cases; run it again to finish it first")
    if args.max_issues is None:
        args.max_issues = _campaign_issues(args.results).get("max_per_run", 5)
    if not isinstance(args.max_issues, int) or args.max_issues < 0:
        raise UsageError("dlgate issues: --max-issues must be non-negative")
    bisect = publish_hook(args.bisect_releases if args.bisect_releases is not None
                          else _campaign_issues(args.results).get("bisect_releases", False), log=log)
    client = None
    if not args.dry_run:
        if not os.environ.get("GITHUB_TOKEN"):
            raise UsageError("dlgate issues: set GITHUB_TOKEN (a token with issues: write) or use --dry-run")
        try:
            client = GitHub(args.repo, api_url=args.api_url, log=log)
        except GitHubError as e:
            raise UsageError(f"dlgate issues: {e}") from None
    try:
        stats = publish(args.results, client, args.label, args.max_issues, args.dry_run, log=log,
                        memory_safety=args.memory_safety or _campaign_memory_safety(args.results), bisect=bisect)
    except Exception as e:
        if isinstance(e, GitHubError):
            print(f"dlgate issues: GitHub: {e}", file=sys.stderr)
            return 1
        raise
    log(f"dlgate issues: {stats['findings']} distinct failures; {stats['opened']} opened, {stats['commented']} "
         f"commented, {stats['reported']} reported privately, {stats['withheld']} withheld (possible memory-safety "
         f"bugs the repository could not take privately), {stats['unchanged']} already up to date, "
         f"{stats['over_cap']} over the cap")
    return 0


def _interrupted(path: str) -> dict | None:
    """verdict.json's ``interrupted`` (the run did not finish), or None."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None  # read, and refused with its reason, where the issues are built
    stopped = doc.get("interrupted") if isinstance(doc, dict) else None
    return stopped if isinstance(stopped, dict) else None


def _campaign_issues(results: str) -> dict:
    """The campaign's ``issues`` settings as the run recorded them (``run.json``), else none."""
    try:
        with open(os.path.join(results, MANIFEST)) as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return {}
    config = manifest.get("config") if isinstance(manifest, dict) else None
    issues = config.get("issues") if isinstance(config, dict) else None
    return issues if isinstance(issues, dict) else {}


def _campaign_memory_safety(results: str) -> str:
    """The campaign's ``issues.memory_safety`` as the run recorded it (``run.json``), else private."""
    try:
        with open(os.path.join(results, MANIFEST)) as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return "private"
    config = manifest.get("config") if isinstance(manifest, dict) else None
    issues = config.get("issues") if isinstance(config, dict) else None
    return "public" if isinstance(issues, dict) and issues.get("memory_safety") == "public" else "private"
