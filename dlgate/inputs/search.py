"""Numeric-valid inputs and weights: NNSmith's gradient-guided search (Algorithm 3).

A model is *numerically valid* when every floating-point intermediate and output of its
PyTorch run is finite (NaN/Inf inside the graph make compiler comparisons meaningless even
when the outputs look fine), and no restricted operator with a non-float output (a Cast to
an integer type) sees inputs outside its domain, which NaN/Inf cannot reveal.

Algorithm, over the graph inputs and the float constants together:

1. Start from the graph's own values: the constants as generated and inputs drawn with
   :func:`dlgate.graph.ir.random_values` (uniform [-4, 4] floats, small signed integers, so
   negative numbers stay exercised), or, for leaves that reach a restricted operator,
   from the range :func:`dlgate.graph.ir.domain_spans` carries back from its domain
   (Acosh(ReduceSum(Exp(x))) draws x near log(1.1 / n)). One forward pass without
   autograd; most models stop here (method ``"initial"``), and nothing else (optimizer,
   float64 copies) is built.
2. Then ``SAMPLING_FIRST`` plain re-draws (forward passes only; odd ones from the carried
   ranges again, even ones from ``RESTART_RANGES``): most models that are not valid at
   once were unlucky draws, and a re-draw costs a third of a gradient step (method
   ``"sampling"``).
3. Otherwise run in topological order (``GraphModule.run`` with a hook) up to the first node
   that produces NaN/Inf; take that operator's first positive loss (its spec's ``losses`` on
   that node's inputs), or, when it has none, a generic magnitude loss that pulls the node's
   float inputs back towards [-1, 1] (overflow in Mul/MatMul/... chains). One Adam step
   (lr 0.5, reset whenever the (node, loss index) pair changes) on float64 master copies of
   every float input and constant; the run uses them cast to their dtype. Adam sees each
   gradient element's sign, or 0 below a dead zone (``_signal``), and runs in NumPy with
   exactly rounded operations only (``_Adam``), so that the values it reaches do not depend
   on the CPU (see Determinism below).
4. Zero/None gradient, or parameters that do not change in their own dtype: random restart
   (every value redrawn, integers included, from a rotating set of ranges, see
   ``RESTART_RANGES``). NaN/Inf in parameters (after the cast) are replaced element-wise by
   fresh random values.
5. Stop at the first fully valid run (method ``"gradient"``).

Extreme cases (``graph.extreme``, see :mod:`dlgate.graph.extreme`): the first draw and the
odd re-draws plant extreme values (NaN, infinities, huge magnitudes, subnormals, signed
zeros, ties, integer limits) in the leaves, and a run is valid when every special value
an operator sees or makes is one its spec defines (``dlgate.ops.nonfinite``: NaN through
Add, +/-inf through Relu, overflow to inf in Mul or in a Cast between float types), no
operator's result is undefined on its inputs (``OpSpec.undefined``: signed overflow, a
conversion out of range), and restricted operators with non-float outputs stay in their
domain. When no such run is found, the ordinary search runs instead (a finite run, from
the same seed). ``SearchResult.extreme`` lists the kinds the final values hold.

Graphs with no float input or constant cannot be differentiated: plain re-sampling
(method ``"sampling"``), up to ``SAMPLING_ATTEMPTS`` draws.

Determinism: all randomness comes from NumPy PCG64 streams seeded with
``sub_seed(seed, ...)``, the search runs with ``torch.set_num_threads(1)`` (restored after),
and the budget is a *step* budget (``max_steps``; one step = one forward pass, with a
backward pass and an Adam step for gradient steps). ``max_seconds`` is only a safety cap:
when it is hit (``SearchResult.hit_time_cap``) the result depends on the machine's speed.
Across machines: PyTorch's float results differ in the last bits between CPU kernels
(AVX-512, AVX2 and plain ones: its own Adam step, reductions, transcendental functions),
and a gradient step used to carry those bits into the searched values (2 of the golden
batch's 31 searched cases differed between ``ATEN_CPU_CAPABILITY=default`` and AVX-512).
The search's state now moves on signals such noise cannot change: gradient signs above a
dead zone far wider than it, an Adam whose every operation IEEE rounds exactly, and a
backtracking test with a margin (``RISE``). What remains platform-dependent is a value
within rounding noise of a decision's edge (an element at the dead zone's edge, an output
at the overflow threshold, an input on a domain's boundary): no longer carried along by
every step, it did not occur in 3,440 cases (tests/test_search_determinism.py).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.graph import extreme
from dlgate.graph.ir import Graph, domain_spans, random_values
from dlgate.materialize.torch_model import GraphModule
from dlgate.ops import nonfinite
from dlgate.ops.base import IEEE
from dlgate.ops.registry import all_specs
from dlgate.seeds import sub_seed

#: Adam's initial learning rate (NNSmith §5.1).
LR = 0.5
DEFAULT_MAX_STEPS = 32
DEFAULT_MAX_SECONDS = 10.0  # safety cap only; the first call also pays torch's lazy imports
#: Draws for graphs that cannot be differentiated.
SAMPLING_ATTEMPTS = 8
#: Re-draws (forward passes only) before gradient steps, out of the same step budget.
SAMPLING_FIRST = 4
#: Float ranges for random restarts, used in turn (restart k uses entry (k - 1) % len).
#: The first keeps the generator's own distribution (negatives included); NNSmith found
#: [1, 9] best for plain sampling; a narrow positive range fits |x| <= 1 domains (Asin,
#: Acos, Atanh) and keeps products and exponentials small; a tiny range fits norms and
#: sums over many elements into such domains.
RESTART_RANGES = ((0.1, 1.0), (-1.0, 1.0), (-0.05, 0.05), (1.0, 9.0), (-4.0, 4.0))
#: Gradient steps without success after which the search restarts anyway (oscillation
#: between operators, or a descent that creeps too slowly).
STALL_STEPS = 6
#: Per-dtype bound the generic (overflow) loss pulls magnitudes under.
_FMAX = {"float16": 65504.0, "float32": 3.4e38, "float64": 1.7e308}
#: Adam's moment decays and epsilon (PyTorch's defaults, which the search used before it
#: ran its own Adam).
BETAS = (0.9, 0.999)
EPS = 1e-8
#: Gradient elements below 2**-DEAD_BITS of the largest one (rounded up to a power of two)
#: give no signal: last-bit noise (a cancellation, a kernel's rounding) is far below it on
#: any machine, so it cannot decide an element's direction.
DEAD_BITS = 16
#: A loss counts as grown (the step overshot) when it rose by more than this fraction: a
#: rise within rounding noise is not one, wherever the arithmetic runs.
RISE = 2.0 ** -12


@dataclass
class SearchResult:
    inputs: list  # np.ndarray per graph input, graph order
    consts: dict  # const tensor id -> np.ndarray (float ones possibly updated)
    valid: bool
    method: str  # "initial" | "gradient" | "sampling"
    steps: int = 0
    restarts: int = 0
    seconds: float = 0.0
    reason: str = ""
    #: True when ``max_seconds`` stopped the search: the result is then machine-dependent.
    hit_time_cap: bool = False
    failing: list = field(default_factory=list)  # (node index, op) where the search stopped
    #: For an extreme case: the kinds of extreme value the final inputs and constants hold.
    extreme: list = field(default_factory=list)


class _Module(GraphModule):
    """GraphModule whose constants can be overridden by the search's tensors."""

    def __init__(self, graph: Graph):
        super().__init__(graph)
        self.override: dict | None = None

    def const(self, t: int) -> torch.Tensor:
        if self.override is not None:
            return self.override[t]
        return super().const(t)


