"""Per-program code coverage of a gcc-instrumented compiler library, as fuzzing feedback.

A library built with gcc's ``--coverage`` keeps its counters in memory (libgcov, linked
into it) and writes them as ``.gcda`` files next to its objects' ``.gcno`` files when the
process exits. A TIR worker serves many programs in one process, so the counters are
handled per program instead: ``__gcov_reset`` zeroes them before the build, ``__gcov_dump``
writes them after it, and ``gcov`` reads the ``.gcda`` files with their ``.gcno`` files.

**What the library must export.** libgcov's ``__gcov_reset`` and ``__gcov_dump`` have
default visibility, but a static archive member is linked only where something refers to
it, and nothing in a compiler does: a plain ``--coverage`` build holds neither (its dynamic
table has ``__gcov_master`` and the counters' data only). ``-Wl,-u,__gcov_dump
-Wl,-u,__gcov_reset`` on the library's link line pulls them in, and they are then exported;
they are looked up on the library's own handle (``dlsym``), so a library loaded
``RTLD_LOCAL`` (TVM's compiler library) is reached too. Both act on every instrumented
library of the process that registered with the first one's ``__gcov_master`` (TVM's
runtime and compiler libraries alike), so one pair is enough.

**Where the counters go.** libgcov reads ``GCOV_PREFIX`` and ``GCOV_PREFIX_STRIP`` each time
it dumps: the ``.gcda`` files go under the collector's own folder, at their objects' paths
below the objects folder, where a mirror of the objects folder's ``.gcno`` files (symbolic
links) waits for them; the collector never writes into the build folder. Each program's files
are removed once read (libgcov adds to a ``.gcda`` file that exists).

**Features.** ``gcov --json-format --stdout --branch-probabilities``: each line run at least once is
``cov:line:<source>:<line>``, each branch taken at least once
``cov:branch:<source>:<line>:<k>`` (``k``: the branch's place among its line's), where
``<source>`` is the source path the object was compiled from.
"""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import tempfile

#: What the library must export (docs/tir.md, "With a coverage build of TVM").
HOOKS = ("__gcov_reset", "__gcov_dump")
#: The link flags that export them.
LINK_FLAGS = "-Wl,-u,__gcov_dump -Wl,-u,__gcov_reset"
#: ``library`` naming the compiler library TVM's Python package loaded.
TVM = "tvm"
#: The most ``.gcda`` files one ``gcov`` command reads.
CHUNK = 400


class CoverageError(Exception):
    """Coverage cannot be collected as configured: the message says why and what to change."""


def gcno_files(objects: str) -> list:
    """The ``.gcno`` files under ``objects``, relative to it, in name order."""
    out = []
    for d, _, names in os.walk(objects):
        out += [os.path.relpath(os.path.join(d, n), objects) for n in names if n.endswith(".gcno")]
    return sorted(out)


def check_settings(library: str | None, objects: str | None) -> str | None:
    """Why ``library`` and ``objects`` (the campaign's ``tir_coverage_*`` keys) cannot be
    used, read without loading anything; None when they can (or both are unset)."""
    if library is None and objects is None:
        return None
    if library is None or objects is None:
        return "tir_coverage_library and tir_coverage_objects go together: give both or neither"
    if library != TVM and not os.path.isfile(library):
        return f"tir_coverage_library: {library!r} is not a file (a shared library, or {TVM!r})"
    if not os.path.isdir(objects):
        return f"tir_coverage_objects: {objects!r} is not a folder"
    for _, _, names in os.walk(objects):
        if any(n.endswith(".gcno") for n in names):
            return None
    return (f"tir_coverage_objects: no .gcno file under {objects!r}: not the build folder of a library "
            "compiled with --coverage")


def library_handle(library: str):
    """The ctypes handle of ``library``: TVM's compiler library as TVM's package loaded it
    (``tvm``), or the shared library at a path (the same handle where it is loaded already)."""
    if library == TVM:
        import tvm.base  # local: optional compiler, imported where it runs

        loaded = getattr(tvm.base, "_LOADED_LIBS", {})
        handle = loaded.get("tvm_compiler") or loaded.get("tvm")
        if handle is None:
            raise CoverageError(f"tir_coverage_library: {TVM!r}: TVM's package loaded no compiler library "
                                f"(it holds {sorted(loaded) or 'none'})")
        return handle
    try:
        return ctypes.CDLL(os.path.abspath(library))
    except OSError as e:
        raise CoverageError(f"tir_coverage_library: cannot load {library!r}: {e}") from None


