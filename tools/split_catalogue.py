"""Move the operator catalogue from ``dlgate/spec/`` (one module per family) to ``dlgate/ops/``
(one folder per family, one operator per file), and rewrite every reference to it.

    python tools/split_catalogue.py            # apply to this checkout (git mv / git rm / git add)
    python tools/split_catalogue.py --plan     # print where every definition goes; change nothing

A one-off codemod, kept for the record and so that the move can be re-run on a newer tree
(it is deterministic: the same tree gives the same files, byte for byte). Standard library
only: ``ast`` finds the definitions, ``symtable`` the global names each one reads, so every
generated file imports exactly the names it uses.

What it does, per family module listed in ``FAMILIES`` of ``dlgate/spec/registry.py``:

- each class in the module's ``OPS`` list gets a file named after it in snake_case; a
  registered class that directly follows an operator it subclasses in ``OPS`` and lowers to
  the same ONNX operator (ConvNoBias after Conv) joins that operator's file, so the listed
  order of the specs stays what ``OPS`` said;
- a definition (class, function, constant, and the statements that patch it afterwards)
  that only one operator file uses moves into that file; one that several use (a family base
  class, a helper) goes to the family's private ``_shared.py``;
- an operator file reads top to bottom: its constants, its classes, then the helpers their
  methods call (anything read while the module loads stays ahead of its reader); inside an
  operator class the members are ordered as the contract reads: signature, sampling,
  constraints and inference, ONNX lowering, PyTorch semantics, then the optional knowledge
  (a member read while the class is created stays after what it reads); ``_shared.py``
  keeps the source order;
- the family's docstring becomes its folder's ``__init__.py``, which lists the operator
  modules in registry order (``OPERATORS``); the framework modules (base, schema, sym,
  motif...) move whole with ``git mv``, as do the motif families' common modules; the
  registry and its test are replaced by the ones in ``tools/split_catalogue_data/`` (moved
  into place), which find the operators by walking ``dlgate/ops/`` and keep today's order.

Then every ``dlgate.spec`` import under dlgate/, tests/, bench/ and tools/ is rewritten to the
module that now defines each name, and ``dlgate/spec`` / ``dlgate.spec`` in prose (comments,
docstrings, docs/) to the new paths. It refuses to run (exit status 2) on a tree that has no
``dlgate/spec`` or already has ``dlgate/ops``.
"""
from __future__ import annotations

import argparse
import ast
import keyword
import os
import re
import subprocess
import symtable
import sys
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OLD, NEW = "dlgate.spec", "dlgate.ops"
SCAN_DIRS = ("dlgate", "tests", "bench", "tools", "docs")
ME = os.path.join("tools", "split_catalogue.py")
#: The new registry and its test: moved into place as they are (the old ones are removed).
DATA = os.path.join("tools", "split_catalogue_data")
REPLACED = {os.path.join("dlgate", "spec", "registry.py"): os.path.join("dlgate", "ops", "registry.py"),
            os.path.join("tests", "test_registry.py"): os.path.join("tests", "test_registry.py")}
#: The family-private module of what several operator files of a family use.
SHARED = "_shared"
#: The framework's operator base classes (outside the families).
OP_BASES = {"OpSpec", "Motif", "WholeMotif", "OrtMotif"}
#: Words whose snake_case spelling the generic split would break apart (IsNaN -> is_na_n).
WORDS = {"NaN": "Nan", "MatMul": "Matmul", "NBits": "Nbits", "Col2Im": "Col2im"}

# -- the contract's reading order, for the members of an operator class ---------------------------
SIGNATURE = {"name", "onnx_op", "onnx_ops", "schema_inputs", "arity", "n_outputs", "dtypes", "types", "ranks",
             "min_opset", "max_opset", "symbolic_ok", "needs_dynamic", "sigs", "available", "optimizer", "rewrite",
             "level", "fuse_dtypes", "expects"}
SAMPLING = {"sample", "draw", "input_type", "backward", "backward_ranks", "conditions"}
INFERENCE = {"requires", "infer"}
LOWERING = {"onnx_attrs", "onnx", "steps", "outputs", "constant_input"}
SEMANTICS = {"torch"}
#: Optional knowledge that the base classes declare as class attributes (moved after ``torch``).
FACTS = {"gaps", "siblings", "restricted", "can_overflow", "out_range", "keeps_range", "monotone",
         "preserves_values", "open_domain", "integral_out", "keeps_integers", "domain", "jumps", "steerable",
         "value_inputs", "elementwise", "pointwise", "exact_values", "cancels", "centred", "interpolates", "poles",
         "valley", "nonfinite"}
CORE = (SAMPLING, INFERENCE, LOWERING, SEMANTICS)


def member_rank(name: str, is_def: bool, hooks: set):
    """Where a class member goes: 1 signature data, 2 other data, 2.5 class mechanics, 3
    signature methods, 4-7 the core hooks, 9 optional facts, 10 optional hooks; None for a
    helper method, placed with the earliest member that uses it."""
    if name in SIGNATURE:
        return 3 if is_def else 1
    for k, names in enumerate(CORE):
        if name in names:
            return 4 + k if is_def else 2
    if name.startswith("__") and name.endswith("__"):
        return 2.5
    if name in FACTS or name in hooks:
        return 10 if is_def else 9
    return None if is_def else 2


