"""The TVM (Relax) change table, built by reading TVM's own source.

What a TVM pull request touches reaches dlgate's models along one chain, and the table
follows it backwards, by static analysis of the release's files:

* the ONNX importer (``python/tvm/relax/frontend/onnx/``): ``_get_convert_map`` names the
  converter class of each ONNX operator; a class's ``_impl_vN`` methods (its own and
  inherited) say which opsets each one serves (``get_converter`` takes the largest version
  not above the model's opset, and the smallest for older ones). From every (operator,
  impl) the module's call graph is walked (``cls.x``, other classes' methods, module
  helpers), so every method, class and helper knows the operators and opsets reaching it,
  and every converter knows the Relax ops (``relax.op.nn.gelu``) and TOPI functions
  (``bb.emit_te(topi.nn.pad, ...)``) it emits;
* legalization (``python/tvm/relax/transform/legalize_ops/``): each
  ``register_legalize("relax.x", ...)`` is walked the same way, so its helpers and the
  TOPI functions it calls inherit the ONNX operators that emit ``relax.x``;
* TOPI: Python TOPI functions inherit from their callers (in their file and through
  relative imports), C++ TOPI (``include/tvm/topi/``) from the Python functions that call
  it through ``cpp.*``; ``te.exp``-style calls carry the operators down to the TIR
  intrinsics (``tirx.exp``) whose lowering rules live in ``src/target/``;
* Relax operator definitions (``src/relax/op/``): a definition maps to the ops whose
  registration (``TVM_REGISTER_OP("relax.x")`` chains, the ``RELAX_REGISTER_*`` macros)
  names it, whose body it is (``Op::Get("relax.x")``), or which call it;
* passes (``src/relax/transform/``, ``python/tvm/relax/transform/``, the CPU pipeline):
  the pass each file creates, mapped to the rewrite names dlgate's TVM motifs record.

The Python files are read by ``tvm_python``, the C++ files by ``tvm_native``; this module
walks the chain and assembles the table. The Python side can be read from a second tree
(``python=``: an installed release's ``site-packages``) when the git history at hand lacks
the release commit, so the converters are the release's own; the header records both.
"""
from __future__ import annotations

import re
from collections import defaultdict

from dlgate.change.builders.tvm_native import CIndex, cc_passes, registrations
from dlgate.change.builders.tvm_python import (
    FRONTEND,
    TOPI_PY,
    PyModule,
    _add,
    analyse_frontend,
    analyse_legalize,
    analyse_topi,
    impl_ranges,
    py_passes,
    relax_op_name,
    rows_json,
)
from dlgate.graph.generator import NEWEST_OPSET
from dlgate.ops.registry import all_specs

LEGALIZE = "python/tvm/relax/transform/legalize_ops/"
TOPI_CC = "include/tvm/topi/"
RELAX_OP = "src/relax/op/"
PASS_CC = "src/relax/transform/"
PASS_PY = "python/tvm/relax/transform/"
TARGET = "src/target/"
PIPELINE = "python/tvm/relax/backend/cpu_generic/pipeline.py"
#: Backends dlgate's TVM runs whose intrinsic lowering rules live outside src/target/ (CUDA).
BACKEND_RULES = ("src/backend/cuda/codegen/",)
DISPATCH = ("python/tvm/relax/backend/dispatch_sort_scan.py", "python/tvm/relax/backend/dispatch_sampling.py")
#: A definition reached by more ONNX operators than this is shared machinery (the
#: converters' base class, ``op_common.h``): a batch aimed at all of them is the ordinary
#: batch, so the table records the count instead of the rows.
BROAD = 40
#: Passes no motif names but whose output the FuseOps motifs exercise directly: FuseOps
#: groups by the patterns AnnotateTIROpPattern writes, and FuseTIR turns each group into
#: the one kernel the motif's fused function becomes.
COMPANIONS = {
    "AnnotateTIROpPattern": ("FuseOps", "FuseOps groups bindings by the op patterns this pass annotates"),
    "FuseTIR": ("FuseOps", "FuseTIR turns each FuseOps group into the fused kernel"),
    "FuseTIRInner": ("FuseOps", "FuseTIR's own work: each FuseOps group into the fused kernel"),
}