class Collector:
    """Resets, dumps and reads one library's gcov counters in this process."""

    def __init__(self, library: str, objects: str, gcov: str | None = None, folder: str | None = None):
        why = check_settings(library, objects)
        if why:
            raise CoverageError(why)
        self.gcov = gcov or shutil.which("gcov")
        if not self.gcov:
            raise CoverageError("gcov is not on PATH: coverage feedback needs the gcov of the gcc that built "
                                f"{library!r}")
        handle = library_handle(library)
        try:
            self._reset, self._dump = (getattr(handle, h) for h in HOOKS)
        except AttributeError:
            raise CoverageError(f"tir_coverage_library: {library!r} exports no {' / '.join(HOOKS)}: link it "
                                f"with --coverage {LINK_FLAGS} (docs/tir.md)") from None
        self.objects = os.path.realpath(objects)
        self.folder = folder or tempfile.mkdtemp(prefix="dlgate-gcov-")
        self.strip = len([p for p in self.objects.split(os.sep) if p])
        for rel in gcno_files(self.objects):
            link = os.path.join(self.folder, rel)
            os.makedirs(os.path.dirname(link), exist_ok=True)
            if not os.path.lexists(link):
                os.symlink(os.path.join(self.objects, rel), link)
        self._prove(library)

    def _prove(self, library: str) -> None:
        """A reset and a dump must leave counters for the objects' ``.gcno`` files: else the
        library has no counters, or its objects were compiled somewhere else."""
        self._clear()
        self._reset()
        self._write()
        dumped = self._gcda()
        self._clear()
        if not dumped:
            raise CoverageError(f"tir_coverage_library: {library!r} wrote no gcov counters under "
                                f"{self.objects!r}: it was not compiled with --coverage, or its objects were "
                                "compiled in another folder (name the build folder it was built in)")

    def measure(self, fn):
        """``(fn(), feedback)``: what ``fn`` returned and the coverage of what it ran in the
        library, ``{"features": [...]}`` (sorted), or ``{"error": why}`` where ``gcov`` could
        not read the counters (never ``fn``'s failure: an exception of ``fn`` is raised, after
        the counters are written)."""
        self._clear()
        self._reset()
        try:
            try:
                result = fn()
            finally:
                self._write()
            try:
                return result, {"features": sorted(self.read())}
            except CoverageError as e:
                return result, {"error": str(e)}
        finally:
            self._clear()

    def read(self) -> set:
        """The features of the ``.gcda`` files the last dump wrote (see the module's text)."""
        files = self._gcda()
        out: set = set()
        for i in range(0, len(files), CHUNK):
            cmd = [self.gcov, "--json-format", "--stdout", "--branch-probabilities", *files[i:i + CHUNK]]
            proc = subprocess.run(cmd, cwd=self.folder, capture_output=True, text=True)
            if proc.returncode != 0:
                lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
                raise CoverageError(f"gcov failed (exit {proc.returncode}): {lines[-1] if lines else ''}")
            out |= gcov_features(proc.stdout)
        return out

    def _write(self) -> None:
        saved = {k: os.environ.get(k) for k in ("GCOV_PREFIX", "GCOV_PREFIX_STRIP")}
        os.environ["GCOV_PREFIX"], os.environ["GCOV_PREFIX_STRIP"] = self.folder, str(self.strip)
        try:
            self._dump()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def _gcda(self) -> list:
        """The ``.gcda`` files in the folder whose ``.gcno`` is there, relative to it."""
        out = []
        for d, _, names in os.walk(self.folder):
            out += [os.path.relpath(os.path.join(d, n), self.folder) for n in names
                    if n.endswith(".gcda") and n[:-5] + ".gcno" in names]
        return sorted(out)

    def _clear(self) -> None:
        for d, _, names in os.walk(self.folder):
            for n in names:
                if n.endswith(".gcda"):
                    os.unlink(os.path.join(d, n))


def gcov_features(stdout: str, prefix: str = "cov:") -> set:
    """The features of ``gcov --json-format --stdout --branch-probabilities`` output (one JSON
    document a line, one a data file)."""
    out: set = set()
    for doc in stdout.splitlines():
        if not doc.strip():
            continue
        for f in json.loads(doc).get("files", ()):
            src = f["file"]
            for ln in f.get("lines", ()):
                if ln.get("count", 0) > 0:
                    out.add(f"{prefix}line:{src}:{ln['line_number']}")
                for k, b in enumerate(ln.get("branches", ())):
                    if b.get("count", 0) > 0:
                        out.add(f"{prefix}branch:{src}:{ln['line_number']}:{k}")
    return out
