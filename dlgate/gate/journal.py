"""The run's journal: one JSON line per finished case, written as soon as it is known.

``results.jsonl`` holds only what the case decided (deterministic for a deterministic
compiler), so a run killed and resumed writes the same file as an uninterrupted one;
timings go to ``timings.jsonl``. Each line is flushed and fsynced before the next case
starts, so a SIGKILL loses at most the case in flight; a torn last line (killed during
the write) is cut off on resume.
"""
from __future__ import annotations

import json
import os

RESULTS = "results.jsonl"
TIMINGS = "timings.jsonl"
MANIFEST = "run.json"


def json_line(obj: dict) -> str:
    return json.dumps(obj, sort_keys=True, default=str, separators=(",", ":")) + "\n"


def _complete(path: str) -> tuple:
    """(records, bytes) of a journal file's complete lines; a line torn by a kill mid-write
    (no newline, or not JSON) ends the file."""
    if not os.path.exists(path):
        return [], 0
    out, good = [], 0
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                break
            try:
                out.append(json.loads(raw))
            except json.JSONDecodeError:
                break
            good += len(raw)
    return out, good


def read_records(path: str) -> list:
    """The complete records of a journal file; a torn last line is ignored."""
    return _complete(path)[0]


def _truncate_torn(path: str) -> None:
    """Cut a torn last line so appends start on a fresh line."""
    good = _complete(path)[1]
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
        for p in (self.path, self.timings_path):
            _truncate_torn(p)
        self.records = read_records(self.path)
        self.done = {r["case"] for r in self.records}
        self._f = open(self.path, "a")
        self._t = open(self.timings_path, "a")

    def append(self, record: dict, timing: dict | None = None) -> None:
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
    """Atomically (write, fsync, rename)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True, default=str)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_json(path: str):
    with open(path) as f:
        return json.load(f)


def read_timings(out_dir: str) -> list:
    return read_records(os.path.join(out_dir, TIMINGS))
