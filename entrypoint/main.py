#!/usr/bin/env python3
"""The dlgate GitHub Action's entrypoint: the runner's environment in, ``dlgate run`` out.

GitHub starts the action's container with the inputs as ``INPUT_<NAME>`` variables, the
event as a JSON file (``GITHUB_EVENT_PATH``) and files to write outputs and the job
summary to. This script, the image's ENTRYPOINT (exec form: a shell in between would drop
the hyphenated ``INPUT_OPEN-ISSUES``), does in order:

1. masks the token, before anything else is printed;
2. reads the event: a pull request is seeded by its head commit, anything else by
   ``GITHUB_SHA``;
3. installs the compiler under test (``compiler`` input) with pip, first uninstalling a
   distribution of another name that provides the same import package (``dlgate.install``),
   and checks, once it knows the user the compiler runs as, that ``import`` gives the
   build just installed (exit status 4 when not);
4. with ``base-compiler``, creates a second environment holding the base build and
   checks which build each environment imports (head versus base); on a pull request
   without one, says that novelty is decided against the baseline instead;
5. runs ``dlgate run`` (or ``dlgate merge``) inside a log group;
6. turns ``verdict.json`` into annotations and step outputs;
7. on trusted events only, opens issues (``dlgate issues``) and updates the baseline.

Its exit status is dlgate's: 0 no new failures, 1 new failures, 2 usage or configuration
error, 3 dlgate's own internal error, 4 a backend the gate needs could not run, 130 or 143
interrupted (the job was cancelled; the reports of the cases that ran are written, marked
as interrupted, and the ``verdict`` output is ``interrupted``).

Security rules, each enforced in one place below: inputs become argument lists passed
to subprocess without a shell, as ``--flag=value`` so that no value can turn into an
option; values that would become pip options are refused, and so are a ``compiler`` of
only comments and an ``output-dir`` outside the workspace; every line printed is either a
workflow command whose data is escaped or a log line with its line breaks escaped, neither
holding the legacy ``##[`` command syntax, and what dlgate, pip and the compiler print
(and the command lines run, which hold input values) runs between ``::stop-commands::``
markers, so none of it can issue workflow commands; the token, ``INPUT_*`` and the runner's other
credentials are removed from the environment of everything but ``dlgate issues`` (pip and
the base build's environment included); the compiler under test (and the base build) runs
as the owner of the workspace, not as root. Standard library and dlgate (and its PyYAML)
only.
"""
from __future__ import annotations

import contextlib
import glob
import json
import math
import os
import re
import secrets
import shlex
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field

#: The action's own files (/app in the image): configs/ is the fallback for ``config``.
ACTION_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL, EXIT_CANNOT_RUN = 0, 1, 2, 3, 4
EXIT_SIGINT, EXIT_SIGTERM = 130, 143  # dlgate run interrupted: a rerun resumes
VERDICT_OF_EXIT = {EXIT_OK: "pass", EXIT_FAIL: "fail", EXIT_USAGE: "usage-error", EXIT_INTERNAL: "internal-error",
                   EXIT_CANNOT_RUN: "cannot-run", EXIT_SIGINT: "interrupted", EXIT_SIGTERM: "interrupted"}
FAIL_ON = ("new", "any", "none")
#: Events whose runs may write to the repository (issues, the baseline): the code that
#: runs comes from the default branch, not from a pull request.
TRUSTED_EVENTS = ("schedule", "workflow_dispatch")
PR_EVENTS = ("pull_request", "pull_request_target", "pull_request_review", "pull_request_review_comment")
#: GitHub shows at most 10 error and 10 warning annotations per step; more only clutter the log.
MAX_ANNOTATIONS = 10
#: Variables no child but ``dlgate issues`` may see: the inputs (the token among them), and
#: the runner's credentials for its cache, artifact and OIDC services.
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|^ACTIONS_(RUNTIME|CACHE|RESULTS|ID_TOKEN)_", re.IGNORECASE)
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHARD = re.compile(r"^[0-9]+/[0-9]+$")


class InputError(Exception):
    """An input the action cannot use: reported as an error annotation, exit status 2."""


# ---------------------------------------------------------------- workflow commands


def escape_data(text: str) -> str:
    """Escape a workflow command's message: the runner unescapes these three, and a raw line
    break would end the command and let the rest start a command of its own."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command's property value, where ':' and ',' are delimiters too."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def no_legacy(text: str) -> str:
    """``text`` without the runner's legacy command syntax ``##[name ...]value``, which it
    acts on wherever it appears in a line (``##[set-output name=verdict;]pass``):
    ``##[`` becomes ``##\\[``. (The other syntax, ``::name::``, counts only at the start of a
    line, which :func:`log` and :func:`command` never leave to the text they print.)"""
    return text.replace("##[", "##\\[")


def command(name: str, message: str = "", **props) -> str:
    """One workflow command line, e.g. ``::error title=T::message``. Its text cannot hold a
    legacy ``##[`` command either (except a mask's value, which must stay exact)."""
    clean = (lambda t: t) if name == "add-mask" else no_legacy
    p = ",".join(f"{k}={escape_property(clean(str(v)))}" for k, v in props.items() if v not in (None, ""))
    return f"::{name}{' ' + p if p else ''}::{escape_data(clean(message))}"


def emit(line: str) -> None:
    """Print a workflow command (built by :func:`command`); flushed, so it precedes what a
    child process prints next."""
    print(line, flush=True)


def log(message: str) -> None:
    """Print a plain log line. Line breaks are escaped so that text from an input can never
    begin a line of its own, which the runner would read as a workflow command, and the
    legacy ``##[`` syntax, which the runner reads anywhere in a line, is broken up."""
    emit("dlgate: " + no_legacy(message.replace("\r", "\\r").replace("\n", "\\n")))


def mask(token: str) -> None:
    """Ask the runner to hide the token in the log: the whole value and, should it span
    lines, each line too, since the runner matches a mask within one line of output."""
    parts = [token.strip()] + [x.strip() for x in token.splitlines()]
    for part in dict.fromkeys(x for x in parts if x):
        emit(command("add-mask", part))


# ---------------------------------------------------------------- inputs and context


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


