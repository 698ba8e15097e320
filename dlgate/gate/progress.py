"""Progress of ``dlgate run`` that tells the truth: what it is doing, how far it is, and an
estimate of the time left only once there is a rate to base one on.

Three parts, each there because a compiler's cases are slow and uneven (TVM spends
minutes on its first case filling its compilation caches, and a failure's reduction can
take five minutes with no case finishing):

- :class:`Activity`, the one shared record of the step in progress ("reducing case
  00017-… on tvm", with a count of candidates tried). The run loop, the triage and the
  reducer report their step in one line each, without knowing who reads it or how it is
  printed;
- :class:`Progress`, which prints a line when cases finish (at most one per interval,
  ``DLGATE_HEARTBEAT_S``, 25 s by default) and, from a small thread, a heartbeat naming the
  activity when that long has passed without a line; on a terminal, a bar with the
  activity in it. Its ETA comes from the observed rate (:data:`MIN_CASES` cases after the
  first, which pays the workers' start-up and the compiler's caches, over at least
  :data:`MIN_SPAN_S` seconds) and respects the end of a time budget; before that it says
  when it will have one;
- the run's section of GitHub's job summary (``GITHUB_STEP_SUMMARY``), between two HTML
  comments, rewritten in place as the run goes and replaced by ``summary.md`` at the end
  (:func:`final_summary`); everything else in that file (other writers' sections) is kept
  byte for byte.
"""
from __future__ import annotations

import math
import os
import sys
import threading
import time

from dlgate import markdown as md

#: The environment variable that sets the interval, in seconds, of progress lines and
#: heartbeats (tests make it short).
HEARTBEAT_ENV = "DLGATE_HEARTBEAT_S"
#: The default interval: with the heartbeat's settling time (a tenth of it) no more than
#: 27.5 s pass without a line, inside the 30 s promised in docs/gate.md.
DEFAULT_HEARTBEAT_S = 25.0
#: An ETA needs this many finished cases after the first one, and their times to add up to
#: MIN_SPAN_S: the first case pays worker start-up and cold compilation caches, and a
#: rate from a few seconds of cases is noise.
MIN_CASES = 5
MIN_SPAN_S = 30.0
#: The rate is the mean time of the most recent cases (reductions included: they are part
#: of what the remaining cases will cost), over at most this many.
WINDOW = 50
#: The job summary's live section is rewritten at most this often (and when a heartbeat
#: prints, and at the end).
SUMMARY_EVERY_S = 10.0
#: The markers around the run's own section of the job summary.
BEGIN, END = "<!-- dlgate:progress -->", "<!-- /dlgate:progress -->"
#: How the section's closing note (that it is live) starts.
NOTE_START = "<sub>"


def heartbeat_seconds(env=os.environ) -> float:
    """The interval from ``DLGATE_HEARTBEAT_S``, else the default; a ValueError naming the
    variable when it is not a positive number of seconds."""
    text = env.get(HEARTBEAT_ENV, "").strip()
    if not text:
        return DEFAULT_HEARTBEAT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{HEARTBEAT_ENV}: expected a number of seconds > 0, got {text!r}")
    return value


def duration(seconds: float) -> str:
    """'42 s', '12 min', '3.4 h': a time as a reader takes it in, not a count of seconds."""
    s = max(0.0, seconds)
    if s < 90:
        return f"{s:.0f} s"
    if s < 90 * 60:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


class Activity:
    """What the run is doing now: a description, when it began, and a count of units done
    in it (candidates tried by a reduction), and the phase inside it (compiling on a
    backend, running, computing the reference), which the worker pool reports. Written by
    the main thread, read by the heartbeat thread: the state is one tuple, replaced whole,
    so a reader never sees half of an update."""

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._state: tuple | None = None  # (what, since, count, unit)
        self._phase: tuple | None = None  # (what, since) inside the step

    def begin(self, what: str, unit: str = "") -> None:
        """A new step: ``what`` (e.g. "reducing case 00017-… on tvm"); ``unit`` names what
        :meth:`tick` counts in it (e.g. "candidates tried"). The previous step's phase ends."""
        self._phase = None
        self._state = (what, self._clock(), 0, unit)

    def tick(self, n: int = 1) -> None:
        """One more unit of the current step done; the step keeps its start."""
        s = self._state
        if s is not None:
            self._state = (s[0], s[1], s[2] + n, s[3])

    def phase(self, what: str | None) -> None:
        """The phase inside the current step (e.g. "compiling on tvm"; None: none): a step
        that spends minutes in one job (TVM's first compile) says where. The step keeps its
        start; the phase has its own. Ignored while idle: a pool used outside a run's step
        (a standalone reduction) has no step to refine."""
        if self._state is None or what is None:
            self._phase = None
        elif self._phase is None or self._phase[0] != what:
            self._phase = (what, self._clock())

    def clear(self) -> None:
        self._state = None
        self._phase = None

    def snapshot(self) -> tuple | None:
        """(what, seconds since it began, count, unit), or None when idle."""
        s = self._state
        return None if s is None else (s[0], self._clock() - s[1], s[2], s[3])

    def describe(self) -> str | None:
        """'reducing case 00017-… on tvm: 14 candidates tried, 22 s; compiling on tvm for
        3 s'; None when idle."""
        s, ph = self.snapshot(), self._phase
        if s is None:
            return None
        what, age, count, unit = s
        if count == 1 and unit:  # "1 candidate tried": the unit is given in the plural
            head, _, rest = unit.partition(" ")
            unit = " ".join(x for x in (head[:-1] if head.endswith("s") else head, rest) if x)
        text = f"{what}: {count} {unit}, {duration(age)}" if unit else f"{what}, {duration(age)}"
        return text if ph is None else f"{text}; {ph[0]} for {duration(self._clock() - ph[1])}"


