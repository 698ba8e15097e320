"""What every compiler's mapping shares: telling tests, docs and build files apart from
source, and looking a changed file up in a table's ``files`` and ``prefixes``."""
from __future__ import annotations

import fnmatch
import posixpath

from dlgate.change.targets import FileTargets, Target

#: (why, patterns): a changed path matching one of them runs the ordinary batch. Checked
#: in order; the first match names the reason.
ORDINARY = (
    ("tests", ("tests/*", "test/*", "*/tests/*", "*/test/*", "*/testing/*", "test_*.py", "*_test.cc",
               "*_test.cpp", "*/test_*.py", "testdata/*", "*/testdata/*", "*/unittest/*", "*_test.py")),
    ("build", ("CMakeLists.txt", "*/CMakeLists.txt", "cmake/*", "*.cmake", ".github/*", ".ci/*", "ci/*",
               "tools/ci_build/*", "docker/*", "*.yml", "*.yaml", "setup.py", "setup.cfg", "pyproject.toml",
               "requirements*.txt", ".gitignore", ".gitmodules", "*/Dockerfile*", "Dockerfile*", "Makefile",
               "*.bzl", "BUILD", "*/BUILD", "WORKSPACE", "*.sh", "*.bat", "*.ps1", "jenkins/*", "Jenkinsfile",
               ".clang-format", ".clang-tidy", ".pre-commit-config.yaml", "version.txt", "VERSION_NUMBER")),
    ("docs", ("docs/*", "doc/*", "*/docs/*", "*.md", "*.rst", "*.txt", "LICENSE*", "NOTICE*", "CODEOWNERS",
              "*/README*", "README*", "*.ipynb", "gallery/*")),
)


def ordinary(path: str) -> str:
    """``"tests"``, ``"docs"`` or ``"build"`` when ``path`` is one, else ``""``."""
    base = posixpath.basename(path)
    for why, pats in ORDINARY:
        for p in pats:
            if fnmatch.fnmatch(path, p) or ("/" not in p and fnmatch.fnmatch(base, p)):
                return why
    return ""


def targets(rows, why: str) -> list:
    """Targets from a table's JSON rows, each given ``why``."""
    out = []
    for r in rows or ():
        t = Target.from_json(r)
        out.append(Target(t.kind, t.name, t.opsets, t.dtypes, t.regimes, why))
    return out


def lookup(fc, tab: dict) -> FileTargets:
    """The generic lookup: an exact entry in ``tab["files"]`` (its ``definitions`` for the
    definitions enclosing the hunks, its ``targets`` for the rest of the file), else the
    longest matching entry of ``tab["prefixes"]``; else ``unmapped``. A compiler's module
    may look further before or after this."""
    path = fc.where
    entry = (tab.get("files") or {}).get(path)
    if entry is not None:
        found, rest = [], False
        defs = entry.get("definitions") or {}
        for h in fc.hunks or [None]:
            names = [d for d in (h.enclosing if h is not None else []) if d in defs]
            if names:
                # the innermost definition the table knows
                found += targets(defs[names[-1]], f"{path}: {names[-1]}")
            else:
                rest = True
        if rest:
            found += targets(entry.get("targets"), path)
        if found:
            return FileTargets(path, found)
        return FileTargets(path, skipped="unmapped",
                           note=entry.get("note") or "the changed lines are outside every definition the table maps")
    best = None
    for p in tab.get("prefixes") or ():
        if path.startswith(p["prefix"]) and (best is None or len(p["prefix"]) > len(best["prefix"])):
            best = p
    if best is not None:
        ts = targets(best.get("targets"), f"{path} ({best['prefix']})")
        if ts:
            return FileTargets(path, ts)
        return FileTargets(path, skipped="unmapped", note=best.get("note") or f"{best['prefix']} maps to no target")
    return FileTargets(path, skipped="unmapped", note="no table entry for this path")
