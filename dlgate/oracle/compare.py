"""Comparing a candidate's outputs with the reference's.

Shapes and dtypes must match exactly, and so must the positions of NaN and of +/-Inf.
Integers and booleans must be equal. Floating-point values must satisfy
``|got - ref| <= atol * scale + rtol * |ref|`` where ``scale = max(1, max |ref|)`` over the
output (NNSmith's "distance scaled by the overall magnitude"), with per-dtype tolerances
that a campaign may override.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: dtype -> (rtol, atol). Deliberately loose: a false alarm costs an engineer an hour.
DEFAULT_TOLERANCES = {
    "float16": (2e-2, 1e-2),
    "float32": (1e-2, 1e-3),
    "float64": (1e-5, 1e-7),
}


@dataclass
class Comparison:
    ok: bool
    kind: str = ""  # "", "count", "shape", "dtype", "nonfinite", "values"
    output: int | None = None  # index of the first differing output
    detail: str = ""
    max_abs: float = 0.0
    max_rel: float = 0.0
    first_index: tuple | None = None
    #: How the wrong values relate to the right ones, whatever the dtype (see :func:`pattern`).
    pattern: str = ""

    def to_json(self) -> dict:
        return {"ok": self.ok, "kind": self.kind, "output": self.output, "detail": self.detail,
                "max_abs": self.max_abs, "max_rel": self.max_rel,
                "first_index": list(self.first_index) if self.first_index is not None else None,
                "pattern": self.pattern}


#: Failure kinds that no rounding explains: a model's wrong shape or dtype describes it
#: before any output's wrong values do.
STRUCTURAL = ("count", "shape", "dtype")


#: In an ``ignore`` scope: the whole output, its shape included (a value the specification
#: leaves open reached it through an operator whose output shape can depend on values).
WHOLE = "whole"


def compare(ref: list, got: list, tolerances: dict | None = None) -> Comparison:
    """The first differing output's comparison, a wrong shape or dtype before wrong values
    (another output's values may be off by rounding only), or an ok one."""
    failed = compare_each(ref, got, tolerances)
    return most_telling(failed) if failed else Comparison(True)


def compare_each(ref: list, got: list, tolerances: dict | None = None, ignore: dict | None = None) -> list:
    """Every differing output's comparison, in output order (one ``count`` comparison when
    the number of outputs differs); empty when all agree.

    ``ignore`` maps an output's index to the elements an excuse covers (a boolean mask of
    its shape) or to ``WHOLE``: those elements are not compared, nor counted in the
    output's magnitude (an undefined 1e20 must not widen the tolerance of its defined
    neighbours); a wrong shape is ignored only for a ``WHOLE`` output, a wrong dtype or
    number of outputs never (no value explains them)."""
    tol = dict(DEFAULT_TOLERANCES, **(tolerances or {}))
    ignore = ignore or {}
    if len(ref) != len(got):
        return [Comparison(False, "count", None, f"{len(got)} outputs, expected {len(ref)}")]
    failed = []
    for i, (r, g) in enumerate(zip(ref, got)):
        r, g = np.asarray(r), np.asarray(g)
        skip = ignore.get(i)
        if isinstance(skip, str) and skip == WHOLE:
            if r.dtype != g.dtype:
                failed.append(Comparison(False, "dtype", i, f"output {i}: dtype {g.dtype}, expected {r.dtype}"))
            continue
        if r.shape != g.shape:
            failed.append(Comparison(False, "shape", i, f"output {i}: shape {list(g.shape)}, expected {list(r.shape)}",
                                     pattern="shape:rank" if r.ndim != g.ndim else "shape:dims"))
        elif r.dtype != g.dtype:
            failed.append(Comparison(False, "dtype", i, f"output {i}: dtype {g.dtype}, expected {r.dtype}",
                                     pattern="dtype"))
        else:
            mask = None if skip is None else np.broadcast_to(np.asarray(skip, bool), r.shape)
            c = _compare_one(i, r, g, tol, mask)
            if not c.ok:
                failed.append(c)
    return failed


def most_telling(failed: list) -> Comparison:
    """Of several outputs' failed comparisons, the one to describe the case by: the first
    wrong shape or dtype, else the first wrong values."""
    return next((c for c in failed if c.kind in STRUCTURAL), failed[0])


def _compare_one(i: int, r: np.ndarray, g: np.ndarray, tol: dict, skip: np.ndarray | None = None) -> Comparison:
    """Output ``i``'s comparison; elements where ``skip`` holds are not compared."""
    if skip is not None and skip.any():
        if skip.all():
            return Comparison(True)
        keep = ~skip
        r, g = np.where(keep, r, np.zeros((), r.dtype)), np.where(keep, g, np.zeros((), g.dtype))
    if not np.issubdtype(r.dtype, np.floating):
        diff = r != g
        if diff.any():
            idx = tuple(int(k) for k in np.argwhere(diff)[0])
            wide_r, wide_g = r.astype(np.float64), g.astype(np.float64)
            max_abs = float(np.max(np.abs(wide_r - wide_g)))
            return Comparison(False, "values", i, f"output {i}: {int(diff.sum())} of {r.size} elements differ; "
                              f"first at {list(idx)}: {g[idx].item()!r} instead of {r[idx].item()!r}", max_abs, 0.0, idx,
                              pattern("values", wide_r[diff], wide_g[diff], np.zeros(int(diff.sum())), r.dtype == bool))
        return Comparison(True)
    rtol, atol = tol[str(r.dtype)]
    x, y = r.astype(np.float64), g.astype(np.float64)
    for name, fn in (("NaN", np.isnan), ("+Inf", lambda a: np.isposinf(a)), ("-Inf", lambda a: np.isneginf(a))):
        fr, fg = fn(x), fn(y)
        if not np.array_equal(fr, fg):
            idx = tuple(int(k) for k in np.argwhere(fr != fg)[0])
            return Comparison(False, "nonfinite", i, f"output {i}: {name} positions differ; first at {list(idx)}: "
                              f"{y[idx].item()!r} instead of {x[idx].item()!r}", first_index=idx,
                              pattern=f"nonfinite:{name}:{'extra' if fg[idx] else 'missing'}")
    finite = np.isfinite(x)
    if not finite.any():
        return Comparison(True)
    scale = max(1.0, float(np.max(np.abs(x[finite]))))
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf where both hold the same infinity
        err = np.where(finite, np.abs(x - y), 0.0)
    bound = atol * scale + rtol * np.abs(x)
    bad = finite & (err > bound)
    max_abs = float(err.max())
    max_rel = float(np.max(np.where(finite, err / np.maximum(np.abs(x), 1e-30), 0.0)))
    if bad.any():
        idx = tuple(int(k) for k in np.argwhere(bad)[0])
        return Comparison(False, "values", i, f"output {i}: {int(bad.sum())} of {x.size} elements differ; "
                          f"max abs error {max_abs:.3g}, max rel error {max_rel:.3g}; first at {list(idx)}: "
                          f"{y[idx].item()!r} instead of {x[idx].item()!r}", max_abs, max_rel, idx,
                          pattern("values", x[bad], y[bad], bound[bad]))
    return Comparison(True, max_abs=max_abs, max_rel=max_rel)


def pattern(kind: str, ref: np.ndarray, got: np.ndarray, bound: np.ndarray, boolean: bool = False) -> str:
    """How wrong values (``got`` where ``ref`` was right, float64, ``bound`` the tolerance at
    each) relate to the right ones, in terms no dtype changes: ``zero`` (zeros instead),
    ``negated``, ``offset`` (one constant added), ``scaled`` (one factor), ``bool`` (a
    boolean flipped), else ``near`` (relative errors under 10%) or ``far``. One converter
    bug met in several dtypes, or in sibling operators, leaves one pattern. A relation needs
    two wrong values to show: one value fits several (-1 made 0 by a result off by one is
    "zero", -0.5 made 0.5 "negated"), and a reduced case is often one element whose value
    the reducer picked, so a single wrong value is only near or far."""
    if boolean:
        return f"{kind}:bool"
    if not np.any(ref != 0):
        return f"{kind}:zero" if not np.any(got) else f"{kind}:far"
    slack = bound + 1e-12
    d = got - ref
    if d.size > 1 and np.all(got == 0):
        return f"{kind}:zero"
    if d.size > 1 and np.all(np.abs(got + ref) <= slack):
        return f"{kind}:negated"
    if d.size > 1 and np.all(np.abs(d - d[0]) <= slack):
        return f"{kind}:offset"
    nz = ref != 0
    q = got[nz] / ref[nz]
    if q.size > 1 and np.all(np.abs(got[nz] - q[0] * ref[nz]) <= slack[nz]):
        return f"{kind}:scaled"
    rel = np.abs(d[nz]) / np.abs(ref[nz])
    return f"{kind}:near" if float(np.median(rel)) < 0.1 else f"{kind}:far"


def all_finite(arrays) -> bool:
    return all(not np.issubdtype(np.asarray(a).dtype, np.floating) or np.isfinite(a).all() for a in arrays)
