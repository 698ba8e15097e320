"""Semantics-preserving rewrites of a case: the twins of the equivalence oracle.

A rewrite turns a case into an equivalent model (its *twin*): an identity inserted on one
tensor (``x * 1``, a Transpose and its inverse, a Reshape round trip, a Cast to a wider
type and back), the operators in another topological order, a run of nodes wrapped into a
model-local function, or such functions inlined. A compiler must compute the same on both
(:mod:`dlgate.rewrite.oracle`), so the twin finds miscompilations without any reference,
as PolyJuice's equivalent graphs and HirFuzz's function rewrites did. One file per
rewrite; ``MODULES`` lists them in the order they are tried, a fixed order being part of
the twin's determinism (each module defines ``REWRITE``). A twin is a pure function of the
graph, the ONNX model and a seed: the case's own ONNX bytes are edited (every name and
attribute spelling it had is kept), and the graph the PyTorch-based backends read is
edited alike. Each twin passes ONNX's full checker, strict shape inference included, before
anything runs it; what it did and where is recorded (``Twin.meta``).
"""
from __future__ import annotations

import importlib
import random
from functools import lru_cache

import onnx

from dlgate.graph.ir import Graph
from dlgate.rewrite.base import NotEquivalent, Rewrite, Twin
from dlgate.seeds import sub_seed

__all__ = ["MODULES", "NotEquivalent", "Rewrite", "Twin", "all_rewrites", "get", "make_twin"]

#: The rewrite modules, in the order of the registry.
MODULES = ("mul_one", "transpose_pair", "reshape_round_trip", "cast_round_trip", "reorder", "wrap_function",
           "inline_functions")


@lru_cache(maxsize=None)
def all_rewrites() -> dict:
    """Name -> rewrite, in ``MODULES`` order."""
    out: dict = {}
    for mod in MODULES:
        rw = importlib.import_module(f"{__name__}.{mod}").REWRITE
        if not isinstance(rw, Rewrite) or not rw.name or rw.name in out:
            raise ImportError(f"dlgate/rewrite/{mod}.py: REWRITE must be a named Rewrite of its own name")
        out[rw.name] = rw
    return out


def get(name: str) -> Rewrite:
    rws = all_rewrites()
    if name not in rws:
        raise KeyError(f"unknown rewrite {name!r}; known: {', '.join(rws)}")
    return rws[name]


def make_twin(graph: Graph, model: bytes | onnx.ModelProto, seed: int, kinds: tuple | None = None,
              prefer: dict | None = None) -> Twin | None:
    """The twin of a case: the rewrites (``kinds``, default all) tried in an order drawn
    from ``seed``, the first that applies making it (each draws from its own stream
    ``sub_seed(seed, name)``, so one rewrite's draws never move another's); None when none
    applies. NotEquivalent when the twin a rewrite made fails ONNX's checker (dlgate's
    mistake: reported, never run). ``prefer``: an earlier twin's ``where``, passed to the
    rewrites (:meth:`Rewrite.apply`)."""
    proto = onnx.load_from_string(model) if isinstance(model, (bytes, bytearray)) else model
    names = list(kinds) if kinds else list(all_rewrites())
    random.Random(seed).shuffle(names)
    for name in names:
        twin = get(name).apply(graph, proto, random.Random(sub_seed(seed, name)), prefer)
        if twin is not None:
            twin.seed = seed
            return twin
    return None
