"""The lifecycle of a run's workers and of the run itself: the workers the gate cannot do
without, started before any case, and the signals (SIGTERM, SIGINT) that stop a run
cleanly."""
from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager

from dlgate.check import CheckConfig
from dlgate.gate import stops
from dlgate.gate.config import Campaign
from dlgate.gate.run.plan import optional_labels


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGINT during a run. Not an Exception, so that no ``except Exception`` on
    the way out takes it for the failure of a case (the case in flight is not journaled)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.status = 128 + signum  # the shell's convention: 143 for SIGTERM, 130 for SIGINT


#: What ends a run early but cleanly: a cancelled CI job sends SIGTERM (or SIGINT), Ctrl-C SIGINT.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def stopped_by_signals():
    """While a run works, SIGTERM and SIGINT raise Interrupted in the main thread, once. A
    second signal while the run stops (the workers are killed, the reports of the cases
    journaled so far are written) is ignored, so that the reports are finished: GitHub
    Actions, cancelling a job, sends SIGINT and 7.5 s later SIGTERM; only SIGKILL cuts the
    shutdown short, and every report is written atomically, so it leaves none half
    written. The previous handlers come back after a run that was not interrupted; after an
    interrupted one, which the process is about to leave with the first signal's status,
    the ignoring handler stays, and :func:`hold_stop_signals` blocks both signals on the way
    out. (Only the main thread can take signals.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired = []

    def handler(signum, frame):
        if not fired:
            fired.append(signum)
            if stops.deferring():  # a journal line and its count: the stop waits for both
                stops.defer(Interrupted(signum))
                return
            raise Interrupted(signum)

    old = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        if not fired:
            for s, h in old.items():
                signal.signal(s, h if h is not None else signal.SIG_DFL)


def hold_stop_signals() -> None:
    """Ignore SIGTERM and SIGINT for the rest of the process: ``dlgate run``, interrupted,
    leaves with the first signal's status, and a later signal must not change it while the
    interpreter shuts down, which puts the default handlers back, except SIG_IGN. (Blocking
    them would not do: the process's other threads would still take them.) A signal that
    came before is taken, and ignored, by the handler that :func:`stopped_by_signals` left
    in place, when ``signal.signal`` checks for pending signals. Only the process's last
    steps may call this: the processes it starts after would inherit SIG_IGN."""
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)


def preflight(pool, base_pool, ccfg: CheckConfig, cfg: Campaign) -> dict:
    """Start, before any case, every worker the gate cannot do without: the reference, each
    backend not marked optional, and (head versus base) each one's base build. What cannot
    start (not installed, an import or constructor that raises, a crash while starting, a
    base interpreter that does not exist) -> why."""
    optional = optional_labels(cfg.backends)
    needed = [(pool, ccfg.reference, f"the reference {ccfg.reference.label()}")]
    needed += [(pool, s, s.label()) for s in ccfg.backends if s.label() not in optional]
    if base_pool is not None:
        needed += [(base_pool, s, f"{s.label()} (base build, {cfg.base['python']})")
                   for s in ccfg.backends if s.label() not in optional]
    out = {}
    for p, spec, what in needed:
        t0 = time.perf_counter()
        if not p.get(spec).start():
            out[what] = p.get(spec).unavailable
        p.start_s += time.perf_counter() - t0
    return out


class DeviceLost(Exception):
    """A worker the gate cannot do without lost its device in the middle of a run (its
    backend's start-up self-test no longer passes: ``dlgate.exec.devicecheck``): the case in
    flight is not journaled, the reports cover the cases before it, and the run ends with
    exit status 4, "cannot run"; a rerun of the same command resumes at that case."""

    def __init__(self, case_id: str, lost: dict):
        self.case_id = case_id
        self.cannot_run = {what: f"the device was lost at case {case_id}: {why}" for what, why in lost.items()}
        super().__init__(f"the device was lost at case {case_id}")


def lost(pool, base_pool, ccfg: CheckConfig, cfg: Campaign) -> dict:
    """The workers the gate cannot do without (the reference, each backend not marked
    optional, their base builds) that lost their device since they started: what -> why,
    named as the start-up check names them. An optional backend that loses its device is
    skipped from then on, as one that cannot start is."""
    optional = optional_labels(cfg.backends)
    needed = {(ccfg.reference.name, ccfg.reference.device): f"the reference {ccfg.reference.label()}"}
    needed.update({(s.name, s.device): s.label() for s in ccfg.backends if s.label() not in optional})
    out = {}
    for p, suffix in ((pool, ""), (base_pool, " (base build)")):
        for spec, w in (p.workers.items() if p is not None else ()):
            what = needed.get((spec.name, spec.device))
            if what is not None and w.lost:
                out.setdefault(what + suffix, w.lost)
    return out