def _signal(grads: list) -> list | None:
    """The gradient as the search uses it: per element, its sign, where its magnitude is
    at least 2**-DEAD_BITS of the largest finite one (rounded up to a power of two), else 0;
    NaN gives 0. None when no element gives a signal.

    Why: PyTorch's float results differ in the last bits between CPU kernels (vectorized
    reductions, transcendental functions, fused multiply-adds), and an Adam step passes
    those bits on to the values, so the searched values depended on the machine. Signs
    outside a dead zone that is far above such noise are the same on every machine (save
    an element within noise of the threshold), and Adam's first step after a reset moves
    each element by lr times its gradient's sign anyway."""
    top = 0.0
    for g in grads:
        if g is not None and g.size:
            fin = np.abs(g[np.isfinite(g)])
            if fin.size:
                top = max(top, float(fin.max()))
    # frexp is exact: the threshold moves only where the largest element crosses a power of two
    thr = np.ldexp(1.0, np.frexp(top)[1] - DEAD_BITS) if top > 0 else 0.0
    out, any_signal = [], False
    for g in grads:
        if g is None:
            out.append(None)
            continue
        with np.errstate(invalid="ignore"):
            q = np.where(np.abs(g) > thr, np.sign(g), 0.0)  # NaN: the comparison is False
        q = np.nan_to_num(q, nan=0.0)
        any_signal = any_signal or bool(q.any())
        out.append(q)
    return out if any_signal else None


