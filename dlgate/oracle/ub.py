"""Undefined and ill-conditioned behaviour: the checks behind the oracle's rules.

The rules themselves (what each excuses, and how far) are in :mod:`dlgate.oracle.rules`;
this module holds the machinery they run on the *reference*:

* **Undefined special values.** A NaN or an infinity that reaches (or is made by) an
  operator whose specification does not define its result for it (``OpSpec.nonfinite``:
  Relu or Max of NaN, a comparison with NaN, inf through a reduction whose order decides
  between inf and NaN, overflow to inf inside MatMul), see :mod:`dlgate.ops.nonfinite`.
* **Undefined values.** Signed integer overflow in integer arithmetic, and conversions
  from floating point to an integer type of NaN, Inf or values out of the target's range,
  which the ONNX Cast specification leaves undefined (C++ too), so compilers differ
  legitimately. Narrowing integer conversions (they discard the high bits) and float
  conversions out of range (+/-inf) are defined and not excused. Integer division and
  modulo are generated with constant divisors that are never 0 or -1 (their specs), and
  shifts by constant amounts below the bit width before opset 28, where ONNX defines the
  rest; each spec's ``undefined`` names what else its operator leaves open.
* **float16 rounding** (:mod:`dlgate.oracle.precision`). Evaluated with float16 tensors in
  float64, the outputs move beyond the tolerance, and the candidate lies between the
  reference and that evaluation: the compiler kept more precision than the reference.
* **Instability.** Compilers round intermediates differently (fused operations, other
  summation orders, float16 computed in float32). The reference is re-run with every
  floating-point intermediate (a motif's steps one by one, ``Motif.torch_steps``) perturbed
  by a few units of rounding in its own dtype, and by up to two of its smallest subnormals
  (rounding at underflow, ``UNDERFLOW``); if the
  outputs then move beyond the comparison tolerance, the case amplifies rounding-level
  differences: a value a rounding step from an integer before Floor, Ceil, Round or a cast,
  a near-tie before ArgMax or TopK, operands of a comparison that almost agree, float16
  through an ill-conditioned function, Tan near a pole (a value a few units from one makes
  every output downstream unbounded: rounding carries it to the other side, where random
  perturbations rarely land)... The node where the perturbed run
  first departs is named. Where a node's error is bounded by its operands rather than its
  result (a multi-node idiom or motif that compilers fuse into one kernel, an Add or Sub that
  cancels, a normalization that subtracts a mean, LRN's sliding window sum, a DFT's or an
  STFT's twiddle angles, a Hann, Hamming or Blackman window's cosine terms), the perturbation
  also adds a few units of that magnitude (``_error_scale``), and one more
  run makes exactly 0 of the values within them: a fused Gelu whose Tanh saturates to -1
  returns 0 where the reference keeps -2e-7, which a Cast to bool or a Ceil turns into a
  jump. For an extreme case (``graph.extreme``) two more runs perturb
  every intermediate by exactly +4 and -4 units (a value a rounding away from its type's
  largest finite value overflows to inf in one of them), and the outputs of operators
  that compute exactly (``OpSpec.exact_values``: they select, move or negate values, or round to
  integers) are not perturbed: float16's 65504 out of Floor or Max is 65504 in every
  compiler, and pushing it past the overflow would excuse any error in that output.
"""
from __future__ import annotations

from functools import partial

import numpy as np
import torch

from dlgate.graph.ir import Graph
from dlgate.ops import nonfinite
from dlgate.ops.motif import Motif
from dlgate.ops.registry import get
from dlgate.ops.signal._shared import WINDOWS
from dlgate.oracle import precision
from dlgate.oracle.compare import DEFAULT_TOLERANCES, compare

#: Relative perturbation per dtype: a few units in the last place.
NOISE = {"float16": 4 * 2.0**-11, "float32": 4 * 2.0**-24, "float64": 4 * 2.0**-53}
#: Absolute perturbation per dtype near 0: two of its smallest subnormals. Underflow rounds
#: in absolute steps, which relative noise never makes: a product that underflows to -0.0 in
#: one compiler (a float32 accumulator rounded once) and to -6e-8 in another (float16 steps),
#: where a Floor after it makes -1 of one and -0 of the other.
UNDERFLOW = {"float16": 2 * 2.0**-24, "float32": 2 * 2.0**-149, "float64": 2 * 2.0**-1074}


