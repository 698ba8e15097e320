"""Running children: their environment (no token, no runner credentials), the user they run
as (the workspace's owner, not root), signals forwarded to them, and their output kept from
issuing workflow commands."""
from __future__ import annotations

import contextlib
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import tempfile

from dlgate.secrets import scrubbed_env
from entrypoint.workflow import command, emit, log

#: Variables no child but ``dlgate issues`` may see: the inputs (the token among them), and
#: the runner's credentials for its cache, artifact and OIDC services.
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|^ACTIONS_(RUNTIME|CACHE|RESULTS|ID_TOKEN)_", re.IGNORECASE)


def child_env(env: dict) -> dict:
    """The environment of pip, dlgate and so of the compiler under test: without the inputs
    (the token is one), without the runner's credentials and without anything else
    :func:`dlgate.secrets.scrubbed_env` calls a secret (``DLGATE_SECRET_VARS`` included)."""
    return {k: v for k, v in scrubbed_env(env).items() if not k.startswith("INPUT_") and not _SECRET_NAME.search(k)}


def base_env_vars(env: dict) -> dict:
    """The environment of the base build's interpreter: dlgate's base workers drop
    PYTHONPATH (it is the head environment's path), and so do pip and the probe here, so
    that they all see the same packages."""
    return {k: v for k, v in env.items() if k != "PYTHONPATH"}


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