class Refused(Exception):
    """The tree is not one this codemod can transform (one line for the user)."""


def snake(name: str) -> str:
    for word, spelled in WORDS.items():
        name = name.replace(word, spelled)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()
    return s + "_" if keyword.iskeyword(s) or s == SHARED else s


def mod_path(module: str) -> str:
    return module.replace(".", "/") + ".py"


# -- reading one module ----------------------------------------------------------------------------
class Stmt:
    """A top-level statement: its node, its lines (leading comments and decorators included)
    and the blank lines that separated it from the one before."""

    def __init__(self, node, lines, start, end, blank_before):
        self.node, self.start, self.end, self.blank_before = node, start, end, blank_before
        self.text = lines[start - 1:end]


def statements(src: str, tree: ast.Module) -> list:
    lines = src.splitlines()
    out, prev = [], 0
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        gap = lines[prev:first - 1]
        blank = next((i for i, x in enumerate(gap) if x.strip()), len(gap))
        # the comments between two statements belong to the one below (section headers too)
        out.append(Stmt(node, lines, prev + 1 + blank, node.end_lineno, blank))
        prev = node.end_lineno
    if any(x.strip() for x in lines[prev:]):
        raise Refused("text after the last statement")
    return out


def annotation_names(node) -> set:
    """Names read by annotations (not evaluated under ``from __future__ import annotations``,
    so ``symtable`` does not see them, but the imports must stay)."""
    out = set()

    def take(a):
        if a is None:
            return
        if isinstance(a, ast.Constant) and isinstance(a.value, str):
            try:
                a = ast.parse(a.value, mode="eval")
            except SyntaxError:
                return
        out.update(n.id for n in ast.walk(a) if isinstance(n, ast.Name))

    for n in ast.walk(node):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for arg in n.args.args + n.args.kwonlyargs + n.args.posonlyargs + [n.args.vararg, n.args.kwarg]:
                if arg is not None:
                    take(arg.annotation)
            take(n.returns)
        elif isinstance(n, ast.AnnAssign):
            take(n.annotation)
    return out


def global_reads(text: str) -> set:
    """The module-level names a statement reads, anywhere inside it."""
    top = symtable.symtable(text, "<stmt>", "exec")
    out = {s.get_name() for s in top.get_symbols() if s.is_referenced()}

    def walk(t):
        for s in t.get_symbols():
            if s.is_global() and s.is_referenced():
                out.add(s.get_name())
        for c in t.get_children():
            walk(c)

    for c in top.get_children():
        walk(c)
    return out | annotation_names(ast.parse(text))


def defined_names(node) -> list:
    if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return [node.name]
    if not isinstance(node, (ast.Assign, ast.AnnAssign)):
        return []
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names = []
    for t in targets:
        if isinstance(t, ast.Name):
            names.append(t.id)
        elif isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts):
            names.extend(e.id for e in t.elts)
        else:
            return []
    return names


def patched_name(node) -> str | None:
    """``X.attr = ...`` / ``X[k] = ...`` / ``X.method(...)``: a statement that changes ``X``."""
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        roots = set()
        for t in targets:
            while isinstance(t, (ast.Attribute, ast.Subscript)):
                t = t.value
            if not isinstance(t, ast.Name):
                return None
            roots.add(t.id)
        return roots.pop() if len(roots) == 1 and not isinstance(targets[0], ast.Name) else None
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        f = node.value.func
        while isinstance(f, ast.Attribute):
            f = f.value
        return f.id if isinstance(f, ast.Name) and isinstance(node.value.func, ast.Attribute) else None
    return None


class Item:
    """A unit of a family module that moves as one: a definition and the statements that
    patch it afterwards."""

    def __init__(self, names, stmts, index):
        self.names, self.stmts, self.index = names, stmts, index
        self.reads = set()
        self.home = None  # the file it goes to

    @property
    def node(self):
        return self.stmts[0].node

    @property
    def is_def(self):
        return isinstance(self.node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))


class ClassInfo:
    """What the codemod needs of a class, statically: its bases and its ``onnx_op``."""

    def __init__(self, module, node):
        self.module, self.name = module, node.name
        self.bases = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else None
                      for b in node.bases]
        self.onnx_op = None
        for s in node.body:
            if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "onnx_op" for t in s.targets) \
                    and isinstance(s.value, ast.Constant):
                self.onnx_op = s.value.value


class Source:
    """A module of the old catalogue, parsed: its statements, imports and definitions."""

    def __init__(self, module: str):
        self.module = module
        self.path = mod_path(module)
        with open(os.path.join(ROOT, self.path)) as f:
            self.src = f.read()
        self.tree = ast.parse(self.src)
        self.imports = {}  # bound name -> (module, original name or None for `import module`)
        self.classes = {}
        for node in self.tree.body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.imports[a.asname or a.name.split(".")[0]] = (a.name if a.asname else a.name.split(".")[0],
                                                                       None)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    raise Refused(f"{self.path}: relative import on line {node.lineno}")
                for a in node.names:
                    self.imports[a.asname or a.name] = (node.module, a.name)
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = ClassInfo(module, node)


