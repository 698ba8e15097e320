"""TVM (Relax): a changed file of TVM's source tree -> the ONNX operators and TVM rewrites
a batch should aim at, from ``dlgate/change/tables/tvm.json`` (built by
``dlgate.change.builders.tvm`` from the release's source).

Each hunk is looked up by the definitions enclosing it, innermost first (Python by
qualified name, ``Gelu._impl_v13``, so two converters' ``_impl_v13`` stay apart; C++ by
function name). Where the changed lines themselves name what they concern, that counts
too: a convert-map line (``"Gelu": Gelu,``) names its operator, a
``register_legalize("relax.x")``, ``TVM_REGISTER_OP("relax.x")`` or ``RELAX_REGISTER_*``
line names a Relax op, a ``TVM_REGISTER_OP("tirx.exp")`` chain (in the lines or, in C++,
git's hunk header, the registration the hunk sits in) names an intrinsic; and in a
lowering rule, the float dtypes the changed code names narrow the targets' dtypes.

A file of TVM's TIR passes or code generation (:data:`TIR_PREFIXES`) maps to the TIR mode
as well (``tir`` targets, :func:`tir_targets`): the passes it names, else ``codegen``.
"""
from __future__ import annotations

import re

from dlgate.change.builders.tvm_native import dtypes_said, macro_op
from dlgate.change.compilers import common
from dlgate.change.targets import TIR, FileTargets, Target, merge

NAME = "tvm"
BACKENDS = ("tvm",)

_MAP_LINE = re.compile(r'^\s*"(\w+)"\s*:\s*[\w.]+\s*,?\s*(?:#.*)?$')
_RELAX = re.compile(r'"(relax\.[\w.]+)"')
_TIRX = re.compile(r'"tirx?\.(\w+)"')
_MACRO = re.compile(r"\b(RELAX_REGISTER_\w+)\(([^)]*)\)")
_IMPL = re.compile(r"_impl_v(\d+)$")


def _keys(path: str, enclosing: list, known) -> list:
    """The table keys a hunk's enclosing definitions name. A hunk can span several
    definitions (``enclosing`` lists them all, each outermost first), so every name is
    tried: in Python as ``Class.method`` with any class before it in the list, else alone;
    in C/C++ alone (innermost first). A class is dropped when one of its methods is found
    (the method says more)."""
    out: list = []
    if path.endswith(".py"):
        for i, n in enumerate(enclosing):
            key = next((f"{enclosing[j]}.{n}" for j in range(i - 1, -1, -1) if f"{enclosing[j]}.{n}" in known), None)
            if key is None:
                m = _IMPL.search(n)
                owner = next((enclosing[j] for j in range(i - 1, -1, -1) if enclosing[j] in known), None)
                if m and owner:
                    key = f"{owner}.{n}"  # an _impl_vN the table lacks: see _new_impl
                elif n in known:
                    key = n
            if key and key not in out:
                out.append(key)
        return [k for k in out if not any(o.startswith(k + ".") for o in out)]
    for name in reversed(enclosing):
        for n in (name, name.split("::")[-1]):
            if n in known and n not in out:
                out.append(n)
    return out


def _rows(rows, why: str, dtypes: tuple = ()) -> list:
    out = []
    for t in common.targets(rows, why):
        if dtypes and t.kind == "operator":
            t = Target(t.kind, t.name, t.opsets, dtypes, t.regimes, t.why)
        out.append(t)
    return out


def _new_impl(entry: dict, cls: str, version: int, rows: list, ceiling: int) -> list:
    """Rows for an ``_impl_vN`` the table does not know (the change adds it): the class's
    operators over the opsets N serves among the class's versions."""
    vs = sorted(set(entry.get("impls", {}).get(cls, [])) | {version})
    i = vs.index(version)
    lo = 1 if i == 0 else version
    hi = vs[i + 1] - 1 if i + 1 < len(vs) else max(version, ceiling)
    return [{"kind": "operator", "name": n, "opsets": [lo, hi]} for n in sorted({r["name"] for r in rows})]


def _named_in_text(h, table: dict) -> list:
    """(rows, why) for ops the changed lines (or, in C/C++, the registration the hunk
    sits in) name."""
    lines = list(h.text)
    if h.header and any(k in h.header for k in ("TVM_REGISTER_OP", "RELAX_REGISTER_", "register_legalize")):
        lines.append(h.header)  # git's hunk header: the registration the hunk sits in
    out = []
    relax, intr = table.get("relax_ops") or {}, table.get("intrinsics") or {}
    for line in lines:
        for op in _RELAX.findall(line):
            if op in relax:
                out.append((relax[op], op))
        for m in _MACRO.finditer(line):
            op = macro_op(m.group(1), m.group(2))
            if op in relax:
                out.append((relax[op], op))
        for name in _TIRX.findall(line):
            if f"tirx.{name}" in intr:
                out.append((intr[f"tirx.{name}"], f"tirx.{name}"))
    return out


