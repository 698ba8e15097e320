"""Which ONNX standard operators the specs cover, and what is deliberately not generated.

Two kinds of gap, both with their reason: a whole standard operator without a spec
(``NOT_GENERATED`` below), and a part of a spec'd operator its spec leaves out (a spec's
``gaps``: ``(what, why)`` pairs). ``dlgate ops --gaps`` prints both.
"""
from __future__ import annotations

from functools import lru_cache

#: Standard ONNX operators with no spec, and why. A test checks that every standard
#: operator the pinned onnx defines is either covered by a spec or listed here.
NOT_GENERATED = {
    "Bernoulli": "random output: no reference can say which values are right, only their distribution",
    "Multinomial": "random output: no reference can say which values are right, only their distribution",
    "RandomNormal": "random output: no reference can say which values are right, only their distribution",
    "RandomNormalLike": "random output: no reference can say which values are right, only their distribution",
    "RandomUniform": "random output: no reference can say which values are right, only their distribution",
    "RandomUniformLike": "random output: no reference can say which values are right, only their distribution",
    "RegexFullMatch": "string tensors: dlgate generates numeric and boolean tensors only",
    "StringConcat": "string tensors: dlgate generates numeric and boolean tensors only",
    "StringNormalizer": "string tensors: dlgate generates numeric and boolean tensors only",
    "StringSplit": "string tensors: dlgate generates numeric and boolean tensors only",
    "ImageDecoder": "decodes encoded image bytes (JPEG, PNG...): its input is a file format, not a tensor "
                    "a graph computes",
    "Scatter": "deprecated since opset 11 (ScatterElements replaces it); dlgate generates opsets 13 and up",
    "Upsample": "deprecated since opset 10 (Resize replaces it); dlgate generates opsets 13 and up",
}


@lru_cache(maxsize=None)
def standard_ops() -> tuple:
    """The standard (default-domain, not deprecated) operator types the pinned onnx defines."""
    import onnx.defs

    return tuple(sorted({s.name for s in onnx.defs.get_all_schemas_with_history()
                         if s.domain in ("", "ai.onnx") and not s.deprecated}))


def covered(specs) -> dict:
    """ONNX operator type -> the spec names that emit it (as ``onnx_op`` or in ``onnx_ops``)."""
    out: dict = {}
    for spec in specs:
        for op in (spec.onnx_op, *spec.onnx_ops):
            out.setdefault(op, [])
            if spec.name not in out[op]:
                out[op].append(spec.name)
    return out


def missing(specs) -> list:
    """(operator, why) for each standard operator no spec emits; why is None when unrecorded."""
    cov = covered(specs)
    return [(op, NOT_GENERATED.get(op)) for op in standard_ops() if op not in cov]


def spec_gaps(specs) -> list:
    """(spec name, what, why) for every part of an operator a spec leaves out."""
    return [(spec.name, what, why) for spec in specs for what, why in getattr(spec, "gaps", ())]