class Family(Source):
    """A family module: its operators (``OPS``) and the items they are made of."""

    def __init__(self, name: str):
        super().__init__(f"{OLD}.{name}")
        self.name = name
        self.stmts = statements(self.src, self.tree)
        self.doc = None
        self.future = False
        self.ops = None
        self.items, self.defines = [], {}
        self.import_stmts = []
        for k, st in enumerate(self.stmts):
            node = st.node
            if k == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str):
                self.doc = st
            elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
                self.future = True
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self.import_stmts.append(st)
            elif isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["OPS"]:
                if not isinstance(node.value, ast.List) or not all(isinstance(e, ast.Name) for e in node.value.elts):
                    raise Refused(f"{self.path}: OPS is not a list of class names")
                self.ops = [e.id for e in node.value.elts]
            elif defined_names(node):
                item = Item(defined_names(node), [st], len(self.items))
                for n in item.names:
                    if n in self.defines or n in self.imports:
                        raise Refused(f"{self.path}:{node.lineno}: {n} is bound twice at module level")
                    self.defines[n] = item
                self.items.append(item)
            elif patched_name(node) in self.defines:
                self.defines[patched_name(node)].stmts.append(st)
            else:
                raise Refused(f"{self.path}:{node.lineno}: a module-level statement this codemod cannot place: "
                              f"{ast.unparse(node)[:60]}")
        if self.ops is None:
            raise Refused(f"{self.path} has no OPS list")
        known = set(self.defines) | set(self.imports)
        for item in self.items:
            reads = set()
            for st in item.stmts:
                reads |= global_reads("\n".join(st.text))
            item.reads = (reads & known) - set(item.names)
        for name in self.ops:
            if name not in self.defines or not isinstance(self.defines[name].node, ast.ClassDef):
                raise Refused(f"{self.path}: OPS names {name}, which is not a class defined there")


def load_families(root: str = ROOT):
    reg = ast.parse(open(os.path.join(root, mod_path(f"{OLD}.registry"))).read())
    fams = next(ast.literal_eval(n.value) for n in reg.body if isinstance(n, ast.Assign)
                and [getattr(t, "id", None) for t in n.targets] == ["FAMILIES"])
    return [Family(f) for f in fams]


# -- planning: which file each item goes to -------------------------------------------------------
class Catalogue:
    """Every family, planned: ``home[(old module, name)]`` is the new module defining a name."""

    def __init__(self, families):
        self.families = families
        self.by_module = {f.module: f for f in families}
        self.classes = {}
        for f in families:
            for n, c in f.classes.items():
                self.classes[(f.module, n)] = c
        # the members OpSpec declares: those outside the core are the optional knowledge
        node = next(n for n in Source(f"{OLD}.base").tree.body if isinstance(n, ast.ClassDef) and n.name == "OpSpec")
        self.hooks = {n for s in node.body if isinstance(s, (ast.Assign, ast.AnnAssign, ast.FunctionDef))
                      for n in member_names(s)}
        self.home = {}
        for f in families:
            self.plan(f)
        self.framework = dict(framework_modules(self))  # old path -> old module, moved whole

    def resolve_class(self, module, name):
        """The ClassInfo a name in ``module`` stands for, following imports; None outside the families."""
        f = self.by_module.get(module)
        if f is None:
            return None
        if name in f.classes:
            return f.classes[name]
        if name in f.imports:
            m, orig = f.imports[name]
            return self.resolve_class(m, orig) if orig else None
        return None

    def op_like(self, f, name) -> bool:
        """Whether a class of family ``f`` is an operator spec (its bases lead to OpSpec)."""
        todo, seen = [f.classes[name]], set()
        while todo:
            c = todo.pop()
            for b in c.bases:
                if b in OP_BASES:
                    return True
                bc = self.resolve_class(c.module, b) if b else None
                if bc is not None and id(bc) not in seen:
                    seen.add(id(bc))
                    todo.append(bc)
        return False

    def subclasses(self, c, parent) -> bool:
        seen = [c]
        while seen:
            k = seen.pop()
            for b in k.bases:
                bc = self.resolve_class(k.module, b) if b else None
                if bc is parent:
                    return True
                if bc is not None:
                    seen.append(bc)
        return False

    def groups(self, f):
        """The operator files of a family: runs of OPS entries, a variant (a subclass that keeps
        its operator's ``onnx_op``) joining the operator right before it."""
        out = []
        for name in f.ops:
            c = f.classes[name]
            if out and c.onnx_op is None and self.subclasses(c, f.classes[out[-1][0]]):
                out[-1].append(name)
            else:
                out.append([name])
        return out

    def plan(self, f):
        f.files = {}  # file (module name inside the family) -> registered class names
        owner = {}
        for g in self.groups(f):
            file = snake(g[0])
            if file in f.files:
                raise Refused(f"{f.path}: two operator files would be called {file}.py")
            f.files[file] = g
            for name in g:
                owner[f.defines[name].index] = file
        users = {i: set() for i in range(len(f.items))}
        for file, g in f.files.items():
            todo = [f.defines[n] for n in g]
            seen = set()
            while todo:
                item = todo.pop()
                if item.index in seen:
                    continue
                seen.add(item.index)
                users[item.index].add(file)
                for n in item.reads:
                    dep = f.defines.get(n)
                    if dep is not None and owner.get(dep.index, file) == file:
                        todo.append(dep)
        for item in f.items:
            item.home = owner.get(item.index) or (next(iter(users[item.index])) if len(users[item.index]) == 1
                                                  else SHARED)
        new_pkg = f"{NEW}.{f.name}"
        for n, item in f.defines.items():
            self.home[(f.module, n)] = f"{new_pkg}.{item.home}"
        # the files' imports of one another must not form a cycle: Python could not load them
        edges = {}
        for item in f.items:
            for n in item.reads:
                dep = f.defines.get(n)
                if dep is not None and dep.home != item.home:
                    edges.setdefault(item.home, set()).add(dep.home)
        state = {}

        def visit(u, path):
            state[u] = 1
            for v in sorted(edges.get(u, ())):
                if state.get(v) == 1:
                    raise Refused(f"{f.path}: the split would make an import cycle: {' -> '.join(path + [v])}")
                if v not in state:
                    visit(v, path + [v])
            state[u] = 2

        for u in sorted(edges):
            if u not in state:
                visit(u, [u])
        f.edges = edges

    def where(self, module, name):
        """(new module, name) for a name imported ``from module`` in the old layout."""
        f = self.by_module.get(module)
        if f is None:
            return new_module(module), name
        if name in f.defines:
            return self.home[(module, name)], name
        if name in f.imports:
            m, orig = f.imports[name]
            if orig is None:
                return new_module(m), None
            return self.where(m, orig) if m.startswith(OLD + ".") else (m, orig)
        raise Refused(f"{name} is imported from {module}, which does not define it")