#: The run's activity, which the loop, the triage and the reducer report to.
ACTIVITY = Activity()

#: The backend label of ONNX's reference evaluator (the cross-check of a mismatch).
ONNX_REFERENCE = "onnx-reference"


def worker_phases(reference: str, base: bool = False, activity: Activity | None = None):
    """The ``on_phase(label, stage)`` a run's worker pool (:class:`dlgate.exec.worker.Pool`)
    reports to: each job's phase becomes the activity's phase, in words ("compiling on
    tvm[cpu]", "running on tvm[cpu]", "computing the reference on torch[cpu]", "starting the
    tvm[cpu] worker"); ``reference`` is the reference backend's label, ``base`` marks the
    base build's pool."""
    act = activity if activity is not None else ACTIVITY
    where = " (base build)" if base else ""

    def report(label: str, stage: str) -> None:
        if stage == "start":
            text = f"starting the {label} worker{where}"
        elif label.split("[")[0] == ONNX_REFERENCE:
            text = "cross-checking with ONNX's reference evaluator"
        elif label == reference:
            text = f"computing the reference on {label}"
        else:
            text = f"{'compiling' if stage == 'compile' else 'running'} on {label}{where}"
        act.phase(text)

    return report


# ---------------------------------------------------------------------------- the job summary

def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


def _section(data: bytes) -> tuple | None:
    """(start, end) of the last live section in ``data`` (markers and the line break after
    the end marker included), or None."""
    b, e = BEGIN.encode(), END.encode()
    i = data.rfind(b)
    if i < 0:
        return None
    j = data.find(e, i)
    if j < 0:
        return None
    j += len(e)
    if data[j:j + 1] == b"\n":
        j += 1
    return i, j


def _write(path: str, data: bytes) -> None:
    """Rewrite the file in place (not a new file renamed over it: the runner created it, and
    the gate may run as another user who can write the file but not its folder)."""
    with open(path, "r+b" if os.path.exists(path) else "wb") as f:
        f.write(data)
        f.truncate()


def put_section(path: str, markdown: str) -> None:
    """Show ``markdown`` as the run's live section of the job summary at ``path``: the
    previous one is replaced, or the section is appended; the rest of the file is kept."""
    data = _read(path)
    block = f"{BEGIN}\n{markdown.rstrip()}\n{END}\n".encode()
    at = _section(data)
    if at is not None:
        data = data[:at[0]] + block + data[at[1]:]
    else:
        data = data + (b"\n" if data and not data.endswith(b"\n") else b"") + block
    _write(path, data)


def live_section(path: str | None) -> str | None:
    """The Markdown of the live section in the job summary at ``path`` (what the check run
    of :mod:`dlgate.github.checks` shows), or None when there is none. The file is rewritten
    in place, so one read may catch a write half-done: two reads must agree (else None, and
    the reader keeps what it had)."""
    if not path:
        return None
    data = _read(path)
    if data != _read(path):
        return None
    at = _section(data)
    if at is None:
        return None
    body = data[at[0] + len(BEGIN.encode()):at[1]].decode("utf-8", "replace")
    return body.replace(END, "").strip("\n")


def final_summary(path: str, text: str) -> bool:
    """The run's final summary (``summary.md``) in the job summary at ``path``: in place of
    the live section when there is one (True), else appended (False)."""
    data = _read(path)
    at = _section(data)
    block = (text + "\n").encode()
    if at is None:
        with open(path, "ab") as f:
            f.write(block)
        return False
    _write(path, data[:at[0]] + block + data[at[1]:])
    return True


