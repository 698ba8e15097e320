"""What a reduction aims at and what it gives: :class:`Target` (how the reduced case must
keep failing), :class:`Reduced` (the reduced case, its verdict and the search's record),
:class:`NotReproduced`, and :func:`case_key`, the identity of a candidate. Shared by the
search (:mod:`dlgate.reduce.reducer`) and the hang's confirmation (:mod:`dlgate.reduce.hang`).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from dlgate.backends.base import BackendSpec
from dlgate.check import Prepared
from dlgate.oracle import signature as S
from dlgate.oracle import verdict as V


@dataclass
class Target:
    """How the reduced case must keep failing: ``verdict`` on ``backend``; for errors and
    crashes, the same ``cluster`` id when given (see :func:`dlgate.oracle.signature.cluster`),
    else the same ``signature`` id (exact, the old behaviour)."""

    backend: BackendSpec
    verdict: str
    signature: str | None = None
    cluster: str | None = None

    @classmethod
    def of(cls, backend: BackendSpec, verdict) -> "Target":
        """The target of a verdict (a :class:`~dlgate.oracle.verdict.Verdict` or its JSON):
        its class, signature and, for errors and crashes, cluster (none when the verdict
        carries no error: the exact signature then)."""
        v = verdict if isinstance(verdict, dict) else verdict.to_json()
        kind = v["verdict"]
        cl = None if kind in V.VALUE_CLASSES or not v.get("error") else S.cluster(kind, backend.name, v["error"])["id"]
        return cls(backend, kind, (v.get("signature") or {}).get("id"), cl)

    def matches(self, v: V.Verdict) -> bool:
        if v.verdict != self.verdict:
            return False
        if v.verdict in V.VALUE_CLASSES:
            return True
        if self.cluster is not None:
            return S.cluster(v.verdict, self.backend.name, v.error)["id"] == self.cluster
        return (v.signature or {}).get("id") == self.signature


@dataclass
class Reduced:
    case: Prepared
    verdict: V.Verdict
    original_nodes: int
    probes: int = 0
    seconds: float = 0.0
    hit_limit: bool = False
    log: list = field(default_factory=list)
    #: Per operator of the reduced graph, the attributes the failure depends on (their
    #: regime decides it); the others failed the same way at a value of another regime.
    matter: list = field(default_factory=list)
    rounds: int = 0
    #: Indices of the reduced case's operators in the case given to the reducer (each
    #: traced through the cuts by the tensors it makes): the operators the failure needs.
    kept: list = field(default_factory=list)
    #: For an error or a crash: the wrong dtype or shape an earlier operator of the reduced
    #: case already makes on this backend, reduced on its own (:meth:`_Run.upstream`); None
    #: when there is none.
    upstream: "Reduced | None" = None


class NotReproduced(ValueError):
    """The case to reduce does not fail the way it is said to (any more)."""


def case_key(case: Prepared) -> str:
    """The identity of a candidate: its model and its inputs (dtype, shape and bytes)."""
    h = hashlib.sha256(case.model)
    for x in case.inputs:
        x = np.ascontiguousarray(x)
        h.update(f"{x.dtype}{x.shape}".encode())
        h.update(x.tobytes())
    return h.hexdigest()
