"""Is the device still there? Asked after a failure that may be the device's, not the compiler's.

A GPU can be lost in the middle of a run (a driver reset, a device that falls off the bus,
an uncorrectable memory error); every later compile or run then fails with the runtime's
words, and each would be recorded as a ``run_error``: findings that are no compiler's
bug, which a base build losing its device the same way would even call pre-existing. The
words alone cannot tell: an illegal memory access in a generated kernel is a compiler bug.
So a compile error, run error or crash on a GPU device whose text matches the device's
words (``dlgate.backends.device_faults``) makes the worker start afresh, which runs the
backend's start-up self-test on the device (``Backend.start``). A device that fails it was
lost: the outcome becomes ``unavailable`` and the worker is marked ``lost`` (the run stops
with exit status 4, ``dlgate.gate.run.loop``); one that passes keeps the failure as it was,
a finding, and the case's next job runs in the fresh worker (a CUDA context an illegal
access left unusable is not reused).
"""
from __future__ import annotations

from dataclasses import replace

from dlgate.backends import device_faults

#: The outcomes (``dlgate.exec.worker`` statuses: that module calls this one) that may be a
#: lost device's, and what one becomes when it was.
SUSPECT = ("compile_error", "run_error", "crash")
UNAVAILABLE = "unavailable"
#: What a failure the device check kept says of it (on its error record).
PASSED = "the device passed its start-up self-test again in a fresh worker: the failure is the compiler's"


def suspect(device: str, out):
    """(the error record, the table entry it matches) of the first failure of ``out`` (its
    own, or a further binding's) that looks like ``device``'s runtime failing; None."""
    errors = [out.error] if out.status in SUSPECT else []
    errors += [m.error for m in out.more if m.status in SUSPECT]
    for err in errors:
        mark = device_faults.matching(device, err)
        if mark is not None:
            return err, mark
    return None


def recheck(worker, out):
    """``out`` as the device decides it: unchanged when nothing in it looks like the device
    failing; else the worker starts afresh (the self-test), and ``out`` is kept, marked
    (``error["device_check"]``), when the device passes, or becomes ``unavailable`` (the
    device was lost) when it does not."""
    found = suspect(worker.spec.device, out)
    if found is None:
        return out
    err, mark = found
    worker._kill()
    worker.restarts += 1
    if worker.start():
        err["device_check"] = PASSED
        return out
    why = (f"after a {out.status if out.error is err else 'run_error'} in the device's words ({mark.value!r}), "
           f"the start-up self-test failed in a fresh worker: {worker.unavailable}")
    worker.lost = worker.unavailable = why
    error = {"type": "DeviceLost", "message": f"the device was lost: {why}", "stage": err.get("stage", "run"), "frames": [],
             "log": err.get("log", "")}
    return replace(out, status=UNAVAILABLE, outputs=None, error=error, more=[], rewrites=None)
