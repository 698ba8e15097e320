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

The Python side can be read from a second tree (``python=``: an installed release's
``site-packages``) when the git history at hand lacks the release commit, so the
converters are the release's own; the header records both.
"""
from __future__ import annotations

import ast
import posixpath
import re
from collections import defaultdict

from dlgate.change.diff import c_definitions
from dlgate.graph.generator import NEWEST_OPSET
from dlgate.ops.registry import all_specs

FRONTEND = "python/tvm/relax/frontend/onnx/onnx_frontend.py"
LEGALIZE = "python/tvm/relax/transform/legalize_ops/"
TOPI_PY = "python/tvm/topi/"
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

_DTYPE_WORDS = (
    ("float16", re.compile(r"\bfloat16\b|is_float16\(|\bFloat\(16|\bfp16\b|bits\(\)\s*==\s*16|kFloat16")),
    ("float32", re.compile(r"\bfloat32\b|\bFloat\(32|bits\(\)\s*==\s*32|\bfp32\b|is_float32\(")),
    ("float64", re.compile(r"\bfloat64\b|\bFloat\(64|bits\(\)\s*==\s*64|\bfp64\b|is_float64\(")),
)


def dtypes_said(lines) -> tuple:
    """The float dtypes a piece of lowering code names (``Float(16)``, ``bits() == 16``,
    ``float16``): what a changed intrinsic rule concerns where the code says."""
    # bfloat16 checks (``kDLBfloat && bits() == 16``) are not float16's
    text = "\n".join(ln for ln in lines if not re.search(r"[bB][fF]loat", ln))
    return tuple(sorted(n for n, rx in _DTYPE_WORDS if rx.search(text)))


# -- rows: {onnx op: {(lo, hi), ...}} ---------------------------------------------------

def _add(dst: dict, src: dict) -> None:
    for op, ranges in src.items():
        dst.setdefault(op, set()).update(ranges)


def _merge_ranges(ranges) -> list:
    out: list = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def rows_json(rows: dict) -> list:
    """Target rows (``Target.to_json`` without ``why``), sorted."""
    out = []
    for op in sorted(rows):
        for lo, hi in _merge_ranges(rows[op]):
            out.append({"kind": "operator", "name": op, "opsets": [lo, hi]})
    return out


# -- Python: a module's definitions and what each refers to ------------------------------

def _chain(node) -> str | None:
    """``relax.op.nn.gelu`` for an attribute chain rooted at a name; ``super.x`` for
    ``super().x``."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super":
        parts.append("super")
    else:
        return None
    return ".".join(reversed(parts))


def _refs(nodes) -> set:
    """Names and attribute chains used under ``nodes``."""
    out = set()
    for top in nodes:
        for n in ast.walk(top):
            if isinstance(n, ast.Name):
                out.add(n.id)
            elif isinstance(n, ast.Attribute):
                c = _chain(n)
                if c:
                    out.add(c)
    # ``relax.op.nn`` is only the path to ``relax.op.nn.gelu``: keep the longest chains
    chains = sorted(r for r in out if "." in r)
    inner = {a for a, b in zip(chains, chains[1:]) if b.startswith(a + ".")}
    return out - inner


