"""onnxruntime's graph transformers for the change table: each transformer class and the names it
runs under (matched against dlgate's onnxruntime motifs, ``OpSpec.rewrite``), the contrib op
types its code emits, and the helpers that belong to the transformers calling them."""
from __future__ import annotations

import posixpath
import re

from dlgate.change.builders.onnxruntime_source import (
    MS_DOMAIN,
    NCHWC_DOMAIN,
    OPT,
    Tree,
    _base_part,
    _innermost,
    strip_comments,
)

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
