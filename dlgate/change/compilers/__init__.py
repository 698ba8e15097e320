"""Per-compiler mapping from changed files to targets: one module per compiler (``tvm``,
``onnxruntime``, ``inductor``), each with

* ``NAME``: the compiler's name, as the backends call it;
* ``BACKENDS``: the dlgate backends that run it (a campaign's backends pick the mapper);
* ``map_file(fc, table) -> FileTargets``: one changed file's targets, or why none.

Each module reads its table, ``dlgate/change/tables/<NAME>.json``, generated from the
compiler's own source tree by ``tools/change_tables.py`` (see ``docs/change-aware.md``);
the tables are data, the modules say how a changed file and its enclosing definitions
are looked up in them.
"""
from __future__ import annotations

import importlib
import json
import os

from dlgate.change.compilers import common
from dlgate.change.targets import FileTargets, TargetSet, merge

NAMES = ("tvm", "onnxruntime", "inductor")
TABLES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "tables")


class MappingError(ValueError):
    pass


def module(name: str):
    if name not in NAMES:
        raise MappingError(f"no change mapping for compiler {name!r} (known: {', '.join(NAMES)})")
    return importlib.import_module(f"dlgate.change.compilers.{name}")


def table(name: str, path: str | None = None) -> dict:
    """The compiler's table (``path`` overrides the one shipped with dlgate)."""
    path = path or os.path.join(TABLES, f"{name}.json")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise MappingError(f"cannot read the {name} change table {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise MappingError(f"the {name} change table {path} is not JSON: {e}") from None
    if doc.get("compiler") != name:
        raise MappingError(f"{path} is a table for {doc.get('compiler')!r}, not {name!r}")
    return doc


def for_backends(backends) -> str | None:
    """The compiler whose change a campaign's backends test: the first backend that one of
    the mapping modules runs (TVM's backends, onnxruntime's, Inductor's)."""
    for b in backends:
        base = str(b).split(":")[0]
        for n in NAMES:
            if base in module(n).BACKENDS:
                return n
    return None


#: Path prefixes that say whose source tree a change is in (``guess``).
ROOTS = {"onnxruntime": ("onnxruntime/",), "inductor": ("torch/", "aten/"),
         "tvm": ("python/tvm/", "src/relax/", "src/tir/", "src/target/", "src/topi/", "include/tvm/", "src/runtime/",
                 "src/arith/", "src/ir/", "src/s_tir/", "src/tirx/", "ffi/")}


def guess(change) -> str | None:
    """The compiler whose source tree the change's paths are in, when they say so
    unambiguously; None otherwise."""
    votes = {n: sum(1 for p in change.paths if p.startswith(ROOTS[n])) for n in NAMES}
    best = sorted((v, n) for n, v in votes.items() if v)
    if not best or (len(best) > 1 and best[-1][0] == best[-2][0]):
        return None
    return best[-1][1]


def map_change(change, compiler: str, table_path: str | None = None) -> TargetSet:
    """A change's targets on ``compiler``."""
    mod = module(compiler)
    tab = table(compiler, table_path)
    ts = TargetSet(compiler, change.source,
                   table={k: tab.get(k) for k in ("compiler", "version", "commit") if tab.get(k)})
    for fc in change.files:
        skipped = common.ordinary(fc.where)
        if skipped:
            ts.files.append(FileTargets(fc.where, skipped=skipped))
        elif fc.status == "deleted":
            ts.files.append(FileTargets(fc.where, skipped="deleted", note="a deleted file is tested through what replaces it"))
        else:
            ft = mod.map_file(fc, tab)
            ft.targets = merge(ft.targets)
            ts.files.append(ft)
    return ts
