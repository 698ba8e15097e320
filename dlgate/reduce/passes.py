"""Pass-list reduction: the fewest Relax passes that still show a TVM finding.

TVM's maintainers act fastest on a report that names one pass. After the graph is reduced,
a finding on ``tvm`` (the importer path) or ``tvm-relax`` (the direct path) on the CPU has
its compile spelled out as a list of named passes: the ``extra_passes`` it ran with, then
its pipeline's passes in order (:data:`dlgate.backends.tvm_passes.PIPELINE_PASSES`). The
list is then cut down, each candidate compiled with the backend's ``passes`` option in the
isolated worker and judged against the reference like any reduction step (the same
:class:`~dlgate.reduce.reducer.Target`: a wrong answer stays wrong, an error keeps its
cluster):

1. the build's lowering passes alone (:data:`~dlgate.backends.tvm_passes.LOWERING`), kept
   in every candidate so that each one builds: a failure there needs no optimization pass
   (legalization or code generation);
2. otherwise the whole list as named passes must fail as the finding did (else the
   pipeline is not what the table says, or the failure does not come back: no pass list);
3. then delta debugging (Zeller's ddmin) over the other passes, keeping their order, to a
   list from which no single pass can be removed: one pass, where one pass suffices.

Each candidate is a backend of its own (its ``passes`` option), so each starts a worker:
one that does not fail is closed at once; the result's stays open for the script's actual
run (:func:`dlgate.reduce.tvmscript.write_tvmscript` closes it).

Deterministic (a fixed order of candidates; each distinct candidate judged once) and
bounded by ``max_probes`` and ``max_seconds`` (the best list so far is kept when a bound is
reached).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from dlgate.backends.base import BackendSpec
from dlgate.backends.registry import load
from dlgate.backends.tvm import PIPELINES, TVM
from dlgate.backends.tvm_passes import LOWERING, PIPELINE_PASSES
from dlgate.check import CheckConfig, Prepared, judge_backend
from dlgate.gate.progress import ACTIVITY


@dataclass
class PassReduction:
    """``full``: the sequence the finding compiled with; ``passes``: the reduced sequence
    (in order, lowering included); ``culprits``: its passes that are not the build's
    lowering (empty: the lowering alone fails); ``verdict``: the reduced sequence's."""

    full: list
    passes: list
    culprits: list
    verdict: object
    probes: int = 0
    seconds: float = 0.0
    hit_limit: bool = False
    log: list = field(default_factory=list)

    def to_json(self) -> dict:
        return {"full": self.full, "passes": self.passes, "culprits": self.culprits, "lowering": sorted(LOWERING),
                "probes": self.probes, "seconds": round(self.seconds, 2), "hit_limit": self.hit_limit,
                "verdict": self.verdict.verdict, "log": self.log}


def describe(red: dict) -> str:
    """A reduced pass list (``PassReduction.to_json()``) in words, for the log."""
    if not red["culprits"]:
        return "the lowering alone: no optimization pass is needed"
    return f"{', '.join(red['culprits'])} and the lowering"


def sequence(spec: BackendSpec) -> list | None:
    """The named passes ``spec`` compiles with, in order, or None where a pass list cannot
    be written: not a TVM backend, not the CPU, a pass given as a Python object."""
    try:
        cls = load(spec.name)
    except Exception:  # noqa: BLE001 - a backend that does not load has no pass list
        return None
    if not (isinstance(cls, type) and issubclass(cls, TVM)) or spec.device != "cpu":
        return None
    opts = dict(spec.options)
    if opts.get("passes") is not None:
        return list(opts["passes"])
    extra = list(opts.get("extra_passes", ()) or ())
    if any(not isinstance(p, str) for p in extra):
        return None
    level = spec.opt_level or cls.opt_levels[-1]
    return extra + list(PIPELINE_PASSES[PIPELINES[level]])


def with_passes(spec: BackendSpec, passes: list) -> BackendSpec:
    """``spec`` compiling with exactly ``passes`` (no extra passes, no pipeline)."""
    opts = {k: v for k, v in spec.options if k not in ("extra_passes", "passes", "record_rewrites")}
    opts.update(passes=tuple(passes), record_rewrites=False)
    return BackendSpec(spec.name, spec.device, spec.opt_level, tuple(sorted(opts.items())))


class _Limit(Exception):
    """A bound is reached."""


def _binding(shape) -> int | None:
    """Which binding of a dynamic case a failure showed at (None: the first)."""
    return (shape or {}).get("index")


def discard(pool, spec: BackendSpec) -> None:
    """Close a candidate's worker: each pass list is a backend of its own, used once."""
    w = pool.workers.pop(spec, None)
    if w is not None:
        w.close()