def seal(path: str, note: str) -> bool:
    """When a run ended without writing its summary (an internal error, a crash), turn its
    live section into a plain paragraph, ``note`` first, then its last progress; True when
    there was a section. The entrypoint calls this after ``dlgate run`` returns."""
    data = _read(path)
    at = _section(data)
    if at is None:
        return False
    body = data[at[0] + len(BEGIN.encode()):at[1]].decode("utf-8", "replace").replace(END, "")
    # the note that the section is live no longer holds
    body = "\n\n".join(p for p in body.strip("\n").split("\n\n") if not p.startswith(NOTE_START))
    _write(path, data[:at[0]] + f"{note}\n\n{body}\n".encode() + data[at[1]:])
    return True


# ---------------------------------------------------------------------------- progress

class Progress:
    """A run's progress on stderr (a bar on a terminal, lines in CI logs), its heartbeat and
    its section of the job summary. ``total``: the cases this invocation will run;
    ``budget_s``: the run's time budget in seconds (None: none), counted, as
    :class:`dlgate.gate.budget.Budget` counts it, from the start of the first case
    (:meth:`case_started`); its end bounds the ETA;
    ``every_s``: the interval of lines and heartbeats (``DLGATE_HEARTBEAT_S``, else 25 s);
    ``settle_s``: how old the current activity must be for a heartbeat (a tenth of the
    interval), so that a run whose steps are fast (each case its own activity) prints its
    progress lines, not heartbeats; ``step_summary``: the job summary's path
    (``GITHUB_STEP_SUMMARY``; None, none)."""

    def __init__(self, total: int, label: str, enabled: bool | None = None, every_s: float | None = None,
                 budget_s: float | None = None, stream=None, clock=time.monotonic, activity: Activity | None = None,
                 step_summary: str | None = "", settle_s: float | None = None, min_cases: int = MIN_CASES,
                 min_span_s: float = MIN_SPAN_S, summary_every_s: float = SUMMARY_EVERY_S):
        self.total, self.label, self.budget_s = total, label, budget_s
        self._budget_t0: float | None = None
        self.every_s = heartbeat_seconds() if every_s is None else every_s
        self.settle_s = self.every_s / 10 if settle_s is None else settle_s
        self.min_cases, self.min_span_s, self.summary_every_s = min_cases, min_span_s, summary_every_s
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.activity = activity if activity is not None else ACTIVITY
        self.step_summary = os.environ.get("GITHUB_STEP_SUMMARY") if step_summary == "" else step_summary
        self.done = self.failing = 0
        self.durations: list = []  # seconds of each finished case after the first
        self.t0 = self.last_line = self._last_done = self.clock()
        self._last_summary: float | None = None
        self._first_done = False
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self.heartbeats = 0
        self.bar = None
        tty = self.stream.isatty() and not os.environ.get("CI")
        if (enabled if enabled is not None else tty) and total:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
            from rich.progress import Progress as RP

            self.bar = RP(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TextColumn("{task.fields[failing]} failing"), TextColumn("{task.fields[eta]}"),
                          TextColumn("{task.fields[now]}"), transient=True, console=Console(file=self.stream))
            self.bar.start()
            self.task = self.bar.add_task(label, total=total, failing=0, eta="", now="")
        self._summary(force=True)
        self._thread = threading.Thread(target=self._beat, name="dlgate-heartbeat", daemon=True)
        self._thread.start()

    # -- the estimate -------------------------------------------------------------------
    def rate(self) -> float | None:
        """Seconds per case from the cases after the first, once there are enough."""
        recent = self.durations[-WINDOW:]
        if len(self.durations) < self.min_cases or sum(self.durations) < self.min_span_s:
            return None
        return sum(recent) / len(recent)

    def eta(self) -> str:
        """'~12 min left', 'ETA after 6 cases', '~40 s left (the budget ends the run)', ..."""
        left = self.total - self.done
        if left <= 0 or self.total <= self.min_cases + 1:  # done, or too few cases ever to have a rate
            return ""
        budget_left = None
        if self.budget_s is not None and self._budget_t0 is not None:
            budget_left = self.budget_s - (self.clock() - self._budget_t0)
        rate = self.rate()
        if budget_left is not None and budget_left <= 0:
            return "the budget is spent: the case in flight is the last"
        if rate is None:
            if len(self.durations) < self.min_cases:
                text = f"ETA after {self.min_cases + 1} cases"
            else:
                text = f"ETA after {self.min_span_s:g} s of cases"
            return text + (f"; the budget ends in {duration(budget_left)}" if budget_left is not None else "")
        # the case in flight has run since the last one finished: count what is left of it
        estimate = rate * (left - 1) + max(0.0, rate - (self.clock() - self._last_done))
        if budget_left is not None and budget_left + rate < estimate:  # the last case to start still finishes
            return f"~{duration(budget_left + rate)} left (the budget ends the run)"
        return f"~{duration(estimate)} left"

    def status(self, now: float) -> str:
        pct = 100 * self.done // max(1, self.total)
        eta = self.eta()
        return (f"{self.done}/{self.total} cases ({pct}%), {self.failing} with failures, "
                f"{duration(now - self.t0)} elapsed" + (f", {eta}" if eta else ""))

    # -- events -------------------------------------------------------------------------
    def case_started(self) -> None:
        """A case starts; the first one starts the budget's time (read on this object's own
        clock: the budget's is the budget's alone, and a test may count its reads)."""
        with self._lock:
            if self._budget_t0 is None:
                self._budget_t0 = self.clock()

    def advance(self, failing: bool) -> None:
        """A case finished (``failing``: with failures)."""
        with self._lock:
            now = self.clock()
            if self._first_done:
                self.durations.append(now - self._last_done)
            self._first_done = True
            self._last_done = now
            self.done += 1
            self.failing += bool(failing)
            if self.bar is not None:
                self.bar.update(self.task, advance=1, failing=self.failing, eta=self.eta())
            elif now - self.last_line >= self.every_s or self.done == self.total:
                self._line(now, self.status(now))
            self._summary(force=self.done in (1, self.total))

    def _line(self, now: float, text: str) -> None:
        print(f"dlgate: {self.label}: {text}", file=self.stream, flush=True)
        self.last_line = now

    def beat(self) -> float:
        """One look by the heartbeat: print a heartbeat if one is due; the seconds until the
        next look."""
        with self._lock:
            now = self.clock()
            if self.bar is not None:  # a terminal: the bar shows the activity, refreshed every second
                self.bar.update(self.task, now=self.activity.describe() or "", eta=self.eta())
                return min(1.0, self.every_s)
            due = self.last_line + self.every_s
            if now < due:
                return due - now
            snap = self.activity.snapshot()
            if snap is None or snap[1] < self.settle_s:  # idle, or a step that just began: a line comes soon
                return self.settle_s - (snap[1] if snap else 0.0)
            self.heartbeats += 1
            self._line(now, f"{self.activity.describe()} ({self.status(now)})")
            self._summary(force=True)
            return self.every_s

    def _beat(self) -> None:
        while True:
            try:
                wait = self.beat()
            except Exception as e:  # a heartbeat must never take the run down, nor go silent unsaid
                try:
                    print(f"dlgate: progress: the heartbeat stopped: {type(e).__name__}: {e}", file=self.stream,
                          flush=True)
                except (OSError, ValueError):  # its stream is gone (closed by its owner): nobody to tell
                    pass
                return
            if self._stop.wait(max(0.01, wait)):
                return

    # -- the job summary ----------------------------------------------------------------
    def section(self, now: float, closing: str | None = None) -> str:
        """The live section's Markdown."""
        head = f"### dlgate {md.code(self.label)}: progress"
        line = (f"**{self.done} of {self.total}** cases run, **{self.failing}** with failures, "
                f"{duration(now - self.t0)} elapsed")
        eta = "" if closing else self.eta()
        lines = [head, "", line + (f"; {md.text(eta)}." if eta else ".")]
        doing = closing or self.activity.describe()
        if doing:
            lines += ["", f"Now: {md.text(doing)}."]
        lines += ["", f"{NOTE_START}The run's summary replaces this section when dlgate ends. If it is still here after "
                      "the job, the run stopped before writing its reports (a kill or a timeout): the log has the "
                      "rest, and the same command resumes it.</sub>"]
        return "\n".join(lines)

    def _summary(self, force: bool = False, closing: str | None = None) -> None:
        if not self.step_summary:
            return
        now = self.clock()
        if not force and self._last_summary is not None and now - self._last_summary < self.summary_every_s:
            return
        self._last_summary = now
        try:
            put_section(self.step_summary, self.section(now, closing))
        except OSError:
            self.step_summary = None  # a job summary we cannot write must not fail the gate

    def close(self, closing: str | None = None) -> None:
        """Stop the heartbeat and the bar; with ``closing`` (what comes next, e.g. "writing the
        reports"), say it in the job summary. Idempotent."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            if self.bar is not None:
                self.bar.stop()
                self.bar = None
            if closing is not None:
                self._summary(force=True, closing=closing)
