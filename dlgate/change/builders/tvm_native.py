"""Reading TVM's C++ for the change table: operator registrations (``TVM_REGISTER_OP`` chains, the
``RELAX_REGISTER_*`` macros), the definitions each file holds and what they call (``CIndex``), the
passes a pass file creates, and the float dtypes a piece of lowering code names. Plain text
and regular expressions over comment-stripped source, no compiler needed."""
from __future__ import annotations

import re
from collections import defaultdict

from dlgate.change.diff import c_definitions

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


_CREATE = re.compile(r"Create\w*Pass\s*\(([^;]*?)\)\s*;", re.S)


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
