"""What a generator is asked for: the opsets it draws from, its configuration
(``GenConfig``) and the error a configuration no operator fits raises. Kept apart from the
generator so that what only reads the opset range (the probe, a change's aims, the plan)
need not know how graphs are drawn."""
from __future__ import annotations

from dataclasses import dataclass

from dlgate import dtypes as dt
from dlgate.ops.base import Limits

#: The newest ONNX opset dlgate generates: the newest the pinned onnx release defines.
NEWEST_OPSET = 28
#: The oldest: before it, too many operators take their constant inputs as attributes.
OLDEST_OPSET = 13
DEFAULT_OPSET_RANGE = (OLDEST_OPSET, NEWEST_OPSET)
#: Share of cases drawn at the newest opset of the range; the others spread evenly over it
#: (the newest opset's operators are the least tested, and runtimes lack kernels there).
NEWEST_SHARE = 0.25
#: How often the first placeholder is rank 5 where its operator takes that (else rank <= 4).
RANK5_START = 0.15
#: A case whose draw fails is drawn again from ``sub_seed(seed, "redraw/k")``, k = 1 up to
#: this; when every one fails, the fallback makes a one-operator graph (``Generator.generate``).
REDRAWS = 4
#: In a case aimed at a target: the chance each further draw is one of the target's specs
#: again, and the chance the case draws degenerate attribute values (``Ctx.degenerate``)
#: when its target does not ask for them.
AIM_REPEAT = 0.25
AIM_DEGENERATE = 0.3
#: Tries at inserting the first placeholder's own operator when no other draw inserted any.
SEED_TRIES = 3


@dataclass(frozen=True)
class GenConfig:
    min_nodes: int = 1
    max_nodes: int = 10
    limits: Limits = Limits()
    dtypes: tuple = dt.ALL
    ops: tuple | None = None  # spec names; None = all
    opset: int | None = None  # fixed opset; None = drawn per case from opset_range
    opset_range: tuple = DEFAULT_OPSET_RANGE
    forward_prob: float = 0.5  # NNSmith: forward or backward with equal probability
    picking_rate: float = 0.9  # Isra: probability of reusing an existing tensor
    const_prob: float = 0.3  # probability a placeholder becomes a constant initializer
    extra_output_prob: float = 0.1  # probability a consumed tensor is also a graph output
    #: Allowed (op name, input dtypes, opset) triples, e.g. a backend's probed support; None = all.
    support: frozenset | None = None
    #: Share of graphs given symbolic batch/sequence input dimensions (``graph.dynamic``),
    #: where further sizes keep them valid; drawn after the graph is final, so the graph
    #: itself does not depend on it. A graph holding a motif whose rewrite needs symbolic
    #: dimensions (``Motif.needs_dynamic``) gets them whenever the share is above 0.
    dynamic_share: float = 0.0
    #: Share of graphs whose inputs and constants carry extreme values (``graph.extreme``,
    #: see ``dlgate.graph.extreme``); drawn last, from its own stream.
    extreme_share: float = 0.0
    #: What a change touches (``dlgate.change.aim.Aim``, one per target), and the share of
    #: cases drawn to exercise one of them (``graph.aimed``); the rest stay random. Whether a
    #: case is aimed, and at which target, comes from its own stream, so an empty ``aims``
    #: leaves every case as it was.
    aims: tuple = ()
    aim_share: float = 0.8

    def __post_init__(self):
        if not 1 <= self.min_nodes <= self.max_nodes:
            raise ValueError(f"need 1 <= min_nodes <= max_nodes, got {self.min_nodes}, {self.max_nodes}")
        if self.opset is not None and not 7 <= self.opset <= 30:
            raise ValueError(f"opset {self.opset} is out of range")
        lo, hi = self.opset_range
        if not OLDEST_OPSET <= lo <= hi <= NEWEST_OPSET:
            raise ValueError(f"opset range {lo}-{hi} is not within {OLDEST_OPSET}-{NEWEST_OPSET}")
        for t in self.dtypes:
            dt.check(t)
        if not 0.0 <= self.dynamic_share <= 1.0:
            raise ValueError(f"dynamic_share {self.dynamic_share} is not within 0-1")
        if not 0.0 <= self.extreme_share <= 1.0:
            raise ValueError(f"extreme_share {self.extreme_share} is not within 0-1")
        if not 0.0 <= self.aim_share <= 1.0:
            raise ValueError(f"aim_share {self.aim_share} is not within 0-1")


class GenerationError(RuntimeError):
    pass