class _Adam:
    """Adam (Kingma and Ba) on float64 NumPy arrays, in place, with additions,
    multiplications, divisions and square roots only: IEEE rounds each of them exactly, so
    the same signals give the same bits on every CPU (PyTorch's optimizer runs vectorized
    kernels that differ in the last bit between AVX-512 and plain CPUs; the bias
    corrections are running products, not ``pow``, which math libraries round differently)."""

    def __init__(self, params: list, lr: float):
        self.params, self.lr = params, lr
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.c1 = self.c2 = 1.0  # beta ** t

    def step(self, signals: list) -> None:
        b1, b2 = BETAS
        self.c1 *= b1
        self.c2 *= b2
        for p, m, v, q in zip(self.params, self.m, self.v, signals):
            if q is None:
                continue
            m *= b1
            m += (1.0 - b1) * q
            v *= b2
            v += (1.0 - b2) * (q * q)
            p -= self.lr * (m / (1.0 - self.c1)) / (np.sqrt(v / (1.0 - self.c2)) + EPS)


def _draw(rng: np.random.Generator, t, lo_hi=None) -> np.ndarray:
    """Fresh values; with a range, integers are drawn from the integers it spans too (an
    integer path into a narrow domain, through a cast, needs small values such as 0 or 1)."""
    if lo_hi is None or t.dtype == "bool":
        return random_values(rng, t)
    lo, hi = lo_hi
    if dt.is_float(t.dtype):
        return rng.uniform(lo, hi, size=tuple(t.shape)).astype(t.dtype)
    ilo = max(int(np.floor(lo)), 0 if t.dtype == "uint8" else -128)
    ihi = max(int(np.ceil(hi)), ilo)
    return rng.integers(ilo, ihi + 1, size=tuple(t.shape)).astype(t.dtype)


class _Probe:
    """The hook: stops at the first node whose float output is non-finite, or whose
    restricted spec with non-float outputs reports a violated predicate. For an extreme
    case (``extreme``), special values are fine where the spec defines them, and a node
    whose result is undefined on its inputs stops the run too."""

    def __init__(self, mod: _Module, want_loss: bool, extreme: bool = False):
        self.mod = mod
        self.want_loss = want_loss
        self.extreme = extreme
        self.bad = None  # (index, node, ins, outs, kind)

    def __call__(self, i, node, ins, outs):
        spec = self.mod.specs[i]
        types = self.mod.graph.tensors
        if self.extreme:
            why = nonfinite.violation(spec, node.attrs, [types[t] for t in node.inputs], ins, outs)
            if why:
                self.bad = (i, node, ins, f"an undefined result ({why})")
                return True
        else:
            for y in outs:
                if y.is_floating_point() and not bool(torch.isfinite(y).all()):
                    self.bad = (i, node, ins, "NaN/Inf")
                    return True
        # an extreme case checks every restricted operator not fully IEEE-defined: its
        # domain may be left with a finite, but disputed, result (log(sum(exp(x))))
        if spec.restricted and any(x.is_floating_point() for x in ins) and (
                not any(y.is_floating_point() for y in outs) or
                self.extreme and spec.defines_nonfinite(node.attrs, [types[t] for t in node.inputs]) != IEEE):
            with torch.no_grad():
                ls = spec.losses(node.attrs, *ins)
            if any(float(v.detach()) > 0 for v in ls):
                self.bad = (i, node, ins, "out-of-domain input")
                return True
        if self.extreme:
            with torch.no_grad():
                why = spec.undefined(node.attrs, [x.detach() for x in ins], [types[t] for t in node.outputs])
            if why:
                self.bad = (i, node, ins, f"an undefined result ({why})")
                return True
        return False