# ---------------------------------------------------------------- the plan


@dataclass
class Plan:
    """Everything decided from the inputs before anything runs."""

    dlgate_args: list
    out: str  # as given: relative to the workspace, or absolute
    shard: str = ""
    requirements: list = field(default_factory=list)
    open_issues: bool = False
    issue_repo: str = ""
    update_baseline: bool = False
    baseline: str = ""
    base_requirements: list = field(default_factory=list)  # the base build (``base-compiler``)
    config: str = ""  # the campaign file dlgate run reads ("" for a merge)
    installed: object = None  # dlgate.install.Installed: what install_compiler installed, for verify_builds
    wd: str = ""  # ``working-directory``: relative to the workspace, "" for the workspace itself
    cache_dir: str = ""  # ``cache-dir``: an absolute path (DLGATE_CACHE of dlgate run), "" for the default


def _no_option(name: str, value: str) -> str:
    """Refuse a path-like value that a program would read as an option."""
    if value.startswith("-"):
        raise InputError(f"{name}: {value!r} starts with '-'")
    return value


def output_dir(value: str, workspace: str, wd: str = "", name: str = "output-dir") -> str:
    """The ``output-dir`` input: a folder inside the workspace, relative to the working
    directory ``wd`` (itself relative to the workspace) or absolute, and not through a
    symbolic link that leads out of it (dlgate writes and replaces files there, and the
    runner's later steps read them)."""
    _no_option(name, value)
    ws = os.path.realpath(workspace)
    target = os.path.realpath(os.path.join(ws, wd, value))
    if not target.startswith(ws + os.sep):
        raise InputError(f"{name}: {value!r} is not a folder inside the workspace "
                         f"({'it leads to ' + target if target != ws else 'it is the workspace itself'})")
    return value


_REF = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._/~^-]{0,199}$")


def changed_from(value: str) -> str:
    """The ``changed-from`` input: a commit (SHA, branch or tag name), never an option."""
    if value and not _REF.match(value):
        raise InputError(f"changed-from: expected a commit SHA or ref name, got {value!r}")
    return value


def compiler_repo(value: str, workspace: str, wd: str) -> str:
    """The ``compiler-repo`` input: a folder inside the workspace (the workspace itself
    allowed), relative to the working directory; "" for the working directory."""
    if not value:
        return ""
    _no_option("compiler-repo", value)
    ws = os.path.realpath(workspace)
    target = os.path.realpath(os.path.join(ws, wd, value))
    if target != ws and not target.startswith(ws + os.sep):
        raise InputError(f"compiler-repo: {value!r} is not a folder inside the workspace (it leads to {target})")
    if not os.path.isdir(target):
        raise InputError(f"compiler-repo: {value} is not a folder in the workspace")
    return value


def target_share(value: str) -> str:
    if not value:
        return ""
    try:
        v = float(value)
    except ValueError:
        v = math.nan
    if not 0.0 <= v <= 1.0:
        raise InputError(f"target-share: expected a number from 0 to 1, got {value!r}")
    return value


def working_directory(value: str, workspace: str) -> str:
    """The ``working-directory`` input, normalized relative to the workspace ("" for the
    workspace itself): an existing folder inside it, reached without leaving it."""
    if not value:
        return ""
    _no_option("working-directory", value)
    ws = os.path.realpath(workspace)
    target = os.path.realpath(os.path.join(ws, value))
    if target != ws and not target.startswith(ws + os.sep):
        raise InputError(f"working-directory: {value!r} is not a folder inside the workspace (it leads to {target})")
    if not os.path.isdir(target):
        raise InputError(f"working-directory: {value} is not a folder in the workspace")
    rel = os.path.relpath(target, ws)
    return "" if rel == "." else rel


def here(p: Plan, ctx: Context) -> str:
    """The folder dlgate runs in and relative paths are resolved against: the workspace, or
    ``working-directory`` inside it."""
    return os.path.join(ctx.workspace, p.wd) if p.wd else ctx.workspace


_SECONDS = re.compile(r"^[0-9]+(\.[0-9]+)?$")


def budget(value: str) -> str:
    """The ``budget`` input: a positive number of seconds, at most a day ("" when unset)."""
    if value and not (_SECONDS.match(value) and 0 < float(value) <= 86_400):
        raise InputError(f"budget: expected a number of seconds above 0 and at most 86400, got {value!r}")
    return value


def resolve_config(value: str, workspace: str) -> str:
    """The campaign file: in the workspace (relative paths stay relative, as dlgate runs in
    the workspace), else the action's own configs/ (configs/pr.yaml, weekly.yaml, gpu.yaml)."""
    _no_option("config", value)
    if os.path.isfile(os.path.join(workspace, value)):
        return value
    own = os.path.realpath(os.path.join(ACTION_ROOT, value))
    configs = os.path.join(os.path.realpath(ACTION_ROOT), "configs")
    if not os.path.isabs(value) and own.startswith(configs + os.sep) and os.path.isfile(own):
        log(f"config {value}: not in the workspace, using the action's own {own}")
        return own
    shipped = ", ".join(f"configs/{n}" for n in sorted(os.listdir(configs))) if os.path.isdir(configs) else "none"
    raise InputError(f"config: {value} is neither in the workspace nor among the action's campaigns ({shipped})")


def compiler_requirements(text: str, workspace: str, name: str = "compiler") -> list:
    """pip arguments for the ``compiler`` (or ``base-compiler``) input, one per line: a
    requirement, or a wheel path in the workspace (a glob matching one file). Anything that
    pip could read as an option (a token starting with '-': --index-url, -r, -e...) is
    refused, so the input can name a build but not redirect pip to another index or file."""
    reqs = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if any(tok.startswith("-") for tok in line.split()):
            raise InputError(f"{name}: {line!r} looks like a pip option; give a requirement or a wheel path")
        if line.endswith(".whl") and "://" not in line:
            matches = sorted(glob.glob(os.path.join(glob.escape(workspace), line)))
            if len(matches) != 1:
                raise InputError(f"{name}: {line} matches {len(matches)} files in the workspace, expected one wheel")
            line = os.path.abspath(matches[0])
        reqs.append(line)
    if text.strip() and not reqs:
        raise InputError(f"{name}: only comments and blank lines: nothing would be installed and the gate would "
                         f"test the image's own build; give a requirement or a wheel path, or leave {name} empty")
    return reqs