def new_path(path: str) -> str:
    return "dlgate/ops/" + path[len("dlgate/spec/"):]


def new_module(module: str) -> str:
    return NEW + module[len(OLD):] if module == OLD or module.startswith(OLD + ".") else module


# -- rendering -------------------------------------------------------------------------------------
def import_lines(imports) -> list:
    """``from m import a, b`` lines for (module, name, alias) triples, sorted as isort would."""
    def key(n):
        b = n.lstrip("_")
        return (0 if b.isupper() and len(b) > 1 else 1 if b[:1].isupper() else 2, b.lower(), n)

    plain, aliased = {}, []
    for m, n, a in imports:
        if n is None:
            aliased.append((m, "", f"import {m}" + (f" as {a}" if a != m.split(".")[0] else "")))
        elif a != n:
            aliased.append((m, n, f"from {m} import {n} as {a}"))
        else:
            plain.setdefault(m, set()).add(n)
    rows = aliased + [(m, sorted(ns, key=key)[0], wrap(f"from {m} import ", sorted(ns, key=key)))
                      for m, ns in plain.items()]
    return [r[2] for r in sorted(rows, key=lambda r: (r[0], not r[2].startswith("import"), key(r[1])))]


def wrap(head: str, names: list, width: int = 120, brackets: str = "()", always: bool = False) -> str:
    """``head`` and the names joined by commas; over ``width``, in brackets (always with
    ``always``) with the lines continued under the first name."""
    if not always and len(head + ", ".join(names)) <= width:
        return head + ", ".join(names)
    out, cur = [], head + brackets[0]
    for i, n in enumerate(names):
        piece = n + (brackets[1] if i == len(names) - 1 else ",")
        if len(cur) + len(piece) + 1 > width and cur.strip() != (head + brackets[0]).strip():
            out.append(cur.rstrip())
            cur = " " * (len(head) + 1)
        cur += piece + " "
    out.append(cur.rstrip())
    return "\n".join(out)


def group_of(module: str) -> int:
    top = module.split(".")[0]
    return 0 if top in sys.stdlib_module_names or top == "__future__" else 2 if top == "dlgate" else 1


def load_time_reads(node) -> set:
    """Names a class-body member reads while the class is being created (not in method bodies)."""
    out, todo = set(), [node]
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            todo.extend(n.decorator_list + n.args.defaults + [d for d in n.args.kw_defaults if d])
            continue
        if isinstance(n, ast.Lambda):
            todo.extend(n.args.defaults)
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.add(n.id)
        todo.extend(ast.iter_child_nodes(n))
    return out


def member_names(node) -> list:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [node.name]
    return defined_names(node)


