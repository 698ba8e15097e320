"""The onnxruntime change table, read from onnxruntime's own source tree.

Four parts of the tree are mapped, each the way the code itself says what it serves:

* CPU kernels (``onnxruntime/core/providers/cpu/``): every kernel registration macro is
  expanded (the file's own wrapper macros, such as ``REG_ELEMENTWISE_TYPED_KERNEL``, down
  to ``ONNX_OPERATOR_*KERNEL_EX``), giving the operator, its opset range and the dtypes of
  its type constraints. A definition belongs to the kernels whose class it is or names
  (``Pow::Compute`` -> Pow); a helper belongs to the kernels whose code calls it
  (transitively, in the file and then across files); the rest of a file is shared by all
  of its kernels.
* Contrib kernels (``onnxruntime/contrib_ops/cpu/``, com.microsoft): the same expansion;
  a contrib operator is produced only by a fusion, so its targets are the rewrites of the
  transformers whose code emits that op type (found in the optimizer sources).
* Graph transformers (``onnxruntime/core/optimizer/``): each transformer class and the
  names it runs under, matched against dlgate's onnxruntime motifs (``OpSpec.rewrite``);
  helpers belong to the transformers that call them. Transformers no motif aims at are
  recorded as such (the file maps to nothing, with that note).
* MLAS (``onnxruntime/core/mlas/``): the entry points ``inc/*.h`` declare, the lib code
  each reaches (calls, the platform dispatch table's kernel pointers), and the CPU and
  contrib kernels whose code calls each entry point.

The C/C++ reading is a heuristic (brace matching, a small macro expander), good for
onnxruntime's own style; what it cannot place is left at file level, never guessed. The
reading and the macro expander are in ``onnxruntime_source``, the transformers in
``onnxruntime_optimizer``; this module maps kernels and MLAS and assembles the table.
"""
from __future__ import annotations

import posixpath
import re

from dlgate.change.builders.onnxruntime_optimizer import _propagate, optimizer, rewrite_matches
from dlgate.change.builders.onnxruntime_source import (
    ASM_EXT,
    CONTRIB,
    CPU,
    CTYPES,
    DLGATE_DTYPES,
    HELPERS,
    ML_DOMAIN,
    MLAS,
    ONNX_DOMAIN,
    OPT,
    REGISTRIES,
    SOURCE_EXT,
    Tree,
    _base_part,
    _innermost,
    _int,
    dtypes_of,
    owner_names,
    registrations,
    strip_comments,
    tokens,
)
from dlgate.change.targets import Target
from dlgate.ops.registry import all_specs


def kernels(tree: Tree) -> list:
    """Every CPU-provider registration in the CPU and contrib trees."""
    out = []
    for root in (CPU, CONTRIB):
        for path in tree.files(root, (".cc", ".cpp", ".h")):
            text = tree.text(path)
            if "KERNEL" not in text:
                continue
            for rec in registrations(text, tree.macros(path)):
                if rec.get("provider", "").strip() != "kCpuExecutionProvider":
                    continue
                lo = _int(rec.get("lo", ""))
                if lo is None:
                    continue
                hi = _int(rec["hi"]) if rec.get("hi") else None
                out.append({"op": rec["name"].strip(), "domain": rec["domain"].strip(), "lo": lo, "hi": hi,
                            "dtypes": dtypes_of(rec, text), "kernel": re.sub(r"\s+", "", rec["kernel"]),
                            "file": path, "line": rec["line"]})
    return out


def _onnx_has(op: str, version: int) -> bool:
    """Whether ONNX's default domain defines ``op`` at ``version`` (contrib kernels
    registered in the ONNX domain under names ONNX does not define are internal ops)."""
    import onnx.defs

    try:
        onnx.defs.get_schema(op, version, "")
        return True
    except Exception:
        return False


#: A definition naming more MLAS symbols than this is a dispatch hub (MLAS_PLATFORM's
#: constructor), whose body is no call path.
HUB = 40


