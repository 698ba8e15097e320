"""What one job in a worker came to: its status (the classes a compile-and-run can end in,
in the order a case can reach them) and, with it, outputs or the error, timings and what
the compiler says it did. Shared by the worker's two sides (:mod:`dlgate.exec.child`,
:mod:`dlgate.exec.worker`)."""
from __future__ import annotations

from dataclasses import dataclass, field

#: Outcome statuses, in the order a case can reach them.
OK, UNSUPPORTED, COMPILE_ERROR, RUN_ERROR, CRASH, TIMEOUT, OOM, UNAVAILABLE = (
    "ok", "unsupported", "compile_error", "run_error", "crash", "timeout", "oom", "unavailable")


@dataclass
class Outcome:
    status: str
    outputs: list | None = None
    error: dict | None = None  # type, message, stage, frames (innermost last), signal
    compile_s: float = 0.0
    run_s: float = 0.0
    wall_s: float = 0.0  # as seen by the parent, harness included
    backend: dict = field(default_factory=dict)
    #: The same compiled model run at further input sets (a dynamic-shape case's other
    #: bindings), one Outcome each; empty when there were none or the first run failed.
    more: list = field(default_factory=list)
    #: The rewrite kinds the compiler says it applied (``Backend.rewrites``), or None.
    rewrites: list | None = None
    #: What the compile gave a fuzzer as feedback (``Backend.feedback``), or None.
    feedback: dict | None = None

    @property
    def ok(self) -> bool:
        return self.status == OK
