"""``dlgate init``: set dlgate up in a compiler's repository.

Writes the pull-request, base-wheel and weekly workflows, the two campaigns and an empty
baseline, for one compiler (``--compiler``, or recognised from the repository's files or
remote), inferring the default branch from git. Nothing is overwritten: when any of the files
exists, it names them and exits with status 2, having written nothing.
"""
from __future__ import annotations

import os
import re
import subprocess

from dlgate import __version__
from dlgate.gate.baseline import Baseline
from dlgate.init import campaigns
from dlgate.init import workflows as W
from dlgate.init.compilers import COMPILERS, infer

#: Where the workflows live; every path is relative to the repository root.
PR, BASE_WHEEL, WEEKLY_WF = (".github/workflows/dlgate-pr.yml", ".github/workflows/dlgate-base-wheel.yml",
                             ".github/workflows/dlgate-weekly.yml")
ACTIONLINT = ".github/actionlint.yaml"
_ACTION_RE = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[A-Za-z0-9_./-]+)?@[A-Za-z0-9_./-]+")
_LABEL_RE = re.compile(r"[A-Za-z0-9_.-]+")
#: The refs whose action.yml runs a release's prebuilt image (docs/releasing.md): the moving
#: major tag (vN: this dlgate's major version), or the action commit a release tags
#: vX.Y.Z-action. Any other ref runs the Dockerfile, which every job then builds (1+ GB).
PREBUILT = (f"OWNER/dlgate@v{__version__.split('.')[0]} (the moving major tag) or OWNER/dlgate@<commit of tag "
            "vX.Y.Z-action>")
PREBUILT_REFS = (f"{PREBUILT}, which pull a release's prebuilt image; a release tag vX.Y.Z, a branch or another "
                 "commit builds the 1+ GB image in every job")
_MAJOR_RE, _ACTION_TAG_RE = re.compile(r"v[0-9]+"), re.compile(r"v[0-9]+\.[0-9]+\.[0-9]+-action")
_SHA_RE = re.compile(r"[0-9a-f]{40}")


class InitError(ValueError):
    """Bad input or a refusal: one line, exit status 2."""


def add_arguments(p) -> None:
    p.add_argument("--compiler", metavar="NAME",
                   help=f"the compiler the repository builds: {', '.join(COMPILERS)} (default: recognised from "
                        "the repository's files or its origin remote)")
    p.add_argument("--dir", default=".", help="the repository's root (default: the current folder)")
    p.add_argument("--runner", nargs="+", default=[], metavar="LABEL",
                   help="labels of a self-hosted GPU runner (e.g. --runner self-hosted,gpu): adds a job on it "
                        "for the CUDA paths to each workflow; default: GitHub-hosted runners only")
    p.add_argument("--action-ref", metavar="OWNER/NAME@REF",
                   help=f"the dlgate action the workflows use: {PREBUILT_REFS} (default: where this dlgate was "
                        "installed from, when pip recorded a GitHub repository)")
    p.add_argument("--branch", help="the default branch (default: the origin remote's HEAD, else the current one)")
    p.add_argument("--check-run", action="store_true",
                   help="grant the jobs that run the dlgate action `checks: write`, so that each shows its progress "
                        "live as a check run on the commit (the action's check-run input); default: the read-only "
                        "token, and no live check run")


