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
onnxruntime's own style; what it cannot place is left at file level, never guessed.
"""
from __future__ import annotations

import posixpath
import re

from dlgate.change.diff import c_definitions
from dlgate.change.targets import Target
from dlgate.ops.registry import all_specs

CPU = "onnxruntime/core/providers/cpu/"
CONTRIB = "onnxruntime/contrib_ops/cpu/"
OPT = "onnxruntime/core/optimizer/"
MLAS = "onnxruntime/core/mlas/"
#: Helpers outside the four trees through which kernels reach MLAS (math::Gemm...).
HELPERS = ("onnxruntime/core/util/math_cpu.cc", "onnxruntime/core/util/qmath.h",
           "onnxruntime/core/util/math_cpuonly.h")
SOURCE_EXT = (".cc", ".cpp", ".c", ".h", ".hpp", ".inc")
ASM_EXT = (".S", ".s", ".asm")
CPU_PROVIDER = "onnxruntime/core/providers/cpu/cpu_execution_provider.cc"
CONTRIB_REGISTRY = "onnxruntime/contrib_ops/cpu/cpu_contrib_kernels.cc"
REGISTRIES = (CPU_PROVIDER, CONTRIB_REGISTRY)

ONNX_DOMAIN, ML_DOMAIN, MS_DOMAIN, NCHWC_DOMAIN = "kOnnxDomain", "kMLDomain", "kMSDomain", "kMSNchwcDomain"

#: onnxruntime's C++ element types -> dlgate's dtype names (others keep an ONNX-style name).
CTYPES = {
    "float": "float32", "double": "float64", "MLFloat16": "float16", "int8_t": "int8",
    "uint8_t": "uint8", "int32_t": "int32", "int64_t": "int64", "bool": "bool",
    "int16_t": "int16", "uint16_t": "uint16", "uint32_t": "uint32", "uint64_t": "uint64",
    "BFloat16": "bfloat16", "std::string": "string", "string": "string",
    "Float8E4M3FN": "float8e4m3fn", "Float8E4M3FNUZ": "float8e4m3fnuz", "Float8E5M2": "float8e5m2",
    "Float8E5M2FNUZ": "float8e5m2fnuz", "Int4x2": "int4", "UInt4x2": "uint4", "Int2x4": "int2",
    "UInt2x4": "uint2", "Float4E2M1x2": "float4e2m1",
}
#: dlgate's own dtypes (dlgate/dtypes.py), kept apart so the builder imports no numpy.
DLGATE_DTYPES = ("float32", "float64", "float16", "int8", "uint8", "int32", "int64", "bool")
#: DataTypeImpl groups with a closed set of element types; every other ``All*`` group is open.
GROUPS = {
    "AllIEEEFloatTensorTypes": ("float32", "float64", "float16"),
    "AllIEEEFloatTensorExceptHalfTypes": ("float32", "float64"),
    "AllIEEEFloat": ("float32", "float64", "float16"),
}

#: The kernel registration macros everything expands to: argument layout of each.
BASE = {
    "ONNX_OPERATOR_KERNEL_EX": ("name", "domain", "lo", "provider", "builder", "kernel"),
    "ONNX_OPERATOR_VERSIONED_KERNEL_EX": ("name", "domain", "lo", "hi", "provider", "builder", "kernel"),
    "ONNX_OPERATOR_TYPED_KERNEL_EX": ("name", "domain", "lo", "type", "provider", "builder", "kernel"),
    "ONNX_OPERATOR_VERSIONED_TYPED_KERNEL_EX": ("name", "domain", "lo", "hi", "type", "provider", "builder", "kernel"),
    "ONNX_OPERATOR_TWO_TYPED_KERNEL_EX": ("name", "domain", "lo", "type", "type2", "provider", "builder", "kernel"),
    "ONNX_OPERATOR_VERSIONED_TWO_TYPED_KERNEL_EX": ("name", "domain", "lo", "hi", "type", "type2", "provider",
                                                    "builder", "kernel"),
    "ONNX_OPERATOR_THREE_TYPED_KERNEL_EX": ("name", "domain", "lo", "type", "type2", "type3", "provider",
                                            "builder", "kernel"),
}


def _short(domain, versioned, typed):
    v = "VERSIONED_" if versioned else ""
    t = "TYPED_" if typed else ""
    params = "name, " + ("startver, endver, " if versioned else "ver, ") + ("type, " if typed else "") + "builder, ..."
    args = "name, " + domain + ", " + ("startver, endver, " if versioned else "ver, ") + \
        ("type, " if typed else "") + "kCpuExecutionProvider, builder, __VA_ARGS__"
    return f"ONNX_OPERATOR_{v}{t}KERNEL_EX", params, args


#: include/onnxruntime/core/framework/op_kernel.h's CPU shorthands (a stable public API):
#: name -> (parameters, body).
SHORTHANDS = {}
for _dom, _tag in ((ONNX_DOMAIN, ""), (ML_DOMAIN, "ML_"), (MS_DOMAIN, "MS_")):
    for _ver in (False, True):
        for _typ in (False, True):
            _base, _params, _args = _short(_dom, _ver, _typ)
            _name = "ONNX_CPU_OPERATOR_" + ("VERSIONED_" if _ver else "") + ("TYPED_" if _typ else "") + _tag + "KERNEL"
            SHORTHANDS[_name] = ([p.strip() for p in _params.split(",")], f"{_base}({_args})")

#: Words in a kernel class expression that name no particular kernel.
NOT_OWNERS = {"functors", "onnxruntime", "contrib", "ml", "std", "detail", "nchwc", "const", "unsigned", "void",
              "ElementWiseKernel", "OpKernel", "true", "false", "T", "T1", "T2"} | set(CTYPES)

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRINGS = re.compile(r"\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'")
_IDENT = re.compile(r"[A-Za-z_]\w*")


def strip_comments(text: str) -> str:
    """Comments blanked, line structure kept (string literals stay: op types live there)."""
    def keep(m):
        s = m.group(0)
        return s if s.startswith(('"', "'")) else "\n" * s.count("\n")
    return re.sub(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", keep, text, flags=re.S)


def tokens(text: str) -> set:
    return set(_IDENT.findall(_STRINGS.sub(" ", text)))


# -- the macro expander ----------------------------------------------------------------------

def defines(text: str) -> dict:
    """Function-like ``#define``s: name -> (parameters, body)."""
    out = {}
    joined = strip_comments(text).replace("\\\r\n", " ").replace("\\\n", " ")
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)(.*)$", joined, re.M):
        out[m.group(1)] = ([p.strip() for p in m.group(2).split(",") if p.strip()], m.group(3).strip())
    return out