def reorder_class(node: ast.ClassDef, text: list, first_line: int, hooks: set) -> list:
    """The class's lines with its members in the contract's reading order (see RANKS); the
    lines unchanged when the body holds anything but a docstring, assignments and defs."""
    body = node.body
    doc = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
        isinstance(body[0].value.value, str)
    members = body[1:] if doc else body
    if not members or any(not isinstance(m, (ast.Assign, ast.AnnAssign, ast.FunctionDef)) or not member_names(m)
                          for m in members):
        return text
    line = lambda n: text[n - first_line]  # noqa: E731
    spans, prev = [], (body[0].end_lineno if doc else None)
    if prev is None:
        prev = min([body[0].lineno] + [d.lineno for d in getattr(body[0], "decorator_list", [])])
        while line(prev - 1).strip().startswith("#"):
            prev -= 1
        prev -= 1
    header_end = prev
    for m in members:
        start = min([m.lineno] + [d.lineno for d in getattr(m, "decorator_list", [])])
        gap = list(range(prev + 1, start))
        blank = next((i for i, k in enumerate(gap) if line(k).strip()), len(gap))
        spans.append((prev + 1 + blank, m.end_lineno, blank))
        prev = m.end_lineno
    tail = [line(k) for k in range(prev + 1, node.end_lineno + 1)]
    # ranks: the known hooks by name, helpers by the earliest hook that uses them
    is_def = [isinstance(m, ast.FunctionDef) for m in members]
    rank = [member_rank(member_names(m)[0], d, hooks) for m, d in zip(members, is_def)]
    refs = [{x.attr for x in ast.walk(m) if isinstance(x, ast.Attribute)} |
            {x.id for x in ast.walk(m) if isinstance(x, ast.Name)} for m in members]
    changed = True
    while changed:
        changed = False
        for i, m in enumerate(members):
            if is_def[i] and member_rank(member_names(m)[0], True, hooks) is None:
                n = member_names(m)[0]
                users = [rank[j] for j in range(len(members)) if j != i and rank[j] is not None and n in refs[j]]
                if users and (rank[i] is None or min(users) < rank[i]):
                    rank[i], changed = min(users), True
    for i in range(len(members)):
        if rank[i] is None:
            rank[i] = next((rank[j] for j in range(i + 1, len(members)) if rank[j] is not None), 11)
    # a member read while the class is created, or bound twice, keeps its place after the one before
    after = {i: set() for i in range(len(members))}
    for i, m in enumerate(members):
        reads = load_time_reads(m)
        for j in range(i):
            if set(member_names(members[j])) & (reads | set(member_names(m))):
                after[i].add(j)
    order, placed = [], set()
    while len(order) < len(members):
        i = min((i for i in range(len(members)) if i not in placed and after[i] <= placed),
                key=lambda i: (rank[i], i))
        order.append(i)
        placed.add(i)
    if order == list(range(len(members))):
        return text
    out = [line(k) for k in range(first_line, header_end + 1)]
    for pos, i in enumerate(order):
        start, end, blank = spans[i]
        if pos == 0:
            gap = spans[0][2]
        elif order[pos - 1] == i - 1:
            gap = blank
        else:
            gap = 1 if is_def[i] or is_def[order[pos - 1]] else 0
        if pos and rank[i] >= 9 > rank[order[pos - 1]]:
            gap = max(gap, 1)  # the optional knowledge starts
        out += [""] * gap + [line(k) for k in range(start, end + 1)]
    return out + tail


class Writer:
    """The new files of one family."""

    def __init__(self, cat: Catalogue, f: Family):
        self.cat, self.f = cat, f
        self.pkg = f"{NEW}.{f.name}"

    def imports_for(self, items, home) -> list:
        f, need = self.f, set()
        for item in items:
            need |= item.reads
        triples = []
        for n in sorted(need):
            if n in f.defines:
                h = f.defines[n].home
                if h != home:
                    triples.append((f"{self.pkg}.{h}", n, n))
            else:
                m, orig = f.imports[n]
                if m == OLD or m.startswith(OLD + "."):
                    m, orig = self.cat.where(m, orig)
                triples.append((m, orig, n))
        groups = [[], [], []]
        for t in triples:
            groups[group_of(t[0])].append(t)
        out = []
        for k, g in enumerate(groups):
            if not g:
                continue
            if k < 2:  # the original order of the standard and third-party imports
                order = {}
                for st in f.import_stmts:
                    for a in st.node.names:
                        order.setdefault(a.asname or (a.name if isinstance(st.node, ast.ImportFrom)
                                                      else a.name.split(".")[0]), len(order))
                g = sorted(g, key=lambda t: order[t[2]])
                lines = []
                for m, orig, n in g:
                    lines += import_lines([(m, orig, n)])
                lines = merge_from_lines(lines)
            else:
                lines = import_lines(g)
            out += lines + [""]
        return out

    def items_text(self, items, reorder: bool) -> list:
        out, last = [], None
        for item in items:
            for st in item.stmts:
                text = st.text
                if reorder and isinstance(st.node, ast.ClassDef) and self.cat.op_like(self.f, st.node.name):
                    text = reorder_class(st.node, text, st.start, self.cat.hooks)
                if last is not None:
                    adjacent = self.f.stmts.index(st) == self.f.stmts.index(last) + 1
                    defs = isinstance(st.node, (ast.ClassDef, ast.FunctionDef)) or \
                        isinstance(last.node, (ast.ClassDef, ast.FunctionDef))
                    out += [""] * (2 if defs else min(st.blank_before, 1) if adjacent else 1)
                out += text
                last = st
        return out

    def files(self) -> dict:
        """Path -> text of every file of the family folder."""
        f, out = self.f, {}
        base = os.path.join(*NEW.split("."), *f.name.split("."))
        head = ["from __future__ import annotations", ""] if f.future else []
        shared = [i for i in f.items if i.home == SHARED]
        if shared:
            who = f"{f.name.split('.')[-1]} motifs" if "." in f.name else f"{f.name} operators"
            doc = [f'"""What the {who} share: base classes, helpers and constants (private to the family;',
                   'each operator file imports the names it uses)."""']
            body = doc + head + self.imports_for(shared, SHARED) + [""] + self.items_text(shared, True)
            out[os.path.join(base, SHARED + ".py")] = "\n".join(body) + "\n"
        for file, classes in f.files.items():
            items = self.layout([i for i in f.items if i.home == file], classes)
            body = head + self.imports_for(items, file) + [""] + self.items_text(items, True)
            body += ["", "", wrap("OPS = ", classes, brackets="[]", always=True)]
            out[os.path.join(base, file + ".py")] = "\n".join(body).lstrip("\n") + "\n"
        doc = self.f.doc.text if self.f.doc else [f'"""The {f.name} operators."""']
        mods = [f'"{m}"' for m in f.files]
        order = wrap("OPERATORS = ", mods[:-1] + [mods[-1] + ("," if len(mods) == 1 else "")], always=True)
        out[os.path.join(base, "__init__.py")] = "\n".join(doc + [
            "", "#: The operator modules, in the order the registry lists and draws their specs (part of generation's",
            "#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.",
            order]) + "\n"
        return out

    def layout(self, items, classes) -> list:
        """An operator file's order: constants, then the operator's classes, then the helpers
        its methods call; anything read while the module loads stays ahead of its reader."""
        def prio(i):
            if not i.is_def:
                return 0
            return 1 if isinstance(i.node, ast.ClassDef) else 2
        loads = {i.index: set() for i in items}
        names = {n: i for i in items for n in i.names}
        for i in items:
            for st in i.stmts:
                for n in load_time_reads(st.node):
                    if n in names and names[n] is not i:
                        loads[i.index].add(names[n].index)
        order, placed = [], set()
        while len(order) < len(items):
            nxt = min((i for i in items if i.index not in placed and loads[i.index] <= placed),
                      key=lambda i: (prio(i), i.index))
            order.append(nxt)
            placed.add(nxt.index)
        return order


