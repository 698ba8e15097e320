"""Stable error signatures: what later stages deduplicate on.

A signature keeps what identifies a failure (verdict class, backend, exception type, the
message's words, the innermost frames) and normalizes away what varies between
occurrences of one bug: addresses, numbers, paths, quoted literals, tensor and node names
and shapes.
"""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache

_RULES = [
    (re.compile(r"0x[0-9a-fA-F]+"), "<addr>"),
    (re.compile(r"(/[\w.\-+]+)+/?"), "<path>"),
    (re.compile(r"\b[tn]\d+(_\w+)?\b"), "<name>"),
    # dlgate's tensor names (tmp_12, a motif's m_18) with what a compiler appends (tmp_12_q, m_18_q)
    (re.compile(r"\b(c|tmp|axes|lv|gv|v|m)_?\d+(_\w+)?\b"), "<name>"),
    (re.compile(r"_[tnm]\d+\b"), "_<name>"),  # appended to a compiler's own node name: InsertedCast_t13
    (re.compile(r"\b(lv|gv)\b"), "<name>"),  # Relax's binding names, numbered or not
    (re.compile(r"\[[\d,\s]*\]"), "<shape>"),
    (re.compile(r"\(\s*\d+(\s*,\s*\d+)*\s*,?\s*\)"), "<shape>"),
    (re.compile(r"\(\s*\)"), "<shape>"),  # a rank-0 shape: the same failure as at any other rank
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


#: What varies between occurrences of one root cause reached through different operators
#: and dtypes: maths intrinsics and operator names (TVM's ``tirx.asinh``, ``relax.nn.conv2d``,
#: onnxruntime's node names), dtype names, quoted literals.
_TEMPLATE_RULES = [
    (re.compile(r"\b(tirx?|relax|topi|te|R|T|ir)\.[A-Za-z_][\w.]*"), "<fn>"),
    (re.compile(r"\b(b?float|u?int|bfloat)(\d+)?\b|\bbool\b|\bdouble\b|\bhalf\b"), "<dtype>"),
    (re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`"), "<q>"),
]


_CALL = re.compile(r"(<fn>|<expr>)\((?:[^()]|\([^()]*\))*\)")
#: Lower-case operator names that are also plain English in error messages.
_WORDS = {"and", "or", "not", "xor", "where", "less", "equal", "greater", "range", "shape", "size", "sign", "round",
          "split", "mean", "tile", "expand", "identity", "pad", "mod", "sum", "max", "min", "cast", "slice", "gather"}


@lru_cache(maxsize=1)
def _op_names() -> re.Pattern:
    """Operator names as messages spell them: ONNX's (``Sigmoid``, case kept) and their
    lower-case forms, except those that are also English words."""
    from dlgate.spec.registry import all_specs

    names = {s.onnx_op for s in all_specs().values()}
    names |= {n.lower() for n in names if n.lower() not in _WORDS}
    return re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b")


def template(message: str) -> str:
    """The message's template: :func:`normalize`, then operator names, intrinsics, dtypes
    and quoted literals masked, so one cause reached through several operators (float16
    ``unknown intrinsic`` for seven maths functions) has one template."""
    text = normalize(message)
    for pat, rep in _TEMPLATE_RULES:
        text = pat.sub(rep, text)
    for _ in range(4):  # printed IR expressions, innermost first: R.subtract(R.const(1.0), lv)
        text, n = _CALL.subn("<expr>", text)
        if not n:
            break
    return _op_names().sub("<op>", text)


def cluster(kind: str, backend: str, error: dict | None) -> dict:
    """``{"id", "text"}`` of a failure's cluster, the group of fingerprints that share one
    cause whatever the operator: backend, verdict class, the message template and the
    innermost frames. Only errors and crashes cluster; a wrong answer has no message, so
    its cluster is its fingerprint (the caller passes ``error=None`` and uses that)."""
    parts = [kind, backend]
    if error:
        parts += [error.get("type", ""), template(error.get("message", "")),
                  " < ".join(error.get("frames", [])[-3:]), error.get("signal", "")]
    text = " :: ".join(p for p in parts if p)
    return {"id": hashlib.sha256(text.encode()).hexdigest()[:16], "text": text}
