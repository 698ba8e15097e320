"""Reading a change: a unified diff (a file, or ``git diff BASE...HEAD`` in the compiler's
repository) as the changed files, their hunks, and the definitions enclosing each hunk.

The enclosing definitions are what the mapping tables are keyed by (TVM's converter
classes, Inductor's lowering functions, onnxruntime's kernel classes), so they are found
from the file as it is after the change when that is at hand (git mode, or ``--diff``
with the repository): Python by its syntax tree, C and C++ by the definitions that open
before the hunk and are still open at it. Without the file, git's own hunk header (the
line after the second ``@@``, the nearest definition above the hunk) is used.
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
from dataclasses import dataclass, field


class DiffError(ValueError):
    """The diff cannot be read (not a unified diff, git failed...)."""


@dataclass
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    header: str = ""  # git's context after the second @@
    #: Line numbers (in the new file) of added lines; for a pure deletion, the line the
    #: deletion sits before, so a removal is still placed inside its definition.
    lines: list = field(default_factory=list)
    #: Enclosing definitions, outermost first (``["Gelu", "_impl_v13"]``).
    enclosing: list = field(default_factory=list)
    #: The added and removed lines' text (without the leading + or -).
    text: list = field(default_factory=list)
    #: The new side's lines the hunk shows (context and added): (line number, text).
    shown: list = field(default_factory=list)


@dataclass
class FileChange:
    path: str  # the new path ('' when deleted: then old_path)
    old_path: str = ""
    status: str = "modified"  # added, deleted, renamed, modified
    hunks: list = field(default_factory=list)
    #: Names defined in or enclosing the changed lines, over all hunks (unique, in order).
    @property
    def definitions(self) -> list:
        out = []
        for h in self.hunks:
            for d in h.enclosing:
                if d not in out:
                    out.append(d)
        return out

    @property
    def where(self) -> str:
        return self.path or self.old_path


@dataclass
class Change:
    files: list
    source: str  # how it was read

    @property
    def paths(self) -> list:
        return [f.where for f in self.files]


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")


def _strip(p: str) -> str:
    p = p.strip()
    if p.startswith('"') and p.endswith('"'):
        p = p[1:-1]
    p = p.split("\t")[0]
    if p == "/dev/null":
        return ""
    return p[2:] if p[:2] in ("a/", "b/") else p


def parse(text: str, source: str = "diff") -> Change:
    """The files and hunks of a unified diff (git's extended headers understood; a plain
    ``diff -u`` works too). Raises ``DiffError`` when the text holds no file diff at all
    and is not empty (an empty diff is an empty change)."""
    files: list = []
    cur: FileChange | None = None
    hunk: Hunk | None = None
    new_line = 0
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            m = re.match(r'^diff --git "?a/(.*?)"? "?b/(.*?)"?$', line)
            cur = FileChange(m.group(2) if m else "", m.group(1) if m else "")
            files.append(cur)
            hunk = None
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = _strip(line[4:]), _strip(lines[i + 1][4:])
            if cur is None or cur.hunks:
                cur = FileChange(new, old)
                files.append(cur)
            cur.old_path, cur.path = old, new
            if not old:
                cur.status = "added"
            elif not new:
                cur.status = "deleted"
            elif old != new and cur.status == "modified":
                cur.status = "renamed"
            hunk = None
            i += 2
            continue
        elif cur is not None and line.startswith("new file mode"):
            cur.status, cur.old_path = "added", ""
        elif cur is not None and line.startswith("deleted file mode"):
            cur.status, cur.path = "deleted", ""
        elif cur is not None and line.startswith("rename from "):
            cur.status, cur.old_path = "renamed", line[len("rename from "):]
        elif cur is not None and line.startswith("rename to "):
            cur.path = line[len("rename to "):]
        elif line.startswith("@@"):
            m = _HUNK.match(line)
            if cur is None or not m:
                raise DiffError(f"a hunk header outside a file diff: {line[:80]!r}")
            a, b, c, d, hdr = m.groups()
            hunk = Hunk(int(a), int(b) if b is not None else 1, int(c), int(d) if d is not None else 1, hdr.strip())
            cur.hunks.append(hunk)
            new_line = int(c)
        elif hunk is not None and line[:1] in ("+", "-", " ", "\\"):
            if line[:1] in "+-":
                hunk.text.append(line[1:])
            if line.startswith("+"):
                if not hunk.lines or hunk.lines[-1] != new_line:
                    hunk.lines.append(new_line)
                hunk.shown.append((new_line, line[1:]))
                new_line += 1
            elif line.startswith("-"):
                if not hunk.lines or hunk.lines[-1] != new_line:
                    hunk.lines.append(new_line)
            elif line.startswith(" "):
                hunk.shown.append((new_line, line[1:]))
                new_line += 1
        i += 1
    if not files and text.strip():
        raise DiffError("no file diff found (expected a unified diff: 'diff --git' or '---'/'+++' headers)")
    return Change(files, source)


# -- enclosing definitions --------------------------------------------------------------

def python_definitions(text: str) -> list:
    """(start, end, qualified name parts) of every class and function, by syntax tree."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    out = []

    def walk(node, outer):
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([ch.lineno] + [d.lineno for d in ch.decorator_list])
                names = outer + [ch.name]
                out.append((start, ch.end_lineno or ch.lineno, names))
                walk(ch, names)
            else:
                walk(ch, outer)

    walk(tree, [])
    return out