def merge_from_lines(lines: list) -> list:
    """Consecutive ``from m import a`` lines of one module back into one line."""
    out, names, mod = [], [], None
    for ln in lines + [None]:
        m = re.match(r"from (\S+) import (\w+)$", ln) if ln else None
        if m and m.group(1) == mod:
            names.append(m.group(2))
            continue
        if mod is not None:
            out.append(wrap(f"from {mod} import ", names))
            mod, names = None, []
        if m:
            mod, names = m.group(1), [m.group(2)]
        elif ln is not None:
            out.append(ln)
    return out


# -- rewriting the references ---------------------------------------------------------------------
def is_old_path(path: str) -> bool:
    return path.startswith(os.path.join("dlgate", "spec", ""))


def is_old(module) -> bool:
    return bool(module) and (module == OLD or module.startswith(OLD + "."))


def rewrite_imports(cat: Catalogue, path: str, text: str) -> str:
    """Every ``from dlgate.spec... import`` of a Python file, at any depth, to the new modules."""
    tree = ast.parse(text)
    lines = text.split("\n")
    edits, spans, rewritten = {}, [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(is_old(a.name) for a in node.names):
            raise Refused(f"{path}:{node.lineno}: `import dlgate.spec...` is not handled; use `from ... import`")
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and is_old(node.module)):
            continue
        triples = []
        for a in node.names:
            bound = a.asname or a.name
            if node.module == OLD and f"{OLD}.{a.name}" in cat.by_module:
                got, cut = family_alias(cat, path, tree, cat.by_module[f"{OLD}.{a.name}"], bound)
                triples += got
                spans += cut
            elif node.module == OLD:
                triples.append((NEW, a.name, bound))
            else:
                m, orig = cat.where(node.module, a.name)
                triples.append((m, orig, bound))
        first, last = lines[node.lineno - 1], lines[node.end_lineno - 1]
        if first[:node.col_offset].strip():
            raise Refused(f"{path}:{node.lineno}: an import sharing its line with other code")
        rest = last[node.end_col_offset:].strip()
        if rest and not rest.startswith("#"):
            raise Refused(f"{path}:{node.end_lineno}: an import sharing its line with other code")
        rewritten[node] = triples
        mods = {m for m, _, _ in triples}
        if len(mods) == 1 and len(triples) == len(node.names) and \
                all(o == a.name and b == (a.asname or a.name) for (_, o, b), a in zip(triples, node.names)):
            seg = "\n".join(lines[node.lineno - 1:node.end_lineno])
            new = seg.replace(f"from {node.module} import", f"from {mods.pop()} import", 1).split("\n")
        else:
            new = render_imports(triples, " " * node.col_offset)
            if rest:
                new[-1] += "  " + rest
        edits[node] = (node.lineno, node.end_lineno, new)
    # a run of first-party imports holding a rewritten one is sorted and merged again, as isort would
    runs, run = [], []
    for node in tree.body:
        plain = isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.split(".")[0] == "dlgate" \
            and "#" not in "\n".join(lines[node.lineno - 1:node.end_lineno])
        if plain and run and node.lineno == run[-1].end_lineno + 1:
            run.append(node)
            continue
        if len(run) > 1:
            runs.append(run)
        run = [node] if plain else []
    if len(run) > 1:
        runs.append(run)
    for run in runs:
        if not any(n in rewritten for n in run):
            continue
        triples = []
        for n in run:
            triples += rewritten.get(n) or [(n.module, a.name, a.asname or a.name) for a in n.names]
            edits.pop(n, None)
        edits[run[0]] = (run[0].lineno, run[-1].end_lineno, render_imports(sorted(set(triples)), ""))
    # ``alias.name`` read from a family module imported whole, where the names now live apart
    for lineno, col, end_col in sorted(spans, reverse=True):
        b = lines[lineno - 1].encode()
        attr = b[col:end_col].split(b".", 1)[1]
        lines[lineno - 1] = (b[:col] + attr + b[end_col:]).decode()
    for start, end, new in sorted(edits.values(), reverse=True):
        lines[start - 1:end] = new
    return "\n".join(lines)


