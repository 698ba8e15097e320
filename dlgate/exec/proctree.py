"""A worker's process tree through psutil: its resident memory and its end, on Linux, macOS and Windows.

A backend may start processes of its own (a compiler driver, a linker, a tuning helper). The memory cap
counts the whole tree, the worker and every descendant, and a timed-out, crashed or over-the-cap worker
ends with everything it started: terminate (SIGTERM, or TerminateProcess on Windows), a short grace, then
kill what is left. psutil identifies a process by pid and creation time, so a pid reused by an unrelated
process after a descendant ended is never signalled.
"""
from __future__ import annotations

import os
import signal
import time

import psutil

#: How long a terminated tree gets to end before what is left is killed.
GRACE_S = 2.0


class ProcessTree:
    """The process ``pid`` and its descendants as of the last :meth:`refresh`.

    Reading the resident size of known processes is cheap (microseconds each); finding new descendants
    scans the process table (milliseconds), so the worker's poller does that less often.
    """

    def __init__(self, pid: int):
        try:
            self.root: psutil.Process | None = psutil.Process(pid)
        except psutil.Error:
            self.root = None
        self.descendants: list = []

    def refresh(self) -> None:
        """Look for processes started since the last look (and drop the ended ones)."""
        if self.root is not None:
            try:
                self.descendants = self.root.children(recursive=True)
            except psutil.Error:
                pass

    def rss_mb(self) -> float | None:
        """Resident memory of the root and of the descendants known at the last refresh, in MiB; None
        once the root is gone. A descendant that ended meanwhile counts nothing."""
        if self.root is None:
            return None
        try:
            total = self.root.memory_info().rss
        except psutil.Error:
            return None
        for proc in self.descendants:
            try:
                total += proc.memory_info().rss
            except psutil.Error:
                continue
        return total / 2**20


def end_tree(owner, grace_s: float = GRACE_S, group: bool = False) -> list:
    """End the process that ``owner`` (a ``multiprocessing.Process`` or alike: ``pid``, ``join``,
    ``is_alive``, ``kill``) runs and all its descendants: terminate them all, wait up to ``grace_s``,
    kill what is left. The owner reaps its own process, so it keeps the exit status; psutil waits for the
    rest. ``group`` (POSIX): also kill the process group the process leads, which reaches what left the
    tree on purpose (a double-forked daemon); kept as defence where process groups exist.
    Returns the pids that outlived even the kill (normally none)."""
    tree = ProcessTree(owner.pid)
    tree.refresh()
    procs = ([tree.root] if tree.root is not None else []) + tree.descendants
    for proc in procs:
        _signal(proc, psutil.Process.terminate)
    deadline = time.monotonic() + grace_s
    owner.join(timeout=grace_s)
    _, alive = psutil.wait_procs(tree.descendants, timeout=max(0.0, deadline - time.monotonic()))
    alive = [p for p in alive if _running(p)]
    if owner.is_alive():
        owner.kill()
    for proc in alive:
        _signal(proc, psutil.Process.kill)
    owner.join(timeout=10)
    _, alive = psutil.wait_procs(alive, timeout=5)
    if group and hasattr(os, "killpg"):
        try:
            os.killpg(owner.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return [p.pid for p in alive if _running(p)]


def _signal(proc: psutil.Process, send) -> None:
    try:
        send(proc)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        pass


def _running(proc: psutil.Process) -> bool:
    """Still there and not a zombie (an ended process its new parent has not reaped holds nothing)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