class PyModule:
    """One Python file: its module functions, classes (bases, methods, class-level
    statements), relative imports, and per definition what it refers to."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.funcs: dict = {}   # name -> refs
        self.classes: dict = {}  # name -> {"bases": [...], "methods": {m: refs}, "body": refs, "decorators": [...]}
        self.func_nodes: dict = {}
        self.imports: dict = {}  # local name -> (relative module, name)
        self.module_stmts: list = []  # statements outside defs
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return
        for st in tree.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.funcs[st.name] = _refs(st.body + st.args.defaults)
                self.func_nodes[st.name] = st
            elif isinstance(st, ast.ClassDef):
                methods, body = {}, []
                for b in st.body:
                    if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        methods[b.name] = _refs(b.body + b.args.defaults)
                    else:
                        body.append(b)
                self.classes[st.name] = {"bases": [_chain(b) or "" for b in st.bases], "methods": methods,
                                         "body": _refs(body), "node": st}
            else:
                if isinstance(st, ast.ImportFrom) and st.level:
                    for a in st.names:
                        self.imports[a.asname or a.name] = ("." * st.level + (st.module or ""), a.name)
                self.module_stmts.append(st)

    def mro(self, cls: str) -> list:
        out, todo = [], [cls]
        while todo:
            c = todo.pop(0)
            if c in self.classes and c not in out:
                out.append(c)
                todo = [b for b in self.classes[c]["bases"] if b in self.classes] + todo
        return out

    def resolve(self, cls: str, attr: str):
        """The node ``cls.attr`` names: ``("C.m", C)`` for a method defined on class C in
        the MRO, ``("C", C)`` for a class-level attribute, else None."""
        for c in self.mro(cls):
            info = self.classes[c]
            if attr in info["methods"]:
                return f"{c}.{attr}"
            if attr in info["body"] or any(isinstance(t, ast.Name) and t.id == attr
                                           for st in info["node"].body if isinstance(st, (ast.Assign, ast.AnnAssign))
                                           for t in (st.targets if isinstance(st, ast.Assign) else [st.target])):
                return c
        return None

    def node_refs(self, node: str) -> set:
        if node in self.funcs:
            return self.funcs[node]
        if "." in node:
            c, m = node.split(".", 1)
            return self.classes[c]["methods"][m]
        return self.classes[node]["body"]

    def reach(self, start: str, ctx: str | None) -> tuple:
        """(nodes reached, outside chains used) from ``start`` run with ``cls`` bound to
        ``ctx``: method calls through ``cls``/``self``/``super()``, other classes' methods,
        module functions, class attributes."""
        seen, ext, todo = set(), set(), [(start, ctx)]
        while todo:
            node, k = todo.pop()
            if (node, k) in seen:
                continue
            seen.add((node, k))
            here = node.split(".")[0] if "." in node else (node if node in self.classes else None)
            for r in self.node_refs(node):
                head, _, rest = r.partition(".")
                nxt = None
                if head in ("cls", "self") and rest and k:
                    nxt = (self.resolve(k, rest.split(".")[0]), k)
                elif head == "super" and rest and here:
                    for b in self.classes[here]["bases"]:
                        if b in self.classes:
                            got = self.resolve(b, rest.split(".")[0])
                            if got:
                                nxt = (got, k)
                                break
                elif head in self.funcs:
                    nxt = (head, None)
                elif head in self.classes:
                    if rest:
                        got = self.resolve(head, rest.split(".")[0])
                        nxt = (got, head) if got else (head, head)
                    else:
                        nxt = (head, head)
                else:
                    ext.add(r)
                if nxt and nxt[0]:
                    todo.append(nxt)
        return {n for n, _ in seen}, ext


# -- the ONNX importer ---------------------------------------------------------------------

def convert_map(mod: PyModule) -> dict:
    """ONNX operator -> converter class name, from ``_get_convert_map``'s dict."""
    fn = mod.func_nodes.get("_get_convert_map")
    out = {}
    if fn is None:
        return out
    for n in ast.walk(fn):
        if isinstance(n, ast.Dict):
            for k, v in zip(n.keys, n.values):
                if isinstance(k, ast.Constant) and isinstance(k.value, str) and isinstance(v, ast.Name):
                    out[k.value] = v.id
    return out


def impl_ranges(mod: PyModule, cls: str, ceiling: int) -> list:
    """[(version, lo, hi)]: each ``_impl_vN`` the class has (own or inherited) and the
    opsets it serves: from N (from 1 for the smallest, the fallback) to the next one
    minus 1, the last up to ``ceiling``."""
    vs = sorted({int(m[len("_impl_v"):]) for c in mod.mro(cls) for m in mod.classes[c]["methods"]
                 if re.fullmatch(r"_impl_v\d+", m)})
    out = []
    for i, v in enumerate(vs):
        hi = vs[i + 1] - 1 if i + 1 < len(vs) else max(ceiling, v)
        out.append((v, 1 if i == 0 else v, hi))
    return out


def relax_op_name(chain: str) -> str | None:
    """``relax.op.nn.gelu`` -> ``relax.nn.gelu``."""
    if chain.startswith("relax.op.") and chain.count(".") >= 2:
        return "relax." + chain[len("relax.op."):]
    return None


