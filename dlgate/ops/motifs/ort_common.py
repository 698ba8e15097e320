"""Shared pieces of the onnxruntime motifs (``dlgate/ops/motifs/ort_*/``).

Each onnxruntime motif names the optimization ``level`` (the backend's ``basic``,
``extended`` or ``all``) at which its rewrite first runs: level 1 (``basic``) holds the
rewrite rules of ``Level1_RuleBasedTransformer`` and the level-1 transformers, level 2
(``extended``) the fusions into contrib operators, level 3 (``all``) the layout
transformers. ``fuse_dtypes`` are the input dtypes the rewrite takes (most CPU fusions
take float32 only): a draw on another dtype is outside the preconditions, recorded as
the violated condition ``dtype``, so coverage keeps the two apart.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from dlgate import dtypes as dt
from dlgate.ops.motif import Const, Motif, Out, Step
from dlgate.ops.registry import get

F32, F16, F64 = dt.FLOAT32, dt.FLOAT16, dt.FLOAT64
#: The activations onnxruntime's Conv and Gemm activation fusions take (a Clip with
#: constant bounds; LeakyRelu's alpha and HardSigmoid's alpha and beta become parameters).
FUSED_ACTIVATIONS = ("Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "Clip")
#: Element-wise activations those fusions do not take.
OTHER_ACTIVATIONS = ("Elu", "Softplus", "Abs", "Softsign")


class OrtMotif(Motif):
    """An onnxruntime motif: ``level`` and ``fuse_dtypes`` as described above."""

    optimizer = "onnxruntime"
    #: The backend optimization level at which the rewrite first runs.
    level: ClassVar[str] = "basic"
    #: Input dtypes the rewrite takes; others are drawn as the violated condition "dtype".
    fuse_dtypes: ClassVar[tuple] = (F32, F16, F64)
    #: Conditions only ``outside`` breaks (never drawn at random).
    forced: ClassVar[tuple] = ("dtype",)
    #: Conditions whose breaking does not always make the rewrite decline (the draw
    #: cannot always break them for every input; each motif says why).
    loose: ClassVar[tuple] = ()

    def outside(self, ctx, ins) -> str | None:
        """The condition an input outside the rewrite's reach breaks whatever is drawn
        (a dtype the rewrite does not take, at the case's opset ``ctx.opset``), or None."""
        if ins[0].dtype not in self.fuse_dtypes and "dtype" in self.conditions:
            return "dtype"
        return None

    def sample(self, ctx, ins):
        violate = self.outside(ctx, ins)
        if violate is None:
            others = tuple(c for c in self.conditions if c not in self.forced)
            if others and ctx.coin(self.violate_share):
                violate = ctx.choice(others)
        a = self.draw(ctx, ins, violate)
        a["violate"] = violate
        a["seed"] = ctx.int(0, 2**31 - 1)
        return a


def activation(ctx, x, names=FUSED_ACTIVATIONS) -> tuple:
    """(spec name, attrs) of an element-wise activation of ``x``; a Clip gets both bounds
    (float16-representable, so they mean the same in every precision)."""
    op = ctx.choice(names)
    a = get(op).sample(ctx, [x])
    if op == "Clip":
        lo, hi = sorted((ctx.uniform(-4.0, 4.0), ctx.uniform(-4.0, 4.0)))
        a.update({"min": float(np.float16(lo)), "max": float(np.float16(hi))})
    return op, a


def scalar(value: float, dtype: str, hint: str = "m") -> Const:
    """A rank-0 constant of ``dtype``."""
    return Const(np.asarray(value, dtype=dt.NUMPY[dtype]), hint)


def second_read(steps: list, src: int, last: int) -> list:
    """Steps that read step ``src``'s output once more and add it to step ``last``'s: the
    producer then has two consumers, which single-consumer rewrites decline. Both outputs
    must have the same shape."""
    return [Step("Add", {}, (Out(last), Out(src)))]


def spatial_ones(rank: int) -> tuple:
    return (1,) * (rank - 2)