#: A C/C++ definition's opening line: a class/struct, a namespace-qualified or plain
#: function (return type, name, parameters), or a registration macro's call.
_C_CLASS = re.compile(r"^\s*(?:template\s*<[^>]*>\s*)?(?:class|struct)\s+(?:\w+\s+)*?(\w+)\s*(?:final\s*)?(?::[^;{]*)?\{?\s*$")
#: A qualifier may carry template arguments (``Add<T>::Compute``), and the name itself an
#: explicit specialization's (``MlasGemmQuantKernel<MLAS_GEMM_U8X8_KERNEL_AVX2>(``).
_C_FUNC = re.compile(r"^[\w:<>,\s\*&~]*?\b((?:\w+(?:<[^()<>]*(?:<[^()<>]*>[^()<>]*)*>)?::)*~?\w+)(?:<[^()]*>)?\s*\([^;]*$")
#: A registration chain (TVM's ``TVM_REGISTER_OP("relax.nn.gelu")``), named by the
#: registered name: the lowering rules and op attributes sit in such chains, not in functions.
_C_REGISTER = re.compile(r'^\s*TVM_REGISTER_OP\(\s*"([\w.]+)"\s*\)')
_C_KEYWORDS = {"if", "for", "while", "switch", "return", "else", "do", "catch", "sizeof", "case"}


def c_definitions(text: str) -> list:
    """(start, end, [name]) of C/C++ classes and functions, by brace matching from each
    line that opens one (a heuristic good for the compilers' own style, where a
    definition starts at the line's beginning; comments and strings are skipped)."""
    out = []
    # strip comments and strings, keeping line structure
    clean = re.sub(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'",
                   lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S).splitlines()
    n = len(clean)
    src = text.splitlines()
    for i, line in enumerate(clean):
        reg = _C_REGISTER.match(src[i]) if i < len(src) else None
        if reg:
            # TVM_REGISTER_OP("tirx.exp").set_attr<...>(..., [](...) {...}); up to its ';'
            depth, j = 0, i
            while j < n:
                for ch in clean[j]:
                    depth += ch in "({["
                    depth -= ch in ")}]"
                if ";" in clean[j] and depth <= 0:
                    break
                j += 1
            out.append((i + 1, min(j, n - 1) + 1, [reg.group(1)]))
            continue
        if not line or line[0] in " \t#}" and not line.lstrip().startswith(("class ", "struct ", "template")):
            if not (line.startswith("  ") and _C_CLASS.match(line)):
                continue
        m = _C_CLASS.match(line)
        name = m.group(1) if m else None
        if name is None:
            f = _C_FUNC.match(line)
            if not f or f.group(1).split("::")[-1] in _C_KEYWORDS or line.rstrip().endswith(";"):
                continue
            name = f.group(1)
        # find the opening brace within a few lines, then its match
        # (the window counts non-blank lines: comments between a signature and its body,
        # as in MLAS's style, are blank once stripped)
        depth, opened, j, seen = 0, False, i, 0
        while j < n and seen < 12 or (opened and j < n):
            seg = clean[j]
            if seg.strip():
                seen += 1
            if not opened and ";" in seg and "{" not in seg and j > i:
                break
            for ch in seg:
                if ch == "{":
                    depth += 1
                    opened = True
                elif ch == "}":
                    depth -= 1
            if opened and depth <= 0:
                break
            j += 1
        if opened and j < n:
            out.append((i + 1, j + 1, [name]))
    return out


def definitions(path: str, text: str) -> list:
    if path.endswith((".py", ".pyi")):
        return python_definitions(text)
    if path.endswith((".cc", ".cpp", ".cxx", ".c", ".h", ".hpp", ".cu", ".cuh", ".inc")):
        return c_definitions(text)
    return []


