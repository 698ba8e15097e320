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
   meanwhile, with a token that may write checks, it shows the run's live progress (the
   job summary's live section, which GitHub shows only after the step) as a check run on
   the commit and completes it with the run's conclusion and summary (``check-run``);
6. turns ``verdict.json`` into annotations and step outputs;
7. on trusted events only, opens issues (``dlgate issues``) and updates the baseline.

Its exit status is dlgate's: 0 no new failures, 1 new failures, 2 usage or configuration
error, 3 dlgate's own internal error, 4 a backend the gate needs could not run, 130 or 143
interrupted (the job was cancelled; the reports of the cases that ran are written, marked
as interrupted, and the ``verdict`` output is ``interrupted``).

Security rules, each enforced in one place of this package: inputs become argument lists passed
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

This module runs the steps in order; each step is a module of the ``entrypoint`` package:
``workflow`` (what the runner reads), ``inputs`` (inputs and the event), ``plan`` (the
checked inputs as ``dlgate`` arguments), ``children`` (running pip, the compiler and dlgate),
``compiler`` (installing and verifying the build under test), ``base`` (the base build),
``results`` (outputs and annotations) and ``followups`` (issues and the baseline).
"""
from __future__ import annotations

import os
import shutil
import sys
import time
import traceback

if __package__ in (None, ""):
    # Run as a script (the image's ENTRYPOINT): its modules are imported as the package they
    # are, from the folder above, last (the installed dlgate first), and never as top-level
    # names that could shadow another module.
    _HERE = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE] + [os.path.dirname(_HERE)]

from entrypoint.base import check_base_env, create_base_env, novelty_notice
from entrypoint.children import call, child_env, dlgate, run_as
from entrypoint.compiler import install_compiler, verify_builds
from entrypoint.followups import open_issues, update_baseline
from entrypoint.inputs import Context, InputError, get_input, load_context
from entrypoint.plan import Plan, here, output_dir, plan, working_directory
from entrypoint.results import (
    annotations,
    live_check,
    normalize_exit,
    outputs,
    read_summary,
    read_verdict,
    run_notes,
    seal_progress,
)
from entrypoint.workflow import (
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    append_summary,
    command,
    emit,
    fenced,
    log,
    mask,
    write_outputs,
)


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
    live = live_check(p, ctx, env, token)  # here, not in dlgate run: the token stays out of the compiler's reach
    rc = normalize_exit(call(dlgate(*p.dlgate_args), f"dlgate {p.dlgate_args[0]}", here(p, ctx), cenv, ids))
    if live is not None:
        live.complete(rc, read_summary(p, ctx, started))
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
