"""The compiler under test: installed with pip (``dlgate.install`` replaces a distribution
of another name that provides the same import package), and checked to be what ``import``
gives as the user the compiler runs as."""
from __future__ import annotations

import sys

from dlgate import install
from dlgate import markdown as md
from entrypoint.children import base_env_vars, call, child_env, user_kwargs
from entrypoint.inputs import Context
from entrypoint.plan import Plan
from entrypoint.workflow import EXIT_CANNOT_RUN, EXIT_OK, EXIT_USAGE, command, emit, log, write_summary


def install_compiler(p: Plan, ctx: Context, env: dict, python: str = sys.executable) -> int:
    """pip-install the build under test into dlgate's environment (``python``'s), as argument
    lists, so that it replaces the image's build (:mod:`dlgate.install`): a distribution
    there that provides the same import package under another name (``apache-tvm`` for a
    ``tvm`` wheel) is uninstalled first. Whether ``import`` then gives the new build is
    checked by :func:`verify_builds`, once the user the compiler runs as is known."""
    if not p.requirements:
        return EXIT_OK

    cenv = child_env(env)
    titles = {"install": "dlgate: install the compiler under test"}
    try:
        p.installed = res = install.replace(python, p.requirements, run=pip_steps(titles, ctx.workspace, cenv),
                                            cwd=ctx.workspace, env=cenv)
    except install.InstallError as e:
        emit(command("error", f"cannot install the compiler under test: {e}", title="dlgate: compiler install failed"))
        return EXIT_CANNOT_RUN
    return installed_status(res, f"the compiler under test ({', '.join(p.requirements)})", "",
                      "dlgate: compiler install failed")


def pip_steps(titles: dict, cwd: str, env: dict):
    """The pip runner for :func:`dlgate.install.replace`: each pip step in a fenced log group."""
    return lambda args, step: call(args, titles.get(step, f"dlgate: pip {step}"), cwd, env)


def installed_status(res, what: str, after: str, title: str) -> int:
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
