"""The operator registry: an explicit list of family modules, each with an ``OPS`` list."""
from __future__ import annotations

import importlib
from functools import lru_cache

from dlgate.spec.base import OpSpec

#: One module per operator family, in a fixed order (the order specs are listed and drawn in).
FAMILIES = ("unary", "binary", "activation", "logic", "cast", "reduce", "linalg", "conv",
            "pool", "norm", "layout", "slicing", "index", "bitwise", "criterion", "shapecalc", "transformer", "quant",
            "recurrent", "control", "sequence", "spatial", "signal",
            # motifs: subgraphs aimed at one optimizer rewrite each (dlgate.spec.motif)
            "motifs.ort_conv", "motifs.ort_matmul", "motifs.ort_elim", "motifs.ort_block", "motifs.ort_qdq", "motifs.ort_nbits",
            "motifs.ort_attention",
            "motifs.tvm_anchor", "motifs.tvm_reduce", "motifs.tvm_injective", "motifs.tvm_frontend",
            "motifs.tvm_fold", "motifs.tvm_lower")


class RegistryError(ImportError):
    """A family module the registry lists cannot be loaded: dlgate is incompletely installed."""


@lru_cache(maxsize=None)
def all_specs() -> dict:
    """Spec name -> spec instance, in family order. A listed family module that is missing
    is an error, never skipped: its operators would silently drop out of every batch."""
    out: dict = {}
    for fam in FAMILIES:
        try:
            mod = importlib.import_module(f"dlgate.spec.{fam}")
        except ModuleNotFoundError as e:
            if e.name == f"dlgate.spec.{fam}":
                raise RegistryError(f"operator family module dlgate.spec.{fam} (dlgate/spec/{fam.replace('.', '/')}.py) "
                                    "is missing: dlgate's installation is incomplete") from None
            raise
        for cls in mod.OPS:
            if not issubclass(cls, OpSpec) or not cls.name:
                raise TypeError(f"{fam}.OPS holds {cls!r}, which is not a named OpSpec")
            if cls.name in out:
                raise ValueError(f"operator spec {cls.name!r} is defined twice")
            cls.family = fam
            out[cls.name] = cls()
    return out


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