def motif_rewrites() -> dict:
    """pass name -> rewrite target names, from dlgate's TVM motifs: a motif whose rewrite
    is the pass's name or starts with it and a space is reached by the target named as
    the pass; one naming the pass elsewhere (``ONNX importer ... + FuseOps``) by its full
    rewrite name."""
    out: dict = defaultdict(set)
    for spec in all_specs().values():
        if getattr(spec, "optimizer", None) != "tvm" or not getattr(spec, "rewrite", None):
            continue
        r = spec.rewrite
        for tok in re.findall(r"\b[A-Z][a-z]+(?:[A-Z][a-z]*)+\b", r):
            out[tok].add(tok if r == tok or r.startswith(tok + " ") else r)
    return {k: sorted(v) for k, v in out.items()}


class _Overlay:
    """The git tree, with ``python/tvm/...`` read from an installed ``tvm`` package's
    folder (``site-packages/tvm``)."""

    def __init__(self, source, python):
        self.source, self.python = source, python

    @staticmethod
    def _py(path):
        return path.startswith("python/tvm/")

    def ls(self, prefix="", suffixes=()):
        if self._py(prefix):
            return ["python/tvm/" + p for p in self.python.ls(prefix[len("python/tvm/"):], suffixes)]
        return self.source.ls(prefix, suffixes)

    def read(self, path):
        return self.python.read(path[len("python/tvm/"):]) if self._py(path) else self.source.read(path)

    def exists(self, path):
        return self.python.exists(path[len("python/tvm/"):]) if self._py(path) else self.source.exists(path)


def package_version(python) -> dict:
    """The installed package's version and the commit its build names (``_version.py``)."""
    out = {"where": "installed tvm package"}
    if python.exists("_version.py"):
        text = python.read("_version.py")
        for key, rx in (("version", r"__version__\s*=\s*version\s*=\s*'([^']*)'"),
                        ("commit", r"commit_id\s*=\s*'([^']*)'")):
            m = re.search(rx, text)
            if m:
                out[key] = m.group(1)
    return out


class _Table:
    def __init__(self):
        self.files: dict = {}

    def entry(self, path: str) -> dict:
        return self.files.setdefault(path, {"definitions": {}})

    def put(self, path: str, name: str, rows: dict, empty_why: str = "") -> None:
        e = self.entry(path)
        if not rows:
            if empty_why and name not in e["definitions"]:
                got = e.setdefault("unreached", {}).get(name)
                e["unreached"][name] = "; ".join(sorted(set(filter(None, [got, empty_why]))))
            return
        e.get("unreached", {}).pop(name, None)
        if len(rows) > BROAD:
            e.setdefault("broad", {})[name] = len(rows)
        elif rows:
            got = e["definitions"].setdefault(name, [])
            e["definitions"][name] = rows_json(_rows_of(got, rows))


def _rows_of(existing: list, rows: dict) -> dict:
    out: dict = {}
    for r in existing:
        out.setdefault(r["name"], set()).add(tuple(r["opsets"]))
    _add(out, rows)
    return out


def _rows_parse(rows_list: list) -> dict:
    return _rows_of(rows_list, {})