def _hunk(path: str, entry: dict, h, table: dict) -> tuple:
    """(targets, note) for one hunk."""
    defs = entry.get("definitions") or {}
    broad = entry.get("broad") or {}
    dtypes = dtypes_said(h.text) if entry.get("dtypes_from_text") else ()
    enclosing = list(h.enclosing) if h is not None else []
    found: list = []
    note = ""
    unreached = entry.get("unreached") or {}
    relax, intr = table.get("relax_ops") or {}, table.get("intrinsics") or {}
    known = set(defs) | set(broad) | set(unreached) | set(relax) | set(intr)
    keys = _keys(path, enclosing, known)
    for key in keys:
        if key in unreached:
            note = f"{key} {unreached[key]}"
        elif key in relax or key in intr:  # a registration chain (TVM_REGISTER_OP("tirx.asin")) the hunk sits in
            found += _rows(relax.get(key) or intr.get(key), f"{path}: {key}", dtypes)
        elif key in broad:
            note = f"{key} is shared by {broad[key]} ONNX operators' code paths: the ordinary batch covers it"
        elif key in defs:
            rows = defs[key]
            if not rows:
                note = (f"no motif aims at this pass ({key})" if key in (entry.get("passes") or ())
                        else entry.get("note") or f"{key} maps to no target")
            found += _rows(rows, f"{path}: {key}", dtypes)
        else:  # Class._impl_vN the table lacks: the class's operators at the opsets N serves
            cls, _, meth = key.rpartition(".")
            rows = _new_impl(entry, cls, int(_IMPL.search(meth).group(1)), defs.get(cls) or [],
                             table.get("opset_ceiling") or 1)
            found += _rows(rows, f"{path}: {key}")
    # a convert-map line names its operator
    if entry.get("convert_map") and (entry["convert_map"] in enclosing or not enclosing):
        ops = entry.get("operators") or {}
        for line in h.text:
            m = _MAP_LINE.match(line)
            if m:
                op = m.group(1)
                rows = ops.get(op) or [{"kind": "operator", "name": op}]
                found += _rows(rows, f"{path}: {entry['convert_map']} ({op})")
    if not found:
        for rows, op in _named_in_text(h, table):
            found += _rows(rows, f"{path}: {op}", dtypes)
    if not found and not note and not keys:
        found += _rows(entry.get("targets"), path, dtypes)
    return found, note


#: TVM's TIR passes and code generation: a change under these maps to the TIR mode
#: (``tir`` targets), beside whatever the table maps it to.
TIR_PREFIXES = ("src/tir/", "src/tirx/", "src/s_tir/", "src/target/", "python/tvm/tir/", "python/tvm/tirx/",
                "python/tvm/s_tir/", "python/tvm/target/")
_SOURCE = (".cc", ".h", ".py")


def _squash(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def tir_passes_named(path: str, hunks) -> list:
    """The TIR passes (names of :data:`dlgate.tir.passes.PASSES`) a changed file is about:
    the one its file name spells (``loop_partition.cc`` -> ``LoopPartition``), and those
    the hunks' enclosing definitions or git's hunk headers name (``Pass LoopPartition()``)."""
    from dlgate.tir.passes import PASSES  # the table only: no TVM import

    by_ctor: dict = {}
    for name, (_, ctor, _) in PASSES.items():
        by_ctor.setdefault(_squash(ctor), []).append(name)
        by_ctor.setdefault(_squash(name), []).append(name)
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    found = list(by_ctor.get(_squash(stem), ()))
    for h in hunks or ():
        words = set(re.findall(r"[A-Za-z_]\w*", h.header or "")) | {w for d in h.enclosing for w in d.split("::")}
        for w in sorted(words):
            for name in by_ctor.get(_squash(w), ()) if len(w) > 6 else ():
                if name not in found:
                    found.append(name)
    return sorted(set(found))


def tir_targets(fc, others: list) -> list:
    """The ``tir`` targets of a changed file under :data:`TIR_PREFIXES`: a target per pass
    it names; else, where the table maps the file to nothing (``others`` empty: an intrinsic
    lowering rule keeps its operators only), ``codegen`` for code generation, ``any`` for
    the rest of TIR (both: the TIR mode's share raised, no pass put first)."""
    path = fc.where
    if not path.startswith(TIR_PREFIXES) or not path.endswith(_SOURCE) or fc.status == "deleted":
        return []
    names = tir_passes_named(path, fc.hunks)
    if names:
        return [Target(TIR, n, why=f"{path}: {n}") for n in names]
    if others:
        return []
    return [Target(TIR, "codegen" if "/target/" in f"/{path}" else "any", why=path)]


def map_file(fc, table: dict) -> FileTargets:
    got = _map_file(fc, table)
    tir = tir_targets(fc, got.targets)
    if not tir:
        return got
    return FileTargets(got.path, merge(list(got.targets) + tir))


def _map_file(fc, table: dict) -> FileTargets:
    path = fc.where
    entry = (table.get("files") or {}).get(path)
    if entry is None:
        return common.lookup(fc, table)  # the prefixes, else "no table entry"
    found, notes = [], []
    for h in fc.hunks or []:
        got, note = _hunk(path, entry, h, table)
        found += got
        if note and note not in notes:
            notes.append(note)
    if not fc.hunks:  # a rename or mode change only
        found += _rows(entry.get("targets"), path)
    if found:
        return FileTargets(path, merge(found))
    return FileTargets(path, skipped="unmapped",
                       note="; ".join(notes) or entry.get("note")
                       or "the changed lines are outside every definition the table maps")
