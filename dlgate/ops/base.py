"""The operator-spec contract: ``OpSpec`` is the core every operator writes
(:mod:`dlgate.ops.core`: signature, sampling, constraints and inference, lowering,
semantics) with the optional parts, each with stock defaults an operator keeps unless it
knows better: the value model (:mod:`dlgate.ops.values`), the input-domain model
(:mod:`dlgate.ops.domains`) and the oracle facts (:mod:`dlgate.ops.facts`).

This module puts them together and re-exports what operators import from one place;
docs/adding-an-operator.md says which parts an operator needs when.
"""
from __future__ import annotations

from dlgate.ops.core import (FINAL, SPELL_DEFAULTS, Attrs, Core, Ctx, Limits, SymCtx, TensorType, all_true,
                             bin_ranges, binned_int, f32, same_dtype_sigs)
from dlgate.ops.domains import InputDomain, NonZero, Restricted
from dlgate.ops.facts import IEEE, INF_ONLY, OracleFacts
from dlgate.ops.values import (INF, SPAN_POINTS, SPAN_WINDOW, SPAN_ZOOMS, UNBOUNDED, Decreasing, Increasing,
                               Proxied, Stepwise, ValueModel, abs_bounds, excludes_zero, inside, overlaps,
                               sampling_window)


class OpSpec(Core, ValueModel, InputDomain, OracleFacts):
    """Base class of every operator spec: the core and every part, each part's members at
    their stock defaults (no member is defined by two of them, so their order decides
    nothing)."""


__all__ = ["FINAL", "SPELL_DEFAULTS", "Attrs", "Core", "Ctx", "Limits", "SymCtx", "TensorType", "all_true",
           "bin_ranges", "binned_int", "f32", "same_dtype_sigs", "InputDomain", "NonZero", "Restricted", "IEEE",
           "INF_ONLY", "OracleFacts", "INF", "SPAN_POINTS", "SPAN_WINDOW", "SPAN_ZOOMS", "UNBOUNDED", "Decreasing",
           "Increasing", "Proxied", "Stepwise", "ValueModel", "abs_bounds", "excludes_zero", "inside", "overlaps",
           "sampling_window", "OpSpec"]
