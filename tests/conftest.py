"""Suite-wide hooks."""
from __future__ import annotations

from tests import durations


def pytest_collection_modifyitems(config, items):
    """Under xdist, the slowest files first (``tests/durations.py``); every worker sorts its
    identical collection the same way, as xdist requires."""
    if not hasattr(config, "workerinput"):
        return
    seconds = durations.load()
    if seconds:
        items[:] = [items[i] for i in durations.order([it.nodeid for it in items], seconds)]
