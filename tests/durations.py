"""Start the slowest test files first under xdist, from a checked-in table of seconds per file.

With ``-n 2`` the suite's wall time is its summed time over two, plus the tail: whatever one
worker still runs after the other ran out of work. A long file met last makes that tail;
met first, its tests spread over both workers while short ones fill the gaps later
(longest-first scheduling). ``tests/conftest.py`` sorts the collected items by their file's
seconds in ``tests/data/durations.json``, longest first, keeping each file's own order, and
only in xdist's workers: a run without ``-n`` keeps pytest's order. xdist's loadgroup sends an
``xdist_group`` whole to one worker (the tests that share a module fixture form one, so it is
made once: ``tests/conftest.py``), in this order too: each group where its first test stands.

The table only orders: a stale one costs at most some wall time, never a result. A file it
does not name counts as slow (it may be), so it runs early; a file it names that is gone is
ignored. Refresh it from a full run's JUnit file::

    .venv/bin/python -m pytest -q -n 2 --junitxml=/tmp/junit.xml
    .venv/bin/python -m tests.durations /tmp/junit.xml
"""
from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "durations.json")


def load(path: str = TABLE) -> dict:
    """file (as in a node id: ``tests/test_x.py``) -> seconds; empty when the table is missing
    or unreadable (then nothing is reordered)."""
    try:
        with open(path) as f:
            files = json.load(f)["files"]
        return {str(k): float(v) for k, v in files.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def order(nodeids: list, seconds: dict) -> list:
    """The positions of ``nodeids`` sorted by their file's seconds, longest first; files the
    table does not name first of all; a stable sort, so each file keeps its own order."""
    def key(i: int) -> float:
        return -seconds.get(nodeids[i].split("::", 1)[0], float("inf"))

    return sorted(range(len(nodeids)), key=key)


def from_junit(paths: list) -> dict:
    """Summed seconds per test file over JUnit XML files (pytest's ``--junitxml``)."""
    files: dict = {}
    for path in paths:
        for tc in ET.parse(path).iter("testcase"):
            cls = tc.get("classname") or ""
            name = cls.rsplit(".", 1)[0] if "." in cls and not cls.split(".")[-1].startswith("test_") else cls
            rel = name.replace(".", "/") + ".py"
            files[rel] = files.get(rel, 0.0) + float(tc.get("time") or 0)
    return files


def main(argv: list) -> int:
    if not argv or any(not os.path.isfile(p) for p in argv):
        print("usage: python -m tests.durations JUNIT.xml [JUNIT.xml ...] (files that exist)", file=sys.stderr)
        return 2
    files = from_junit(argv)
    doc = {"about": "seconds per test file, summed over its tests; only orders the suite (tests/durations.py)",
           "files": {k: round(v, 1) for k, v in sorted(files.items())}}
    with open(TABLE, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")
    print(f"{TABLE}: {len(files)} files, {sum(files.values()):.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