def _args(text: str, start: int):
    """The top-level arguments of the call whose ``(`` is at ``start``, and the end."""
    depth, cur, out, i, n = 0, [], [], start, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            m = _STRINGS.match(text, i)
            if m:
                cur.append(m.group(0))
                i = m.end()
                continue
        if ch in "([{":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                out.append("".join(cur).strip())
                return out, i + 1
        elif ch == "," and depth == 1:
            out.append("".join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(ch)
        i += 1
    return None, n


def _substitute(params: list, body: str, args: list) -> str:
    named = {}
    for k, p in enumerate(params):
        if p == "...":
            named["__VA_ARGS__"] = ", ".join(args[k:])
        else:
            named[p] = args[k] if k < len(args) else ""
    body = re.sub(r"#\s*(\w+)", lambda m: f'"{named[m.group(1)]}"' if m.group(1) in named and
                  not m.group(0).startswith("##") else m.group(0), body)
    body = re.sub(r"\b\w+\b", lambda m: named.get(m.group(0), m.group(0)), body)
    return re.sub(r"\s*##\s*", "", body)


def registrations(text: str, macros: dict) -> list:
    """Every kernel registration in ``text``: dicts with the base macro's fields and the
    line it starts on. ``macros`` are the user macros in scope (the file's and its
    includes'); the CPU shorthands are known."""
    scope = dict(SHORTHANDS)
    scope.update(macros)
    body = strip_comments(text).replace("\\\r\n", "  ").replace("\\\n", "  ")
    # blank the #define lines themselves (their bodies are templates, not registrations)
    body = re.sub(r"^[ \t]*#[ \t]*define[^\n]*", lambda m: " " * len(m.group(0)), body, flags=re.M)
    out: list = []
    names = set(scope) | set(BASE)
    pat = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\s*\(")

    def scan(s: str, line: int, depth: int):
        pos = 0
        while True:
            m = pat.search(s, pos)
            if not m:
                return
            args, end = _args(s, m.end() - 1)
            if args is None:
                return
            ln = line if line else body.count("\n", 0, m.start()) + 1
            name = m.group(1)
            if name in BASE:
                layout = BASE[name]
                if len(args) >= len(layout):
                    rec = dict(zip(layout, args[:len(layout) - 1]))
                    rec["kernel"] = ", ".join(args[len(layout) - 1:])
                    rec["line"] = ln
                    out.append(rec)
            elif depth < 10:
                params, tmpl = scope[name]
                scan(_substitute(params, tmpl, args), ln, depth + 1)
            pos = end

    scan(body, 0, 0)
    return out


def _int(s: str):
    try:
        return int(s.strip())
    except ValueError:
        return None


def _ctype(s: str) -> str | None:
    s = s.strip()
    return CTYPES.get(s) or CTYPES.get(s.split("::")[-1])


def _list_types(text: str, op: str, opset: str = "") -> tuple | None:
    """The types ``ORT_SPECIFY_OP_KERNEL_ARG_*`` gives ``op``'s arguments in ``text``
    (None: an open list, or none given)."""
    got: list = []
    for m in re.finditer(r"ORT_SPECIFY_OP_KERNEL_ARG_(?:DEFAULT|REQUIRED)_TYPES?(?:_LIST)?(?:_ALL_OPSETS)?\s*\(", text):
        args, _ = _args(text, m.end() - 1)
        if not args or len(args) < 5 or args[2] != op:
            continue
        if opset and "_ALL_OPSETS" not in m.group(0) and args[3] != opset:
            continue
        for a in args[5:] if "_ALL_OPSETS" not in m.group(0) else args[4:]:
            a = a.strip()
            if "element_type_lists::" in a:
                grp = GROUPS.get(a.split("::")[-1])
                if grp is None:
                    return None
                got += grp
            elif _ctype(a):
                got.append(_ctype(a))
    return tuple(got) or None


def dtypes_of(rec: dict, text: str) -> tuple:
    """A registration's dtypes: the typed macro's type, else the union of its type
    constraints' element types; () when any constraint is open (all types)."""
    if rec.get("type"):
        t = _ctype(rec["type"])
        return (t,) if t else ()
    builder = rec.get("builder", "")
    found: list = []
    for m in re.finditer(r"\.TypeConstraint\s*\(", builder):
        args, _ = _args(builder, m.end() - 1)
        if not args or len(args) < 2:
            continue
        c = ",".join(args[1:])
        types = [_ctype(t) for t in re.findall(r"Get(?:Tensor)?Type<\s*([\w:]+)\s*>", c)]
        for grp in re.findall(r"BuildKernelDefConstraints<([^>]*)>", c):
            types += [_ctype(t) for t in grp.split(",")]
        groups = re.findall(r"DataTypeImpl::(All\w+)", c)
        if "FromTypeList" in c:
            # EnabledPow7Types: the list the opset-7 specification names
            num = re.search(r"FromTypeList<\s*\w*?(\d+)\w*\s*>", c)
            lt = _list_types(text, rec.get("name", ""), num.group(1) if num else "")
            if lt is None:
                return ()
            types += list(lt)
        for g in groups:
            if g not in GROUPS:
                return ()
            types += list(GROUPS[g])
        types = [t for t in types if t]
        if not types:
            return ()
        found += types
    return tuple(sorted(set(found)))


def owner_names(kernel_expr: str, op: str) -> set:
    return {w for w in _IDENT.findall(kernel_expr) if w not in NOT_OWNERS} | {op}


def _base_part(name: str) -> list:
    """``Add<T>::Compute`` -> ['Add', 'Compute']."""
    prev = None
    while prev != name:
        prev, name = name, re.sub(r"<[^<>]*>", "", name)
    return [p for p in name.split("::") if p]


# -- the source ------------------------------------------------------------------------------

class Tree:
    """The files the table reads, with their comment-free text and definitions."""

    def __init__(self, source):
        self.src = source
        self._text: dict = {}
        self._defs: dict = {}

    def files(self, prefix, exts=SOURCE_EXT):
        return sorted(f for f in self.src.ls(prefix, exts) if "/test" not in f and "/tests/" not in f)

    def text(self, path):
        if path not in self._text:
            try:
                self._text[path] = self.src.read(path)
            except Exception:  # a file listed but absent (a snapshot's missing large file)
                self._text[path] = ""
        return self._text[path]

    def defs(self, path):
        if path not in self._defs:
            self._defs[path] = c_definitions(self.text(path))
        return self._defs[path]

    def includes(self, path):
        out = []
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', self.text(path), re.M):
            for cand in (inc, "onnxruntime/" + inc, "include/onnxruntime/" + inc,
                         posixpath.normpath(posixpath.join(posixpath.dirname(path), inc))):
                if self.src.exists(cand):
                    out.append(cand)
                    break
        return out

    def macros(self, path):
        m: dict = {}
        for inc in self.includes(path):
            if inc.startswith((CPU, CONTRIB, "onnxruntime/core/providers/")):
                m.update(defines(self.text(inc)))
        m.update(defines(self.text(path)))
        return m

    def bodies(self, path):
        """(start, end, name, token set) of each definition."""
        lines = strip_comments(self.text(path)).splitlines()
        return [(s, e, parts[-1], tokens("\n".join(lines[s - 1:e]))) for s, e, parts in self.defs(path)]


def _innermost(defs, line):
    best = None
    for d in defs:
        if d[0] <= line <= d[1] and (best is None or d[1] - d[0] < best[1] - best[0]):
            best = d
    return best


# -- kernels ---------------------------------------------------------------------------------

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


# -- the optimizer ---------------------------------------------------------------------------

_CLASS = re.compile(r"^\s*class\s+(\w+)\s*(?:final\s*)?:\s*public\s+(?:onnxruntime::)?(?:\w+::)*(\w+)", re.M)
_EMIT_MARKERS = ("AddNode", "ReplaceWith", "SwapNodeOpType", "op_type", "replacer_", "return \"",
                 "kMSDomain", "kMSNchwcDomain")
_NOT_EMIT = ("==", "!=", "IsSupportedOptype", "OpVersionsMapKey", "MatchesOpSinceVersion", "OpType() ",
             "FindParent", "FindPath", "EdgeEndToMatch", "GetFullQualifiedOpName")
#: Files outside the optimizer tree that name transformer instances (InsertCastTransformer
#: runs as "CastFloat16Transformer").
NAME_FILES = ("onnxruntime/core/session/inference_session.cc",)


def transformers(tree: Tree, files) -> dict:
    """Transformer class -> the names it runs under (its class name, the name its
    constructor passes on, names given where it is created)."""
    bases = {"GraphTransformer", "RewriteRule", "SelectorActionTransformer"}
    found: dict = {}
    texts = {p: strip_comments(tree.text(p)) for p in files}
    changed = True
    while changed:
        changed = False
        for _p, t in texts.items():
            for m in _CLASS.finditer(t):
                cls, base = m.groups()
                if (base in bases or base in found) and cls not in found:
                    found[cls] = {cls}
                    changed = True
    for p in NAME_FILES:
        if tree.src.exists(p):
            texts[p] = strip_comments(tree.text(p))
    for _p, t in texts.items():
        for cls in found:
            for m in re.finditer(r"\b" + cls + r'\s+\w+\s*[{(]\s*"(\w+)"', t):
                found[cls].add(m.group(1))
            # the name its constructor passes to its base: Base("Name"... or Base("Prefix_" + ep)
            for m in re.finditer(r"\b" + cls + r"\s*\((?:[^;{]|\{\})*?\)(?:\s*noexcept)?\s*:\s*[\w:]+\s*\(([^;{]*)", t):
                lits = re.findall(r'"(\w+)"', m.group(1))
                for lit in lits:
                    found[cls].add(lit + "CPUExecutionProvider" if lit.endswith("_") else lit)
            for m in re.finditer(r"make_unique<(?:onnxruntime::)?" + cls + r'>\s*\(\s*"(\w+)"', t):
                found[cls].add(m.group(1))
    return found


def rewrite_matches(name: str, rewrite: str) -> bool:
    """A rewrite target named ``name`` aims at a motif recording ``rewrite``."""
    return rewrite == name or rewrite.startswith(name + " ")


def _statement(text: str, pos: int) -> str:
    """The statement around ``pos`` (a brace-initializer list stays inside it; a block's
    opening or closing brace at a line's end or start bounds it)."""
    a = max(text.rfind(";", 0, pos), text.rfind("{\n", 0, pos), text.rfind("\n}", 0, pos))
    b = text.find(";", pos)
    return text[a + 1:b if b >= 0 else len(text)]


def optimizer(tree: Tree, motifs: list):
    """Per optimizer file: its definitions' owners (transformer classes or QDQ rule names),
    its file-level owners, and the op types its code emits (op, domain, owners)."""
    files = tree.files(OPT)
    classes = transformers(tree, files)
    rules = {m.split(" (")[0]: m for m in motifs if " (" in m}  # 'DQMatMulToMatMulNBits (QDQSel...)'
    direct: dict = {}
    for path in files:
        text = strip_comments(tree.text(path))
        lines = text.splitlines()
        for s, e, parts in tree.defs(path):
            own = {p for p in _base_part(parts[-1]) if p in classes}
            body = "\n".join(lines[s - 1:e])
            for lit in re.findall(r'"(\w+)"', body):
                if lit in rules and ("action_name" in body or "RegisterSelectorAndAction" in body):
                    own.add("rule:" + lit)
            direct[(path, s)] = own
    owners = _propagate(tree, files, direct)
    per_file = {}
    for path in files:
        stem = posixpath.splitext(path)[0]
        here = set()
        for p in (path, stem + ".h", stem + ".cc"):
            if p in files:
                here |= {m.group(1) for m in _CLASS.finditer(strip_comments(tree.text(p))) if m.group(1) in classes}
        if not here:
            for s, _e, _parts in tree.defs(path):
                here |= owners.get((path, s), set())
        per_file[path] = here
    emits = []
    for path in files:
        text = strip_comments(tree.text(path))
        defs = tree.defs(path)
        for m in re.finditer(r'"(\w+)"', text):
            st = _statement(text, m.start())
            if not any(k in st for k in _EMIT_MARKERS) or any(k in st for k in _NOT_EMIT):
                continue
            dom = NCHWC_DOMAIN if NCHWC_DOMAIN in st else MS_DOMAIN if MS_DOMAIN in st else ""
            line = text.count("\n", 0, m.start()) + 1
            d = _innermost(defs, line)
            own = owners.get((path, d[0]), set()) if d else set()
            # "QLinear" + op_type: every op type with that prefix
            op = m.group(1) + "*" if re.match(r"\s*\+", text[m.end():m.end() + 8]) else m.group(1)
            emits.append((op, dom, path, own or per_file[path]))
        for m in re.finditer(r"AddNode\s*\(", text):  # an op type passed on (nchwc's node.OpType())
            st = _statement(text, m.start())
            if NCHWC_DOMAIN in st:
                line = text.count("\n", 0, m.start()) + 1
                d = _innermost(defs, line)
                own = owners.get((path, d[0]), set()) if d else set()
                emits.append(("*", NCHWC_DOMAIN, path, own or per_file[path]))
    return classes, owners, per_file, emits


def _propagate(tree: Tree, files, direct: dict, rounds: int = 4) -> dict:
    """Owners spread from definitions to the helpers they call: a definition without
    owners of its own takes those of every definition (in any of ``files``) whose body
    names it."""
    owners = {k: set(v) for k, v in direct.items()}
    bodies = {p: tree.bodies(p) for p in files}
    by_token: dict = {}
    for p, bs in bodies.items():
        for s, _e, _name, toks in bs:
            for t in toks:
                by_token.setdefault(t, []).append((p, s))
    keys = {}
    for p, bs in bodies.items():
        for s, _e, name, _toks in bs:
            parts = _base_part(name)
            keys[(p, s)] = parts[0] if parts else name
    for _ in range(rounds):
        grew = False
        for p, bs in bodies.items():
            for s, _e, name, _toks in bs:
                if direct.get((p, s)):
                    continue
                parts = _base_part(name)
                # a method is reached through its class; a function through its name
                key = parts[0] if parts else name
                if len(key) < 4:
                    continue
                cur = owners.setdefault((p, s), set())
                refs = [(q, t) for q, t in by_token.get(key, ()) if (q, t) != (p, s) and keys[(q, t)] != key]
                # a file's own callers first: helpers of one name in several files are
                # file-local (static, anonymous namespace)
                local = [(q, t) for q, t in refs if q == p]
                for q, t in local or refs:
                        add = owners.get((q, t), set()) - cur
                        if add:
                            cur |= add
                            grew = True
        if not grew:
            break
    return owners


# -- MLAS ------------------------------------------------------------------------------------

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


# -- the table -------------------------------------------------------------------------------

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