def mlas(tree: Tree):
    """MLAS entry points, and for each lib file's definitions the entry points reaching them."""
    entry = set()
    for path in tree.files(MLAS + "inc/", (".h",)):
        t = strip_comments(tree.text(path))
        entry |= set(re.findall(r"^\s*(?:MLASCALL\s+)?(Mlas\w+)\s*\(", t, re.M))
        entry |= set(re.findall(r"MLASCALL\s+(Mlas\w+)\s*\(", t))
    lib = tree.files(MLAS + "lib/", SOURCE_EXT)
    asm = tree.files(MLAS + "lib/", ASM_EXT)
    nodes: dict = {}   # name -> set of tokens its body names
    where: dict = {}   # name -> [(path, start)]
    for path in lib:
        lines = strip_comments(tree.text(path)).splitlines()
        for s, e, parts in tree.defs(path):
            name = _base_part(parts[-1])
            name = name[-1] if name else parts[-1]
            nodes.setdefault(name, set()).update(tokens("\n".join(lines[s - 1:e])))
            where.setdefault(name, []).append((path, s))
        text = strip_comments(tree.text(path))
        # dispatch tables and kernel pointers: Field = MlasKernel; / const X MlasTable = {...};
        for m in re.finditer(r"(?:->|\.|\b)(\w+)\s*=\s*&?\s*(Mlas\w+)\s*;", text):
            nodes.setdefault(m.group(1), set()).add(m.group(2))
        for m in re.finditer(r"^\s*(?:const\s+)?[\w:<>]+\s+(Mlas\w+)\s*=\s*\{(.*?)\};", text, re.M | re.S):
            nodes.setdefault(m.group(1), set()).update(tokens(m.group(2)))
            where.setdefault(m.group(1), []).append((path, text.count("\n", 0, m.start()) + 1))
    asm_syms: dict = {}
    for path in asm:
        syms = set(re.findall(r"\b(Mlas\w+)", tree.text(path)))
        asm_syms[path] = syms
        for s in syms:
            where.setdefault(s, []).append((path, 0))
    # the platform (its constructor, the MLAS_PLATFORM structure) names every kernel of
    # every ISA: a hub, not a caller; a caller reaches a kernel through the dispatch
    # field its own body names (read from the assignments above)
    for name in list(nodes):
        if sum(1 for t in nodes[name] if t in nodes or t in where) > HUB:
            nodes[name] = set()
    reach: dict = {}
    for e in sorted(entry):
        seen, stack = {e}, [e]
        while stack:
            n = stack.pop()
            for t in nodes.get(n, ()):
                if t not in seen and (t in nodes or t in where):
                    seen.add(t)
                    stack.append(t)
        reach[e] = seen
    reached_by: dict = {}
    for e, seen in reach.items():
        for n in seen:
            reached_by.setdefault(n, set()).add(e)
    per_def: dict = {}  # (path, start) -> entry points
    per_file: dict = {}
    for name, places in where.items():
        for path, s in places:
            got = reached_by.get(name, set())
            if s:
                per_def.setdefault((path, s), set()).update(got)
            per_file.setdefault(path, set()).update(got)
    return entry, per_def, per_file, lib, asm


def _motif_rewrites() -> list:
    return sorted({s.rewrite for s in all_specs().values()
                   if getattr(s, "optimizer", None) == "onnxruntime" and getattr(s, "rewrite", None)})


def _spec_ops() -> set:
    out = set()
    for s in all_specs().values():
        if getattr(s, "optimizer", None):
            continue
        for o in (getattr(s, "onnx_ops", None) or (getattr(s, "onnx_op", None),)):
            if o:
                out.add(o)
    return out


def _dt(dtypes: tuple) -> list:
    """dlgate's dtypes among a kernel's; a kernel of other dtypes only keeps their names
    (a target no spec can draw, which the coverage table reports)."""
    keep = [d for d in dtypes if d in DLGATE_DTYPES]
    return sorted(keep or dtypes)


def _key(kind, name, opsets=None, dtypes=()) -> str:
    return Target(kind, name, tuple(opsets) if opsets else None, tuple(dtypes)).key


class Refs:
    """The table's shared rows: every target once (``targets``), every kernel once
    (``kernels``: its target keys), every MLAS entry point once (``mlas``: the kernels
    calling it). Files and definitions list references: ``t:KEY``, ``k:KERNEL``,
    ``m:ENTRY``; the mapper resolves them (``dlgate/change/compilers/onnxruntime.py``)."""

    def __init__(self):
        self.targets: dict = {}
        self.kernels: dict = {}
        self.mlas: dict = {}

    def target(self, kind, name, opsets=None, dtypes=()) -> str:
        key = _key(kind, name, opsets, dtypes)
        row = {"kind": kind, "name": name}
        if opsets:
            row["opsets"] = list(opsets)
        if dtypes:
            row["dtypes"] = list(dtypes)
        self.targets[key] = row
        return "t:" + key