def fact(spec, name: str):
    """A per-operator fact the instability rule reads (``OpSpec.exact_values``, ``cancels``,
    ``centred``, ``interpolates``, ``poles``): the spec's own, or, for an idiom or motif that
    does not set it, that of the operator it is named after."""
    own = getattr(spec, name, None)
    if own or spec is None:
        return own
    try:
        base = get(spec.onnx_op)
    except KeyError:
        return own
    return getattr(base, name, None) if base is not spec else own


def _exact(spec) -> bool:
    """Float results exact in every compiler: the operator selects, moves or negates input
    values (``preserves_values`` too), rounds to integers (``integral_out``), or converts,
    correctly rounded (``exact_values``)."""
    return spec.preserves_values or spec.integral_out or bool(fact(spec, "exact_values"))


def _run(graph: Graph, inputs: list, noise_rng=None) -> tuple:
    """Run node by node; returns (env, per-node (ins, outs)). With ``noise_rng``, every
    floating-point node output is perturbed before the next node sees it (for an extreme
    case, those of inexact operators only); see :func:`_perturb` for what it may be."""
    if noise_rng is None:
        return precision.trace(graph, inputs)
    skip = {i for i, n in enumerate(graph.nodes) if _exact(get(n.op))} if graph.extreme is not None else set()
    return precision.trace(graph, inputs, perturb=partial(_perturb, noise_rng), skip=skip,
                           skip_step=_exact if graph.extreme is not None else None)


def _absolute(spec) -> bool:
    """Whether a node's rounding error is bounded by its operands' magnitude rather than
    its result's: an idiom or motif (several ONNX nodes, rounded inside, which compilers
    fuse into one kernel that rounds once) or an operator that cancels."""
    return spec is not None and (bool(spec.onnx_ops) or isinstance(spec, Motif) or bool(fact(spec, "cancels")))


def _error_scale(spec, attrs: dict, ins: list, y: torch.Tensor) -> torch.Tensor | None:
    """The magnitude a node's rounding error is a few units of, at each element of its
    output ``y``, where that is not ``y`` itself (then None)."""
    if spec is None:
        return None
    shape = tuple(y.shape)
    # bicubic weights sum taps of the image's magnitude (``interpolates``): onnxruntime's bicubic
    # GridSample gives 0.004599046 for 0.004598502 from values near 4
    if fact(spec, "interpolates") and ins and ins[0].is_floating_point() and ins[0].numel():
        x = ins[0].double().abs().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)
        taps = 4 ** max(x.dim() - 2, 1)  # a bicubic window: 4 taps along each spatial axis
        return torch.full(shape, float(x.max()) * taps, dtype=torch.float64)
    # a normalization that subtracts a mean (``centred``): kernels that fold the mean into a bias
    # or take the variance in one pass differ by a few units of rounding of max|x|, times
    # |scale| / sd, which on a near-constant slice is |scale| / sqrt(epsilon)
    if fact(spec, "centred") and ins and ins[0].is_floating_point():
        x = ins[0].double().abs().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)
        gain = max((float(v.double().abs().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0).max())
                    for v in ins[1:2] if v.numel()), default=1.0)
        eps = float(attrs.get("epsilon", 1e-5))
        return torch.full(shape, float(x.max()) * gain / eps ** 0.5 if x.numel() else 0.0, dtype=torch.float64)
    if spec.onnx_op == "LRN" and ins and ins[0].is_floating_point() and ins[0].dim() >= 2:
        # onnxruntime slides the window sum along the channels (adding the square that enters,
        # subtracting the one that leaves): a large square leaves its rounding behind in the
        # small windows after it, a few units of the column's largest square times the number
        # of channels, relative to the divisor's base
        x = ins[0].double()
        yw = y.double().abs().clamp_min(torch.finfo(torch.float64).tiny)
        size, beta, alpha = attrs.get("size", 1), attrs.get("beta", 0.75), attrs.get("alpha", 1e-4)
        top = (x * x).amax(dim=1, keepdim=True)
        base = x.abs() / yw
        rel = 8 * beta * (alpha / size) * x.shape[1] * top / base.clamp_min(1e-300) ** (1 / beta)
        return (yw * rel).nan_to_num(nan=0.0, posinf=0.0)
    if spec.onnx_op == "DFT" and ins and ins[0].is_floating_point() and ins[0].dim() >= 2:
        return _dft_magnitude(spec, attrs, ins[0], shape)
    if spec.onnx_op == "STFT" and ins and ins[0].is_floating_point() and ins[0].dim() == 3 and len(shape) == 4:
        return _stft_magnitude(spec, attrs, ins, shape)
    if spec.onnx_op in WINDOWS:
        # a0 - a1 cos + a2 cos: terms near 1 that cancel (a symmetric Blackman window's ends are 0,
        # which onnxruntime computes as +1.5e-8 and PyTorch as -3e-8 in float32)
        return torch.full(shape, float(sum(abs(c) for c in WINDOWS[spec.onnx_op])), dtype=torch.float64)
    if _absolute(spec):
        return _magnitude(ins, shape)
    return None


