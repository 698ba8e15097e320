"""The operator registry: the specs of every operator module under ``dlgate/ops/``, found by
walking its folders, in a fixed order.

Folders hold operators; files directly in ``dlgate/ops/`` hold the framework. Each folder's
``__init__.py`` says what it holds, in order:

- ``FAMILIES`` (``dlgate/ops/`` itself, ``dlgate/ops/motifs/``): its sub-folders, each a
  family or a further group of families;
- ``OPERATORS`` (a family's folder): its operator modules, each of which defines ``OPS``,
  the spec classes it registers. Modules whose names start with ``_`` (``_shared.py``) are
  the family's private helpers.

The specs are listed in that order: families as ``FAMILIES`` lists them, operator modules as
``OPERATORS`` does, classes as ``OPS`` does. The order is part of generation's determinism
(a generator draws an operator by its place in the list), so it is written down rather than
read from the file system, and the walk holds the lists to the folders: a sub-folder or an
operator module present but not listed, or listed but absent, is an error, as is a module
that cannot be imported, an ``OPS`` entry that is not a named spec class, a class registered
twice or two specs of one name. Each error is one line naming the file to fix; none leaves
an operator out silently. A spec's ``family`` is its folder's dotted path under
``dlgate/ops/`` (``unary``, ``motifs.ort_conv``).
"""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from dlgate.ops.base import OpSpec

ROOT = "dlgate.ops"


class RegistryError(ImportError):
    """The catalogue under dlgate/ops/ is inconsistent or cannot be loaded."""


def _path(module: str, package: bool = False) -> str:
    return module.replace(".", "/") + ("/" if package else ".py")


def _import(module: str, package: bool = False):
    try:
        return importlib.import_module(module)
    except Exception as e:  # any failure: its operators must not drop out of the catalogue unseen
        where = _path(module, package) + ("__init__.py" if package else "")
        raise RegistryError(f"operator module {module} ({where}) cannot be imported: "
                            f"{type(e).__name__}: {e}") from e


def modules(root: str = ROOT) -> list:
    """``(family, module)`` of every operator module under ``root``, in registry order."""
    out: list = []
    _walk(_import(root, True), root, out)
    return out


def _walk(pkg, root: str, out: list) -> None:
    here = _path(pkg.__name__, True)
    fams, ops = getattr(pkg, "FAMILIES", None), getattr(pkg, "OPERATORS", None)
    if (fams is None) == (ops is None):
        raise RegistryError(f"{here}__init__.py must define one of FAMILIES (its sub-folders, in order) "
                            "or OPERATORS (its operator modules, in order)")
    listed, kind = (fams, "FAMILIES") if fams is not None else (ops, "OPERATORS")
    folders = fams is not None
    if not isinstance(listed, tuple) or not all(isinstance(n, str) for n in listed):
        raise RegistryError(f"{here}__init__.py: {kind} is not a tuple of names")
    if len(set(listed)) != len(listed):
        twice = next(n for n in listed if listed.count(n) > 1)
        raise RegistryError(f"{here}__init__.py lists {twice!r} twice in {kind}")
    present = {name: ispkg for _, name, ispkg in pkgutil.iter_modules(pkg.__path__)}
    for name in listed:
        if present.get(name) is not folders:
            raise RegistryError(f"{here}__init__.py lists {name!r} in {kind}, but {here}{name}"
                                f"{'/' if folders else '.py'} is missing")
    for name in sorted(present):
        if name not in listed and not name.startswith("_") and (present[name] or not folders):
            what = f"{here}{name}/" if present[name] else f"{here}{name}.py"
            hint = "" if folders else " (or start its name with _ if it registers no operator)"
            raise RegistryError(f"{what} is not listed in {kind} of {here}__init__.py: list it where its specs "
                                f"belong in the order{hint}")
    for name in listed:
        module = f"{pkg.__name__}.{name}"
        if folders:
            _walk(_import(module, True), root, out)
        else:
            out.append((pkg.__name__[len(root) + 1:], module))


def load(root: str = ROOT) -> dict:
    """Spec name -> spec instance for every operator under ``root``, in registry order
    (uncached: ``all_specs`` is the catalogue every caller shares)."""
    out: dict = {}
    origin: dict = {}
    for family, module in modules(root):
        mod = _import(module)
        ops = getattr(mod, "OPS", None)
        if not isinstance(ops, list) or not ops:
            raise RegistryError(f"{_path(module)} defines no OPS list of the spec classes it registers")
        for cls in ops:
            if not (isinstance(cls, type) and issubclass(cls, OpSpec)) or not cls.name:
                raise RegistryError(f"{_path(module)}: OPS holds {cls!r}, which is not a named OpSpec class")
            if cls in origin:
                raise RegistryError(f"{cls.__name__} is registered twice: by {origin[cls]} and {_path(module)}")
            if cls.name in out:
                raise RegistryError(f"operator spec {cls.name!r} is defined twice: by {origin[type(out[cls.name])]} "
                                    f"and {_path(module)}")
            origin[cls] = _path(module)
            cls.family = family
            out[cls.name] = cls()
    return out


@lru_cache(maxsize=None)
def all_specs() -> dict:
    """Spec name -> spec instance, in registry order (see the module docstring)."""
    return load()


def get(name: str) -> OpSpec:
    specs = all_specs()
    try:
        return specs[name]
    except KeyError:
        raise KeyError(f"unknown operator {name!r}; known: {', '.join(specs)}") from None


def select(names) -> list:
    """Specs for the given names (None = all), with a clear error for unknown names."""
    specs = all_specs()
    if names is None:
        return list(specs.values())
    unknown = [n for n in names if n not in specs]
    if unknown:
        raise KeyError(f"unknown operator(s) {', '.join(unknown)}; known: {', '.join(specs)}")
    return [specs[n] for n in names]
