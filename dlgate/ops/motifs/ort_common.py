"""Shared pieces of the onnxruntime motifs (``dlgate/ops/motifs/ort_*/``).

Each onnxruntime motif names the optimization ``level`` (the backend's ``basic``,
``extended`` or ``all``) at which its rewrite first runs: level 1 (``basic``) holds the
rewrite rules of ``Level1_RuleBasedTransformer`` and the level-1 transformers, level 2
(``extended``) the fusions into contrib operators, level 3 (``all``) the layout
transformers. ``fuse_dtypes`` are the input dtypes the rewrite takes (most CPU fusions
take float32 only): a draw on another dtype is outside the preconditions, recorded as
the violated condition ``dtype``, so coverage keeps the two apart. ``expects`` is, unless
a motif says otherwise, the transformer its ``rewrite`` names having run.
"""
from __future__ import annotations

from typing import ClassVar

from dlgate import dtypes as dt
from dlgate.ops import motif as M
from dlgate.ops.motif import Motif, scalar  # noqa: F401 - scalar: the ort motifs' import point

F32, F16, F64 = dt.FLOAT32, dt.FLOAT16, dt.FLOAT64
#: The float types of the onnxruntime motifs, in the order their signatures are listed
#: (which decides draws: not ``dt.FLOATS``'s order).
FLOATS = (F32, F16, F64)
#: The activations onnxruntime's Conv and Gemm activation fusions take (a Clip with
#: constant bounds; LeakyRelu's alpha and HardSigmoid's alpha and beta become parameters).
FUSED_ACTIVATIONS = ("Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "Clip")
#: Element-wise activations those fusions do not take.
OTHER_ACTIVATIONS = ("Elu", "Softplus", "Abs", "Softsign")
#: Slice's "to the end" (INT64_MAX), which the slice rewrites compare literally.
INT64_MAX = 2**63 - 1


class OrtMotif(Motif):
    """An onnxruntime motif: ``level`` and ``fuse_dtypes`` as described above."""

    optimizer = "onnxruntime"
    types = FLOATS
    #: The backend optimization level at which the rewrite first runs.
    level: ClassVar[str] = "basic"
    #: Input dtypes the rewrite takes; others are drawn as the violated condition "dtype".
    fuse_dtypes: ClassVar[tuple] = FLOATS
    #: Conditions only ``outside`` breaks (never drawn at random).
    forced: ClassVar[tuple] = ("dtype",)
    #: Conditions whose breaking does not always make the rewrite decline (the draw
    #: cannot always break them for every input; each motif says why).
    loose: ClassVar[tuple] = ()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "rewrite" in cls.__dict__ and "expects" not in cls.__dict__:
            cls.expects = (f"transformer:{cls.rewrite}",)

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
    """(spec name, attrs) of an element-wise activation of ``x``; a Clip gets both bounds,
    float16-representable whatever ``x``'s type, so they mean the same in every precision."""
    return M.activation(ctx, x, names, half_bounds=True)


def second_read(steps: list, src: int, last: int) -> list:
    """Steps that read step ``src``'s output once more and add it to step ``last``'s: the
    producer then has two consumers, which single-consumer rewrites decline. Both outputs
    must have the same shape."""
    return M.reread(steps, src, last)


def single_consumer(a: dict, steps: list, src: int, last: int) -> list:
    """``steps``, and where the draw breaks ``single_consumer``, a second read of step
    ``src``'s output added to step ``last``'s (``second_read``)."""
    return steps + second_read(steps, src, last) if a["violate"] == "single_consumer" else steps


def spatial_ones(rank: int) -> tuple:
    return (1,) * (rank - 2)
