"""Reading onnxruntime's tree for the change table: where its parts live, its C++ without comments,
the definitions each file holds (``Tree``), and the kernel registration macros expanded (the
file's own wrapper macros down to ``ONNX_OPERATOR_*KERNEL_EX``) into each kernel's operator,
opset range and dtypes. A heuristic (brace matching, a small macro expander), good for
onnxruntime's own style."""
from __future__ import annotations

import posixpath
import re

from dlgate.change.diff import c_definitions

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
