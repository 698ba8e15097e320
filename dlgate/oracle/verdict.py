"""Verdicts: what one backend did on one case, decided honestly.

The oracle compares the candidate with the reference (PyTorch eager by default). When
they disagree it first asks whether the case itself is at fault (undefined or unstable
behaviour, see :mod:`dlgate.oracle.ub`), then cross-checks: the candidate at its lowest
optimization level (NNSmith's O0 check, HirFuzz's and Tzer's optimization-level oracle)
and ONNX's own reference evaluator, to tell a miscompilation by an optimization from a
conversion bug present at every level, and both from a fault of the reference itself.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable

from dlgate.exec import worker as W
from dlgate.oracle.compare import Comparison, compare, compare_each, most_telling
from dlgate.oracle.signature import signature

PASS = "pass"
MISMATCH = "mismatch"
SHAPE_MISMATCH = "shape_mismatch"
DTYPE_MISMATCH = "dtype_mismatch"
COMPILE_ERROR = "compile_error"
RUN_ERROR = "run_error"
CRASH = "crash"
TIMEOUT = "timeout"
OOM = "oom"
UNSUPPORTED = "unsupported"
INVALID = "invalid"
UNDEFINED = "undefined"
SKIPPED = "skipped"  # the backend cannot run here (no GPU, package missing)
REFERENCE_ERROR = "reference_error"  # the reference itself failed: dlgate's fault
#: On a model made invalid on purpose (:mod:`dlgate.invalid`): the compiler crashed, hung or
#: ran out of memory on it, or accepted it and ran it; never a wrong answer.
INVALID_FINDINGS = ("invalid_crash", "invalid_timeout", "invalid_oom", "invalid_accepted")
#: A TIR program and pass sequence of the TIR mode (:mod:`dlgate.gate.run.tir`) crashed TVM, made
#: it raise where it must build, or computed otherwise than the minimal sequence (or the
#: NumPy interpreter); ``tir_slow`` ran beyond the campaign's margin: a finding only where
#: the campaign says so (``tir_slow_gates``, the verdict's ``gates``).
TIR_FINDINGS = ("tir_crash", "tir_exception", "tir_inconsistent")
TIR_SLOW = "tir_slow"
#: The TIR mode's wrong answers (JUnit failures, not errors).
TIR_WRONG = ("tir_inconsistent", TIR_SLOW)

#: Verdicts that are findings about the compiler under test.
FAILURES = (MISMATCH, SHAPE_MISMATCH, DTYPE_MISMATCH, COMPILE_ERROR, RUN_ERROR, CRASH, TIMEOUT, OOM) + INVALID_FINDINGS \
    + TIR_FINDINGS
#: Wrong answers: the compiler ran and its outputs are wrong (no error message to go by).
VALUE_CLASSES = (MISMATCH, SHAPE_MISMATCH, DTYPE_MISMATCH)
VERDICTS = (PASS,) + FAILURES + (UNSUPPORTED, INVALID, UNDEFINED, SKIPPED, REFERENCE_ERROR, TIR_SLOW)

_STATUS = {W.COMPILE_ERROR: COMPILE_ERROR, W.RUN_ERROR: RUN_ERROR, W.CRASH: CRASH, W.TIMEOUT: TIMEOUT,
           W.OOM: OOM, W.UNSUPPORTED: UNSUPPORTED, W.UNAVAILABLE: SKIPPED}
_COMPARISON = {"shape": SHAPE_MISMATCH, "dtype": DTYPE_MISMATCH, "count": SHAPE_MISMATCH}


@dataclass
class Verdict:
    backend: str  # label, e.g. tvm[cpu]@default
    verdict: str
    detail: str = ""
    signature: dict | None = None
    comparison: dict | None = None
    crosscheck: dict = field(default_factory=dict)
    blame: str | None = None  # for mismatches: optimization | conversion | reference | unknown
    error: dict | None = None
    compile_s: float = 0.0
    run_s: float = 0.0
    wall_s: float = 0.0
    versions: dict = field(default_factory=dict)
    #: For a dynamic-shape case judged at a further binding of its symbolic dimensions:
    #: ``{"index": k, "binding": {symbol: size}}`` (absent from the record otherwise).
    shape: dict | None = None
    #: The rewrite kinds the compiler applied to the model (``Backend.rewrites``); they
    #: may depend on the machine, so the gate moves them out of the journaled record.
    rewrites: list | None = None
    #: The oracle rule that decided an ``undefined`` verdict (``dlgate.oracle.rules``).
    rule: str | None = None
    #: The excuses that cover part of the disagreement: ``{"rule", "reason", "outputs"}``
    #: each; for a finding, what it is not about.
    excused: list | None = None

    @property
    def failed(self) -> bool:
        return self.verdict in FAILURES

    def to_json(self) -> dict:
        d = asdict(self)
        for key in ("shape", "rewrites", "rule", "excused"):
            if d[key] is None:
                del d[key]
        return d


def _agrees(ref: list, outcome, tolerances) -> bool | None:
    if outcome is None or not outcome.ok:
        return None
    return compare(ref, outcome.outputs, tolerances).ok


def judge(backend_name: str, label: str, outcome, reference: list, tolerances: dict | None = None,
          explain: Callable | None = None,
          at_lowest: Callable[[], object] | None = None,
          onnx_reference: Callable[[], object] | None = None,
          op_pattern: str = "", recheck: bool = False) -> Verdict:
    """The verdict for ``outcome`` (a worker Outcome) against the reference outputs.

    ``explain(reference, outputs, tolerances)`` runs the oracle's rules
    (:func:`dlgate.oracle.rules.settle`, made by :func:`dlgate.oracle.rules.explain`): their
    excuses each cover part of the disagreement (outputs, elements); the case is
    ``undefined`` only when they cover all of it, and a finding is described by what they do
    not cover. ``recheck``: ask the rules even when everything agrees (an extreme-value case:
    an undefined value far from the others widens an output's tolerance).
    ``at_lowest`` and ``onnx_reference`` run the cross-checks on demand, only for
    disagreements (``onnx_reference`` may answer with the reason it is not consulted). Of several differing outputs, a wrong shape or dtype describes the
    case before wrong values.
    """
    times = {"compile_s": outcome.compile_s, "run_s": outcome.run_s, "wall_s": outcome.wall_s,
             "versions": dict(outcome.backend), "rewrites": getattr(outcome, "rewrites", None)}
    if outcome.status != W.OK:
        kind = _STATUS[outcome.status]
        err = outcome.error or {}
        detail = f"{err.get('type', '')}: {err.get('message', '')}".strip(": ")
        sig = None if kind in (SKIPPED,) else signature(kind, backend_name, err)
        return Verdict(label, kind, detail[:2000], sig, error=err, **times)
    failed = compare_each(reference, outcome.outputs, tolerances)
    if not failed and not (recheck and explain):
        return Verdict(label, PASS, comparison=Comparison(True).to_json(), **times)
    settled = explain(reference, outcome.outputs, tolerances) if explain else None
    if settled is not None and not settled.differed:
        return Verdict(label, PASS, comparison=Comparison(True).to_json(), **times)
    excused = [e.to_json() for e in settled.excuses] if settled is not None else []
    if settled is not None and settled.explained:
        cmp = most_telling(failed)
        return Verdict(label, UNDEFINED, settled.reason(), comparison=cmp.to_json(), rule=settled.rule,
                       excused=excused, **times)
    unexplained = settled.remaining if settled is not None else failed
    cmp: Comparison = most_telling(unexplained)
    detail = cmp.detail
    if excused:
        # described by what no excuse covers, not by an output or element one explains
        parts = ", ".join(f"{e['rule']}: {e['reason']}" for e in excused)
        detail = f"{cmp.detail} (what else differs is explained by {parts})"
    comparison = cmp.to_json()
    if len(unexplained) > 1:  # every wrong output, for head versus base (gate.triage.on_base)
        comparison["differing"] = [c.output for c in unexplained]
    cross: dict = {}
    low = at_lowest() if at_lowest else None
    if low is not None:
        cross["lowest_opt_level"] = {"status": low.status, "agrees_with_reference": _agrees(reference, low, tolerances)}
    ref2 = onnx_reference() if onnx_reference else None
    if isinstance(ref2, str):  # not consulted: it computes this model wrongly (rules.reference_defect)
        cross["onnx_reference"] = {"status": "not consulted", "reason": ref2}
    elif ref2 is not None:
        cross["onnx_reference"] = {"status": ref2.status,
                                   "agrees_with_reference": _agrees(reference, ref2, tolerances),
                                   "agrees_with_candidate": _agrees(outcome.outputs, ref2, tolerances)}
    blame = _blame(cross)
    kind = _COMPARISON.get(cmp.kind, MISMATCH)
    sig = signature(kind, backend_name, extra=f"{cmp.kind} | {op_pattern}")
    return Verdict(label, kind, detail, sig, comparison, cross, blame, excused=excused or None, **times)


def _blame(cross: dict) -> str:
    onnx_ref = cross.get("onnx_reference", {})
    if onnx_ref.get("agrees_with_candidate") and not onnx_ref.get("agrees_with_reference"):
        return "reference"  # ONNX's evaluator sides with the compiler: suspect our reference
    low = cross.get("lowest_opt_level", {})
    if low.get("agrees_with_reference") is True:
        return "optimization"  # right without optimizations, wrong with them
    if low.get("agrees_with_reference") is False:
        return "conversion"  # wrong at every level: import/lowering or codegen
    return "unknown"