def analyse_frontend(text: str, ceiling: int) -> dict:
    mod = PyModule(FRONTEND, text)
    cmap = convert_map(mod)
    node_rows: dict = defaultdict(dict)
    ext_rows: dict = defaultdict(dict)  # outside chain -> rows
    op_rows: dict = {}
    for op, cls in sorted(cmap.items()):
        if cls not in mod.classes:
            continue
        for v, lo, hi in impl_ranges(mod, cls, ceiling):
            entry = mod.resolve(cls, f"_impl_v{v}")
            rows = {op: {(lo, hi)}}
            _add(op_rows.setdefault(op, {}), rows)
            nodes, ext = mod.reach(entry, cls)
            nodes |= {cls}
            for n in nodes:
                _add(node_rows[n], rows)
            for e in ext:
                _add(ext_rows[e], rows)
    # a class's own key: everything reaching any of its parts
    for c in mod.classes:
        for m in mod.classes[c]["methods"]:
            _add(node_rows[c], node_rows.get(f"{c}.{m}", {}))
    return {"module": mod, "convert_map": cmap, "nodes": dict(node_rows), "ext": dict(ext_rows),
            "operators": op_rows}


# -- legalization -------------------------------------------------------------------------

def _register_legalize(dec) -> str | None:
    if isinstance(dec, ast.Call) and (_chain(dec.func) or "").split(".")[-1] == "register_legalize" \
            and dec.args and isinstance(dec.args[0], ast.Constant) and isinstance(dec.args[0].value, str):
        return dec.args[0].value
    return None


def analyse_legalize(files: dict, relax_rows: dict) -> dict:
    """files: {path: text}. Returns {"nodes": {(path, def): rows}, "ext": {chain: rows},
    "registrations": {relax op: [path]}}."""
    mods = {p: PyModule(p, t) for p, t in files.items()}
    by_base = {posixpath.splitext(posixpath.basename(p))[0]: p for p in mods}

    def lookup(path, name):
        m = mods[path]
        if name in m.funcs:
            return (path, name)
        if name in m.imports:
            rel, orig = m.imports[name]
            base = rel.lstrip(".").split(".")[-1] if rel.lstrip(".") else ""
            other = by_base.get(base)
            if other and orig in mods[other].funcs:
                return (other, orig)
        return None

    node_rows: dict = defaultdict(dict)
    node_ops: dict = defaultdict(set)
    ext_rows: dict = defaultdict(dict)
    regs: dict = defaultdict(list)
    for path, m in sorted(mods.items()):
        entries = []  # (relax op, start refs, start def)
        for name, fn in m.func_nodes.items():
            for dec in fn.decorator_list:
                op = _register_legalize(dec)
                if op:
                    entries.append((op, set(), name))
        for st in m.module_stmts:
            for n in ast.walk(st):
                if isinstance(n, ast.Call):
                    op = _register_legalize(n)
                    if op:
                        entries.append((op, _refs(n.args[1:] + [k.value for k in n.keywords]), None))
        for op, refs, start in entries:
            regs[op].append(path)
            rows = relax_rows.get(op, {})
            todo = [(path, start)] if start else []
            ext: set = set()
            for r in refs:
                got = lookup(path, r.split(".")[0])
                if got:
                    todo.append(got)
                else:
                    ext.add(r)
            seen = set()
            while todo:
                p, d = todo.pop()
                if (p, d) in seen:
                    continue
                seen.add((p, d))
                for r in mods[p].funcs[d]:
                    got = lookup(p, r.split(".")[0])
                    if got:
                        todo.append(got)
                    else:
                        ext.add(r)
            for node in seen:
                node_rows[node] = node_rows[node]  # present even when no converter emits the op
                node_ops[node].add(op)
                _add(node_rows[node], rows)
            for e in ext:
                _add(ext_rows[e], rows)
    return {"nodes": dict(node_rows), "ops": dict(node_ops), "ext": dict(ext_rows), "registrations": dict(regs),
            "modules": mods}


# -- TOPI (Python) -----------------------------------------------------------------------

def topi_keys(path: str, name: str) -> list:
    """The spellings a TOPI function ``name`` of ``path`` is called by from outside TOPI:
    ``python/tvm/topi/nn/pad.py`` ``pad`` -> ``nn.pad``, ``nn.pad.pad``."""
    rel = path[len(TOPI_PY):-3].split("/")
    pkg, modname = rel[:-1], rel[-1]
    keys = [".".join(pkg + [name])]
    if modname != "__init__":
        keys.append(".".join(pkg + [modname, name]))
    return keys