def reduce_passes(pool, cfg: CheckConfig, target, case: Prepared, reference: list, max_seconds: float = 120.0,
                  max_probes: int = 60, shape: dict | None = None, same=None) -> PassReduction | None:
    """The reduced pass list of ``case``'s failure on ``target.backend`` (a
    :class:`~dlgate.reduce.reducer.Target`), or None where there is none to reduce (not a
    TVM backend on the CPU, or the whole list as named passes does not fail the same way).
    ``shape``: the finding's ``shape`` (a failure at a further binding of a dynamic case);
    a candidate fails the same way only at the same binding. ``same``: for a finding no
    reference judges (an invalid model's), ``same(spec)`` runs the candidate and gives its
    verdict when it fails the way the finding did, else None (``cfg`` and ``reference`` are
    then not read)."""
    full = sequence(target.backend)
    if full is None:
        return None
    binding = _binding(shape)
    t0 = time.perf_counter()
    seen: dict = {}
    log: list = []
    probes = [0]
    failing: list = []  # the specs of failing candidates, whose workers are still open
    had = getattr(pool, "deadline", None)
    pool.deadline = time.monotonic() + max_seconds

    def judge(passes: tuple):
        if passes not in seen:
            if probes[0] >= max_probes or time.perf_counter() - t0 > max_seconds:
                raise _Limit
            probes[0] += 1
            ACTIVITY.tick()
            spec = with_passes(target.backend, list(passes))
            v = None
            try:
                if same is not None:
                    v = same(spec)
                else:
                    v = judge_backend(pool, case, cfg, spec, reference, crosscheck=False, explain=True)
            finally:
                # the same failure: the target's, and where the finding showed it (a dynamic
                # case's first binding, or the further one), not another one met elsewhere
                if same is not None:
                    seen[passes] = v
                else:
                    seen[passes] = v if v is not None and target.matches(v) and _binding(v.shape) == binding else None
                if seen[passes] is None:
                    discard(pool, spec)
                else:  # kept while it may be the result: the script's actual run reuses it
                    failing.append(spec)
        return seen[passes]

    ACTIVITY.begin(f"reducing the pass list of {case.id} on {target.backend.label()}", "candidates tried")
    fixed = [k for k, n in enumerate(full) if n in LOWERING]
    free = [k for k, n in enumerate(full) if n not in LOWERING]

    def names(chosen) -> tuple:
        keep = set(chosen) | set(fixed)
        return tuple(n for k, n in enumerate(full) if k in keep)

    state = {"best": list(free)}  # the smallest list that fails so far, kept when a bound is reached
    hit = False
    try:
        if judge(names([])) is not None:
            state["best"] = []
            log.append("the lowering passes alone fail")
        elif judge(names(free)) is None:
            log.append(f"the whole list ({len(full)} passes) as named passes does not fail the same way")
        else:
            log.append(f"the whole list ({len(full)} passes) fails as named passes")
            _ddmin(free, lambda sub: judge(names(sub)) is not None, log, lambda s: [full[k] for k in s], state)
    except _Limit:
        hit = True
        log.append(f"bound reached after {probes[0]} probes")
    finally:
        pool.deadline = had
        best = state["best"]
        for spec in failing:  # every worker but the result's
            if dict(spec.options)["passes"] != names(best):
                discard(pool, spec)
    if seen.get(names(best)) is None:
        discard(pool, with_passes(target.backend, list(names(best))))
        return None
    return PassReduction(full=list(full), passes=list(names(best)), culprits=[full[k] for k in best],
                         verdict=seen[names(best)], probes=probes[0], seconds=time.perf_counter() - t0,
                         hit_limit=hit, log=log)


def _ddmin(items: list, fails, log: list, show, state: dict) -> list:
    """Zeller's ddmin: a 1-minimal sublist of ``items`` (order kept) on which ``fails``
    holds, given that it holds on ``items`` and not on the empty list. Subsets are tried
    before complements, each in order, so the result is a function of the outcomes alone.
    ``state["best"]`` follows the smallest failing sublist found (a bound may stop it)."""
    n = 2
    while len(items) >= 2:
        size = len(items)
        chunks = [items[size * k // n: size * (k + 1) // n] for k in range(n)]
        chunks = [c for c in chunks if c]
        for c in chunks:
            if fails(c):
                items, n = c, 2
                state["best"] = items
                log.append(f"kept {', '.join(show(c))}")
                break
        else:
            for c in chunks:
                rest = [x for x in items if x not in c]
                if len(chunks) > 2 and fails(rest):
                    items, n = rest, max(n - 1, 2)
                    state["best"] = items
                    log.append(f"removed {', '.join(show(c))}")
                    break
            else:
                if n >= len(items):
                    break
                n = min(len(items), 2 * n)
    if len(items) == 1:
        log.append(f"one pass: {show(items)[0]}")
    return items