def render_imports(triples, pad: str) -> list:
    out = []
    for ln in import_lines(triples):
        head, _, names = ln.replace("\n", " ").partition(" import ")
        names = [names] if " as " in names else [x.strip() for x in re.sub(r"[()]", "", names).split(",")]
        out += [pad + x for x in wrap(head + " import ", names, 120 - len(pad)).split("\n")]
    return out


def family_alias(cat, path, tree, fam, bound):
    """``from dlgate.spec import transformer as T``: if every ``T.name`` the file reads now
    lives in one module, that module imported as ``T``; else the names imported one by one
    and ``T.name`` written ``name`` (refused where a name is already bound in the file).
    Returns the import triples and the spans of ``T.name`` to shorten."""
    reads = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
             and n.value.id == bound]
    bare = sum(isinstance(n, ast.Name) and n.id == bound for n in ast.walk(tree)) - len(reads)
    if bare:
        raise Refused(f"{path}: uses {fam.module} as `{bound}` other than to read its names")
    homes = {n.attr: cat.where(fam.module, n.attr) for n in reads}
    mods = {m for m, _ in homes.values()}
    if len(mods) == 1:
        pkg, mod = mods.pop().rsplit(".", 1)
        return [(pkg, mod, bound)], []
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
        {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)} | \
        {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))} | \
        {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
         for a in n.names}
    clash = sorted(set(homes) & used)
    if clash:
        raise Refused(f"{path}: reads {fam.module} as `{bound}`, whose names now live apart, and already "
                      f"binds {clash[0]}: change the file by hand")
    return ([(m, orig, name) for name, (m, orig) in sorted(homes.items())],
            [(n.lineno, n.col_offset, n.end_col_offset) for n in reads])


PATH_RE = re.compile(r"dlgate/spec(/[\w*<>/]*[\w*>])?(\.py)?/?")
DOTTED_RE = re.compile(r"dlgate\.spec((?:\.\w+)*)")


def rewrite_prose(cat: Catalogue, text: str) -> str:
    """``dlgate/spec/...`` paths and ``dlgate.spec...`` dotted names in comments, docstrings
    and docs, to where they now are (a family module becomes its folder)."""
    moved_whole = set(cat.framework.values()) | {p[:-3].replace(os.sep, ".") for p in REPLACED if is_old_path(p)}

    def path(m):
        rel, py = (m.group(1) or "").strip("/"), m.group(2)
        if not rel:
            return "dlgate/ops/"
        module = f"{OLD}.{rel.replace('/', '.')}"
        if py and module not in moved_whole:
            return f"dlgate/ops/{rel}/"  # a family module (or a pattern of them) is now a folder
        return f"dlgate/ops/{rel}{py or ''}" + ("/" if m.group(0).endswith("/") and not py else "")

    def dotted(m):
        parts = [p for p in m.group(1).split(".") if p]
        for k in range(len(parts), -1, -1):
            module = ".".join([OLD] + parts[:k])
            if module in cat.by_module and k < len(parts):
                try:
                    new, name = cat.where(module, parts[k])
                except Refused:
                    break
                return ".".join([new] + ([name] if name else []) + parts[k + 1:])
            if module in cat.by_module or module in moved_whole or module == OLD or \
                    module == f"{OLD}.motifs":
                return ".".join([NEW] + parts)
        return ".".join([NEW] + parts)

    return DOTTED_RE.sub(dotted, PATH_RE.sub(path, text))


# -- applying --------------------------------------------------------------------------------------
def git(*args):
    subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True)


def framework_modules(cat) -> list:
    """The old modules that move whole (the framework and the motifs' common modules)."""
    out = []
    base = os.path.join(ROOT, "dlgate", "spec")
    for d, _, names in sorted(os.walk(base)):
        for n in sorted(names):
            if n.endswith(".py"):
                rel = os.path.relpath(os.path.join(d, n), ROOT)[:-3]
                module = rel.replace(os.sep, ".").removesuffix(".__init__")
                if module not in cat.by_module and rel + ".py" not in REPLACED:
                    out.append((rel + ".py", module))
    return out