def analyse_topi(files: dict, consumer_ext: dict, intrinsics: set) -> dict:
    """Rows of Python TOPI functions, from the outside chains (``topi.nn.pad``) that
    converters and legalizations use, spread to the functions they call; and the rows of
    the ``cpp.*`` names and TIR intrinsics those functions use."""
    mods = {p: PyModule(p, t) for p, t in files.items()}
    index: dict = defaultdict(set)
    for p, m in mods.items():
        for f in m.funcs:
            for k in topi_keys(p, f):
                index[k].add((p, f))

    def resolve_import(p, name):
        m = mods[p]
        if name in m.funcs:
            return {(p, name)}
        if name in m.imports:
            rel, orig = m.imports[name]
            lvl = len(rel) - len(rel.lstrip("."))
            base = posixpath.dirname(p)
            for _ in range(lvl - 1):
                base = posixpath.dirname(base)
            modpath = rel.lstrip(".").replace(".", "/")
            for cand in (f"{base}/{modpath}.py", f"{base}/{modpath}/__init__.py"):
                if cand in mods and orig in mods[cand].funcs:
                    return {(cand, orig)}
        return set()

    node_rows: dict = defaultdict(dict)
    cpp_rows: dict = defaultdict(dict)
    intr_rows: dict = defaultdict(dict)
    for chain, rows in consumer_ext.items():
        if not chain.startswith("topi."):
            continue
        parts = chain[len("topi."):].split(".")
        starts = set()
        for i in range(len(parts), 0, -1):
            starts = index.get(".".join(parts[:i]), set())
            if starts:
                break
        seen, todo = set(), list(starts)
        while todo:
            p, f = todo.pop()
            if (p, f) in seen:
                continue
            seen.add((p, f))
            for r in mods[p].funcs[f]:
                head = r.split(".")[0]
                got = resolve_import(p, head)
                if got:
                    todo.extend(got)
                elif head == "cpp" and "." in r:
                    _add(cpp_rows[r.split(".")[-1]], rows)
                elif head in ("te", "tirx", "tir", "tvm") and r.split(".")[-1] in intrinsics:
                    _add(intr_rows["tirx." + r.split(".")[-1]], rows)
        for n in seen:
            _add(node_rows[n], rows)
    return {"nodes": dict(node_rows), "cpp": dict(cpp_rows), "intrinsics": dict(intr_rows), "modules": mods}


# -- C and C++ ---------------------------------------------------------------------------

_STRIP = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_REG_OP = re.compile(r'TVM_REGISTER_OP\(\s*"([\w.]+)"\s*\)')
_REG_MACRO = re.compile(r"^\s*(RELAX_REGISTER_\w+)\(([^)]*)\)", re.M)
_DEFINE = re.compile(r"^#define\s+(\w+)", re.M)


def macro_op(macro: str, args: str) -> str | None:
    """The Relax op a ``RELAX_REGISTER_*(...)`` line registers: ``"relax." + the string
    argument`` (``RELAX_REGISTER_UNARY_NN_OP_AND_IMPL(relu, "nn.relu", ...)``), else
    ``"relax." + the first argument``."""
    if "DIST" in macro:
        return None
    s = re.search(r'"([\w.]+)"', args)
    if s:
        return "relax." + s.group(1)
    first = args.split(",")[0].strip()
    return "relax." + first if re.fullmatch(r"\w+", first) else None


def registrations(text: str) -> list:
    """(op name, first line, last line, identifiers) of each ``TVM_REGISTER_OP`` chain
    and ``RELAX_REGISTER_*`` macro line."""
    clean = _STRIP.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    out = []
    for m in _REG_OP.finditer(clean):
        depth, i = 0, m.end()
        while i < len(clean):
            ch = clean[i]
            if ch in "({[":
                depth += 1
            elif ch in ")}]":
                depth -= 1
            elif ch == ";" and depth <= 0:
                break
            i += 1
        body = clean[m.end():i]
        out.append((m.group(1), clean.count("\n", 0, m.start()) + 1, clean.count("\n", 0, i) + 1,
                    set(_IDENT.findall(body))))
    for m in _REG_MACRO.finditer(clean):
        op = macro_op(m.group(1), m.group(2))
        if op:
            ln = clean.count("\n", 0, m.start()) + 1
            out.append((op, ln, ln, {m.group(1)}))
    return out


