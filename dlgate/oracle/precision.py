"""The reference's own float16 rounding, told apart from a compiler's error.

Compilers compute float16 graphs with wider intermediates (float32 accumulators, fused
kernels that round once at the end); the PyTorch reference rounds every float16 tensor.
Where the graph is ill-conditioned (a float16 Sum or Mean feeding Tan near a pole, a
near-tie before Hardmax), the reference's rounding then dominates its result, and a
compiler that kept more precision disagrees with it while being the more accurate one.

:func:`rounding` recognises that case by evaluating the same graph on the same inputs
with every float16 tensor computed in float64 (inputs and constants widened exactly, a Cast
to float16 kept in float64; tensors of other types keep theirs). The reference is dominated
by rounding when it differs from that evaluation beyond the comparison tolerance, and the
candidate is excused only if every element lies between the two (plus the tolerance): a
compiler off by more than rounding explains is still a mismatch.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.graph.ir import Graph
from dlgate.materialize.torch_model import GraphModule
from dlgate.ops.motif import Motif
from dlgate.oracle.compare import DEFAULT_TOLERANCES, compare

#: The low-precision floating-point types dlgate generates, widened to float64.
LOW = (dt.FLOAT16,)


def trace(graph: Graph, inputs: list, wide: bool = False, perturb: Callable | None = None,
          overflow: bool = False, skip: set = frozenset(), skip_step: Callable | None = None) -> tuple:
    """Run node by node with each spec's PyTorch implementation, as the reference does;
    returns (env, per-node (ins, outs)). ``wide``: float16 tensors in float64; with
    ``overflow``, a conversion to float16 still overflows to +/-inf there. ``skip``: node
    indices whose outputs are not perturbed.
    ``perturb(ins, outs, spec, attrs)`` returns the outputs the next nodes see (see ``ub.instability``);
    a motif's steps are perturbed one by one too (``Motif.torch_steps``), but those whose spec
    ``skip_step(spec)`` names."""
    mod = GraphModule(graph)
    env = {t: torch.from_numpy(np.array(x, copy=True)) for t, x in zip(graph.inputs, inputs)}
    for t in graph.consts:
        env[t] = mod.const(t).detach()
    if wide:
        env = {t: _as_wide(x, graph.tensors[t].dtype) for t, x in env.items()}
    steps = []
    with torch.no_grad():
        for i, (node, spec) in enumerate(zip(graph.nodes, mod.specs)):
            ins = [env[t] for t in node.inputs]
            if perturb is not None and not wide and i not in skip and isinstance(spec, Motif):
                def step(sp, sa, si, so):
                    return so if skip_step is not None and skip_step(sp) else perturb(si, so, sp, sa)
                outs = spec.torch_steps(node.attrs, ins, step)
            else:
                outs = spec.torch(_wide_attrs(node.attrs) if wide else node.attrs, *ins)
            outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
            if wide:
                outs = [_as_wide(y, graph.tensors[t].dtype) for t, y in zip(node.outputs, outs)]
                if overflow and spec.onnx_op in CONVERSIONS:
                    outs = [_overflow(y, graph.tensors[t].dtype) for t, y in zip(node.outputs, outs)]
            if perturb is not None and i not in skip:
                outs = perturb(ins, outs, spec, node.attrs)
            for t, y in zip(node.outputs, outs):
                env[t] = y
            steps.append((ins, outs))
    return env, steps


#: Operators whose conversion to float16, kept in float64 by the wide evaluation, still
#: overflows to +/-inf as the ONNX Cast specification defines (only its rounding goes).
CONVERSIONS = ("Cast", "CastLike")
#: float16 values from this magnitude on round to inf.
F16_OVERFLOW = 65520.0


def _overflow(y: torch.Tensor, dtype: str) -> torch.Tensor:
    """A widened conversion's result with float16's overflow applied: +/-inf from 65520 on."""
    if dtype not in LOW or not y.is_floating_point():
        return y
    return torch.where(y.abs() >= F16_OVERFLOW, y.sign() * torch.inf, y)


def _as_wide(x: torch.Tensor, dtype: str) -> torch.Tensor:
    """A tensor declared ``dtype``, in the wide evaluation: float64 for a low-precision
    type, otherwise the declared type itself (an operator mixing a widened input with one
    of another type must not promote its result)."""
    return x.to(torch.float64 if dtype in LOW else dt.torch_dtype(dtype))


def _wide_attrs(attrs: dict) -> dict:
    """A conversion to float16 (Cast's ``to``) converts to float64 instead: the point is
    to remove rounding."""
    return dict(attrs, to=dt.FLOAT64) if attrs.get("to") in LOW else attrs


def rounding(graph: Graph, inputs: list, tolerances: dict | None = None, candidate: list | None = None) -> str | None:
    """Why the disagreement is the reference's own float16 rounding, or None: the float64
    evaluation moves the outputs beyond the tolerance, and the ``candidate`` (when given)
    lies, element by element, between the reference and the float64 evaluation."""
    reason, within = rounding_outputs(graph, inputs, tolerances, candidate)
    return reason if reason is not None and all(within) else None


def rounding_outputs(graph: Graph, inputs: list, tolerances: dict | None = None,
                     candidate: list | None = None) -> tuple:
    """``(reason, within)``: why the reference is dominated by its float16 rounding (or
    None), and for each of the candidate's outputs whether it lies between the reference
    and the float64 evaluation. Without a candidate, or a reason, every output is within."""
    reason, masks = rounding_elements(graph, inputs, tolerances, candidate)
    if masks is None:
        return reason, [True] * len(graph.outputs)
    return reason, [m is not None and bool(m.all()) for m in masks]


def rounding_elements(graph: Graph, inputs: list, tolerances: dict | None = None,
                      candidate: list | None = None) -> tuple:
    """``(reason, masks)``: why the reference is dominated by its float16 rounding (or None),
    and for each of the candidate's outputs the elements that lie between the reference and
    the float64 evaluation (None for an output of another shape or dtype: none of it).
    ``masks`` is None without a candidate or a reason."""
    n = len(graph.outputs)
    if not any(t.dtype in LOW for t in graph.tensors):
        return None, None
    env, steps = trace(graph, inputs)
    try:
        wide_env, wide_steps = trace(graph, inputs, wide=True, overflow=True)
    except Exception:  # an operator without a float64 implementation: no explanation
        return None, None
    ref = [env[t].numpy() for t in graph.outputs]
    wide = [wide_env[t].numpy() for t in graph.outputs]
    cmp = compare(ref, _rounded(wide, ref), tolerances)
    if cmp.ok:
        return None, None
    where = _departure(graph, steps, wide_steps, tolerances) or f"the outputs depart: {cmp.detail}"
    reason = f"float16 rounding dominates: evaluated in float64, {where}"
    if candidate is None:
        return reason, None
    if len(candidate) != len(ref):
        return reason, [None] * n
    # an element the candidate holds further off than the reference's rounding explains is not within
    return reason, [_between_mask(c, r, w, tolerances) for c, r, w in zip(candidate, ref, wide)]


def _rounded(wide: list, like: list) -> list:
    """The float64 evaluation's outputs rounded to the reference's dtypes (overflowing to
    inf as a float16 result would)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return [w.astype(r.dtype) for w, r in zip(wide, like)]


def _departure(graph: Graph, steps: list, wide_steps: list, tolerances: dict | None) -> str | None:
    """The first node whose float16 outputs differ from its float64 ones beyond the
    tolerance (its inputs still agree within it), or None."""
    for i, (node, (_, outs), (_, wide_outs)) in enumerate(zip(graph.nodes, steps, wide_steps)):
        ref = [o.numpy() for o in outs]
        cmp = compare(ref, _rounded([w.numpy() for w in wide_outs], ref), tolerances)
        if not cmp.ok:
            return f"{node.op} (node {i}) departs from the float16 reference: {cmp.detail}"
    return None


def _between(cand, ref: np.ndarray, wide: np.ndarray, tolerances: dict | None) -> bool:
    """Whether each element of ``cand`` lies between the reference's and the float64
    evaluation's (``_between_mask``)."""
    m = _between_mask(cand, ref, wide, tolerances)
    return m is not None and bool(m.all())


def _between_mask(cand, ref: np.ndarray, wide: np.ndarray, tolerances: dict | None) -> np.ndarray | None:
    """The elements of ``cand`` that lie between the reference's and the float64
    evaluation's (also rounded to the output dtype), widened by the tolerance; NaN only
    where either is NaN. Integer and boolean elements must equal one of the two. None when
    ``cand`` has another shape or dtype."""
    c = np.asarray(cand)
    if c.shape != ref.shape or c.dtype != ref.dtype:
        return None
    if not np.issubdtype(ref.dtype, np.floating):
        return (c == ref) | (c == wide)
    ends = [ref.astype(np.float64), wide.astype(np.float64), _rounded([wide], [ref])[0].astype(np.float64)]
    lo, hi = np.fmin.reduce(ends), np.fmax.reduce(ends)
    finite = [np.where(np.isfinite(e), np.abs(e), 0.0) for e in ends]
    rtol, atol = dict(DEFAULT_TOLERANCES, **(tolerances or {}))[str(ref.dtype)]
    bound = atol * max(1.0, float(max(f.max(initial=0.0) for f in finite))) + rtol * np.fmax.reduce(finite)
    x = c.astype(np.float64)
    nan_ok = np.isnan(x) & np.any([np.isnan(e) for e in ends[:2]], axis=0)
    # where the reference and the rounded float64 evaluation hold the same infinity (an
    # overflow of the output type itself), the candidate must hold it too
    same_inf = np.isinf(ends[0]) & (ends[0] == ends[2])
    return nan_ok | ((x >= lo - bound) & (x <= hi + bound) & (~same_inf | (x == ends[0])))
