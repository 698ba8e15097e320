"""Reducing a hang (a ``timeout`` target): probes of at most :data:`HANG_PROBE_S` seconds
instead of the whole timeout, then one run of the reduced case with the full timeout.

A candidate that still hangs costs the probe's timeout. Probed at the full 60 s, the weekly
campaign's hangs in TVM's importer stayed at 7, 14 and 29 operators where two cause them: the
bound bought two or three probes. With short probes it buys many more. The reference runs
with the full timeout all along (:meth:`dlgate.reduce.reducer.Reducer.judge`). The reduced
case is then run once more with the full timeout, past the time bound, and kept only if it
still gives no answer; a case that was merely slow is no hang, and the original case stands
instead, judged with the full timeout too.
"""
from __future__ import annotations

import time

from dlgate.check import Prepared
from dlgate.oracle import verdict as V
from dlgate.reduce.target import NotReproduced, Reduced, case_key

#: The timeout of each probe while a hang is reduced (at most the pool's own timeout).
HANG_PROBE_S = 10.0


def probe_seconds(red) -> float | None:
    """The shorter probe timeout of ``red``'s reduction (a :class:`~dlgate.reduce.reducer.Reducer`),
    or None: not a hang, or the pool's own timeout is no longer."""
    if red.target.verdict != V.TIMEOUT or red.pool.timeout_s <= HANG_PROBE_S:
        return None
    return HANG_PROBE_S


def full_timeout(red, case: Prepared) -> V.Verdict | None:
    """``case`` judged again by ``red`` with the pool's whole timeout, whatever the time bound."""
    red._seen.pop(case_key(case), None)
    deadline, red.pool.deadline = red.pool.deadline, None
    try:
        return red.judge(case)
    finally:
        red.pool.deadline = deadline


def confirm(red, case: Prepared, out: Reduced, short: float) -> Reduced:
    """The hang's reduction ``out``, probed at ``short`` seconds, kept if its case gives no
    answer within the full timeout either; else the original ``case``, judged with it."""
    full, t0 = red.pool.timeout_s, time.perf_counter()
    v = full_timeout(red, out.case)
    if v is not None and red.target.matches(v):
        out.verdict, out.probes = v, red.probes
        out.seconds += time.perf_counter() - t0  # the confirmation is part of the reduction's time
        out.log.append(f"hang: probed with a {short:g} s timeout; the reduced case gives no answer within "
                       f"the full {full:g} s either")
        return out
    got = "an answer" if v is None or v.verdict != V.TIMEOUT else v.verdict
    first = full_timeout(red, case) if out.case is not case else v
    if first is None or not red.target.matches(first):
        raise NotReproduced(f"{case.id} does not fail as {red.target.verdict} on "
                            f"{red.target.backend.label()} within {full:g} s")
    nodes = case.graph.nodes
    return Reduced(case, first, len(nodes), probes=red.probes, seconds=out.seconds + time.perf_counter() - t0,
                   hit_limit=out.hit_limit, matter=[set(n.attrs) for n in nodes], kept=list(range(len(nodes))),
                   log=out.log + [f"hang: the case reduced with {short:g} s probes gave {got} within the full "
                                  f"{full:g} s (slow, not hung): the original case stands"])