def macro_defs(text: str) -> list:
    """(start, end, [name]) of each ``#define`` (continuation lines included)."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        m = _DEFINE.match(line)
        if m:
            j = i
            while j + 1 < len(lines) and lines[j].rstrip().endswith("\\"):
                j += 1
            out.append((i + 1, j + 1, [m.group(1)]))
    return out


class CIndex:
    """Definitions of a set of C/C++ files: name -> identifiers used in its bodies and the
    strings it names; call graph by identifier."""

    def __init__(self, files: dict):
        self.defs: dict = defaultdict(set)  # name -> identifiers
        self.strings: dict = defaultdict(set)
        self.where: dict = defaultdict(set)  # name -> paths
        self.regs: dict = {}  # path -> registrations
        for path, text in files.items():
            lines = text.splitlines()
            clean = _STRIP.sub(lambda m: "\n" * m.group(0).count("\n"), text).splitlines()
            for start, end, parts in c_definitions(text) + macro_defs(text):
                name = parts[-1].split("::")[-1]
                if name.isupper() and not _DEFINE.match(lines[start - 1]):
                    continue  # TVM_FFI_STATIC_INIT_BLOCK() {...}: a registration block, not a function
                if "." in name:
                    continue  # a TVM_REGISTER_OP chain: see registrations()
                raw = "\n".join(lines[start - 1:end])
                self.where[name].add(path)
                if "TVM_REGISTER_OP" in raw and not _DEFINE.match(lines[start - 1]):
                    self.defs.setdefault(name, set())  # a function holding registrations: not their caller
                    continue
                body = "\n".join(clean[start - 1:end])
                self.defs[name] |= set(_IDENT.findall(body)) - {name}
                self.strings[name] |= set(re.findall(r'Op::Get\(\s*"([\w.]+)"', raw))
            self.regs[path] = registrations(text)

    def callers(self) -> dict:
        out: dict = defaultdict(set)
        for name, ids in self.defs.items():
            for i in ids:
                if i in self.defs:
                    out[i].add(name)
        return out

    def registered(self, prefix: str) -> dict:
        """definition name -> registered names (``relax.*``, ``tirx.*``) it reaches: named
        in a registration chain, or naming the op itself (``Op::Get``), or called from a
        definition that does (callers' ops spread down to callees)."""
        direct: dict = defaultdict(set)
        for regs in self.regs.values():
            for op, _, _, ids in regs:
                for i in ids:
                    if i in self.defs:
                        direct[i].add(op)
        for name, strs in self.strings.items():
            for s in strs:
                if s.startswith(prefix) and not s.startswith(prefix + "op."):
                    direct[name].add(s)
        # spread from a definition to what it calls
        out = {k: set(v) for k, v in direct.items()}
        changed = True
        while changed:
            changed = False
            for name, ids in self.defs.items():
                mine = out.get(name)
                if not mine:
                    continue
                for i in ids:
                    if i in self.defs and i != name and not mine <= out.setdefault(i, set()):
                        out[i] |= mine
                        changed = True
        return out


# -- passes -------------------------------------------------------------------------------

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


_CREATE = re.compile(r"Create\w*Pass\s*\(([^;]*?)\)\s*;", re.S)
_PY_PASS = re.compile(r"@(?:[\w.]*\.)?(?:module|function|dataflowblock)_pass\(([^)]*)\)\s*\n\s*(?:class|def)\s+(\w+)")


def cc_passes(text: str) -> list:
    """(pass name, the C++ function creating it) in a pass file."""
    clean = _STRIP.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    defs = c_definitions(text)
    out = []
    for m in _CREATE.finditer(clean):
        s = re.search(r'"(\w+)"', m.group(1))
        if not s:
            continue
        ln = clean.count("\n", 0, m.start()) + 1
        inner = [d for d in defs if d[0] <= ln <= d[1]]
        fn = min(inner, key=lambda d: d[1] - d[0])[2][-1] if inner else ""
        out.append((s.group(1), fn))
    return out


def py_passes(path: str, text: str) -> list:
    """(pass name, definition) of a Python pass file: decorated pass classes/functions
    (``name=`` or the definition's name) and, in ``transform.py``, the CamelCase
    functions that return a pass."""
    out = []
    for m in _PY_PASS.finditer(text):
        s = re.search(r'name\s*=\s*"(\w+)"', m.group(1))
        if re.fullmatch(r"_?[A-Z]\w+", s.group(1) if s else m.group(2)):
            out.append((s.group(1) if s else m.group(2), m.group(2)))
    if path.endswith("/transform.py"):
        mod = PyModule(path, text)
        for f, node in mod.func_nodes.items():
            if re.fullmatch(r"[A-Z]\w+", f) and "Pass" in ast.unparse(node.returns or ast.Constant("")):
                out.append((f, f))
    return out


# -- the table ----------------------------------------------------------------------------

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
