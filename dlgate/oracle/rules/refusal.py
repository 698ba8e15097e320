"""Refusals: a compiler that declines a model is not wrong about it, unless only an
optimization made it decline.

Each backend's refusals are declared in one table, ``dlgate.backends.refusals`` (an
operator, a dtype or an attribute it has no kernel or converter for, in the compiler's own
words, types or parser codes), which its ``unsupported`` consults; the worker records them
as ``unsupported``, never a finding. One exception is decided here: a refusal that the
backend's lowest optimization level does not make (the model compiles there) was made by a
rewrite, which built a node the backend then has no kernel for (onnxruntime's
MatMulIntegerToFloatFusion on int8 x uint8): a ``compile_error``, that rewrite's bug. Asked
only of backends whose refusals can depend on the level (``Backend.refusals_by_level``)."""
from __future__ import annotations

from dataclasses import replace

from dlgate.exec import worker as W

NAME = "refusal"


def refused_by_optimization(out, lowest: str, low):
    """``out`` (a refusal) as a ``compile_error`` when ``low`` (the same model run at level
    ``lowest``) compiles: runs, or fails only at run time; ``out`` otherwise."""
    if low.status not in (W.OK, W.RUN_ERROR):
        # refused there too, or failing to compile for another reason that may hide the same
        # refusal: nothing shows the optimization made it
        return out
    err = dict(out.error or {})
    # one wording whether the model then runs there or fails at run time: the message is
    # the cluster's template, and one refusal must make one cluster
    err["message"] = f"refused only with optimizations (at level {lowest} the model compiles): {err.get('message', '')}"
    return replace(out, status=W.COMPILE_ERROR, error=err)