def _dft_magnitude(spec, attrs: dict, x: torch.Tensor, shape: tuple) -> torch.Tensor:
    """DFT: a transform of length L rounds its twiddle angles (2 pi j k / L, or Bluestein's chirp
    pi j**2 / L) to a few units of up to 2 pi L, so every bin is off by a few units of
    L * sum|x| over its slice, whatever its own size: the imaginary part of a real signal's
    first bin, exactly 0, comes out as such a value. onnxruntime 1.32's float32 DFT is off
    by up to 9.3 units of L * sum|x| at lengths other than powers of two (Bluestein), 11 units
    of sum|x| at powers of two; 4 * L * sum|x| (an inverse divides by L) bounds both."""
    ax = attrs["axis"] % x.dim()
    n = x.shape[ax]
    length = spec._length(attrs, n)
    xs = x.double().abs().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0).narrow(ax, 0, min(n, length))
    total = xs.sum(dim=(ax, x.dim() - 1), keepdim=True)  # over the slice, real and imaginary parts
    if attrs["inverse"]:
        total = total * (2 if attrs["onesided"] else 1)  # IRFFT: each bin stands for two
    else:
        total = total * length
    return torch.broadcast_to(4 * total, shape)


def _stft_magnitude(spec, attrs: dict, ins: list, shape: tuple) -> torch.Tensor:
    """STFT: each frame is a DFT of length ``frame_length`` of the windowed samples, with the
    same twiddle-angle rounding (``_dft_magnitude``): a few units of L * sum|x * w| over the
    frame, for every bin of that frame (onnxruntime 1.32 gives an imaginary part of -3e-4
    for a real signal's bin 0, exactly 0, which a Sign turns into -1)."""
    fl, step = attrs["frame_length"], attrs["frame_step"]
    x = ins[0].double().abs().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)
    frames = x.unfold(1, fl, step)[:, :shape[1]]  # [batch, frames, real/imaginary, fl]
    if attrs.get("window") == "const":
        w = torch.from_numpy(spec._window(attrs)).double().abs()
    elif attrs.get("window") == "input" and len(ins) > 1:
        w = ins[1].double().abs().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)
    else:
        w = torch.ones(fl, dtype=torch.float64)
    total = (frames * w).sum(dim=(2, 3))  # [batch, frames]
    return torch.broadcast_to(4 * fl * total[:, :, None, None], shape)


def _magnitude(ins: list, shape: tuple) -> torch.Tensor:
    """The operands' magnitude at each output element: the largest finite |input| at that
    position where every floating-point input broadcasts to the output, else over all of them."""
    floats = [x.double().abs().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0) for x in ins
              if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel()]
    if not floats:
        return torch.zeros(shape, dtype=torch.float64)
    try:
        return torch.stack([torch.broadcast_to(x, shape) for x in floats]).amax(dim=0)
    except RuntimeError:
        return torch.full(shape, max(float(x.max()) for x in floats), dtype=torch.float64)


def _scale(ins: list, y: torch.Tensor) -> float:
    """The relative rounding a node's floating-point output ``y`` is perturbed by: a few units
    in its dtype, times the square root of the terms per output element (a reduction)."""
    n_in = max((x.numel() for x in ins), default=1)
    return NOISE[str(y.dtype).replace("torch.", "")] * max(1.0, (n_in / y.numel()) ** 0.5)


def rounding_bound(spec, attrs: dict, ins: list, y: torch.Tensor) -> torch.Tensor | None:
    """How far a correct compiler's output ``y`` of a node may lie from the reference's, element
    by element, where its rounding error is bounded by its operands rather than by ``y``
    (``_error_scale``), or None: the extra noise the instability check adds there."""
    if str(y.dtype).replace("torch.", "") not in NOISE or not y.numel():
        return None
    magnitude = _error_scale(spec, attrs, ins, y)
    return None if magnitude is None else _scale(ins, y) * magnitude