def _git(root: str, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def default_branch(root: str) -> str:
    head = _git(root, "symbolic-ref", "--short", "refs/remotes/origin/HEAD")
    if head and "/" in head:
        return head.split("/", 1)[1]
    return _git(root, "symbolic-ref", "--short", "HEAD") or "main"


def _direct_url() -> dict:
    """pip's record of where this dlgate was installed from (PEP 610 ``direct_url.json``), or {}."""
    import json
    from importlib import metadata

    try:
        text = metadata.distribution("dlgate").read_text("direct_url.json")
        return json.loads(text) if text else {}
    except (metadata.PackageNotFoundError, ValueError, OSError):
        return {}


def installed_action_ref() -> str | None:
    """OWNER/NAME@COMMIT of the GitHub repository this dlgate was pip-installed from (PEP 610)."""
    doc = _direct_url()
    m = re.fullmatch(r"(?:git\+)?https://github\.com/([^/]+)/([^/@]+?)(?:\.git)?/?", doc.get("url", ""))
    commit = (doc.get("vcs_info") or {}).get("commit_id")
    return f"{m.group(1)}/{m.group(2)}@{commit}" if m and commit else None


def installed_revision() -> str | None:
    """The revision pip was asked for when it installed this dlgate from git (``@v1``), if any."""
    return (_direct_url().get("vcs_info") or {}).get("requested_revision")


def action_note(action: str, revision: str | None = None) -> str:
    """What the workflows' action ref runs: a release's prebuilt image, or the Dockerfile built in
    every job. ``revision``: the name the ref was reached by (a commit pip installed from ``@v1``)."""
    ref = action.rsplit("@", 1)[1]
    for name in (ref, revision):
        if name and (_MAJOR_RE.fullmatch(name) or _ACTION_TAG_RE.fullmatch(name)):
            via = f"from {revision}: " if revision and revision != ref else ""
            return f"action: {action} ({via}a release's prebuilt image)"
    if _SHA_RE.fullmatch(ref) and not revision:
        return (f"action: {action} (a release's prebuilt image if this is the commit of a tag vX.Y.Z-action or of "
                "the major tag; any other commit builds the 1+ GB image in every job)")
    named = f"{ref} (from {revision})" if revision and revision != ref else ref
    better = PREBUILT.replace("OWNER/dlgate", action.rsplit("@", 1)[0])
    return (f"action: {action} (note: {named} builds the action's 1+ GB image in every job; {better} pull a "
            "release's prebuilt image)")


def _compiler(args, root: str, remote: str | None):
    choices = ", ".join(COMPILERS)
    if args.compiler:
        if args.compiler not in COMPILERS:
            raise InitError(f"dlgate init: unknown compiler {args.compiler!r}; choose one of: {choices}")
        return COMPILERS[args.compiler], "--compiler"
    found, how = infer(root, remote)
    if len(found) == 1:
        return COMPILERS[found[0]], how
    if found:
        raise InitError(f"dlgate init: the repository looks like {' and '.join(found)} ({how}): pass --compiler "
                        f"NAME, one of: {choices}")
    raise InitError(f"dlgate init: cannot tell which compiler {root} builds: pass --compiler NAME, one of: {choices}")


def plan(args) -> tuple:
    """(root, {relative path: text}, notes) of what init would write; InitError on bad input."""
    root = os.path.abspath(args.dir)
    if not os.path.isdir(root):
        raise InitError(f"dlgate init: {args.dir}: not a folder")
    remote = _git(root, "remote", "get-url", "origin")
    c, how = _compiler(args, root, remote)
    runner = tuple(x for r in args.runner for x in r.split(",") if x)
    bad = [x for x in runner if not _LABEL_RE.fullmatch(x)]
    if bad:
        raise InitError(f"dlgate init: --runner: {bad[0]!r} is not a runner label (letters, digits, . _ -)")
    if c.gpu_only and not runner:
        raise InitError(f"dlgate init: {c.name} runs on a GPU only: pass --runner with your self-hosted GPU "
                        "runner's labels, e.g. --runner self-hosted,gpu")
    action = args.action_ref or installed_action_ref()
    if not action:
        raise InitError("dlgate init: cannot tell where the dlgate action lives (this dlgate was not installed from "
                        f"a GitHub repository): pass --action-ref OWNER/NAME@REF, e.g. {PREBUILT_REFS}")
    if not _ACTION_RE.fullmatch(action):
        raise InitError(f"dlgate init: --action-ref: expected OWNER/NAME@REF, got {action!r}")
    branch = args.branch or default_branch(root)
    if not re.fullmatch(r"[A-Za-z0-9_./-]+", branch):
        raise InitError(f"dlgate init: the default branch {branch!r} cannot be named in a workflow: pass --branch")
    s = W.Setup(c, action, branch, runner, check_run=args.check_run)
    files = {W.PR_PATH: W.pull_request(s)}
    if not c.gpu_only:
        files[W.BASE_WHEEL_PATH] = W.base_wheel(s)
    files[W.WEEKLY_PATH] = W.weekly(s)
    files[campaigns.CAMPAIGN] = campaigns.campaign(s, is_weekly=False)
    files[campaigns.WEEKLY] = campaigns.campaign(s, is_weekly=True)
    lint = campaigns.actionlint_config(s)
    if lint:
        files[ACTIONLINT] = lint
    files[campaigns.BASELINE] = None  # written by the baseline module
    revision = None if args.action_ref else installed_revision()
    notes = [f"compiler: {c.name} ({c.title}), from {how}", f"default branch: {branch}", action_note(action, revision)]
    if remote:
        notes.append(f"repository: {remote}")
    return root, files, notes


def write(root: str, files: dict) -> list:
    """Write every file, or none when one exists (InitError naming them)."""
    there = [p for p in files if os.path.lexists(os.path.join(root, p))]
    if there:
        raise InitError(f"dlgate init: not overwriting what exists: {', '.join(there)} (move it away to write it "
                        "again)")
    written = []
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if text is None:
            Baseline(path=path).save()
        else:
            with open(path, "x", encoding="utf-8") as f:
                f.write(text)
        written.append(rel)
    return written


def run(args, out=print) -> int:
    root, files, notes = plan(args)
    written = write(root, files)
    for n in notes:
        out(n)
    for rel in written:
        out(f"wrote {rel}")
    out("next: review the build step in .github/workflows/dlgate-pr.yml (and dlgate-base-wheel.yml, "
        "dlgate-weekly.yml), check the campaign with `dlgate config .dlgate/campaign.yaml`, then commit these "
        "files; the first push to the default branch caches the base wheel. Guide: docs/adding-to-ci.md")
    return 0
