"""Which crashes may be memory-safety bugs (dlgate.oracle.memsafety): from the worker's record
of the crash (the verdict, the signal that ended it, the C library's and sanitizers' own
messages), never from any other failure."""
from __future__ import annotations

import pytest

from dlgate.oracle.memsafety import classify, describe


def _crash(signal=None, log="", message=None):
    return {"type": "Crash", "message": message or f"worker died: {'killed by ' + signal if signal else 'exit code 1'}",
            "stage": "run", "frames": [], "signal": signal, "log": log}


@pytest.mark.parametrize("signal", ["SIGSEGV", "SIGBUS"])
def test_a_death_by_an_invalid_memory_access_is_one(signal):
    ms = classify("crash", _crash(signal))
    assert ms == {"kind": "invalid memory access", "cwe": "CWE-119", "signal": signal}
    assert describe(ms) == f"invalid memory access ({signal})"


@pytest.mark.parametrize("log, kind, cwe", [
    ("free(): invalid pointer\n", "invalid free", "CWE-763"),
    ("munmap_chunk(): invalid pointer\n", "invalid free", "CWE-763"),
    ("double free or corruption (out)\n", "double free", "CWE-415"),
    ("free(): double free detected in tcache 2\n", "double free", "CWE-415"),
    ("malloc(): corrupted top size\n", "heap corruption", "CWE-787"),
    ("corrupted size vs. prev_size\n", "heap corruption", "CWE-787"),
    ("*** stack smashing detected ***: terminated\n", "stack smashing", "CWE-121"),
    ("*** buffer overflow detected ***: terminated\n", "buffer overflow", "CWE-787"),
])
def test_an_abort_by_the_c_library_for_a_corrupted_heap_or_stack_is_one(log, kind, cwe):
    assert classify("crash", _crash("SIGABRT", "[tvm] compiling\n" + log)) == {"kind": kind, "cwe": cwe,
                                                                              "signal": "SIGABRT"}


def test_a_sanitizer_report_is_one_whatever_the_exit():
    log = "==123==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000014 at pc 0x55d3\n"
    assert classify("crash", _crash(None, log)) == {"kind": "heap-buffer-overflow", "cwe": "CWE-122", "signal": None}
    log = "==9==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000\n"
    assert classify("crash", _crash(None, log))["kind"] == "invalid memory access"
    log = "==9==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020\n"
    assert classify("crash", _crash("SIGABRT", log))["cwe"] == "CWE-416"
    log = "==9==ERROR: AddressSanitizer: attempting double-free on 0x602000000010 in thread T0:\n"
    assert classify("crash", _crash(None, log))["kind"] == "double-free"
    log = "==9==ERROR: AddressSanitizer: attempting free on address which was not malloc()-ed: 0x7ffd\n"
    assert classify("crash", _crash(None, log))["kind"] == "bad-free"
    log = "==9==ERROR: LeakSanitizer: detected memory leaks\n"  # a leak is no memory-safety bug
    assert classify("crash", _crash(None, log)) is None


def test_a_record_from_before_the_signal_field_is_read_from_dlgates_own_words():
    assert classify("crash", {"type": "Crash", "message": "worker died: killed by SIGSEGV"})["signal"] == "SIGSEGV"
    assert classify("crash", {"message": "Crash: worker died: killed by SIGBUS"})["signal"] == "SIGBUS"


@pytest.mark.parametrize("verdict, error", [
    ("crash", _crash("SIGABRT", "terminate called after throwing an instance of 'std::runtime_error'\n")),
    ("crash", _crash("SIGABRT", "python: src/pass.cc:12: Check failed: x == y\n")),
    ("crash", _crash("SIGFPE")),
    ("crash", _crash("SIGILL")),
    ("crash", _crash(None, "Fatal error\n")),
    ("oom", {"type": "OutOfMemory", "message": "resident memory exceeded the 4096 MB cap", "signal": "SIGKILL"}),
    ("timeout", {"type": "Timeout", "message": "no answer in 60 s"}),
    # an error message may quote anything: only a crash's record counts
    ("run_error", {"type": "RuntimeError", "message": "free(): invalid pointer; SIGSEGV; killed by SIGSEGV",
                   "signal": None}),
    ("compile_error", {"type": "TVMError", "message": "AddressSanitizer: heap-buffer-overflow"}),
    ("mismatch", None),
])
def test_other_failures_are_not(verdict, error):
    assert classify(verdict, error) is None