def _perturb(rng, ins: list, outs: list, spec=None, attrs: dict | None = None) -> list:
    """Each floating-point output times (1 + a few units of rounding in its dtype). A
    reduction's rounding error grows like the square root of the number of terms
    (summation order and accumulator width differ between compilers). ``rng`` a NumPy
    generator (uniform noise), +1 or -1 (every element pushed the same way), or ``"flush"``.

    Where the error is bounded by the operands instead (``_absolute``: a fused idiom, an
    addition that cancels), a random run adds up to that many units of the operands'
    magnitude too, and the ``"flush"`` run makes exactly 0 of every element within them
    (a fused kernel that cancels exactly, or saturates a Tanh to -1, where the reference
    keeps a tiny value) and leaves the others as they are. Every run also moves each
    element by up to ``UNDERFLOW`` (absolute), and the flush makes 0 of those within it:
    rounding at underflow."""
    noisy = []
    for y in outs:
        name = str(y.dtype).replace("torch.", "")
        if name in NOISE and y.numel():
            scale = _scale(ins, y)
            magnitude = _error_scale(spec, attrs or {}, ins, y)
            if isinstance(rng, str):  # flush
                if magnitude is not None:
                    y = torch.where(y.double().abs() <= scale * magnitude, torch.zeros_like(y), y)
                y = torch.where(y.double().abs() <= UNDERFLOW[name], torch.zeros_like(y), y)  # underflow to 0
                noisy.append(y)
                continue
            u = torch.full(tuple(y.shape), float(rng), dtype=torch.float64) if isinstance(rng, (int, float)) else \
                torch.from_numpy(rng.uniform(-1, 1, size=tuple(y.shape))).to(torch.float64)
            w = y.double() * (1 + scale * u) + UNDERFLOW[name] * u
            if magnitude is not None:
                v = torch.full(tuple(y.shape), float(rng), dtype=torch.float64) if isinstance(rng, (int, float)) \
                    else torch.from_numpy(rng.uniform(-1, 1, size=tuple(y.shape))).to(torch.float64)
                w = w + scale * v * magnitude
            y = w.to(y.dtype)
        noisy.append(y)
    return noisy


def undefined_at(graph: Graph, i: int, node, ins: list) -> str | None:
    """Why node ``i`` of ``graph``, on inputs ``ins`` (torch tensors), has an undefined
    result (its spec's ``undefined``: signed integer overflow, a conversion that does not
    fit...), or None."""
    why = get(node.op).undefined(node.attrs, ins, [graph.tensors[t] for t in node.outputs])
    return f"{node.op} (node {i}): {why}" if why else None


def nonfinite_at(graph: Graph, i: int, node, ins: list, outs: list) -> str | None:
    """Why node ``i`` sees or makes a NaN or an infinity its spec does not define, or None."""
    why = nonfinite.violation(get(node.op), node.attrs, [graph.tensors[t] for t in node.inputs], ins, outs)
    return f"{node.op} (node {i}): {why}" if why else None


def undefined_values(graph: Graph, inputs: list) -> str | None:
    """A NaN or an infinity where the specification leaves the result open, signed integer
    overflow or an undefined float -> integer conversion in the reference run."""
    _, trace = _run(graph, inputs)
    for i, (node, (ins, outs)) in enumerate(zip(graph.nodes, trace)):
        why = nonfinite_at(graph, i, node, ins, outs) or undefined_at(graph, i, node, ins)
        if why:
            return why
    return None