def merge_dirs(text: str, workspace: str) -> list:
    """Shard output folders for ``merge``: globs relative to the workspace, each matching at
    least one folder, in a stable order."""
    dirs = []
    for pattern in text.split():
        _no_option("merge", pattern)
        matches = glob.glob(os.path.join(glob.escape(workspace), pattern))
        found = sorted(os.path.relpath(m, workspace) for m in matches if os.path.isdir(m))
        if not found:
            raise InputError(f"merge: {pattern} matches no folder in the workspace")
        dirs += [d for d in found if d not in dirs]
    return dirs


def plan(env: dict, ctx: Context) -> Plan:
    """Read and check every input; the ``dlgate`` argument list. Every value is passed as
    ``--flag=value``, so even a value starting with '-' stays a value."""
    wd = working_directory(get_input(env, "working-directory"), ctx.workspace)
    root = os.path.join(ctx.workspace, wd) if wd else ctx.workspace  # relative paths start here
    out = output_dir(get_input(env, "output-dir") or "dlgate-out", ctx.workspace, wd)
    cache = get_input(env, "cache-dir")
    if cache:
        output_dir(cache, ctx.workspace, wd, "cache-dir")
        cache = os.path.realpath(os.path.join(root, cache))
    fail_on = get_input(env, "fail-on")
    if fail_on and fail_on not in FAIL_ON:
        raise InputError(f"fail-on: expected one of {', '.join(FAIL_ON)}, got {fail_on!r}")
    shard = get_input(env, "shard")
    if shard and not _SHARD.match(shard):
        raise InputError(f"shard: expected I/N (e.g. 2/3), got {shard!r}")
    p = Plan([], out, shard=shard, requirements=compiler_requirements(get_input(env, "compiler"), root),
             open_issues=get_bool(env, "open-issues"), update_baseline=get_bool(env, "update-baseline"),
             baseline=get_input(env, "baseline"),
             base_requirements=compiler_requirements(get_input(env, "base-compiler"), root, "base-compiler"),
             wd=wd, cache_dir=cache)
    budget(get_input(env, "budget"))  # checked here, passed on as --budget below
    p.issue_repo = get_input(env, "issue-repo") or ctx.repository
    if p.open_issues and not _REPO.match(p.issue_repo):
        raise InputError(f"issue-repo: expected OWNER/NAME, got {p.issue_repo!r}")
    merge = get_input(env, "merge")
    if merge:
        p.shard = ""
        ignored = [n for n in ("seed", "shard", "models", "campaign", "reference", "corpus", "fail-on",
                               "base-compiler", "coverage-state", "budget", "changed-from", "diff", "compiler-repo",
                               "target-share") if get_input(env, n)]
        if ignored:
            log(f"merge: ignoring {', '.join(ignored)}: a merge takes the shards' own settings")
        p.base_requirements = []  # the shards re-ran their failures on the base build already
        p.dlgate_args = ["merge", f"--out={out}", "--", *merge_dirs(merge, root)]
        return p
    p.config = resolve_config(get_input(env, "config") or "configs/pr.yaml", root)
    args = ["run", f"--config={p.config}", f"--out={out}", "--no-progress"]
    seed = get_input(env, "seed")
    commit = seed_commit(ctx)
    if seed:
        args.append(f"--seed={seed}")
    elif commit:
        args.append(f"--commit={commit}")
    for name in ("campaign", "models", "shard", "reference", "baseline", "corpus", "fail-on", "coverage-state",
                 "budget"):
        value = get_input(env, name)
        if value:
            args.append(f"--{name}={value}")
    args += change_args(env, ctx, wd)
    p.dlgate_args = args
    return p


def change_args(env: dict, ctx: Context, wd: str) -> list:
    """``dlgate run``'s change arguments from ``changed-from`` or ``diff``, ``compiler-repo``
    and ``target-share`` (checked here: bad input is exit status 2 before any install)."""
    base, diff = changed_from(get_input(env, "changed-from")), get_input(env, "diff")
    repo = compiler_repo(get_input(env, "compiler-repo"), ctx.workspace, wd)
    share = target_share(get_input(env, "target-share"))
    if base and diff:
        raise InputError("changed-from and diff: give one of them, not both")
    out = []
    if base:
        out.append(f"--changed-from={base}")
    if diff:
        _no_option("diff", diff)
        out.append(f"--diff={diff}")
    if (base or diff) and repo:
        out.append(f"--repo={repo}")
    if share:
        out.append(f"--target-share={share}")
    return out


# ---------------------------------------------------------------- running children


def child_env(env: dict) -> dict:
    """The environment of pip, dlgate and so of the compiler under test: without the inputs
    (the token is one), without the runner's credentials and without anything else
    :func:`dlgate.secrets.scrubbed_env` calls a secret (``DLGATE_SECRET_VARS`` included)."""
    from dlgate.secrets import scrubbed_env

    return {k: v for k, v in scrubbed_env(env).items() if not k.startswith("INPUT_") and not _SECRET_NAME.search(k)}