def _first_loss(spec, node, ins):
    """(loss index, loss tensor) of the first positive loss; index -1 for the generic one."""
    for k, v in enumerate(spec.losses(node.attrs, *ins)):
        if float(v.detach()) > 0:
            return k, v
    terms = []
    for x in ins:
        if x.is_floating_point() and x.requires_grad:
            xd = x.double()
            big = (xd.abs() - 1.0).clamp(min=0)
            terms.append(torch.nan_to_num(big, nan=0.0, posinf=0.0).sum())
    if terms:
        total = sum(terms)
        if float(total.detach()) > 0:
            return -1, total
    return None, None


def search(graph: Graph, seed: int, max_steps: int = DEFAULT_MAX_STEPS,
           max_seconds: float = DEFAULT_MAX_SECONDS, gradients: bool = True) -> SearchResult:
    """Find inputs (and float constant values) with a numerically valid PyTorch run.

    ``gradients=False`` gives the plain-sampling baseline under the same step budget.
    """
    threads = torch.get_num_threads()
    if threads != 1:
        torch.set_num_threads(1)
    try:
        res = _search(graph, seed, max_steps, max_seconds, gradients)
        if graph.extreme is not None:
            if not res.valid:  # no valid draw with extreme values: the ordinary search, as for any case
                tried = res
                res = _search(replace(graph, extreme=None), seed, max_steps, max_seconds, gradients)
                res.steps, res.seconds = res.steps + tried.steps, res.seconds + tried.seconds
                res.hit_time_cap = res.hit_time_cap or tried.hit_time_cap
            res.extreme = extreme.kinds_in(graph, res.inputs, res.consts)
        return res
    finally:
        if threads != 1:
            torch.set_num_threads(threads)


def _search(graph, seed, max_steps, max_seconds, gradients):
    t0 = time.perf_counter()
    rng = np.random.Generator(np.random.PCG64(sub_seed(seed, "input-search")))
    types = graph.tensors
    spans = domain_spans(graph, all_specs())
    inputs = [random_values(rng, types[t], spans.get(t)) for t in graph.inputs]
    planter = extreme.Planter(graph, spans) if graph.extreme is not None else None
    if planter is not None:
        inputs = planter.plant_inputs(rng, inputs)
    mod = _Module(graph)
    probe = _Probe(mod, False, planter is not None)
    with torch.no_grad():
        mod.run([torch.from_numpy(x) for x in inputs], probe)
    consts = {t: graph.values[t] for t in graph.consts}
    if probe.bad is None:
        return SearchResult(inputs, dict(consts), True, "initial", 0, 0, time.perf_counter() - t0)

    fl_in = [k for k, t in enumerate(graph.inputs) if dt.is_float(types[t].dtype)]
    fl_c = [t for t in graph.consts if dt.is_float(types[t].dtype)]
    if not gradients or not (fl_in or fl_c):
        return _sampling(graph, mod, rng, inputs, consts, probe, max_steps if not gradients else SAMPLING_ATTEMPTS,
                         max_seconds, t0, planter=planter)
    # a few cheap re-draws first (a forward pass each, no autograd): most models that
    # are not valid at once are unlucky draws, not hard ones
    first = min(SAMPLING_FIRST, max_steps)
    r = _sampling(graph, mod, rng, inputs, consts, probe, first, max_seconds, t0, spans, planter)
    if r.valid or r.hit_time_cap or first == max_steps:
        return r
    mod.override = None
    res = _gradient(graph, mod, rng, inputs, consts, fl_in, fl_c, max_steps - first, max_seconds, t0,
                    planter is not None)
    res.steps += first
    res.restarts += first
    return res


