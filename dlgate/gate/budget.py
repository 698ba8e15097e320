"""A campaign's time budget (``budget``, ``--budget``, the Action's ``budget`` input).

The budget bounds the time one invocation of ``dlgate run`` spends running cases, as
ClusterFuzzLite's ``fuzz-seconds`` bounds one CI job's fuzzing: cases start in plan order
(corpus, baseline repros, the batch by index) while less than ``seconds`` have passed since
the first one started; the case in flight always finishes, its confirmation, reduction and
the search behind it included, so a fingerprint never depends on when the budget ran out.
The run is only ever cut at its tail: cases 0..k-1 ran, none after them, never a gap, which
coverage-guided generation (each case generated from the coverage of the cases before it)
needs. A rerun of the same command resumes from the journal and spends a budget of its own
on the cases left, so repeated budget runs walk through the whole batch.

Worker start-up, the opset probe before the first case and the reports after the last are
not counted. How many cases fit depends on the machine's speed (and on what else runs on
it); the cases themselves are the same on any machine.
"""
from __future__ import annotations

import time

#: The clock the budget reads (monotonic seconds); a test may replace it with a fake one.
CLOCK = time.monotonic


class Budget:
    """Whether another case may start. ``seconds`` None: no budget, every case runs."""

    def __init__(self, seconds: float | None, clock=None):
        self.seconds = seconds
        self.clock = clock or CLOCK
        self.t0: float | None = None
        self.stopped = False  # a case was left unstarted because the budget was spent
        self.ran = 0  # cases this invocation started (and finished)

    def allows(self) -> bool:
        """Called before each case: True to start it. The first case always starts (a
        budget run always makes progress); after that, one starts while time is left."""
        if self.seconds is None:
            return True
        now = self.clock()
        if self.t0 is None:
            self.t0 = now
            return True
        if now - self.t0 < self.seconds:
            return True
        self.stopped = True
        return False

    def spent(self) -> float:
        return 0.0 if self.t0 is None else self.clock() - self.t0


def stop_line(ran: int, planned: int, seconds: float) -> str:
    """'stopped by the budget (30 s) after 12 of 100 cases': the same words in the summary,
    the log and the Action's outputs."""
    return f"stopped by the budget ({seconds:g} s) after {ran} of {planned} cases"
