"""onnxruntime's change mapping: a changed CPU kernel, contrib kernel, graph transformer or
MLAS file -> the operators (with the kernel's opset range and dtypes) and the rewrites
dlgate's onnxruntime motifs aim at.

The table (``dlgate/change/tables/onnxruntime.json``, built by
``dlgate/change/builders/onnxruntime.py`` from onnxruntime's source) keeps each target,
kernel and MLAS entry point once and lets files and definitions refer to them, because a
shared helper or an MLAS routine reaches hundreds of kernels: ``t:KEY`` is a target row,
``k:KERNEL`` a kernel registration (its target keys), ``m:ENTRY`` an MLAS entry point
(the kernels calling it). The two registration lists (``cpu_execution_provider.cc``,
``cpu_contrib_kernels.cc``) map through their changed lines, which name the kernel
classes added or removed.
"""
from __future__ import annotations

import re

from dlgate.change.compilers import common
from dlgate.change.targets import FileTargets, Target

NAME = "onnxruntime"
BACKENDS = ("onnxruntime",)

#: ``ONNX_OPERATOR_[VERSIONED_][TYPED_]KERNEL_CLASS_NAME(provider, domain, ver[, end][, type...], Op)``
_CLASS_NAME = re.compile(r"ONNX_OPERATOR_(VERSIONED_)?((?:TWO_|THREE_)?TYPED_)?KERNEL_CLASS_NAME\s*\(([^)]*)\)")


def resolve(tab: dict, refs, why: str, _depth: int = 0) -> list:
    """The targets a list of table references stands for."""
    out = []
    for r in refs or ():
        kind, _, name = r.partition(":")
        if kind == "t":
            row = (tab.get("targets") or {}).get(name)
            if row is not None:
                out.append(Target.from_json(dict(row, why=why)))
        elif kind == "k" and _depth < 3:
            out += resolve(tab, (tab.get("kernels") or {}).get(name), why, _depth + 1)
        elif kind == "m" and _depth < 3:
            out += resolve(tab, (tab.get("mlas") or {}).get(name), f"{why} -> {name}", _depth + 1)
    return out


def _registry(fc, tab: dict) -> FileTargets:
    """A registration list's changed lines -> the kernels they register."""
    kernels = tab.get("kernels") or {}
    found = []
    for h in fc.hunks:
        for line in h.text:
            for m in _CLASS_NAME.finditer(line):
                versioned = bool(m.group(1))
                args = [a.strip() for a in m.group(3).split(",")]
                if len(args) < 4:
                    continue
                domain, op = args[1], args[-1]
                lo = args[2]
                hi = args[3] if versioned else ""
                ktype = args[4 if versioned else 3] if m.group(2) and len(args) > (5 if versioned else 4) else ""
                prefix = f"{domain}/{op}/{lo}-{hi}/"
                for kid in sorted(kernels):
                    if kid.startswith(prefix) and (not ktype or re.search(r"\b" + re.escape(ktype) + r"\b", kid[len(prefix):])):
                        found += resolve(tab, ["k:" + kid], f"{fc.where}: {op}")
    if found:
        return FileTargets(fc.where, found)
    return FileTargets(fc.where, skipped="unmapped",
                       note="the changed lines register no kernel the table maps (not a registration line, or "
                            "an operator no dlgate target covers)")


def map_file(fc, tab: dict) -> FileTargets:
    path = fc.where
    entry = (tab.get("files") or {}).get(path)
    if entry is None:
        return common.lookup(fc, {"prefixes": tab.get("prefixes") or ()})
    if entry.get("registry"):
        return _registry(fc, tab)
    defs = entry.get("definitions") or {}
    found, rest = [], False
    for h in fc.hunks or [None]:
        names = [d for d in (h.enclosing if h is not None else []) if d in defs]
        if names:
            # the innermost definition the table knows
            found += resolve(tab, defs[names[-1]], f"{path}: {names[-1]}")
        else:
            rest = True
    if rest:
        found += resolve(tab, entry.get("refs"), path)
    if found:
        return FileTargets(path, found)
    return FileTargets(path, skipped="unmapped",
                       note=entry.get("note") or "the changed lines are outside every definition the table maps")
