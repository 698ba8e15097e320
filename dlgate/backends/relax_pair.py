"""The importer path (``tvm``) and the direct path (``tvm-relax``) on one graph: a
differential pair that says on which side of TVM a wrong result arises.

Both paths end in the same pipelines, so comparing each with the reference at the zero
pipeline (legalization and lowering only) and at the default one (TVM's passes) places a
failure:

- ``importer``: the importer's module is wrong before any optimization, while the direct
  module of the same graph is right: the ONNX importer wrote a module that computes
  something else;
- ``direct``: the direct module is wrong at the zero pipeline while the importer's is
  right. Run again without a private function or ``match_cast`` (``plain``): right there,
  it is TVM on structure only the direct path writes (``direct-structure``); still wrong,
  dlgate's lowering or a Relax operator only it uses (``direct-lowering``);
- ``below``: both wrong at the zero pipeline: legalization or code generation, shared;
- ``pass``: both right at the zero pipeline and one wrong at the default: a pass of the
  default pipeline (the reply names the path(s) and the passes that changed its module);
- ``agree``: all four agree with the reference.

A run that fails to compile or run counts as wrong; a path that refuses the graph (no
lowering, no converter) leaves the pair undecided (``undecided``).

``python bench/relax_pair.py`` classifies a small generated batch, or one saved case.
"""
from __future__ import annotations

from dlgate.backends.base import Model
from dlgate.backends.registry import load
from dlgate.oracle.compare import compare

PATHS = {"importer": "tvm", "direct": "dlgate.backends.tvm_relax:TVMRelax"}
LEVELS = ("zero", "default")


def classify(agrees: dict, plain_agrees: bool | None = None) -> tuple:
    """``(side, why)`` from ``agrees[(path, level)]``: True where that run agrees with the
    reference, False where it is wrong (or fails), None where the path refused the graph;
    ``plain_agrees``: the direct path at zero without its structure (asked for ``direct``)."""
    if any(agrees.get((p, lvl)) is None for p in PATHS for lvl in LEVELS):
        refused = sorted({p for p in PATHS for lvl in LEVELS if agrees.get((p, lvl)) is None})
        return "undecided", f"the {' and '.join(refused)} path refused the graph"
    iz, dz = agrees[("importer", "zero")], agrees[("direct", "zero")]
    idf, ddf = agrees[("importer", "default")], agrees[("direct", "default")]
    if iz and dz:
        if idf and ddf:
            return "agree", "both paths agree with the reference at both pipelines"
        wrong = [p for p, ok in (("importer", idf), ("direct", ddf)) if not ok]
        return "pass", (f"a pass of the default pipeline: both paths are right at the zero pipeline, "
                        f"the {' and '.join(wrong)} path{'s are' if len(wrong) > 1 else ' is'} wrong at the default")
    if not iz and dz:
        return "importer", "the importer's module is wrong at the zero pipeline; the direct module of the same graph is right"
    if iz and not dz:
        if plain_agrees:
            return "direct-structure", ("the direct module is wrong at the zero pipeline, right without its private "
                                        "function and match_cast: TVM on structure only the direct path writes")
        return "direct-lowering", ("the direct module is wrong at the zero pipeline even without its structure: "
                                   "dlgate's lowering, or a Relax operator only the direct path uses")
    return "below", "both paths are wrong at the zero pipeline: legalization or code generation, which they share"


def compare_paths(model: Model, inputs: list, reference: list, tolerances: dict | None = None,
                  options: dict | None = None) -> dict:
    """Run both paths at both pipelines in this process (TVM imported here) and classify.
    ``options[(path, level)]`` adds backend options to that run (tests inject faults so).
    Returns ``{"side", "why", "runs": {"path@level": {"agrees", "detail", "passes"}}}``."""
    options = options or {}
    runs, agrees = {}, {}

    def one(path: str, level: str, **extra) -> bool | None:
        cls = load(PATHS[path])
        backend = cls(opt_level=level, **dict(options.get((path, level), ())), **extra)
        label = f"{path}{'-plain' if extra.get('plain') else ''}@{level}"
        try:
            outs = backend.run(backend.compile(model), inputs)
        except Exception as e:  # noqa: BLE001 - a refusal leaves the pair undecided; any other failure is wrong
            refused = backend.unsupported(e)
            runs[label] = {"agrees": None if refused else False, "passes": None,
                           "detail": f"{'refused' if refused else 'failed'}: {type(e).__name__}: "
                                     f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}"}
            return runs[label]["agrees"]
        cmp = compare(reference, outs, tolerances)
        runs[label] = {"agrees": cmp.ok, "detail": cmp.detail, "passes": backend.rewrites(None)}
        return cmp.ok

    for path in PATHS:
        for level in LEVELS:
            agrees[(path, level)] = one(path, level)
    plain = None
    if agrees[("importer", "zero")] and agrees[("direct", "zero")] is False:
        plain = one("direct", "zero", plain=True)
    side, why = classify(agrees, plain)
    return {"side": side, "why": why, "runs": runs}