def _deviation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| element by element, 0 where both hold the same value (the same infinity,
    or NaN), inf where only one is NaN or they are infinities of different signs."""
    x, y = np.asarray(a).astype(np.float64), np.asarray(b).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(x - y)
    same = (x == y) | (np.isnan(x) & np.isnan(y))
    return np.where(same, 0.0, np.nan_to_num(d, nan=np.inf, posinf=np.inf))


def instability(graph: Graph, inputs: list, tolerances: dict | None = None, trials: int = 3,
                seed: int = 0, candidate: list | None = None) -> str | None:
    """Whether rounding-level perturbations of intermediates move the outputs beyond the
    comparison tolerance; names the first node where the perturbed run departs.

    With ``candidate`` outputs, the instability explains the disagreement only if every
    element of the candidate stays within twice the largest deviation the perturbations
    produced in that output (plus the tolerance): a compiler that is off by far more than
    rounding could cause is not excused by an unstable spot elsewhere in the model.
    """
    reason, within = instability_outputs(graph, inputs, tolerances, trials, seed, candidate)
    return reason if reason is not None and all(within) else None


def instability_outputs(graph: Graph, inputs: list, tolerances: dict | None = None, trials: int = 3,
                        seed: int = 0, candidate: list | None = None) -> tuple:
    """``(reason, within)``: why the case amplifies rounding (or None), and for each of the
    candidate's outputs whether its difference from the reference stays within what the
    perturbations produced in that output (twice the largest deviation, plus the
    tolerance; an output downstream of a pole is unbounded). Without a candidate, or
    without a reason, ``within`` holds True for every output."""
    base_env, base_trace = _run(graph, inputs)
    base = [base_env[t].numpy() for t in graph.outputs]
    rng = np.random.default_rng(seed)
    dev = [np.zeros(b.shape) for b in base]
    reason = None
    # values at an overflow's edge, or an interpolation's tap-summed error that must reach a jump
    # to show (random draws cross one a few percent away only some of the time)
    pushes = (1.0, -1.0) if graph.extreme is not None or any(
        fact(get(n.op), "interpolates") for n in graph.nodes) else ()
    for noise in (*pushes, "flush", *([rng] * trials)):
        env, trace = _run(graph, inputs, noise)
        got = [env[t].numpy() for t in graph.outputs]
        for k, (b, g) in enumerate(zip(base, got)):
            dev[k] = np.maximum(dev[k], _deviation(b, g))
        if reason is not None or compare(base, got, tolerances).ok:
            continue
        reason = "unstable: rounding-level differences in intermediates change the outputs"
        # name the first node whose (perturbed) inputs still agree but whose outputs do not
        for i, (node, (_, outs_p), (_, outs_b)) in enumerate(zip(graph.nodes, trace, base_trace)):
            out_cmp = compare([o.numpy() for o in outs_b], [o.numpy() for o in outs_p], tolerances)
            if not out_cmp.ok:
                jump = " (its output jumps)" if get(node.op).discontinuous(node.attrs) else ""
                reason = (f"unstable: rounding-level differences in intermediates change the outputs; "
                          f"{node.op} (node {i}){jump} amplifies them: {out_cmp.detail}")
                break
    if reason is None or candidate is None:
        return reason, [True] * len(base)
    if len(candidate) != len(base):
        return reason, [False] * len(base)
    unbounded = _past_a_pole(graph, base_trace)
    within = []
    for t, b, c, d in zip(graph.outputs, base, candidate, dev):
        if np.asarray(c).shape != b.shape:
            within.append(False)
        elif t in unbounded:
            within.append(True)  # rounding can carry a value feeding it to the other side of a pole: any value
        else:
            err = _deviation(c, b)
            worst = float(d.max()) if d.size else 0.0  # which elements flip is itself random
            # a candidate's NaN or infinity where the reference has another value is explained
            # only where rounding can make the output non-finite (worst is then inf)
            within.append(bool(np.all(err <= 2 * worst + _tolerance_bound(b, tolerances))))
    return reason, within


def _past_a_pole(graph: Graph, trace: list) -> set:
    """The tensors downstream of a node whose floating-point input lies within a few units of
    rounding of one of its operator's poles (Tan's pi/2 + k pi): their values are unbounded."""
    hot = set()
    for node, (ins, _outs) in zip(graph.nodes, trace):
        if hot.intersection(node.inputs):
            hot.update(node.outputs)
            continue
        pole = fact(get(node.op), "poles")
        x = ins[0] if ins else None
        if pole is None or x is None or not x.is_floating_point() or not x.numel():
            continue
        name = str(x.dtype).replace("torch.", "")
        xs = x.double().numpy()
        first, period = pole
        off = np.remainder(xs - first, period)
        dist = np.minimum(off, period - off)
        if np.any(np.isfinite(xs) & (dist <= 2 * NOISE.get(name, 0.0) * np.maximum(np.abs(xs), 1.0))):
            hot.update(node.outputs)
    return hot


def _tolerance_bound(ref: np.ndarray, tolerances: dict | None) -> np.ndarray:
    if not np.issubdtype(ref.dtype, np.floating):
        return np.zeros(ref.shape)
    rtol, atol = dict(DEFAULT_TOLERANCES, **(tolerances or {}))[str(ref.dtype)]
    x = ref.astype(np.float64)
    finite = np.isfinite(x)
    scale = max(1.0, float(np.max(np.abs(x[finite])))) if finite.any() else 1.0
    return np.where(finite, atol * scale + rtol * np.abs(np.where(finite, x, 0.0)), 0.0)  # none at NaN or inf