def enclose(fc: FileChange, text: str | None) -> None:
    """Fill each hunk's ``enclosing`` from the file's text (after the change), else from
    git's hunk header."""
    defs = definitions(fc.where, text) if text is not None else []
    for h in fc.hunks:
        names: list = []
        if defs:
            for ln in h.lines or [h.new_start]:
                inner = [d for d in defs if d[0] <= ln <= d[1]]
                for _start, _end, parts in sorted(inner, key=lambda d: (d[0], -d[1])):
                    for p in parts:
                        if p not in names:
                            names.append(p)
                # a definition the hunk adds whole also counts
                for start, _end, parts in defs:
                    if start in h.lines and parts[-1] not in names:
                        names.append(parts[-1])
        else:
            names = _python_shown(h) if fc.where.endswith(".py") else []
            if not names and h.header:
                m = (re.search(r"(?:class|def|struct)\s+(\w+)", h.header) or _C_REGISTER.match(h.header)
                     or _C_FUNC.match(h.header))
                if m:
                    names.append(m.group(1))
        h.enclosing = names


_PY_DEF = re.compile(r"^(\s*)(?:async\s+)?(?:class|def)\s+(\w+)")


def _python_shown(h: Hunk) -> list:
    """Without the file: the Python definitions enclosing the changed lines as far as the
    hunk itself shows them (a ``class`` or ``def`` line among its context or added lines,
    by indentation), completed outwards by git's hunk header (the definition above the hunk)
    when the innermost one shown is indented. Empty when a changed line's definition is not
    shown (it starts above the hunk): the header alone then decides, for the whole hunk. Git's header names the nearest definition *above* the hunk, which is
    wrong when the hunk starts a new one (a method added at the top of a class)."""
    names: list = []
    for ln in h.lines:
        stack: list = []  # (indent, name)
        for n, t in h.shown:
            if n > ln:
                break
            if not t.strip():
                continue
            indent = len(t) - len(t.lstrip())
            while stack and stack[-1][0] >= indent:
                stack.pop()
            m = _PY_DEF.match(t)
            if m:
                stack.append((len(m.group(1)), m.group(2)))
        if not stack:
            # this line's definition starts above the hunk: only git's header can name it, and
            # then as a whole (the header's class, not one of its methods)
            return []
        found = [x for _, x in stack]
        if stack[0][0] > 0 and h.header:
            outer = re.search(r"class\s+(\w+)", h.header)
            if outer and outer.group(1) not in found:
                found.insert(0, outer.group(1))
        for x in found:
            if x not in names:
                names.append(x)
    return names


def _git(repo: str, *args: str) -> str:
    try:
        # safe.directory: in the Action's container the checkout belongs to the runner's user
        r = subprocess.run(["git", "-c", "safe.directory=*", "-C", repo, *args], capture_output=True, text=True,
                           timeout=120)
    except FileNotFoundError:
        raise DiffError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise DiffError(f"git {' '.join(args[:2])} timed out in {repo}") from None
    if r.returncode != 0:
        msg = (r.stderr.strip().splitlines() or ["failed"])[-1]
        raise DiffError(f"git {' '.join(args[:2])} in {repo}: {msg}")
    return r.stdout


def from_git(repo: str, base: str, head: str = "HEAD") -> Change:
    """The change between ``base`` and ``head`` in ``repo``: ``git diff base...head`` (the
    pull request's own commits: from the merge base), with enclosing definitions read from
    the files at ``head``."""
    if not os.path.isdir(repo):
        raise DiffError(f"{repo} is not a folder")
    text = _git(repo, "diff", "--no-color", "--no-ext-diff", "-M", "-U0", f"{base}...{head}")
    ch = parse(text, f"git diff {base[:12]}...{head} in {os.path.abspath(repo)}")
    for fc in ch.files:
        body = None
        if fc.status != "deleted":
            try:
                body = _git(repo, "show", f"{head}:{fc.path}")
            except DiffError:
                body = None
        enclose(fc, body)
    return ch


def from_file(path: str, repo: str | None = None) -> Change:
    """A unified diff read from ``path`` (``-`` is standard input); with ``repo``, the
    enclosing definitions come from the files there (as after the change)."""
    import sys

    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8", errors="replace").read()
    except OSError as e:
        raise DiffError(f"cannot read diff {path}: {e.strerror}") from None
    ch = parse(text, f"diff {path}")
    for fc in ch.files:
        body = None
        if repo and fc.status != "deleted":
            p = os.path.join(repo, fc.path)
            if os.path.isfile(p):
                with open(p, encoding="utf-8", errors="replace") as f:
                    body = f.read()
        enclose(fc, body)
    return ch
