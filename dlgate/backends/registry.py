"""Finding backends by name: the ``dlgate.backends`` entry-point group, one path for
in-tree and third-party backends alike, or ``package.module:Class``. Nothing is imported
until a backend is looked up."""
from __future__ import annotations

import importlib
from functools import lru_cache
from importlib.metadata import entry_points

from dlgate.backends.base import Backend, BackendSpec

GROUP = "dlgate.backends"


@lru_cache(maxsize=None)
def _entry_points() -> dict:
    return {ep.name: ep for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name)}


def names() -> list:
    return list(_entry_points())


def load(name: str) -> type:
    if ":" in name:
        mod, _, attr = name.partition(":")
        try:
            cls = getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError) as e:
            raise KeyError(f"cannot load backend {name!r}: {e}") from None
    else:
        eps = _entry_points()
        if name not in eps:
            raise KeyError(f"unknown backend {name!r}; known: {', '.join(eps) or '(none installed)'}")
        cls = eps[name].load()
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise KeyError(f"backend {name!r} is not a dlgate.backends.base.Backend subclass")
    return cls


def check(spec: BackendSpec) -> type:
    """The backend class of ``spec`` once its device, optimization level and options are
    known to exist (KeyError for an unknown backend, ValueError for the rest)."""
    cls = load(spec.name)
    if spec.device not in cls.devices:
        raise ValueError(f"{spec.name} has no device {spec.device!r}; allowed: {', '.join(cls.devices)}")
    if spec.opt_level is not None and spec.opt_level not in cls.opt_levels:
        raise ValueError(f"{spec.name} has no optimization level {spec.opt_level!r}; "
                         f"allowed: {', '.join(cls.opt_levels)}")
    try:
        cls.check_options(dict(spec.options))  # an option the backend does not read is an error
    except ValueError as e:
        raise ValueError(f"{spec.name}: {e.args[0]}") from None
    return cls


def create(spec: BackendSpec) -> Backend:
    return load(spec.name)(device=spec.device, opt_level=spec.opt_level, **dict(spec.options))
