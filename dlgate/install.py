"""Installing a build so that it replaces the one in place instead of shadowing or mixing with it.

A compiler's own wheel may carry another distribution name than the pinned release while
providing the same import package: TVM's source tree builds ``tvm``, the image holds
``apache-tvm``, both ``tvm/``. pip sees two unrelated distributions and installs the second
over the first in the same folder: files of both, two ``.dist-info`` folders, and an
``import tvm`` that still works, on a mix. This module installs in four steps:

1. :func:`survey` the target interpreter: every distribution it sees, its version, folder and
   top-level import packages (``top_level.txt``, or the ``RECORD``: a folder with
   ``__init__.py`` or a module file; namespace packages such as ``google`` are shared by
   design and never count);
2. ``pip uninstall`` the distributions in the folder pip installs into that provide a package
   of the new build under another name (a requirement by name shows its packages only once
   installed: a clash found then is repaired by a ``--force-reinstall --no-deps``);
3. ``pip install`` the new build;
4. :func:`verify`, in a fresh interpreter, that importing each top-level package of each new
   distribution gives a file recorded by that distribution, with its version, and that no
   other distribution in that folder still claims the package (a mix): every failure is a
   line of :attr:`Verified.problems`, which the caller turns into exit status 4 ("cannot run").

Standard library only: the survey runs this very file in the target interpreter
(``python -c <this file> --survey``), whatever that interpreter has installed, and
``python -m dlgate.install --python PY REQUIREMENT...`` runs all four steps from the command line.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from email.parser import HeaderParser

#: Printed before the survey's JSON, so that what an imported compiler prints is ignored.
MARK = "@@dlgate-install-survey@@"
EXIT_USAGE, EXIT_CANNOT_RUN = 2, 4
PIP = ("-m", "pip")
PIP_QUIET = ("--no-input", "--disable-pip-version-check")
#: Top-level names that several unrelated distributions ship by mistake: never a clash to repair.
_IGNORED_TOPS = frozenset({"test", "tests", "__pycache__"})
_EXT = (".py", ".so", ".pyd")
#: The distribution name at the start of a requirement (``apache-tvm==0.27.0``, ``tvm @ URL``).
_DIST = re.compile(r"^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[^]]*\])?\s*(?:[<>=!~;@]|$)")


class InstallError(Exception):
    """The target interpreter cannot be surveyed (it does not start, or dies before reporting)."""


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503): ``Apache_TVM`` is ``apache-tvm``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def dist_name(requirement: str) -> str:
    """The distribution a requirement or wheel installs, when the text shows it ("" when
    not: a VCS URL, a folder)."""
    req = requirement.strip()
    m = _DIST.match(req)
    if m and req[m.end() - 1:m.end()] == "@":  # NAME @ URL
        return m.group(1)
    wheel = os.path.basename(req.split("#", 1)[0].split("?", 1)[0])
    if wheel.endswith(".whl"):  # NAME-VERSION-...whl, a path or a URL
        return wheel.split("-", 1)[0] if "-" in wheel else ""
    return m.group(1) if m and "://" not in req else ""


def tops(paths, listed: str | None = None) -> list:
    """The top-level import packages that a distribution's files (paths relative to its
    folder, '/'-separated, as in RECORD or a wheel) make importable: a folder holding an
    ``__init__`` file or a module file at the top. ``listed`` (``top_level.txt``) is used
    only when there are no files to read; namespace packages never count."""
    found = []
    for path in paths:
        parts = path.split("/")
        if parts[0].endswith(".data") and len(parts) > 2 and parts[1] in ("purelib", "platlib"):
            parts = parts[2:]  # a wheel's NAME.data/purelib/pkg/...
        if parts[0].endswith((".dist-info", ".data")) or parts[0] in ("..", ""):
            continue
        if len(parts) == 1 and parts[0].endswith(_EXT):
            found.append(parts[0].split(".")[0])
        elif len(parts) == 2 and parts[1].split(".")[0] == "__init__" and parts[1].endswith(_EXT):
            found.append(parts[0])
    if not paths and listed:
        found = listed.split()
    return [t for t in dict.fromkeys(found) if t.isidentifier() and t not in _IGNORED_TOPS]


@dataclass
class Dist:
    """One distribution as an interpreter sees it (or as a wheel describes it)."""

    name: str
    version: str
    location: str = ""  # the folder holding its .dist-info
    top: list = field(default_factory=list)

    @property
    def key(self) -> str:
        return canonical(self.name)


def wheel_info(path: str) -> Dist:
    """A wheel's distribution, version and top-level packages, read from the file itself."""
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        meta = [n for n in names if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
        if len(meta) != 1:
            raise ValueError(f"{path}: not a wheel ({len(meta)} .dist-info/METADATA files)")
        headers = HeaderParser().parsestr(z.read(meta[0]).decode("utf-8", "replace"))
    return Dist(headers.get("Name", ""), headers.get("Version", ""), "", tops(names))


# ---------------------------------------------------------------- the survey (runs in the target interpreter)


def _survey(targets: list) -> dict:
    """Every distribution this interpreter sees, and for each top-level package of each
    distribution in ``targets`` (keys) what ``import`` resolves to."""
    import importlib
    import importlib.metadata as md
    import sysconfig

    dists, files, first = [], {}, {}
    for d in md.distributions():
        name = d.metadata["Name"]
        if not name:
            continue
        rec = [f.as_posix() for f in d.files or []]
        loc = os.path.realpath(str(d.locate_file("")))
        entry = {"name": name, "key": canonical(name), "version": d.version, "location": loc,
                 "top": tops(rec, d.read_text("top_level.txt")), "record": bool(rec)}
        files[len(dists)] = (loc, rec)
        first.setdefault(entry["key"], entry)  # the one importlib.metadata finds first, as import does
        dists.append(entry)
    dirs = [os.path.realpath(sysconfig.get_path(k)) for k in ("purelib", "platlib")]
    out = {"prefix": os.path.realpath(sys.prefix), "dirs": list(dict.fromkeys(dirs)), "dists": dists, "modules": {}}
    modules = {}
    for key in targets:
        for top in first[key]["top"] if key in first else []:
            modules.setdefault(top, key)
    for mod, key in modules.items():
        got = out["modules"][mod] = {"target": key}
        try:
            m = importlib.import_module(mod)
        except BaseException as e:  # a compiler's import may raise anything, SystemExit included
            got["error"] = (type(e).__name__ + ": " + str(e))[:300]
            continue
        f = getattr(m, "__file__", None) or next(iter(getattr(m, "__path__", None) or []), None)
        got["file"] = f and os.path.realpath(f)
        v = getattr(m, "__version__", None)
        got["version"] = v if isinstance(v, str) else None
        claim = [i for i, x in enumerate(dists) if mod in x["top"]]
        paths = {i: {os.path.normpath(os.path.join(files[i][0], r)) for r in files[i][1]} for i in claim}
        base = os.path.basename(got["file"] or "")
        got["owners"] = [dists[i]["key"] for i in claim if got["file"] in paths[i] or any(  # through a link
            os.path.realpath(p) == got["file"] for p in paths[i] if os.path.basename(p) == base)]
        target = next(i for i in claim if dists[i] is first[key])
        if not got["file"]:
            continue
        pkg = os.path.dirname(got["file"]) if os.path.basename(got["file"]).startswith("__init__") else got["file"]
        others = got["others"] = []
        for i in claim:
            if dists[i]["key"] == key or dists[i]["location"] != dists[target]["location"]:
                continue
            left = sorted(p for p in paths[i] - paths[target]  # byte code aside: the new build's is recompiled
                          if (p == pkg or p.startswith(pkg + os.sep)) and not p.endswith(".pyc") and os.path.exists(p))
            others.append({"name": dists[i]["name"], "version": dists[i]["version"], "leftover": left[:5],
                           "n_leftover": len(left)})
    return out


def survey(python: str, targets: list = (), *, cwd: str | None = None, env: dict | None = None,
           **popen) -> dict:
    """Run :func:`_survey` in ``python`` (a fresh process: what it imports is what a worker
    started the same way imports); ``popen``: further subprocess arguments (user, group)."""
    try:
        res = subprocess.run([python, "-c", _SOURCE, "--survey", json.dumps(list(targets))], cwd=cwd, env=env,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                             timeout=600, check=False, **popen)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InstallError(f"{python}: cannot run: {e}") from e
    for line in reversed(res.stdout.splitlines()):
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    tail = (res.stdout + res.stderr).strip().splitlines()[-1:] or ["no output"]
    raise InstallError(f"{python} dies before reporting what it has installed (exit status {res.returncode}): "
                       f"{tail[0][:300]}")


# ---------------------------------------------------------------- replace: uninstall the clashes, install


def _dists(report: dict) -> list:
    return [Dist(d["name"], d["version"], d["location"], d["top"]) for d in report["dists"]]


def clashes(report: dict, wanted: dict) -> list:
    """The distributions in the folder pip installs into (``report['dirs']``) that provide a
    top-level package of a wanted distribution (``wanted``: key -> top-level packages)
    under another name. Those elsewhere on the path (the image's, seen by a second
    environment) are left alone: the new build's own folder comes first there."""
    found = []
    for d in _dists(report):
        if d.key in wanted or d.location not in report["dirs"]:
            continue
        if any(set(d.top) & set(top) for top in wanted.values()):
            found.append(d)
    return found


@dataclass
class Installed:
    """What :func:`replace` did in one interpreter."""

    python: str
    targets: list = field(default_factory=list)  # keys of the distributions the requirements installed
    removed: list = field(default_factory=list)  # Dist: uninstalled first, they provided the same packages
    rc: int = 0  # pip's exit status, 0 when every step worked
    step: str = ""  # the pip step that failed


def _pip_runner(args: list, title: str) -> int:
    print(f"{title}: $ {' '.join(args)}", flush=True)
    return subprocess.call(args, stdin=subprocess.DEVNULL)


def replace(python: str, requirements: list, *, steps: tuple = (((), "install"),), run=_pip_runner,
            cwd: str | None = None, env: dict | None = None) -> Installed:
    """Install ``requirements`` (requirement texts or wheel paths) with ``python``'s pip,
    first uninstalling what would mix with them. ``steps``: (extra pip options, title) of
    each ``pip install`` run in turn; ``run(args, title) -> exit status`` runs pip (titles:
    those of ``steps``, "uninstall before installing", "uninstall after installing",
    "reinstall")."""
    res = Installed(python)
    before = survey(python, cwd=cwd, env=env)
    wanted, unknown = {}, []
    for req in requirements:
        w = _readable_wheel(req)
        if w is not None:
            wanted[w.key] = w.top
        elif dist_name(req):
            key = canonical(dist_name(req))  # its packages show after the install; those of the same name now
            wanted[key] = next((d.top for d in _dists(before) if d.key == key), [])
        else:
            unknown.append(req)
    clash = clashes(before, wanted)
    # a wanted distribution already in that folder shares files with the clash, which its
    # uninstall deletes: it goes too, and the install lays it out afresh
    mixed = [d for d in _dists(before) if clash and d.key in wanted and d.location in before["dirs"]]
    if not _uninstall(res, clash, run, "before installing", also=mixed):
        return res
    for extra, title in steps:
        res.rc = run([python, *PIP, "install", *PIP_QUIET, *extra, *requirements], title)
        if res.rc:
            res.step = "install"
            return res
    after = survey(python, cwd=cwd, env=env)
    res.targets = list(wanted)
    if unknown:  # a folder or VCS URL: the distributions the install changed
        seen = {(d.key, d.version, d.location) for d in _dists(before)}
        res.targets += [d.key for d in _dists(after) if (d.key, d.version, d.location) not in seen
                        and d.key not in wanted]
    now = {d.key: d.top for d in reversed(_dists(after)) if d.key in res.targets}  # the first of a name wins
    late = clashes(after, now)
    if late:  # found only now (a requirement by name): the folder holds a mix, rebuilt from scratch
        if not _uninstall(res, late, run, "after installing"):
            return res
        res.rc = run([python, *PIP, "install", *PIP_QUIET, "--force-reinstall", "--no-deps", *requirements],
                     "reinstall")
        res.step = "reinstall" if res.rc else ""
    return res


def _readable_wheel(req: str) -> Dist | None:
    """A local wheel's description; None for anything else, or a wheel that cannot be read
    (pip then says why it cannot install it)."""
    if not (req.endswith(".whl") and os.path.isfile(req)):
        return None
    try:
        return wheel_info(req)
    except (OSError, ValueError, zipfile.BadZipFile):
        return None


def _uninstall(res: Installed, dists: list, run, when: str, also: list = ()) -> bool:
    if not dists:
        return True
    res.removed += dists
    names = dict.fromkeys(d.name for d in [*dists, *also])
    res.rc = run([res.python, *PIP, "uninstall", "-y", *PIP_QUIET, *names],
                 f"uninstall {when}")
    res.step = "uninstall" if res.rc else ""
    return not res.rc


# ---------------------------------------------------------------- verify: import in a fresh interpreter


@dataclass
class Row:
    """One imported package: from which distribution, version and file."""

    dist: str
    version: str
    module: str
    file: str = ""
    module_version: str = ""
    ok: bool = True


@dataclass
class Verified:
    python: str
    rows: list = field(default_factory=list)
    problems: list = field(default_factory=list)


def _public(v: str) -> str:
    return v.strip().lower().lstrip("v").split("+", 1)[0]


def verify(python: str, targets: list, *, cwd: str | None = None, env: dict | None = None, **popen) -> Verified:
    """Import every top-level package of each target distribution (keys) in a fresh
    ``python`` and check that it is that distribution's: its file recorded by it, its
    ``__version__`` (when it has one) the distribution's, and no other distribution in the
    same folder claiming it."""
    res = Verified(python)
    report = survey(python, targets, cwd=cwd, env=env, **popen)
    first = {}
    for d in _dists(report):
        first.setdefault(d.key, d)
    res.problems += [f"{key} is not installed for {python}" for key in targets if key not in first]
    for mod, g in report["modules"].items():
        key = g["target"]
        d = first[key]
        row = Row(d.name, d.version, mod, g.get("file") or "", g.get("version") or "")
        res.rows.append(row)
        bad = []
        if "error" in g:
            bad.append(f"import {mod} fails: {g['error']}")
        elif key not in g.get("owners", []):
            bad.append(f"import {mod} gives {g.get('file')}"
                       f"{' (' + ', '.join(g['owners']) + ')' if g.get('owners') else ''}, not a file of "
                       f"{d.name} {d.version} just installed in {d.location}")
        elif row.module_version and _public(row.module_version) != _public(d.version):
            bad.append(f"import {mod} gives version {row.module_version}, but {d.name} is {d.version}")
        for o in g.get("others") or []:
            left = f"; {o['n_leftover']} of its files remain, e.g. {o['leftover'][0]}" if o["n_leftover"] else ""
            bad.append(f"{mod} in {d.location} is a mix: {o['name']} {o['version']} is installed there too{left}")
        row.ok = not bad
        res.problems += bad
    return res


def main(argv: list | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m dlgate.install", description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=sys.executable, help="the interpreter to install into (default: this one)")
    ap.add_argument("--survey", help=argparse.SUPPRESS)
    ap.add_argument("requirements", nargs="*", help="requirements or wheel paths")
    a = ap.parse_args(argv)
    if a.survey is not None:
        sys.stdout.write("\n" + MARK + json.dumps(_survey(json.loads(a.survey))) + "\n")
        return 0
    if not a.requirements:
        ap.error("give at least one requirement or wheel")
    try:
        res = replace(a.python, a.requirements)
        if res.rc:
            print(f"dlgate.install: pip {res.step} failed (exit status {res.rc})", file=sys.stderr)
            return EXIT_USAGE
        checked = verify(a.python, res.targets)
    except InstallError as e:
        print(f"dlgate.install: cannot run: {e}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    for d in res.removed:
        print(f"removed first: {d.name} {d.version} (provides {', '.join(d.top)} too)")
    for r in checked.rows:
        print(f"{r.dist} {r.version}: import {r.module} gives {r.module_version or '?'} from {r.file}")
    if checked.problems:
        print(f"dlgate.install: cannot run: {'; '.join(checked.problems)}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    return 0


#: This file's text, run in the target interpreter with ``-c`` for the survey (where there is no __file__).
def _own_source() -> str:
    with open(__file__, encoding="utf-8") as f:
        return f.read()


#: This file's text, run in the target interpreter with ``-c`` for the survey (where there is no __file__).
_SOURCE = _own_source() if "__file__" in globals() else ""

if __name__ == "__main__":
    sys.exit(main())
