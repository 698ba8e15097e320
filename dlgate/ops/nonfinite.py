"""Special values at run time: the NaN and +/-Inf an operator instance sees or makes, and
whether its specification defines its result for them (``OpSpec.nonfinite``).

IEEE 754 defines NaN propagation, infinite arithmetic, overflow to +/-inf and the results
at poles and outside a function's domain; the ONNX specification inherits them for the
element-wise arithmetic and maths operators, defines Cast between float types (+/-inf out
of range) and to bool, IsNaN and IsInf, and the operators that only move values. Where it
says nothing (Max, Relu or a comparison with NaN, a reduction whose order decides between
inf and NaN, a float -> integer conversion), a NaN or an infinity there leaves the result
open: compilers legitimately differ, and a case where one gets there is not evidence.
"""
from __future__ import annotations

import torch

NAN, INF = "nan", "inf"
_NAMES = {NAN: "NaN", INF: "Inf"}


def present(values) -> set:
    """The special values (``"nan"``, ``"inf"``) among floating-point tensors (nested lists
    of them, for sequence values)."""
    out: set = set()
    for x in values:
        if isinstance(x, (list, tuple)):
            out |= present(x)
        elif isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel():
            xd = x.detach()
            if bool(torch.isnan(xd).any()):
                out.add(NAN)
            if bool(torch.isinf(xd).any()):
                out.add(INF)
    return out


def names(kinds) -> str:
    return " and ".join(_NAMES[k] for k in (NAN, INF) if k in kinds)


def violation(spec, attrs: dict, in_types: list, ins: list, outs: list) -> str | None:
    """Why this instance's result is not defined for the special values it sees or makes,
    or None: a NaN or an infinity among its float inputs, or made by it (overflow, a pole,
    an argument outside the domain), that its spec does not define (``defines_nonfinite``
    on the input TensorTypes ``in_types``)."""
    seen, made = present(ins), present(outs)
    if not seen and not made:
        return None
    ok = spec.defines_nonfinite(attrs, in_types)
    bad_in = seen - ok
    if bad_in:
        return f"{names(bad_in)} in its inputs, for which the ONNX specification of {spec.onnx_op} defines no result"
    bad_out = made - ok
    if bad_out:
        return (f"its result holds {names(bad_out)} (overflow or an argument outside the domain), which the ONNX "
                f"specification of {spec.onnx_op} does not define")
    return None


def _marks(x, kinds) -> torch.Tensor | None:
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        return None
    xd = x.detach()
    m = torch.zeros(xd.shape, dtype=torch.bool)
    if NAN in kinds:
        m |= torch.isnan(xd)
    if INF in kinds:
        m |= torch.isinf(xd)
    return m


def violation_elements(spec, attrs: dict, in_types: list, ins: list, outs: list) -> list | None:
    """Where ``violation`` finds a reason: for each output, the elements it reaches when the
    operator is pointwise (``OpSpec.is_pointwise``): those whose inputs, at their broadcast
    position, hold a special value the spec does not define, or that hold one themselves.
    None (the whole outputs) for any other operator, or a sequence value."""
    if not spec.is_pointwise():
        return None
    bad = frozenset((NAN, INF)) - spec.defines_nonfinite(attrs, in_types)
    masks = []
    for y in outs:
        if not isinstance(y, torch.Tensor):
            return None
        m = _marks(y, bad)
        acc = torch.zeros(y.shape, dtype=torch.bool) if m is None else m.clone()
        for x in ins:
            if isinstance(x, (list, tuple)):
                return None
            mx = _marks(x, bad)
            if mx is None:
                continue
            try:
                acc |= torch.broadcast_to(mx, y.shape)
            except RuntimeError:
                return None
        masks.append(acc.numpy())
    return masks
