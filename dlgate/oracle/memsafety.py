"""Crashes that may be memory-safety bugs: dlgate does not file them in public.

A compiler that dies by SIGSEGV or SIGBUS on a valid model read or wrote memory it does not
own; one that the C library or a sanitizer stops has corrupted its heap or its stack (glibc's
``free(): invalid pointer``, ``double free or corruption``, ``malloc(): corrupted top size``,
``*** stack smashing detected ***``, ``*** buffer overflow detected ***``, an AddressSanitizer
or MemorySanitizer report). A crafted model may turn either into an exploit, so
:mod:`dlgate.github.issues` reports such a cause to the maintainers privately.

The decision rests on the worker's record of the crash, not on how a compiler words its
errors: the verdict must be ``crash`` (the worker process died), and the signal that ended
it (``error["signal"]``, from its exit status) or the allocator's and sanitizers' own fixed
messages in what the dying process printed (``error["log"]``) say which kind of fault it
was. Any other SIGABRT (an assertion, ``std::terminate``), SIGILL, SIGFPE, an exception, a
timeout or a wrong answer is not classed here and is filed as usual.
"""
from __future__ import annotations

import re

CRASH = "crash"  # dlgate.oracle.verdict.CRASH (not imported: verdict imports the worker)

#: Signals that are an invalid memory access in themselves: (kind, CWE).
SIGNALS = {"SIGSEGV": ("invalid memory access", "CWE-119"), "SIGBUS": ("invalid memory access", "CWE-119")}

#: Sanitizer reports name the fault in a fixed vocabulary: its CWE.
_SANITIZER = re.compile(r"\b(?:Address|Memory|HWAddress)Sanitizer: (attempting (?:double-)?free|[A-Za-z][\w-]*)")
#: How ASan words two of its reports: ``attempting double-free on 0x...``, ``attempting free on
#: address which was not malloc()-ed``.
_SANITIZER_WORDS = {"attempting double-free": "double-free", "attempting free": "bad-free"}
_SANITIZER_CWE = {"heap-buffer-overflow": "CWE-122", "stack-buffer-overflow": "CWE-121",
                  "stack-buffer-underflow": "CWE-124", "global-buffer-overflow": "CWE-119",
                  "dynamic-stack-buffer-overflow": "CWE-121", "container-overflow": "CWE-119",
                  "heap-use-after-free": "CWE-416", "stack-use-after-return": "CWE-562",
                  "stack-use-after-scope": "CWE-416", "double-free": "CWE-415",
                  "bad-free": "CWE-763", "alloc-dealloc-mismatch": "CWE-762", "use-of-uninitialized-value": "CWE-457",
                  "negative-size-param": "CWE-787", "memcpy-param-overlap": "CWE-119"}
#: Messages with which glibc aborts a process that corrupted its heap or stack: (kind, CWE).
_LIBC = [
    (re.compile(r"\*\*\* stack smashing detected \*\*\*"), "stack smashing", "CWE-121"),
    (re.compile(r"\*\*\* buffer overflow detected \*\*\*"), "buffer overflow", "CWE-787"),
    (re.compile(r"double free or corruption|free\(\): double free detected"), "double free", "CWE-415"),
    (re.compile(r"(?:free|munmap_chunk|realloc)\(\): invalid (?:pointer|size|next size|old size)"),
     "invalid free", "CWE-763"),
    (re.compile(r"malloc\(\): (?:corrupted|memory corruption|unaligned)|corrupted size vs\. prev_size"
                r"|corrupted double-linked list|malloc_consolidate\(\): (?:invalid|unaligned)"
                r"|free\(\): corrupted|free\(\): unaligned"), "heap corruption", "CWE-787"),
]
#: How dlgate's own worker words a death by a signal, for records that predate ``signal``.
_DIED = re.compile(r"worker died: killed by (SIG[A-Z0-9]+)")


def classify(verdict: str, error: dict | None) -> dict | None:
    """``{"kind", "cwe", "signal"}`` when a failure with ``verdict`` and ``error`` (a worker's
    error record: ``signal``, ``message``, ``log``) may be a memory-safety bug, else None.
    ``kind`` comes from a fixed vocabulary (a sanitizer's name for the fault, the C library's,
    or ``invalid memory access`` for SIGSEGV and SIGBUS), so the result is the same on every run."""
    if verdict != CRASH or not isinstance(error, dict):
        return None
    sig = error.get("signal") or None
    if sig is None:
        m = _DIED.search(str(error.get("message") or ""))
        sig = m[1] if m else None
    text = f"{error.get('message') or ''}\n{error.get('log') or ''}"
    m = _SANITIZER.search(text)
    reported = _SANITIZER_WORDS.get(m[1], m[1]) if m else None
    if reported in _SANITIZER_CWE:
        return {"kind": reported, "cwe": _SANITIZER_CWE[reported], "signal": sig}
    if reported == "SEGV" or sig in SIGNALS:
        kind, cwe = SIGNALS.get(sig, SIGNALS["SIGSEGV"])
        return {"kind": kind, "cwe": cwe, "signal": sig}
    for pattern, kind, cwe in _LIBC:
        if pattern.search(text):
            return {"kind": kind, "cwe": cwe, "signal": sig}
    return None


def describe(ms: dict) -> str:
    """One phrase for a classification, e.g. ``invalid memory access (SIGSEGV)``."""
    return f"{ms['kind']} ({ms['signal']})" if ms.get("signal") else ms["kind"]
