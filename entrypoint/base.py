"""The base build (head versus base): a second environment holding the pull request's base
compiler, which sees the image's packages, and the check that each environment imports its
own build; without one, the notice that novelty is decided against the baseline."""
from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import yaml  # dlgate's own dependency, in the image

from dlgate import install
from entrypoint.children import base_env_vars, call, child_env, user_kwargs
from entrypoint.compiler import installed_status, pip_steps
from entrypoint.inputs import PR_EVENTS, Context
from entrypoint.plan import Plan, here
from entrypoint.workflow import EXIT_CANNOT_RUN, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, command, emit, fenced, log

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


def dist_name(requirement: str) -> str:
    """The distribution a requirement or wheel installs, when the text shows it ("" when
    not: a VCS URL, a folder)."""
    return install.dist_name(requirement)


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

    steps = ((("--force-reinstall", "--no-deps"), "dlgate: install the base build"),
             ((), "dlgate: install the base build's missing dependencies"))
    try:
        base.installed = res = install.replace(base.python, p.base_requirements, steps=steps,
                                               run=pip_steps({t: t for _, t in steps}, root, cenv), cwd=root, env=cenv)
    except install.InstallError as e:
        emit(command("error", f"cannot install the base build: {e}. No fallback to the baseline",
                     title="dlgate: base build install failed"))
        return EXIT_CANNOT_RUN, base
    rc = installed_status(res, f"the base build ({', '.join(p.base_requirements)}) in {root}",
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
