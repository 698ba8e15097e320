"""The run's journal: one JSON line per finished case, written as soon as it is known.

``results.jsonl`` holds only what the case decided (deterministic for a deterministic
compiler), so a run killed and resumed writes the same file as an uninterrupted one;
timings go to ``timings.jsonl``. Each line is flushed and fsynced before the next case
starts, so a SIGKILL loses at most the case in flight; a torn last line (killed during
the write) is cut off on resume. Anything else that is not one case record per line (a
case recorded twice, a line that is not a record, garbage before the last line) is refused
with the file and the line, never counted twice or silently cut.

One process at a time works in an output folder: :class:`OutLock`.
"""
from __future__ import annotations

import fcntl
import json
import os
import time

from dlgate.gate.stops import uninterrupted
from dlgate.secrets import redact_obj

RESULTS = "results.jsonl"
TIMINGS = "timings.jsonl"
MANIFEST = "run.json"
LOCK = ".lock"
#: The keys every record of a results journal has.
RECORD_KEYS = ("case", "verdicts")


class RunError(RuntimeError):
    """A run that cannot proceed for a reason the user can fix (exit status 2)."""


def json_line(obj: dict) -> str:
    return json.dumps(redact_obj(obj), sort_keys=True, default=str, separators=(",", ":")) + "\n"


def _complete(path: str, keys: tuple = RECORD_KEYS, unique: bool = True) -> tuple:
    """(records, bytes) of a journal file's complete lines. Only the last line may be torn
    (no newline: a kill mid-write, as each line is written whole and ends with the only
    newline it holds); it is left out. Any other line that is not a JSON object with
    ``keys``, and (``unique``) a case recorded twice, is a RunError naming the file and
    the line: a damaged journal is not guessed at."""
    if not os.path.exists(path):
        return [], 0
    out, good, seen = [], 0, {}
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if not raw.endswith(b"\n"):
                break  # torn by a kill mid-write: the case is redone on resume
            try:
                rec = json.loads(raw)
            except ValueError as e:  # not JSON (or not UTF-8)
                raise RunError(_damaged(path, n, f"is not JSON ({e})")) from None
            if not isinstance(rec, dict) or any(k not in rec for k in keys) or not isinstance(rec["case"], str):
                what = f"a JSON {type(rec).__name__}" if not isinstance(rec, dict) else \
                    f"an object without {', '.join(repr(k) for k in keys if k not in rec) or 'a string case'}"
                raise RunError(_damaged(path, n, f"is not a case record ({what})"))
            if unique and rec["case"] in seen:
                raise RunError(_damaged(path, n, f"records case {rec['case']} again (first on line {seen[rec['case']]})"))
            seen.setdefault(rec["case"], n)
            out.append(rec)
            good += len(raw)
    return out, good


def _damaged(path: str, line: int, what: str) -> str:
    return (f"{path}: line {line} {what}; the journal is damaged: delete that line (its case is run again) "
            "or use --fresh to discard the folder")


def read_records(path: str) -> list:
    """The complete records of a results journal; a torn last line is ignored, a damaged
    journal is a RunError naming the file and the line."""
    return _complete(path)[0]


def _truncate_torn(path: str, keys: tuple = RECORD_KEYS, unique: bool = True) -> None:
    """Cut a torn last line so appends start on a fresh line."""
    good = _complete(path, keys, unique)[1]
    if os.path.exists(path) and good != os.path.getsize(path):
        with open(path, "r+b") as f:
            f.truncate(good)
            f.flush()
            os.fsync(f.fileno())