def run_as(workspace: str, env: dict, python: str = sys.executable, base_python: str = "") -> tuple | None:
    """(uid, gid, home) to run models and the compiler under test as: the workspace's owner,
    when this runs as root (as GitHub starts Docker actions) and the workspace is someone
    else's (the runner's user). The compiler then cannot touch the image or read this
    process's environment, and the files it leaves in the workspace belong to the runner,
    which can clean them up. None, run as we are: not root, a root-owned workspace, or an
    interpreter (``python``, and ``base_python`` when given) that user cannot run (checked,
    so that a drop never breaks the gate)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    st = os.stat(workspace)
    if st.st_uid == 0:
        return None
    home = env.get("HOME", "")
    if not (home and os.path.isdir(home) and os.stat(home).st_uid == st.st_uid):
        home = tempfile.mkdtemp(prefix="dlgate-home-")  # caches of dlgate, torch and TVM go there
        os.chown(home, st.st_uid, st.st_gid)
    ids = (st.st_uid, st.st_gid, home)
    kwargs, probe_env = user_kwargs(ids, child_env(env))
    probes = [(python, probe_env)] + ([(base_python, base_env_vars(probe_env))] if base_python else [])
    try:
        ok = all(subprocess.run([py, "-c", "import dlgate"], cwd=workspace, env=penv, stdin=subprocess.DEVNULL,
                                capture_output=True, check=False, **kwargs).returncode == 0 for py, penv in probes)
    except OSError:
        ok = False
    if not ok:
        log(f"cannot run dlgate as the workspace's owner (uid {st.st_uid}): its interpreter"
            f"{' or the base build environment' if base_python else ''} is not usable by that user; running as root")
        return None
    return ids


def user_kwargs(ids: tuple | None, env: dict) -> tuple:
    """(subprocess keyword arguments, environment) to run a child as ``ids`` (uid, gid, home)."""
    if ids is None:
        return {}, env
    return {"user": ids[0], "group": ids[1], "extra_groups": []}, dict(env, HOME=ids[2])


@contextlib.contextmanager
def forwarded_signals(child):
    """Pass SIGTERM and SIGINT on to ``child`` while it runs. A cancelled job's runner sends
    SIGTERM to the container's first process, this script; as PID 1 it would otherwise
    ignore it, and dlgate would not stop its workers, flush its journal and say how to
    resume (exit status 143 or 130)."""
    def forward(signum, _frame):
        try:
            child.send_signal(signum)
        except OSError:
            pass

    old = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def call(args: list, title: str, cwd: str, env: dict, ids: tuple | None = None) -> int:
    """Run one child inside a log group. What it prints (pip's, dlgate's and the compiler's
    output) is fenced by ``::stop-commands::``, so none of it is taken as a workflow command."""
    emit(command("group", title))
    fence = secrets.token_hex(16)
    emit(f"::stop-commands::{fence}")
    log("$ " + " ".join(shlex.quote(a) for a in args))  # inside the fence: it holds input values
    kwargs, env = user_kwargs(ids, env)
    try:
        # stderr joins stdout: one stream keeps the child's lines in order inside the group and the fence.
        child = subprocess.Popen(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT, **kwargs)
        with forwarded_signals(child):
            return child.wait()
    finally:
        emit(f"::{fence}::")
        emit("::endgroup::")


def dlgate(*args: str) -> list:
    return [sys.executable, "-m", "dlgate", *args]


def install_compiler(p: Plan, ctx: Context, env: dict, python: str = sys.executable) -> int:
    """pip-install the build under test into dlgate's environment (``python``'s), as argument
    lists, so that it replaces the image's build (:mod:`dlgate.install`): a distribution
    there that provides the same import package under another name (``apache-tvm`` for a
    ``tvm`` wheel) is uninstalled first. Whether ``import`` then gives the new build is
    checked by :func:`verify_builds`, once the user the compiler runs as is known."""
    if not p.requirements:
        return EXIT_OK
    from dlgate import install

    cenv = child_env(env)
    titles = {"install": "dlgate: install the compiler under test"}
    try:
        p.installed = res = install.replace(python, p.requirements, run=_pip(titles, ctx.workspace, cenv),
                                            cwd=ctx.workspace, env=cenv)
    except install.InstallError as e:
        emit(command("error", f"cannot install the compiler under test: {e}", title="dlgate: compiler install failed"))
        return EXIT_CANNOT_RUN
    return _installed(res, f"the compiler under test ({', '.join(p.requirements)})", "",
                      "dlgate: compiler install failed")


def _pip(titles: dict, cwd: str, env: dict):
    """The pip runner for :func:`dlgate.install.replace`: each pip step in a fenced log group."""
    return lambda args, step: call(args, titles.get(step, f"dlgate: pip {step}"), cwd, env)


def _installed(res, what: str, after: str, title: str) -> int:
    """Log what :func:`dlgate.install.replace` removed; an error annotation and exit status 2
    when a pip step failed."""
    for d in res.removed:
        log(f"removed {d.name} {d.version} before installing {what}: it provides {', '.join(d.top)} too, under "
            f"another name, and the two would mix in one folder")
    if res.rc == 0:
        return EXIT_OK
    if res.step == "uninstall":
        msg = f"pip could not uninstall {', '.join(d.name for d in res.removed)}, which would mix with {what}"
    else:
        msg = f"pip could not {res.step} {what}"
    emit(command("error", f"{msg}: exit status {res.rc}; see the log group above{after}", title=title))
    return EXIT_USAGE


def verify_builds(p: Plan, ctx: Context, env: dict, base, ids: tuple | None) -> int:
    """Import the build under test, and the base build, each in a fresh interpreter run as the
    compiler runs (``ids``), and check that each top-level package is the distribution just
    installed (:func:`dlgate.install.verify`): not shadowed by another copy, not a mix with
    a distribution of another name in the same folder, of the installed version. Logs each
    (distribution, version, file) and writes them to the job summary as a table. Exit status
    4 (cannot run) on any failure: the gate never tests a build other than the one named."""
    from dlgate import install

    sides = []
    if p.installed is not None and p.installed.targets:
        sides.append(("build under test", p.installed, child_env(env), ctx.workspace))
    if base is not None and base.installed is not None and base.installed.targets:
        sides.append(("base build", base.installed, base_env_vars(child_env(env)), base.root))
    rows, problems = [], []
    for side, inst, cenv, cwd in sides:
        kwargs, cenv = user_kwargs(ids, cenv)
        try:
            got = install.verify(inst.python, inst.targets, cwd=cwd, env=cenv, **kwargs)
        except install.InstallError as e:
            problems.append(f"{side}: {e}")
            continue
        for r in got.rows:
            log(f"{side}: {r.dist} {r.version}, import {r.module} gives "
                f"{r.module_version or 'no __version__'} from {r.file or '(nothing)'}")
            rows.append((side, r))
        problems += [f"{side}: {x}" for x in got.problems]
    removed = [(side, d) for side, inst, _, _ in sides for d in inst.removed]
    if rows or removed:
        write_summary(env, build_table(rows, removed))
    if problems:
        emit(command("error", "; ".join(problems) + ". The gate tests only the build it was given",
                     title="dlgate: the build under test is not what imports"))
        return EXIT_CANNOT_RUN
    return EXIT_OK


def build_table(rows: list, removed: list) -> str:
    """Markdown: which distribution, version and file each build imports ((side, Row)
    pairs), and what was uninstalled first ((side, Dist) pairs). Every value is escaped
    (dlgate.markdown): names, versions and paths come from the build under test."""
    from dlgate import markdown as md

    lines = ["### dlgate: the builds tested", ""]
    if rows:
        lines += md.table(["build", "distribution", "version", "import", "`__version__`", "from", "check"],
                          [[side, md.text(r.dist), md.text(r.version), md.code(r.module, table=True),
                            md.text(r.module_version) or "-", md.code(r.file, table=True) or "-",
                            "ok" if r.ok else "**not the installed build**"] for side, r in rows])
    for side, d in removed:
        lines += ["", f"Uninstalled first ({side}): {md.text(d.name)} {md.text(d.version)}, which provides "
                      f"{', '.join(md.code(t) for t in d.top)} under another name."]
    return "\n".join(lines) + "\n"


def write_summary(env: dict, markdown: str) -> None:
    """Markdown at the end of the job summary ($GITHUB_STEP_SUMMARY), when there is one."""
    path = env.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write("\n" + markdown)
    except OSError as e:
        log(f"cannot write the job summary {path}: {e}")


# ---------------------------------------------------------------- the base build (head versus base)

#: The .pth file that shows the image's packages (dlgate, torch, onnx, the pinned compiler)
#: to the base build's environment. Its directories come after the environment's own
#: site-packages on sys.path, so what pip installs there replaces, for that interpreter, the
#: image's build of the same module instead of being shadowed by it.
BASE_PTH = "zz_dlgate_image_env.pth"
#: Printed by PROBE before its JSON report, so that what an imported compiler prints is ignored.
PROBE_MARK = "@@dlgate-probe@@"
#: Run in an interpreter: for each distribution named, its version, location and top-level
#: modules; then, for each module, what ``import`` resolves to (version and file).
PROBE = r"""
import importlib, importlib.metadata as md, json, os, sys
dists, mods = json.loads(sys.argv[1])
res = {"dists": {}, "modules": {}}
for name in dists:
    try:
        d = md.distribution(name)
    except Exception:
        res["dists"][name] = None
        continue
    top = (d.read_text("top_level.txt") or "").split()
    if not top:
        for f in d.files or []:
            head = f.parts[0] if f.parts else ""
            if head and head != ".." and not head.endswith((".dist-info", ".data", ".pth")):
                top.append(head.split(".")[0])
    top = [t for t in dict.fromkeys(top) if t.isidentifier() and not t.startswith("_") and t not in ("test", "tests")]
    res["dists"][name] = {"version": d.version, "location": os.path.realpath(str(d.locate_file(""))), "modules": top}
    mods += [t for t in top if t not in mods]
