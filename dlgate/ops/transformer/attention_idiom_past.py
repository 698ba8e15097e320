from __future__ import annotations

from typing import ClassVar

from dlgate import dtypes as dt
from dlgate.ops.transformer.attention_idiom import AttentionIdiom


class AttentionIdiomPast(AttentionIdiom):
    """AttentionIdiom with a key/value cache: ``Concat(past, new, axis=-2)`` for K and V
    (also outputs: the present cache), causal masks aligned bottom-right."""

    name = "AttentionIdiomPast"
    onnx_ops: ClassVar[tuple] = ("Concat", "Transpose", "Mul", "Div", "Where", "Add", "Softmax")
    arity = 5
    n_outputs = 3
    dtypes = tuple((t,) * 5 for t in dt.FLOATS)
    keys = "qkvpw"
    past = True


OPS = [AttentionIdiomPast]
