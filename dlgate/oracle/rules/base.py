"""What every oracle rule shares: the excuse it returns and the case it looks at."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

import numpy as np

from dlgate.graph.ir import Graph
from dlgate.oracle import precision
from dlgate.oracle.compare import WHOLE


@dataclass
class Excuse:
    """Why part of a disagreement is not evidence of a bug, and which part: ``scope`` maps
    an output's index to the elements the reason explains (a boolean mask of the output's
    shape) or to ``WHOLE`` (every element, and the output's shape). Whatever differs outside
    the scopes of a case's excuses is a finding."""

    rule: str
    reason: str
    scope: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"rule": self.rule, "reason": self.reason, "outputs": {
            str(k): "whole" if isinstance(m, str) else int(np.count_nonzero(m)) for k, m in sorted(self.scope.items())}}


def union(a, b):
    """Two scopes of one output together: ``WHOLE`` wins, masks are or-ed, None is nothing."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, str) or isinstance(b, str):
        return WHOLE
    try:
        return np.logical_or(a, b)
    except ValueError:  # masks of different shapes: no element-wise union
        return WHOLE


class Context:
    """One case as the rules see it: the graph, its inputs, the tolerances, the candidate's
    outputs and the reference's, and the reference evaluated node by node (computed once,
    on first use, and shared by the rules)."""

    def __init__(self, graph: Graph, inputs: list, tolerances: dict | None = None, candidate: list | None = None,
                 reference: list | None = None):
        self.graph, self.inputs, self.tolerances = graph, inputs, tolerances
        self.candidate = candidate
        self._reference = reference

    @cached_property
    def trace(self) -> tuple:
        """``(env, steps)``: every tensor's reference value, and each node's (ins, outs)."""
        return precision.trace(self.graph, self.inputs)

    @property
    def reference(self) -> list:
        if self._reference is None:
            env, _ = self.trace
            self._reference = [env[t].numpy() for t in self.graph.outputs]
        return self._reference


class Rule:
    """One reason a disagreement may not be a compiler's bug. ``excuses(ctx)`` returns the
    excuses it finds on a case, each scoped to what it explains (empty when none applies).

    ``scoping``: the rule is cheap and names values the specification leaves open; it runs
    on every extreme-value case, a passing one too, so that an undefined 1e20 does not hide
    a wrong neighbour inside the tolerance it widens."""

    name: ClassVar[str] = ""
    scoping: ClassVar[bool] = False

    def excuses(self, ctx: Context) -> list:
        raise NotImplementedError