class Journal:
    """Appends records durably; knows which cases are done."""

    def __init__(self, out_dir: str):
        self.dir = out_dir
        self.path = os.path.join(out_dir, RESULTS)
        self.timings_path = os.path.join(out_dir, TIMINGS)
        _truncate_torn(self.path)
        _truncate_torn(self.timings_path, *_TIMING_SHAPE)
        self.records = read_records(self.path)
        self.done = {r["case"] for r in self.records}
        self._f = open(self.path, "a")
        self._t = open(self.timings_path, "a")

    def append(self, record: dict, timing: dict | None = None) -> None:
        """Journal ``record`` durably and count it, both or neither: a stop signal waits
        for the end (:mod:`dlgate.gate.stops`), so the interrupted run's reports count
        every case its journal holds."""
        with uninterrupted():
            if timing is not None:
                self._t.write(json_line(dict(timing, case=record["case"])))
                self._t.flush()
            self._f.write(json_line(record))
            self._f.flush()
            os.fsync(self._f.fileno())
            self.records.append(record)
            self.done.add(record["case"])

    def close(self) -> None:
        for f in (self._f, self._t):
            if not f.closed:
                f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def write_json(path: str, obj) -> None:
    """Atomically (write, fsync, rename), secrets redacted (dlgate.secrets)."""
    write_text(path, json.dumps(redact_obj(obj), indent=1, sort_keys=True, default=str) + "\n")


def write_text(path: str, text: str) -> None:
    """Atomically: to ``path.tmp``, fsynced, then renamed over ``path``, so that a kill at
    any moment leaves ``path`` whole (the new text or the one it had), never cut short."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_json(path: str):
    with open(path) as f:
        return json.load(f)


#: A timings line names its case; a case may appear again (killed after its timing line and
#: before its record, the case is redone), and the last line counts.
_TIMING_SHAPE = (("case",), False)


def read_timings(out_dir: str) -> list:
    return _complete(os.path.join(out_dir, TIMINGS), *_TIMING_SHAPE)[0]


def read_manifest(path: str) -> dict:
    """An output folder's run.json; one that does not parse, or is not a mapping, is a
    RunError (exit status 2), not a traceback."""
    try:
        doc = read_json(path)
    except (ValueError, OSError) as e:  # not JSON, not UTF-8, unreadable
        doc, why = None, str(e)
    else:
        why = f"a JSON {type(doc).__name__}, not an object"
    if not isinstance(doc, dict):
        raise RunError(f"{path} is not a dlgate manifest: {why}; use --fresh to discard the folder")
    return doc


#: How long a run waits for a lock whose run has ended to be let go by the processes it forked.
DYING_HOLDER_WAIT_S = 10.0


def _flock(fd: int, wait: bool) -> None:
    """``flock(fd, LOCK_EX)`` at once; where ``wait``, tried again for up to
    :data:`DYING_HOLDER_WAIT_S` before BlockingIOError."""
    deadline = time.monotonic() + (DYING_HOLDER_WAIT_S if wait else 0.0)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


class OutLock:
    """An exclusive lock on an output folder for as long as a run (or a merge) works in it:
    ``flock`` on ``OUT/.lock``, held open. A second dlgate on the same folder is refused at
    once (RunError, exit status 2). The kernel releases the lock when the holder exits,
    however it exits (SIGKILL included), so a stale lock never needs cleaning up; the file
    stays, holding the last holder's pid. The descriptor is not inherited by workers started
    anew; a process the run forked holds it until it exits, so where the pid the file names
    is gone, the lock is waited for (up to :data:`DYING_HOLDER_WAIT_S`) while those die."""

    def __init__(self, out_dir: str):
        self.dir = out_dir
        self.path = os.path.join(out_dir, LOCK)
        self._fd: int | None = None

    def acquire(self) -> "OutLock":
        os.makedirs(self.dir, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _flock(fd, self._holder_gone(fd))
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunError(f"{self.dir} is in use by another dlgate run (pid {holder}); wait for it to end, "
                           "or use another --out") from None
        except OSError as e:
            os.close(fd)
            raise RunError(f"{self.dir}: cannot lock {self.path}: {e.strerror or e}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    @staticmethod
    def _holder_gone(fd: int) -> bool:
        """Whether the run the lock file names has ended (its pid is gone): a lock still
        held then is held by what that run forked and is dying with it (a worker that outlives
        a SIGKILL by its watchdog's beat)."""
        text = os.pread(fd, 32, 0).decode(errors="replace").strip()
        if not text.isdigit():
            return False
        try:
            os.kill(int(text), 0)
        except ProcessLookupError:
            return True
        except OSError:  # another user's process: alive
            return False
        return False

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # releases the lock

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