def _reason(bad, steps):
    i, node, _, kind = bad
    return f"operator {node.op} (node {i}) still produces {kind} after {steps} steps"


def _sampling(graph, mod, rng, inputs, consts, probe, attempts, max_seconds, t0, spans=None, planter=None):
    types = graph.tensors
    steps = 0
    capped = False
    while steps < attempts:
        if time.perf_counter() - t0 > max_seconds:
            capped = True
            break
        steps += 1
        rr = RESTART_RANGES[(steps - 1) % len(RESTART_RANGES)]
        sp = spans and steps % 2 == 1  # odd draws: the carried starting ranges again
        inputs = [_draw(rng, types[t], (spans.get(t, rr) if sp else rr)) for t in graph.inputs]
        consts = {t: _draw(rng, types[t], (spans.get(t, rr) if sp else rr)) for t in graph.consts}
        if planter is not None and steps % 2 == 1:  # odd draws of an extreme case: planted too
            inputs = planter.plant_inputs(rng, inputs)
            consts = planter.plant(rng, consts)
        mod.override = {t: torch.from_numpy(v) for t, v in consts.items()}
        probe.bad = None
        with torch.no_grad():
            mod.run([torch.from_numpy(x) for x in inputs], probe)
        if probe.bad is None:
            return SearchResult(inputs, consts, True, "sampling", steps, steps, time.perf_counter() - t0,
                                hit_time_cap=False)
    return SearchResult(inputs, consts, False, "sampling", steps, steps, time.perf_counter() - t0,
                        _reason(probe.bad, steps), capped, [(probe.bad[0], probe.bad[1].op)])


