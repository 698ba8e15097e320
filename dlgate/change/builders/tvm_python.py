"""Reading TVM's Python for the change table: a module's definitions and what each refers to
(``PyModule``), the ONNX importer's converters and the opsets each serves, the legalizations
and TOPI functions the converters' Relax ops reach, and the passes a Python file defines.
Rows are ``{onnx op: {(lo, hi), ...}}``: the operators and opset ranges reaching a definition."""
from __future__ import annotations

import ast
import posixpath
import re
from collections import defaultdict

FRONTEND = "python/tvm/relax/frontend/onnx/onnx_frontend.py"
TOPI_PY = "python/tvm/topi/"


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


_PY_PASS = re.compile(r"@(?:[\w.]*\.)?(?:module|function|dataflowblock)_pass\(([^)]*)\)\s*\n\s*(?:class|def)\s+(\w+)")


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
