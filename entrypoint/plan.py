"""The plan of a step: every input checked and turned into ``dlgate`` arguments (never a
shell, never an option smuggled in a value), before anything runs."""
from __future__ import annotations

import glob
import math
import os
import re
from dataclasses import dataclass, field

from entrypoint.inputs import Context, InputError, get_bool, get_input, seed_commit
from entrypoint.workflow import log

#: The action's own files (/app in the image): configs/ is the fallback for ``config``.
ACTION_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAIL_ON = ("new", "any", "none")
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHARD = re.compile(r"^[0-9]+/[0-9]+$")


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
    check_run: str = "off"  # ``check-run``: auto, on or off (dlgate.github.checks.MODES); off for a merge
    check_run_every: float = 30.0  # ``check-run-every``: seconds between two updates of the check run


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


#: The ``check-run`` input's values and the mode each one is (dlgate.github.checks.MODES).
CHECK_RUN = {"": "auto", "auto": "auto", **dict.fromkeys(("true", "True", "TRUE"), "on"),
             **dict.fromkeys(("false", "False", "FALSE"), "off")}


def check_run(env: dict) -> tuple:
    """(mode, seconds) from the ``check-run`` and ``check-run-every`` inputs."""
    value, every = get_input(env, "check-run"), get_input(env, "check-run-every")
    if value not in CHECK_RUN:
        raise InputError(f"check-run: expected auto, true or false, got {value!r}")
    if every and not (_SECONDS.match(every) and 0 < float(every) <= 86_400):
        raise InputError(f"check-run-every: expected a number of seconds above 0 and at most 86400, got {every!r}")
    return CHECK_RUN[value], float(every) if every else 30.0


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
    mode, every = check_run(env)
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
    p.check_run, p.check_run_every = mode, every  # a run's only: a merge has no progress to show
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