for m in mods:
    try:
        mod = importlib.import_module(m)
    except BaseException as e:
        res["modules"][m] = {"error": (type(e).__name__ + ": " + str(e))[:300]}
        continue
    f = getattr(mod, "__file__", None) or next(iter(getattr(mod, "__path__", None) or []), None)
    res["modules"][m] = {"version": str(getattr(mod, "__version__", "") or "?"), "file": f and os.path.realpath(f)}
sys.stdout.write("\n" + MARK + json.dumps(res) + "\n")
""".replace("MARK", repr(PROBE_MARK))


@dataclass
class BaseEnv:
    """The environment holding the base build: its folder and its interpreter."""

    root: str
    python: str
    installed: object = None  # dlgate.install.Installed: what create_base_env installed, for verify_builds


def base_env_vars(env: dict) -> dict:
    """The environment of the base build's interpreter: dlgate's base workers drop
    PYTHONPATH (it is the head environment's path), and so do pip and the probe here, so
    that they all see the same packages."""
    return {k: v for k, v in env.items() if k != "PYTHONPATH"}


def dist_name(requirement: str) -> str:
    """The distribution a requirement or wheel installs, when the text shows it ("" when
    not: a VCS URL, a folder)."""
    from dlgate.install import dist_name as name

    return name(requirement)


def probe(python: str, dists: list, modules: list, cwd: str, env: dict, ids: tuple | None) -> dict | None:
    """What ``python`` imports for these distributions and modules (PROBE's report), run as
    the compiler runs (``ids``), since importing the compiler runs its code; None when the
    interpreter fails before reporting (what it printed is logged, fenced)."""
    kwargs, env = user_kwargs(ids, env)
    try:
        res = subprocess.run([python, "-c", PROBE, json.dumps([dists, modules])], cwd=cwd, env=env,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                             timeout=600, check=False, **kwargs)
    except (OSError, subprocess.TimeoutExpired) as e:
        log(f"{python}: cannot run: {e}")
        return None
    for line in reversed(res.stdout.splitlines()):
        if line.startswith(PROBE_MARK):
            try:
                return json.loads(line[len(PROBE_MARK):])
            except ValueError:
                break
    fenced(f"{python} -c PROBE: exit status {res.returncode}", (res.stdout + res.stderr)[-4000:])
    return None


def fenced(title: str, text: str) -> None:
    """Untrusted text (a child's output) in a log group, fenced like :func:`call`'s."""
    emit(command("group", title))
    fence = secrets.token_hex(16)
    emit(f"::stop-commands::{fence}")
    print(text, flush=True)
    emit(f"::{fence}::")
    emit("::endgroup::")


def _inside(path: str | None, root: str) -> bool:
    return bool(path) and (path + os.sep).startswith(os.path.realpath(root) + os.sep)


def _describe(mod: str, got: dict | None) -> str:
    if not got:
        return f"{mod}: not imported"
    if "error" in got:
        return f"{mod}: not importable ({got['error']})"
    return f"{mod} {got['version']} from {got['file']}"


def create_base_env(p: Plan, ctx: Context, env: dict) -> tuple:
    """(exit status, BaseEnv or None): a virtual environment holding the base build
    (``base-compiler``), whose interpreter ``dlgate run --base-python`` re-runs each head
    failure in.

    Not ``venv --system-site-packages``: made from the image's interpreter, itself in a
    virtual environment, that would show the system Python's packages, not the image's.
    The image environment's site-packages are added instead by a .pth file, after the new
    environment's own, and pip installs the base build with ``--force-reinstall
    --no-deps`` so that it lands in the new environment even where the image already holds
    that distribution (perhaps overwritten by the build under test), then once more
    without those options for dependencies the image lacks (installed there too, never in
    the image's environment). pip and everything run here get the same environment as the
    compiler under test: no token, no ``INPUT_*``, no runner credentials."""
    if not p.base_requirements:
        return EXIT_OK, None
    root = tempfile.mkdtemp(prefix="dlgate-base-")
    os.chmod(root, 0o755)  # the compiler under test may run as the workspace's owner, not root
    base = BaseEnv(root, os.path.join(root, "bin", "python"))
    cenv = base_env_vars(child_env(env))
    rc = call([sys.executable, "-m", "venv", "--without-pip", root], "dlgate: create the base build's environment",
              ctx.workspace, cenv)
    purelib = ""
    if rc == 0:
        try:
            purelib = subprocess.run([base.python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                     env=cenv, cwd=root, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                     check=True).stdout.strip()
            dirs = [d for d in site.getsitepackages() if os.path.isdir(d)]
            with open(os.path.join(purelib, BASE_PTH), "w", encoding="utf-8") as f:
                f.write("import site; " + "; ".join(f"site.addsitedir({d!r})" for d in dirs) + "\n")
        except (OSError, subprocess.CalledProcessError) as e:
            log(f"{base.python}: {e}")
            rc = 1
    if rc != 0:
        emit(command("error", f"could not create the environment for the base build in {root} (exit status {rc}); "
                              f"see the log above. No fallback to the baseline: fix the image or leave "
                              f"base-compiler empty", title="dlgate: base environment failed"))
        return EXIT_INTERNAL, base
    from dlgate import install

    steps = ((("--force-reinstall", "--no-deps"), "dlgate: install the base build"),
             ((), "dlgate: install the base build's missing dependencies"))
    try:
        base.installed = res = install.replace(base.python, p.base_requirements, steps=steps,
                                               run=_pip({t: t for _, t in steps}, root, cenv), cwd=root, env=cenv)
    except install.InstallError as e:
        emit(command("error", f"cannot install the base build: {e}. No fallback to the baseline",
                     title="dlgate: base build install failed"))
        return EXIT_CANNOT_RUN, base
    rc = _installed(res, f"the base build ({', '.join(p.base_requirements)}) in {root}",
                    ". No fallback to the baseline", "dlgate: base build install failed")
    if rc != EXIT_OK:
        return rc, base
    log(f"head versus base: the base build ({', '.join(p.base_requirements)}) is in {root}; every head failure "
        f"is re-run there (--base-python={base.python})")
    return EXIT_OK, base


def check_base_env(p: Plan, ctx: Context, env: dict, base: BaseEnv, ids: tuple | None) -> int:
    """Which module each environment imports: the base build's modules must come from the
    base environment (not from the image, the build under test or the workspace), and
    import there. Logs the versions of head and base."""
    dists = [d for d in (dist_name(r) for r in p.base_requirements) if d]
    unknown = [r for r in p.base_requirements if not dist_name(r)]
    if unknown:
        log(f"base-compiler: cannot tell which distribution {', '.join(unknown)} installs; not checked")
    if not dists:
        return EXIT_OK
    cenv = base_env_vars(child_env(env))
    got = probe(base.python, dists, [], base.root, cenv, ids)
    if got is None:
        emit(command("error", f"the base build's environment ({base.python}) cannot run; see the log group above",
                     title="dlgate: base build unusable"))
        return EXIT_USAGE
    modules = [m for d in dists for m in ((got["dists"].get(d) or {}).get("modules") or [])]
    head = probe(sys.executable, [], modules, base.root, child_env(env), ids) if modules else None
    for m in modules:
        log(f"head: {_describe(m, (head or {}).get('modules', {}).get(m))}")
        log(f"base: {_describe(m, got['modules'].get(m))}")
    problems = []
    for d in dists:
        info = got["dists"].get(d)
        if info is None:
            log(f"base-compiler: no distribution named {d} in the base environment; not checked")
            continue
        if not _inside(info["location"], base.root):
            problems.append(f"the base environment finds {d} {info['version']} in {info['location']}, not in the "
                            f"base environment {base.root}")
        mods = {m: got["modules"].get(m) or {} for m in info["modules"]}
        outside = [f"{m} from {x['file']}" for m, x in mods.items()
                   if x.get("file") and not _inside(x["file"], base.root)]
        if outside:
            problems.append(f"the base environment imports {', '.join(outside)}, not the base build {d} "
                            f"{info['version']} just installed in {base.root}")
        elif mods and not any(x.get("file") for x in mods.values()):
            problems.append(f"the base build {d} does not import: "
                            + "; ".join(_describe(m, x) for m, x in mods.items()))
        else:
            log(f"base build {d} {info['version']}: {', '.join(mods) or 'no module found'} imported from the base "
                f"environment")
    if problems:
        emit(command("error", "; ".join(problems) + ". No fallback to the baseline", title="dlgate: wrong base build"))
        return EXIT_USAGE
    return EXIT_OK


def campaign_settings(p: Plan, ctx: Context) -> dict:
    """The campaign file's top-level settings (for the notices); {} when unreadable (dlgate
    run then reports why)."""
    if not p.config:
        return {}
    try:
        import yaml  # dlgate's own dependency, in the image

        with open(os.path.join(here(p, ctx), p.config), encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except Exception:  # reported by dlgate run itself
        return {}
    return doc if isinstance(doc, dict) else {}


def novelty_notice(p: Plan, ctx: Context) -> str:
    """On a pull request without a base build: how novelty is decided instead (empty when
    there is a base build, from ``base-compiler`` or the campaign's ``base``, or this is
    no pull request or a merge)."""
    if ctx.event_name not in PR_EVENTS or p.base_requirements or not p.config:
        return ""
    cfg = campaign_settings(p, ctx)
    if cfg.get("base"):
        return ""
    baseline = p.baseline or cfg.get("baseline")
    against = (f"the baseline {baseline}: a failure the base branch already has but that file does not list "
               f"fails this pull request" if baseline else "no baseline: every failure counts as new")
    return (f"No base build configured: novelty is decided against {against}. Set base-compiler to the base "
            f"branch's build (a release such as apache-tvm==0.27.0, or the wheel of the base commit) to re-run "
            f"each failure on it instead.")


def append_summary(env: dict, text: str) -> None:
    """A paragraph at the end of the job summary ($GITHUB_STEP_SUMMARY), when there is one;
    ``text`` (which quotes inputs) is escaped (dlgate.markdown)."""
    from dlgate import markdown as md

    path = env.get("GITHUB_STEP_SUMMARY")
    if not path or not text:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"\n> **dlgate:** {md.text(text)}\n")
    except OSError as e:
        log(f"cannot write the job summary {path}: {e}")


def seal_progress(env: dict, rc: int) -> None:
    """``dlgate run`` keeps a live progress section in the job summary, which its final
    summary replaces; when it ended without one (an internal error, a crash), turn the
    section into a paragraph saying so, above the run's last progress."""
    from dlgate.gate.progress import seal

    path = env.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        seal(path, f"> **dlgate:** the run ended with exit status {rc} before writing its summary; see the log of "
                   "the dlgate run step. Its last progress:")
    except OSError as e:
        log(f"cannot write the job summary {path}: {e}")


# ---------------------------------------------------------------- results


def out_path(p: Plan, ctx: Context, *parts: str) -> str:
    """A path in the output folder, on this machine."""
    return os.path.join(here(p, ctx), p.out, *parts)


def display_path(p: Plan, *parts: str) -> str:
    """A path in the output folder as later steps see it: relative to the workspace (whose
    absolute path differs between this container and the runner), or absolute if given so."""
    return os.path.normpath(os.path.join(p.wd, p.out, *parts))


def read_verdict(p: Plan, ctx: Context, since: float) -> dict | None:
    """This run's verdict.json; None when it wrote none (a usage error, a crash) or the file
    is an older run's."""
    path = out_path(p, ctx, "verdict.json")
    try:
        if os.path.getmtime(path) < since:
            return None
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def normalize_exit(rc: int) -> int:
    """dlgate's statuses pass through (interruption included); anything else (killed by a
    signal) is an internal error."""
    return rc if rc in VERDICT_OF_EXIT else EXIT_INTERNAL


def outputs(p: Plan, rc: int, verdict: dict | None) -> dict:
    """The step outputs. The verdict is verdict.json's when it agrees with the exit status
    (a crash after the report was written is an internal error whatever the report says)."""
    v = verdict or {}
    n = {key: len(v.get(key) or []) for key, _ in COUNTS}
    return {"verdict": v["result"] if v.get("exit_code") == rc and v.get("result") else VERDICT_OF_EXIT[rc],
            "new-failures": str(n["new"] + n["regressions"]),
            "junit": display_path(p, "junit.xml"), "summary": display_path(p, "summary.md"),
            "repros": display_path(p, "repros"),
            "cases": str(v.get("cases") or 0), "planned": str(v.get("planned") or v.get("cases") or 0),
            "stopped-by-budget": "true" if v.get("stopped_by_budget") else "false",
            **{name: str(n[key]) for key, name in COUNTS}}


#: verdict.json's lists counted in the step outputs, and each output's name.
COUNTS = (("new", "new"), ("regressions", "regressions"), ("known", "known"), ("pre_existing", "pre-existing"),
          ("fixed", "fixed"), ("flaky", "flaky"))


def run_notes(verdict: dict, p: Plan) -> list:
    """A ``::warning::`` when the run named a baseline file that does not exist (every
    failure then counts as new; dlgate's summary, in the job summary, says so too), a
    ``::notice::`` when the budget stopped the run, and an ``::error::`` when a signal
    interrupted it (a cancelled job, or one cut by its time limit): the check is not decided."""
    out = []
    stopped = verdict.get("interrupted")
    if isinstance(stopped, dict):
        out.append(command("error", f"interrupted by {stopped.get('signal')} after {stopped.get('cases')} of "
                                    f"{stopped.get('planned')} cases: the check is not decided (the reports cover the "
                                    f"cases that ran); a rerun on the same output-dir resumes",
                           title="dlgate: interrupted"))
    if verdict.get("baseline_missing") and verdict.get("baseline"):
        where = os.path.normpath(os.path.join(p.wd, str(verdict["baseline"])))  # as later steps see it
        means = "no failure counts as known" if verdict.get("novelty") == "base" else "every failure counts as new"
        out.append(command("warning", f"no baseline at {where}: {means}. Check the path (relative to the working "
                                      f"directory), or create the file with `dlgate baseline update`",
                           title="dlgate: no baseline"))
    if verdict.get("stopped_by_budget"):
        b = verdict.get("budget")
        b = f"{b:g}" if isinstance(b, (int, float)) else "?"
        out.append(command("notice", f"stopped by the budget ({b} s) after {verdict.get('cases')} "
                                     f"of {verdict.get('planned')} cases: the verdict is decided on the cases that "
                                     f"ran; a rerun on the same output-dir resumes", title="dlgate: budget spent"))
    return out


def write_outputs(env: dict, values: dict) -> None:
    """Append the step outputs to $GITHUB_OUTPUT in the ``name<<DELIMITER`` form, with a
    random delimiter that the value does not contain, so no value can end its own entry and
    forge another output. Without $GITHUB_OUTPUT (a local ``docker run``) they are logged."""
    path = env.get("GITHUB_OUTPUT")
    if not path:
        for name, value in values.items():
            log(f"output {name}={value}")
        return
    with open(path, "a", encoding="utf-8") as f:
        for name, value in values.items():
            delim = f"ghadelimiter_{secrets.token_hex(16)}"
            while delim in value:
                delim = f"ghadelimiter_{secrets.token_hex(16)}"
            f.write(f"{name}<<{delim}\n{value}\n{delim}\n")


def _first_line(text: str, n: int = 300) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= n else line[: n - 1] + "…"


def annotations(verdict: dict, p: Plan) -> list:
    """One ``::error`` per failure signature that fails the check (new failures and
    regressions under ``fail_on: new``, every failure under ``any``) and one ``::warning``
    per other new, regressed or pre-existing one; known and flaky ones are in the summary
    only. At most MAX_ANNOTATIONS of each kind, then one line saying how many more."""
    fail_on = verdict.get("fail_on", "new")
    lines = {"error": [], "warning": []}
    for key, cls in (("new", "new"), ("regressions", "regression"), ("pre_existing", "pre-existing"),
                     ("known", "known")):
        for g in verdict.get(key) or []:
            fails = fail_on == "any" or (fail_on == "new" and key in ("new", "regressions"))
            if key == "known" and not fails:
                continue
            kind = "error" if fails else "warning"
            cases = g.get("cases") or []
            fp = g.get("fingerprint") or g.get("signature")
            where = g.get("typed") or g.get("pattern") or ""
            msg = (f"[{fp}] in {len(cases)} case(s)"
                   f"{', e.g. ' + cases[0] if cases else ''}: {_first_line(g.get('detail', ''))}")
            if g.get("repro"):
                msg += f"\nreduced repro: python {display_path(p, g['repro'] + '/repro.py')}"
            if g.get("bundles"):
                spec = str(g.get("backend", "")).replace("[cpu]", "").replace("[", ":").replace("]", "")
                msg += f"\nreproduce: dlgate check {shlex.quote(display_path(p, g['bundles'][0]))} --backend {spec}"
            title = f"dlgate {cls} failure: {g.get('backend')} {g.get('verdict')}" + (f" in {where}" if where else "")
            lines[kind].append(command(kind, msg, title=title))
    result = []
    for kind, found in lines.items():
        result += found[:MAX_ANNOTATIONS]
        if len(found) > MAX_ANNOTATIONS:
            result.append(command(kind, f"{len(found) - MAX_ANNOTATIONS} more {kind}s: see the job summary",
                                  title="dlgate: more failures"))
    return result


# ---------------------------------------------------------------- trusted follow-ups


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


# ---------------------------------------------------------------- main


def gate(env: dict, token: str) -> int:
    """The whole step after masking; its exit status."""
    ctx = load_context(env)
    try:
        p = plan(env, ctx)
    except InputError as e:
        emit(command("error", str(e), title="dlgate: bad input"))
        out = get_input(env, "output-dir")
        try:
            wd = working_directory(get_input(env, "working-directory"), ctx.workspace)
        except InputError:
            wd = ""
        try:
            out = output_dir(out, ctx.workspace, wd) if out else "dlgate-out"
        except InputError:
            out = "dlgate-out"
        write_outputs(env, outputs(Plan([], out, wd=wd), EXIT_USAGE, None))
        return EXIT_USAGE
    base = None
    try:
        rc = install_compiler(p, ctx, env)
        if rc == EXIT_OK:
            rc, base = create_base_env(p, ctx, env)
        if rc != EXIT_OK:
            write_outputs(env, outputs(p, rc, None))
            return rc
        ids = run_as(ctx.workspace, env, base_python=base.python if base else "")
        if ids is not None:
            log(f"running the compiler under test as uid {ids[0]}, gid {ids[1]} (the workspace's owner), not as root")
        rc = verify_builds(p, ctx, env, base, ids)
        if rc != EXIT_OK:
            write_outputs(env, outputs(p, rc, None))
            return rc
        notice = novelty_notice(p, ctx)
        if base is not None:
            rc = check_base_env(p, ctx, env, base, ids)
            if rc != EXIT_OK:
                write_outputs(env, outputs(p, rc, None))
                return rc
            p.dlgate_args.append(f"--base-python={base.python}")
            shown = ", ".join(os.path.basename(r) if os.path.isabs(r) else r for r in p.base_requirements)
            notice = (f"Head versus base: every failure was re-run on the base build ({shown}), same models and "
                      f"inputs; one the base build shares is pre-existing and does not fail the check.")
        elif notice:
            emit(command("notice", notice, title="dlgate: no base build"))
        return finish(p, ctx, env, token, ids, notice)
    finally:
        if base is not None:
            shutil.rmtree(base.root, ignore_errors=True)


def finish(p: Plan, ctx: Context, env: dict, token: str, ids: tuple | None, notice: str) -> int:
    """The run (or merge) itself and what follows it; its exit status."""
    started = time.time() - 1  # file times may be coarser than time.time()
    cenv = dict(child_env(env), DLGATE_CACHE=p.cache_dir) if p.cache_dir else child_env(env)
    rc = normalize_exit(call(dlgate(*p.dlgate_args), f"dlgate {p.dlgate_args[0]}", here(p, ctx), cenv, ids))
    seal_progress(env, rc)
    if notice:
        append_summary(env, notice)  # after dlgate's report, which it appends to the job summary
    verdict = read_verdict(p, ctx, started) if rc != EXIT_USAGE else None
    for line in annotations(verdict, p) if verdict else []:
        emit(line)
    for line in run_notes(verdict, p) if verdict else []:
        emit(line)
    if rc == EXIT_INTERNAL:
        emit(command("error", "dlgate's own internal error (a defect in dlgate, not a failure of the compiler under "
                              "test): see the log group above", title="dlgate: internal error"))
    write_outputs(env, outputs(p, rc, verdict))
    if p.open_issues:
        open_issues(p, ctx, env, token, rc)
    if p.update_baseline:
        update_baseline(p, ctx, env, rc, ids)
    log(f"verdict: {outputs(p, rc, verdict)['verdict']} (exit status {rc})")
    return rc


def main(env: dict | None = None) -> int:
    env = dict(os.environ) if env is None else env
    token = get_input(env, "github-token")
    mask(token)  # first: nothing may print before the runner knows what to hide
    try:
        return gate(env, token)
    except Exception:  # a defect of this script: exit status 3, never read as a compiler failure
        fenced("dlgate: the entrypoint's traceback", traceback.format_exc())  # it may quote input values
        emit(command("error", "the dlgate action's entrypoint failed: see the traceback in the log",
                     title="dlgate: internal error"))
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
