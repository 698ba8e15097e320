"""Building the mapping tables (``dlgate/change/tables/<compiler>.json``) from a
compiler's own source tree, one module per compiler with ``build(source) -> dict``, beside
the modules that read its source (``<compiler>_*.py``).

``tools/change_tables.py`` runs them; the tables are refreshed for each compiler release
(``docs/change-aware.md``). A :class:`Source` reads the tree either from a git directory at
a ref (a bare clone or mirror: no work tree needed) or from a plain folder (an installed
package's files, an unpacked release).
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess

from dlgate.change.compilers import NAMES


class SourceError(RuntimeError):
    pass


class Source:
    """A source tree at one ref: ``read(path)``, ``ls(prefix)``, ``commit``, ``ref``."""

    def __init__(self, where: str, ref: str | None = None):
        self.where = os.path.abspath(where)
        self.ref = ref
        self.git = ref is not None
        if self.git:
            self.commit = self._git("rev-parse", f"{ref}^{{commit}}").strip()
            self._files = self._git("ls-tree", "-r", "--name-only", self.commit).splitlines()
        else:
            if not os.path.isdir(self.where):
                raise SourceError(f"{where} is not a folder")
            self.commit = ""
            self._files = sorted(
                os.path.relpath(os.path.join(d, f), self.where).replace(os.sep, "/")
                for d, _, fs in os.walk(self.where) for f in fs)
        self._cache: dict = {}

    def _git(self, *args: str) -> str:
        gd = self.where if os.path.basename(self.where) != ".git" and not os.path.isdir(os.path.join(self.where, ".git")) \
            else (os.path.join(self.where, ".git") if os.path.isdir(os.path.join(self.where, ".git")) else self.where)
        r = subprocess.run(["git", "--git-dir", gd, *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise SourceError(f"git {args[0]} in {self.where}: {r.stderr.strip()[-300:]}")
        return r.stdout

    def ls(self, prefix: str = "", suffixes: tuple = ()) -> list:
        return [f for f in self._files if f.startswith(prefix) and (not suffixes or f.endswith(suffixes))]

    def exists(self, path: str) -> bool:
        return path in self._files

    def read(self, path: str) -> str:
        got = self._cache.get(path)
        if got is None:
            if self.git:
                got = self._git("show", f"{self.commit}:{path}")
            else:
                with open(os.path.join(self.where, path), encoding="utf-8", errors="replace") as f:
                    got = f.read()
            self._cache[path] = got
        return got


def build(compiler: str, source: Source, **kw) -> dict:
    if compiler not in NAMES:
        raise SourceError(f"no table builder for {compiler!r} (known: {', '.join(NAMES)})")
    doc = importlib.import_module(f"dlgate.change.builders.{compiler}").build(source, **kw)
    doc.setdefault("compiler", compiler)
    doc.setdefault("commit", source.commit)
    doc.setdefault("ref", source.ref or "")
    doc["generated_by"] = "tools/change_tables.py"
    return doc


def dump(doc: dict) -> str:
    """The table's bytes: sorted keys, one row per line where it helps diffs."""
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"