def _gradient(graph, mod, rng, inputs, consts, fl_in, fl_c, max_steps, max_seconds, t0, extreme_case=False):
    types = graph.tensors
    in_dt = [dt.torch_dtype(types[t].dtype) for t in graph.inputs]
    c_dt = {t: dt.torch_dtype(types[t].dtype) for t in graph.consts}
    # float64 masters: Adam in float16 would underflow its epsilon and moments
    masters = {("i", k): torch.tensor(inputs[k], dtype=torch.float64, requires_grad=True) for k in fl_in}
    masters.update({("c", t): torch.tensor(consts[t], dtype=torch.float64, requires_grad=True) for t in fl_c})
    keys = list(masters)
    fixed_in = {k: torch.from_numpy(inputs[k]) for k in range(len(inputs)) if k not in fl_in}
    fixed_c = {t: torch.from_numpy(consts[t]) for t in graph.consts if t not in fl_c}
    probe = _Probe(mod, True, extreme_case)
    opt = None
    target = None
    steps = restarts = 0
    capped = False
    bad = None

    def dtype_of(key):
        return in_dt[key[1]] if key[0] == "i" else c_dt[key[1]]

    def type_of(key):
        return types[graph.inputs[key[1]]] if key[0] == "i" else types[key[1]]

    def restart():
        nonlocal opt, target, since
        since = 0
        visits.clear()
        rr = RESTART_RANGES[(restarts - 1) % len(RESTART_RANGES)]
        for k in range(len(inputs)):
            if k not in fl_in:
                fixed_in[k] = torch.from_numpy(_draw(rng, types[graph.inputs[k]], rr))
        for t in fixed_c:
            fixed_c[t] = torch.from_numpy(_draw(rng, types[t], rr))
        with torch.no_grad():
            for key in keys:
                masters[key].copy_(torch.from_numpy(_draw(rng, type_of(key), rr).astype(np.float64)))
        opt, target = None, None

    def cast_all():
        cur = {key: masters[key].to(dtype_of(key)) for key in keys}
        ins = [cur[("i", k)] if ("i", k) in cur else fixed_in[k] for k in range(len(inputs))]
        cs = {t: cur[("c", t)] if ("c", t) in cur else fixed_c[t] for t in graph.consts}
        return ins, cs

    since = 0  # steps since the last restart
    last = None  # the target's loss at the previous step
    visits: dict = {}  # (node, loss index) -> optimizer resets on it since the last restart
    while True:
        if steps >= max_steps:
            break
        if time.perf_counter() - t0 > max_seconds:
            capped = True
            break
        steps += 1
        ins, cs = cast_all()
        mod.override = cs
        probe.bad = None
        mod.run(ins, probe)
        bad = probe.bad
        if bad is None:
            return _finish(graph, masters, fixed_in, fixed_c, dtype_of, True, "gradient", steps, restarts,
                           t0, "", False, [])
        i, node, nins, _ = bad
        k, loss = _first_loss(mod.specs[i], node, nins)
        since += 1
        if loss is None or not loss.requires_grad or since > STALL_STEPS:
            restarts += 1
            restart()
            continue
        if target != (i, k) or opt is None:
            # A target seen again since the last restart means two operators undo each
            # other's fixes (Adam's first step after a reset moves every violating element
            # by exactly lr): halve lr for each revisit so the ping-pong converges.
            n = visits.get((i, k), 0)
            visits[(i, k)] = n + 1
            opt = _Adam([masters[key].detach().numpy() for key in keys], LR * 0.5 ** n)
            target = (i, k)
            last = None
        lv = float(loss.detach())
        if last is not None and lv > last + last * RISE:
            # the step overshot (Adam moves every element by about lr): backtrack
            opt.lr *= 0.5
        last = lv
        for key in keys:
            masters[key].grad = None
        loss.backward()
        signal = _signal([None if masters[key].grad is None else masters[key].grad.numpy() for key in keys])
        if signal is None:
            restarts += 1
            restart()
            continue
        # clone: for float64 parameters .to() is the master itself, which step() updates
        before = [masters[key].detach().to(dtype_of(key)).clone() for key in keys]
        opt.step(signal)
        changed = False
        with torch.no_grad():
            for key, b in zip(keys, before):
                m = masters[key]
                c = m.to(dtype_of(key))
                fin = torch.isfinite(c)
                if not bool(fin.all()):
                    fresh = torch.from_numpy(_draw(rng, type_of(key)).astype(np.float64))
                    m.copy_(torch.where(fin, m, fresh))
                    c = m.to(dtype_of(key))
                if not changed and not torch.equal(c, b):
                    changed = True
        if not changed:
            restarts += 1
            restart()
    reason = _reason(bad, steps) if bad is not None else "step budget exhausted"
    if capped:
        reason += f" (wall-clock cap of {max_seconds}s hit)"
    failing = [(bad[0], bad[1].op)] if bad is not None else []
    return _finish(graph, masters, fixed_in, fixed_c, dtype_of, False, "gradient", steps, restarts, t0,
                   reason, capped, failing)


def _finish(graph, masters, fixed_in, fixed_c, dtype_of, valid, method, steps, restarts, t0, reason,
            capped, failing):
    types = graph.tensors

    def arr(key, fixed):
        if key in masters:
            return masters[key].detach().to(dtype_of(key)).numpy().astype(types_of(key), copy=True)
        return fixed.numpy().copy()

    def types_of(key):
        t = graph.inputs[key[1]] if key[0] == "i" else key[1]
        return dt.NUMPY[types[t].dtype]

    inputs = [arr(("i", k), fixed_in.get(k)) for k in range(len(graph.inputs))]
    consts = {t: arr(("c", t), fixed_c.get(t)) for t in graph.consts}
    return SearchResult(inputs, consts, valid, method, steps, restarts, time.perf_counter() - t0, reason,
                        capped, failing)