def build(source, **_) -> dict:
    tree = Tree(source)
    motifs = _motif_rewrites()
    spec_ops = _spec_ops()
    refs = Refs()
    files: dict = {}

    # the optimizer ----------------------------------------------------------------------
    classes, opt_owners, opt_file, emits = optimizer(tree, motifs)

    def rewrite_refs(owner_set) -> tuple:
        out, missing = set(), set()
        for o in sorted(owner_set):
            if o.startswith("rule:"):
                out.add(refs.target("rewrite", o[5:]))
                continue
            hit = sorted({n for n in classes.get(o, {o}) if any(rewrite_matches(n, m) for m in motifs)})
            out |= {refs.target("rewrite", n) for n in hit}
            if not hit:
                missing.add(o)
        return sorted(out), missing

    no_motif = set()
    for path in tree.files(OPT):
        file_refs, missing = rewrite_refs(opt_file[path])
        no_motif |= missing
        defs_out = {}
        for s, _e, parts in tree.defs(path):
            r, _ = rewrite_refs(opt_owners.get((path, s), set()))
            if r and r != file_refs:
                defs_out[parts[-1]] = r
        entry: dict = {}
        if defs_out:
            entry["definitions"] = defs_out
        if file_refs:
            entry["refs"] = file_refs
        elif missing:
            entry["note"] = "no motif aims at this transformer (" + ", ".join(sorted(missing)) + ")"
        else:
            entry["note"] = "no graph transformer's code uses this file's definitions"
        files[path] = entry

    # kernels ----------------------------------------------------------------------------
    regs = kernels(tree)
    max_opset = max([r["hi"] or r["lo"] for r in regs if r["domain"] == ONNX_DOMAIN] + [1])
    contrib: dict = {}
    gaps_ops, gaps_contrib, ml_ops = set(), set(), set()

    def emitted_by(k) -> set:
        owners = set()
        for op, dom, _p, own in emits:
            if op == "*":
                hit = dom == k["domain"]
            elif op.endswith("*"):
                hit = k["op"].startswith(op[:-1]) and dom in ("", k["domain"])
            else:
                hit = op == k["op"] and (dom in ("", k["domain"]) or k["domain"] == ONNX_DOMAIN)
            if hit:
                owners |= own
        return owners

    for k in regs:
        if k["domain"] == ML_DOMAIN:
            ml_ops.add(k["op"])
            k["refs"] = []
        elif k["domain"] == ONNX_DOMAIN and _onnx_has(k["op"], k["lo"]):
            if k["op"] not in spec_ops:
                gaps_ops.add(k["op"])
            k["refs"] = [refs.target("operator", k["op"], (k["lo"], k["hi"] or max_opset), _dt(k["dtypes"]))]
        else:
            key = (k["domain"], k["op"])
            if key not in contrib:
                contrib[key], _ = rewrite_refs(emitted_by(k))
                if not contrib[key]:
                    gaps_contrib.add(f"{k['op']} ({k['domain']})")
            k["refs"] = contrib[key]
        k["id"] = f"{k['domain']}/{k['op']}/{k['lo']}-{k['hi'] or ''}/{k['kernel']}"
        if k["refs"]:
            refs.kernels[k["id"]] = sorted(set(refs.kernels.get(k["id"], [])) | set(k["refs"]))
    by_file: dict = {}
    for k in regs:
        by_file.setdefault(k["file"], []).append(k)

    kernel_files = tree.files(CPU) + tree.files(CONTRIB)
    helpers = [h for h in HELPERS if tree.src.exists(h)]
    direct: dict = {}
    for path in kernel_files + helpers:
        here = by_file.get(path, [])
        scope = here or regs
        for s, _e, parts in tree.defs(path):
            names = set(_base_part(parts[-1]))
            own = {k["id"] for k in scope if names & owner_names(k["kernel"], k["op"])}
            # a specialization (Add<MLFloat16>::Compute) belongs to that instance only
            special = [m for m in re.findall(r"\w+<[^<>]*>", parts[-1])
                       if all(a.strip() in CTYPES or a.strip() in ("true", "false")
                              for a in m[m.index("<") + 1:-1].split(","))]
            if special:
                own = {i for i in own if any(sp.replace(" ", "") in i for sp in special)}
            if here and len(own) == len({k["id"] for k in here}) and len(here) > 1:
                own = set()  # named by every kernel of the file: shared code
            direct[(path, s)] = own
    owners = _propagate(tree, kernel_files + helpers, direct)

    def kernel_refs(ids) -> list:
        return sorted("k:" + i for i in ids if i in refs.kernels)

    file_kernels: dict = {}
    for path in kernel_files + helpers:
        here = by_file.get(path, [])
        ids = {k["id"] for k in here}
        if not ids:
            stem = posixpath.splitext(path)[0]
            for other in (stem + ".cc", stem + ".cpp"):
                ids |= {k["id"] for k in by_file.get(other, [])}
        if not ids:
            for s, _e, _parts in tree.defs(path):
                ids |= owners.get((path, s), set())
        file_kernels[path] = ids
        if path in helpers:
            continue
        file_refs = kernel_refs(ids)
        defs_out = {}
        for s, _e, parts in tree.defs(path):
            r = kernel_refs(owners.get((path, s), set()))
            if r and r != file_refs:
                defs_out[parts[-1]] = r
        entry = {}
        if path in REGISTRIES:
            entry = {"registry": True,
                     "note": "the provider's registration list: changed registration lines map to their kernels"}
        else:
            if defs_out:
                entry["definitions"] = defs_out
            if file_refs:
                entry["refs"] = file_refs
            elif here and all(k["domain"] == ML_DOMAIN for k in here):
                entry["note"] = "ai.onnx.ml kernels: dlgate generates the default ONNX domain only"
            elif here:
                entry["note"] = "contrib kernels no fusion dlgate aims at produces (" + \
                    ", ".join(sorted({k["op"] for k in here})) + ")"
            else:
                entry["note"] = "no kernel registration or kernel code found for this file"
        files[path] = entry

    # MLAS -------------------------------------------------------------------------------
    entry_points, mlas_def, mlas_file, lib, asm = mlas(tree)
    for path in kernel_files + helpers:
        text = strip_comments(tree.text(path))
        used = set(re.findall(r"\b(Mlas\w+)\b", text)) & entry_points
        if not used:
            continue
        defs = tree.defs(path)
        for name in sorted(used):
            got = set()
            for m in re.finditer(r"\b" + name + r"\b", text):
                d = _innermost(defs, text.count("\n", 0, m.start()) + 1)
                ids = owners.get((path, d[0]), set()) if d else set()
                got |= ids or file_kernels.get(path, set())
            r = kernel_refs(got)
            if r:
                refs.mlas[name] = sorted(set(refs.mlas.get(name, [])) | set(r))
    uncalled = set()
    for path in lib + asm:
        eps = {e for e in mlas_file.get(path, set()) if e in refs.mlas}
        file_refs = sorted("m:" + e for e in eps)
        defs_out = {}
        for s, _e, parts in (tree.defs(path) if path in lib else ()):
            r = sorted("m:" + x for x in mlas_def.get((path, s), set()) if x in refs.mlas)
            if r and r != file_refs:
                defs_out[parts[-1]] = r
        entry = {}
        if defs_out:
            entry["definitions"] = defs_out
        if file_refs:
            entry["refs"] = file_refs
        elif mlas_file.get(path):
            uncalled |= mlas_file[path]
            entry["note"] = "its MLAS entry points are called by no CPU kernel (" + \
                ", ".join(sorted(mlas_file[path])[:6]) + (", ..." if len(mlas_file[path]) > 6 else "") + ")"
        else:
            entry["note"] = "reaches no MLAS entry point"
        files[path] = entry

    rewrites = sorted(r["name"] for r in refs.targets.values() if r["kind"] == "rewrite")
    notes = {
        "rewrites_without_motif": [n for n in rewrites if not any(rewrite_matches(n, m) for m in motifs)],
        "transformers_without_motif": sorted(no_motif),
        "operators_without_spec": sorted(gaps_ops),
        "contrib_ops_without_motif": sorted(gaps_contrib),
        "ml_domain_ops": sorted(ml_ops),
        "mlas_entry_points_without_kernel": sorted(entry_points - set(refs.mlas)),
    }
    return {
        "compiler": "onnxruntime",
        "max_opset": max_opset,
        "targets": dict(sorted(refs.targets.items())),
        "kernels": dict(sorted(refs.kernels.items())),
        "mlas": dict(sorted(refs.mlas.items())),
        "files": {p: files[p] for p in sorted(files)},
        "prefixes": [
            {"prefix": CPU, "note": "a CPU-provider file the table does not know"},
            {"prefix": CONTRIB, "note": "a contrib-operator file the table does not know"},
            {"prefix": OPT, "note": "an optimizer file the table does not know"},
            {"prefix": MLAS, "note": "an MLAS file the table does not know"},
        ],
        "transformers": {c: sorted(n) for c, n in sorted(classes.items())},
        "notes": notes,
    }
