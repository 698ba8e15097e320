"""``dlgate backends``: the installed backends and whether each can run here."""
from __future__ import annotations

from dlgate import tables as T


def add_parser(sub) -> None:
    sub.add_parser("backends", help="list the installed backends and whether each can run here")


def command(args) -> int:
    from dlgate.backends.registry import load, names  # local: imports torch; off the CLI start-up

    t = T.table("backend", "device", "levels", "state")
    for name in names():
        try:
            cls = load(name)
        except Exception as e:  # a broken third-party plug-in is listed, not fatal
            T.row(t, name, "", "", f"cannot be loaded: {e}")
            continue
        for device in cls.devices:
            why = cls.unavailable_reason(device)
            T.row(t, name, device, ",".join(cls.opt_levels), "available" if not why else f"unavailable: {why}")
    T.show(t)
    return 0