def package_inits(cat) -> dict:
    """The new ``__init__.py`` of dlgate/ops/ and of dlgate/ops/motifs/."""
    tops, motifs = [], []
    for f in cat.families:
        top, _, rest = f.name.partition(".")
        if tops and tops[-1] == top:
            if not rest:
                raise Refused(f"family {f.name} is listed twice")
        elif top in tops:
            raise Refused(f"the {top} families are not contiguous in FAMILIES: their order cannot be kept by folder")
        else:
            tops.append(top)
        if rest:
            if top != "motifs" or "." in rest:
                raise Refused(f"family {f.name}: only motifs.<name> families are nested")
            motifs.append(rest)
    framework = sorted([m.rsplit(".", 1)[1] for p, m in cat.framework.items()
                        if m.count(".") == 2 and not p.endswith("__init__.py")]
                       + [os.path.basename(p)[:-3] for p in REPLACED if is_old_path(p)])
    order = "#: The {0}, in the order the registry lists and draws their specs (part of generation's\n" \
            "#: determinism; see registry.py). Each is a folder here.\n"
    intro = ("One folder per operator family, one file per operator (with its registered variants) named after it "
             "in snake_case, and a family's private ``_shared.py`` for what several of its operators use; the "
             "motifs, specs aimed at one optimizer rewrite each, are families under ``motifs/``. The files "
             "directly in this folder are the framework the operators build on: "
             + ", ".join(f"``{m}``" for m in framework[:-1]) + f" and ``{framework[-1]}`` (``base`` holds the "
             "``OpSpec`` contract; ``registry`` finds the operators and keeps their order). See docs/specs.md.")
    root = ('"""The operator catalogue: what dlgate generates models from.\n\n' + textwrap.fill(intro, 92)
            + '\n"""\n\n' + order.format("operator families")
            + wrap("FAMILIES = ", [f'"{t}"' for t in tops], always=True) + "\n")
    mot = ('"""Motif families: one folder per optimizer rewrite family, one file per motif (see\n'
           ":mod:`dlgate.ops.motif`), laid out like the operator families; ``ort_common`` and\n"
           '``tvm_common`` hold what the onnxruntime and the TVM motifs share."""\n\n' + order.format("motif families")
           + wrap("FAMILIES = ", [f'"{m}"' for m in motifs], always=True) + "\n")
    return {os.path.join("dlgate", "ops", "__init__.py"): root,
            os.path.join("dlgate", "ops", "motifs", "__init__.py"): mot}


def text_files():
    for d in SCAN_DIRS:
        for base, dirs, names in sorted(os.walk(os.path.join(ROOT, d))):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__" and not x.startswith("."))
            for n in sorted(names):
                rel = os.path.relpath(os.path.join(base, n), ROOT)
                if rel != ME and n.endswith((".py", ".md")):
                    yield rel


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", action="store_true", help="print where every definition goes; change nothing")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        if not os.path.isdir(os.path.join(ROOT, "dlgate", "spec")):
            raise Refused("there is no dlgate/spec/ here: nothing to move")
        if os.path.exists(os.path.join(ROOT, "dlgate", "ops")):
            raise Refused("dlgate/ops/ exists already: run this on a tree that has only dlgate/spec/")
        if not all(os.path.isfile(os.path.join(ROOT, DATA, os.path.basename(p))) for p in REPLACED.values()):
            raise Refused(f"{DATA}/ lacks the new registry or its test")
        cat = Catalogue(load_families())
        new = {}
        for f in cat.families:
            new.update(Writer(cat, f).files())
        new.update(package_inits(cat))
        if args.plan:
            for f in cat.families:
                print(f"{f.path} -> dlgate/ops/{f.name.replace('.', '/')}/")
                for item in f.items:
                    print(f"  {', '.join(item.names)} -> {item.home}.py")
            for old in cat.framework:
                print(f"{old} -> {new_path(old)} (moved whole)")
            return 0
        # everything is computed before the tree is touched: a refusal leaves it as it was
        dest = {rel: rel for rel in text_files() if rel not in REPLACED and not rel.startswith(DATA + os.sep)}
        dest.update({old: new_path(old) for old in cat.framework})
        for f in cat.families:
            dest.pop(f.path)
        writes = {}
        for rel, to in dest.items():
            if to in new:
                continue
            with open(os.path.join(ROOT, rel)) as fh:
                old_text = fh.read()
            text = rewrite_imports(cat, rel, old_text) if rel.endswith(".py") else old_text
            text = rewrite_prose(cat, text)
            if text != old_text or to != rel:
                writes[to] = text
        for path, text in new.items():
            writes[path] = rewrite_prose(cat, rewrite_imports(cat, path, text))
        for old in cat.framework:
            os.makedirs(os.path.join(ROOT, os.path.dirname(new_path(old))), exist_ok=True)
            git("mv", old, new_path(old))
        git("rm", "-q", *[f.path for f in cat.families], *REPLACED)
        for to in REPLACED.values():
            git("mv", os.path.join(DATA, os.path.basename(to)), to)
        os.rmdir(os.path.join(ROOT, DATA))
        for path, text in sorted(writes.items()):
            full = os.path.join(ROOT, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as fh:
                fh.write(text)
        changed = len(writes)
        leftover = os.path.join(ROOT, "dlgate", "spec")
        if os.path.isdir(leftover):
            for base, _, names in os.walk(leftover, topdown=False):
                for n in names:
                    if not n.endswith(".pyc"):
                        raise Refused(f"{os.path.join(base, n)} is left in dlgate/spec/ (untracked?)")
                    os.remove(os.path.join(base, n))
                os.rmdir(base)
        git("add", "-A", "dlgate", "tests", "bench", "tools", "docs")
    except Refused as e:
        print(f"split_catalogue: {e}", file=sys.stderr)
        return 2
    n_ops = sum(len(f.files) for f in cat.families)
    print(f"split {len(cat.families)} family modules into {n_ops} operator files ({len(new)} files written), "
          f"moved {len(cat.framework)} framework modules, rewrote {changed - len(new)} other files "
          f"({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
