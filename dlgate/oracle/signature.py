"""Stable error signatures: what later stages deduplicate on.

A signature keeps what identifies a failure (verdict class, backend, exception type, the
message's words, the innermost frames) and normalizes away what varies between
occurrences of one bug: addresses, numbers, paths, quoted literals, tensor and node names
and shapes.
"""
from __future__ import annotations

import hashlib
import re

_RULES = [
    (re.compile(r"0x[0-9a-fA-F]+"), "<addr>"),
    (re.compile(r"(/[\w.\-+]+)+/?"), "<path>"),
    (re.compile(r"\b[tn]\d+(_\w+)?\b"), "<name>"),
    (re.compile(r"\b(c|tmp|axes|lv|gv|v)_?\d+\b"), "<name>"),
    (re.compile(r"\b(lv|gv)\b"), "<name>"),  # Relax's binding names, numbered or not
    (re.compile(r"\[[\d,\s]*\]"), "<shape>"),
    (re.compile(r"\(\s*\d+(\s*,\s*\d+)*\s*,?\s*\)"), "<shape>"),
    (re.compile(r"-?\b\d+(\.\d+)?([eE][-+]?\d+)?\b"), "<n>"),
    (re.compile(r"\s+"), " "),
]


def normalize(message: str, max_len: int = 300) -> str:
    """The message's first non-empty lines with variable parts replaced."""
    lines = [ln.strip() for ln in (message or "").splitlines() if ln.strip()]
    text = " | ".join(lines[:3])
    for pat, rep in _RULES:
        text = pat.sub(rep, text)
    return text.strip()[:max_len]


def signature(kind: str, backend: str, error: dict | None = None, extra: str = "") -> dict:
    """``{"id": short hash, "text": readable key}`` for a failure.

    ``backend`` is the backend's name (not its version or opt level, so one bug keeps one
    signature across upgrades); ``extra`` adds a verdict-specific key (e.g. the signal).
    """
    parts = [kind, backend]
    if error:
        parts.append(error.get("type", ""))
        parts.append(normalize(error.get("message", "")))
        parts.append(" < ".join(error.get("frames", [])[-3:]))
        if error.get("signal"):
            parts.append(error["signal"])
    if extra:
        parts.append(extra)
    text = " :: ".join(p for p in parts if p)
    return {"id": hashlib.sha256(text.encode()).hexdigest()[:16], "text": text}
