"""Finding backends by name: the ``dlgate.backends`` entry-point group, one path for
in-tree and third-party backends alike, or ``package.module:Class``. Nothing is imported
until a backend is looked up.

An editable install records the entry points of the ``pyproject.toml`` it was installed from
and does not see ones added since until it is installed again: a name the installed metadata
lacks is then looked up in the ``[project.entry-points."dlgate.backends"]`` table of the
``pyproject.toml`` beside the ``dlgate`` package (a checkout; an installed wheel has none and
its metadata is current)."""
from __future__ import annotations

import importlib
import os
from functools import lru_cache
from importlib.metadata import entry_points

from dlgate.backends.base import Backend, BackendSpec

try:
    import tomllib
except ImportError:  # Python 3.10: no reader of pyproject.toml, the installed metadata alone
    tomllib = None

GROUP = "dlgate.backends"


@lru_cache(maxsize=None)
def _entry_points() -> dict:
    return {ep.name: ep for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name)}


@lru_cache(maxsize=None)
def _checkout() -> dict:
    """Name -> ``module:Class`` of the group in the checkout's ``pyproject.toml``, or {}."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "pyproject.toml")
    if tomllib is None:
        return {}
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except (OSError, ValueError):  # none beside the package, or not TOML
        return {}
    if (doc.get("project") or {}).get("name") != "dlgate":
        return {}
    return dict(((doc["project"].get("entry-points") or {}).get(GROUP) or {}))


def names() -> list:
    return sorted(set(_entry_points()) | set(_checkout()))


def load(name: str) -> type:
    if ":" in name:
        mod, _, attr = name.partition(":")
        try:
            cls = getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError) as e:
            raise KeyError(f"cannot load backend {name!r}: {e}") from None
    else:
        eps = _entry_points()
        if name in eps:
            cls = eps[name].load()
        elif name in _checkout():  # added to the checkout since the editable install
            return load(_checkout()[name])
        else:
            raise KeyError(f"unknown backend {name!r}; known: {', '.join(names()) or '(none installed)'}")
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