PREFIXES = (
    ("src/relax/op/distributed/", "distributed (sharded) type inference: dlgate builds single-device models"),
    ("src/relax/op/ccl/", "collective communication ops: dlgate builds single-device models"),
    ("src/relax/op/memory/", "memory-planning ops the lowering passes insert in every model: the ordinary batch covers them"),
    ("src/backend/cuda/", "CUDA code generation and runtime common to every model on a GPU: only its intrinsic lowering rules map to operators"),
    ("src/backend/", "code generation for a target dlgate's TVM backend does not run (llvm and cuda only)"),
    ("src/relax/backend/", "VM code generation and external-library backends, common to every model or unused by dlgate's TVM backend"),
    ("python/tvm/relax/backend/", "library dispatch and external-library backends: only DispatchSortScan has a motif"),
    ("src/relax/transform/", "a Relax pass no dlgate motif aims at"),
    ("python/tvm/relax/transform/", "a Relax pass no dlgate motif aims at"),
    ("src/target/", "code generation common to every model: only the intrinsic lowering rules map to operators"),
    ("python/tvm/relax/frontend/", "another frontend than ONNX: dlgate imports ONNX models only"),
    ("src/tirx/", "TIR lowering and passes common to every model's kernels: the ordinary batch covers them"),
    ("src/s_tir/", "TIR scheduling and passes common to every model's kernels: the ordinary batch covers them"),
    ("src/arith/", "integer arithmetic analysis common to every model: the ordinary batch covers it"),
    ("src/runtime/", "the runtime every model runs on: the ordinary batch covers it"),
    ("src/relax/ir/", "Relax IR data structures common to every model: the ordinary batch covers them"),
    ("src/relax/analysis/", "Relax analyses used by many passes: the ordinary batch covers them"),
    ("python/tvm/relax/op/", "the Python constructors of Relax ops: see src/relax/op/ for their definitions"),
    ("python/tvm/topi/gpu/", "TOPI's GPU schedules: reached only on CUDA targets through dlight-free dispatch"),
    ("python/tvm/topi/testing/", "TOPI's NumPy references for TVM's own tests"),
    ("python/tvm/relax/", "Relax's Python API outside the ONNX importer, legalization and passes: common to every model"),
    ("python/tvm/backend/", "target backends' Python side (kernels, code generation): common to every model on the target"),
    ("python/tvm/tirx/", "TIR's Python API: common to every model's kernels"),
    ("python/tvm/s_tir/", "TIR scheduling's Python API: common to every model's kernels"),
    ("python/tvm/script/", "TVMScript parsing and printing: dlgate builds models through the ONNX importer"),
    ("python/tvm/te/", "tensor expressions: common to every TOPI kernel"),
    ("python/tvm/arith/", "integer arithmetic analysis: common to every model"),
    ("python/tvm/ir/", "IR data structures: common to every model"),
    ("python/tvm/runtime/", "the runtime every model runs on: the ordinary batch covers it"),
    ("python/tvm/target/", "target descriptions: common to every model"),
    ("include/tvm/", "core headers (IR, TIR, runtime): common to every model"),
    ("src/te/", "tensor expressions: common to every TOPI kernel"),
    ("src/ir/", "IR data structures: common to every model"),
    ("src/script/", "TVMScript parsing and printing: dlgate builds models through the ONNX importer"),
    ("src/relax/script/", "TVMScript for Relax: dlgate builds models through the ONNX importer"),
    ("src/relax/", "Relax infrastructure outside op definitions and passes: common to every model"),
    ("src/support/", "support code common to every build"),
    ("src/topi/", "the FFI entry points of C++ TOPI: see include/tvm/topi/ for the kernels"),
    ("web/", "the WebAssembly runtime: not a target dlgate runs"),
    ("apps/", "example applications outside the compiler"),
    ("3rdparty/", "vendored third-party code (tvm-ffi, ...): common to every model"),
)


def build(source, python=None, ceiling: int | None = None) -> dict:
    """The table for the TVM tree ``source`` (a :class:`dlgate.change.builders.Source`);
    ``python``: a second Source holding the release's installed ``tvm`` package, read for
    ``python/tvm/`` paths; ``ceiling``: the newest opset (default: dlgate's)."""
    if ceiling is None:
        ceiling = NEWEST_OPSET
    src = _Overlay(source, python) if python is not None else source
    tab = _Table()
    notes: list = []

    # 1. the importer
    fe = analyse_frontend(src.read(FRONTEND), ceiling) if src.exists(FRONTEND) else None
    relax_rows: dict = defaultdict(dict)
    ext_rows: dict = defaultdict(dict)
    operators: dict = {}
    if fe:
        for node, rows in fe["nodes"].items():
            tab.put(FRONTEND, node, rows)
        for chain, rows in fe["ext"].items():
            _add(ext_rows[chain], rows)
            r = relax_op_name(chain)
            if r:
                _add(relax_rows[r], rows)
        operators = {op: rows_json(rs) for op, rs in fe["operators"].items()}
        e = tab.entry(FRONTEND)
        e["operators"] = operators
        e["convert_map"] = "_get_convert_map"
        mod = fe["module"]
        e["impls"] = {c: [v for v, _, _ in impl_ranges(mod, c, ceiling)]
                      for c in sorted(set(fe["convert_map"].values())) if c in mod.classes}
        e["note"] = ("importer machinery outside every converter (graph construction, names, constants): "
                     "common to every model")
    # 2. legalization
    leg_files = {p: src.read(p) for p in src.ls(LEGALIZE, (".py",)) if "/adreno/" not in p}
    leg = analyse_legalize(leg_files, relax_rows)
    for (path, d), rows in leg["nodes"].items():
        ops = sorted(leg["ops"].get((path, d), ()))
        tab.put(path, d, rows, f"legalizes {', '.join(ops[:4])}{'...' if len(ops) > 4 else ''}, which no ONNX converter emits")
    for chain, rows in leg["ext"].items():
        _add(ext_rows[chain], rows)
    for path in leg_files:
        tab.entry(path).setdefault("note", "legalization machinery outside every registered op")
    # 3. TIR intrinsics with lowering rules in src/target
    tgt_files = {p: src.read(p) for pre in (TARGET,) + BACKEND_RULES for p in src.ls(pre, (".cc", ".h"))}
    intrinsics = {op[len("tirx."):] for regs in (registrations(t) for t in tgt_files.values())
                  for op, *_ in regs if op.startswith("tirx.")}
    # 4. TOPI (Python), then C++ TOPI through cpp.*
    topi_files = {p: src.read(p) for p in src.ls(TOPI_PY, (".py",))
                  if not p.startswith((TOPI_PY + "testing/", TOPI_PY + "cpp/"))}
    tp = analyse_topi(topi_files, ext_rows, intrinsics)
    for (path, d), rows in tp["nodes"].items():
        tab.put(path, d, rows)
    intr_rows: dict = defaultdict(dict)
    for chain, rows in ext_rows.items():  # converters and legalizations using te.exp directly
        head, leaf = chain.split(".")[0], chain.split(".")[-1]
        if head in ("te", "tirx", "tir") and leaf in intrinsics:
            _add(intr_rows["tirx." + leaf], rows)
    for k, rows in tp["intrinsics"].items():
        _add(intr_rows[k], rows)
    cc_files = {p: src.read(p) for p in src.ls(TOPI_CC, (".h",))}
    cidx = CIndex(cc_files)
    callees_rows: dict = defaultdict(dict)
    for name, rows in tp["cpp"].items():
        seen, todo = set(), [name]
        while todo:
            n = todo.pop()
            if n in seen or n not in cidx.defs:
                continue
            seen.add(n)
            todo.extend(i for i in cidx.defs[n] if i in cidx.defs)
        for n in seen:
            _add(callees_rows[n], rows)
    for name, rows in callees_rows.items():
        for path in cidx.where[name]:
            tab.put(path, name, rows)
    # 5. Relax op definitions
    op_files = {p: src.read(p) for p in src.ls(RELAX_OP, (".cc", ".h"))
                if not p.startswith((RELAX_OP + "distributed/", RELAX_OP + "ccl/", RELAX_OP + "memory/"))}
    oidx = CIndex(op_files)
    for name, ops in oidx.registered("relax.").items():
        rows: dict = {}
        for op in ops:
            _add(rows, relax_rows.get(op, {}))
        why = f"defines {', '.join(sorted(ops)[:4])}{'...' if len(ops) > 4 else ''}, which no ONNX converter emits"
        for path in oidx.where.get(name, ()):
            tab.put(path, name, rows, why)
    for path in op_files:
        tab.entry(path).setdefault(
            "note", "the changed lines define no Relax op an ONNX converter emits (or shared helpers used by most)")
    # 6. intrinsic lowering rules
    tidx = CIndex({p: t for p, t in tgt_files.items() if registrations(t)})
    for name, ops in tidx.registered("tirx.").items():
        rows = {}
        for op in ops:
            _add(rows, intr_rows.get(op, {}))
        why = f"lowers {', '.join(sorted(ops)[:4])}{'...' if len(ops) > 4 else ''}, which no converter's kernels use"
        for path in tidx.where.get(name, ()):
            tab.put(path, name, rows, why)
    for path in tidx.regs:
        e = tab.entry(path)
        e["dtypes_from_text"] = True
        e.setdefault("note", "the changed lines are in no intrinsic lowering rule an operator reaches")
    # 7. passes
    rewrites = motif_rewrites()
    passes_seen: dict = {}

    def pass_targets(name: str) -> tuple:
        if name in rewrites:
            return [{"kind": "rewrite", "name": r} for r in rewrites[name]], ""
        if name in COMPANIONS:
            to, why = COMPANIONS[name]
            return [{"kind": "rewrite", "name": r} for r in rewrites.get(to, ())], why
        return [], ""

    def put_passes(path: str, found: list) -> None:
        e = tab.entry(path)
        e["passes"] = sorted({p for p, _ in found})
        file_rows, aimed, why = [], [], []
        for p, fn in found:
            rows, w = pass_targets(p)
            passes_seen[p] = bool(rows)
            if rows:
                aimed.append(p)
                if fn:
                    e["definitions"][fn] = rows
                file_rows += [r for r in rows if r not in file_rows]
                if w:
                    why.append(f"{p}: {w}")
            elif fn:
                e["definitions"][fn] = []
        many = len(e["passes"]) > 3
        e["targets"] = [] if many else sorted(file_rows, key=lambda r: r["name"])
        if many:
            e["note"] = "a file of many passes: only a change inside a pass's own definition maps"
        elif not file_rows:
            e["note"] = f"no motif aims at this pass ({', '.join(e['passes'])})"
        elif why:
            e["note"] = "; ".join(why)
    for path in src.ls(PASS_CC, (".cc",)):
        found = cc_passes(src.read(path))
        if found:
            put_passes(path, found)
    for path in src.ls(PASS_PY, (".py",)):
        if path.startswith(LEGALIZE):
            continue
        found = py_passes(path, src.read(path))
        if found:
            put_passes(path, found)
    for path in DISPATCH:
        if src.exists(path):
            put_passes(path, py_passes(path, src.read(path)))
    if src.exists(PIPELINE):
        mod = PyModule(PIPELINE, src.read(PIPELINE))
        e = tab.entry(PIPELINE)
        for f in mod.funcs:
            names = sorted({r.split(".")[-1] for r in mod.funcs[f] if re.fullmatch(r"[A-Z]\w+", r.split(".")[-1])})
            rows = []
            for n in names:
                for r in pass_targets(n)[0]:
                    if r not in rows:
                        rows.append(r)
            e["definitions"][f] = sorted(rows, key=lambda r: r["name"])
        e["note"] = "the CPU pipeline's passes; only those a motif aims at map"

    # notes: gaps against dlgate's specs
    specs = all_specs().values()
    have_ops = {o for s in specs if not getattr(s, "optimizer", None)
                for o in ((getattr(s, "onnx_ops", None) or ()) + (s.onnx_op,)) if o}
    have_rw = {s.rewrite for s in specs if getattr(s, "optimizer", None) == "tvm"}
    no_spec = sorted(set(operators) - have_ops)
    named_rw = sorted({r["name"] for e in tab.files.values() for r in e.get("targets", [])})
    rw_gaps = [r for r in named_rw if not any(x == r or x.startswith(r + " ") for x in have_rw)]
    notes.append("converters of operators no dlgate spec generates (targets kept, reported as gaps): "
                 + (", ".join(no_spec) or "none"))
    notes.append("rewrite targets no motif matches: " + (", ".join(rw_gaps) or "none"))
    notes.append("passes no motif aims at: " + ", ".join(sorted(p for p, ok in passes_seen.items() if not ok)))

    # global lookups by name, for changed lines that name an op
    relax_json = {op: rows_json(rows) for op, rows in sorted(relax_rows.items()) if len(rows) <= BROAD}
    intr_json = {op: rows_json(rows) for op, rows in sorted(intr_rows.items()) if len(rows) <= BROAD}
    files = {p: e for p, e in sorted(tab.files.items())}
    for e in files.values():
        if not e["definitions"]:
            e.pop("definitions")
    doc = {
        "compiler": "tvm",
        "files": files,
        "prefixes": [{"prefix": p, "targets": [], "note": n} for p, n in PREFIXES],
        "relax_ops": relax_json,
        "intrinsics": intr_json,
        "opset_ceiling": ceiling,
        "broad": BROAD,
        "notes": notes,
        "rewrite_gaps": rw_gaps,
        "operator_gaps": no_spec,
    }
    if python is not None:
        doc["python"] = package_version(python)
    return doc
