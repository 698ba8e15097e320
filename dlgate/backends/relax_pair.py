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

In a campaign (``relax_share``), the gate runs the direct path beside each ``tvm`` backend on
the Relax-native cases (:func:`selected`, drawn from the operators it lowers through
:class:`NativeSplit`) at that backend's own pipeline, and :func:`judge_pairs` decides whose
finding a failure is: the wrong path's where the other agrees with the reference, one finding
(the importer path's) where both are wrong the same way; :func:`pair_behind` does the same for
the findings each path makes behind its failures. The zero/default placement above is
left to this module's bench and the cross-check each mismatch already gets.
"""
from __future__ import annotations

import random

from dlgate.backends.base import BackendSpec, Model
from dlgate.backends.registry import load
from dlgate.materialize.relax import COVERED
from dlgate.oracle import verdict as V
from dlgate.oracle.compare import compare
from dlgate.oracle.signature import share_key
from dlgate.seeds import sub_seed

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


# -- in a campaign (``relax_share``) ------------------------------------------------------------
#: The backend names of the two paths in a campaign's records.
IMPORTER, DIRECT = "tvm", "tvm-relax"
#: What a campaign's pair comes to, per importer/direct pair of a Relax-native case
#: (``record["relax"]["pairs"][k]["finding"]``).
FINDINGS = ("none", "importer", "direct", "shared", "both", "undecided")
_RIGHT = (V.PASS, V.UNDEFINED)


def selected(seed: int, share: float) -> bool:
    """Whether the case of ``seed`` is Relax-native under a ``relax_share`` of ``share``: a
    draw of its own stream, so a rerun, a shard or a resumed run picks the same cases, and
    the other draws of a case never move with it."""
    if share <= 0:
        return False
    if share >= 1:
        return True
    return random.Random(sub_seed(seed, "relax-share")).random() < share


def native_operators(operators) -> tuple:
    """The operators a Relax-native case is drawn from: the campaign's (``None``: all) that
    the direct path lowers (:data:`dlgate.materialize.relax.COVERED`), in their order."""
    if operators is None:
        return COVERED
    return tuple(o for o in operators if o in COVERED)


def pairs_of(specs: list) -> list:
    """``(importer, direct)`` specs: each ``tvm`` spec among ``specs`` with the direct path at
    the same device, pipeline and options (``extra_passes``, ``passes``, ``record_rewrites``
    mean the same on both)."""
    return [(s, BackendSpec(DIRECT, s.device, s.opt_level, s.options)) for s in specs if s.name == IMPORTER]


class NativeSplit:
    """The campaign's generator and the Relax-native one behind one ``generate(seed)``: a
    case ``native(seed)`` picks is drawn from the operators the direct path lowers, every
    other case as before. Coverage guidance (``guide``) is shared by both, so a guided
    batch still sees every case it made; anything else is the campaign's generator's."""

    def __init__(self, main, native, pick):
        self.__dict__.update(main=main, native=native, pick=pick)

    def generate(self, seed: int, redraw: bool = True):
        return (self.native if self.pick(seed) else self.main).generate(seed, redraw)

    @property
    def guide(self):
        return self.main.guide

    @guide.setter
    def guide(self, value) -> None:
        self.main.guide = self.native.guide = value

    def __getattr__(self, name: str):
        return getattr(self.main, name)


def _outputs(o) -> list | None:
    """Every output set of an Outcome (the first binding's, then each further one's)."""
    if o is None or not o.ok:
        return None
    return [o.outputs] + [m.outputs for m in o.more]


def same_way(vi: dict, vd: dict, oi, od, tolerances: dict | None = None) -> bool:
    """Whether both paths are wrong in the same way: the same class, and the same outputs (a
    wrong answer: the two paths agree with each other at every binding, so one wrong
    computation both reach) or the same error (its sharing key: the message's essence, or
    for a wordless one, the type, signal and innermost frames)."""
    if vi["verdict"] != vd["verdict"]:
        return False
    if vi["verdict"] in V.VALUE_CLASSES:
        a, b = _outputs(oi), _outputs(od)
        return a is not None and b is not None and len(a) == len(b) and \
            all(compare(x, y, tolerances).ok for x, y in zip(a, b))
    return share_key(vi["verdict"], IMPORTER, vi.get("error")) == share_key(vd["verdict"], IMPORTER, vd.get("error"))


def judge_pairs(rec: dict, pairs: list, outcomes: dict, tolerances: dict | None = None) -> None:
    """The pair on a Relax-native case's record (``rec["relax"]``), and each path's verdict
    marked with it. Where one path agrees with the reference, the other's failure is that
    path's finding (``pair`` on its verdict names the other path, right); where both are
    wrong the same way (:func:`same_way`) it is one finding, the importer path's: the direct
    verdict keeps its class and gets ``pair.same_as``, and is neither triaged nor counted as
    a finding of its own; both wrong otherwise: two findings."""
    by = {v["backend"]: v for v in rec["verdicts"]}
    out = []
    for imp, direct in pairs:
        il, dl = imp.label(), direct.label()
        vi, vd = by.get(il), by.get(dl)
        entry = {"importer": il, "direct": dl}
        out.append(entry)
        if vi is None or vd is None:
            entry.update(finding="undecided", why="a path did not run")
            continue
        fi, fd = vi["verdict"] in V.FAILURES, vd["verdict"] in V.FAILURES
        ri, rd = vi["verdict"] in _RIGHT, vd["verdict"] in _RIGHT
        if ri and rd:
            entry.update(finding="none", why="both paths agree with the reference")
        elif fi and rd or fd and ri:
            path, v, other = ("importer", vi, dl) if fi else ("direct", vd, il)
            v["pair"] = {"path": path, "other": other, "other_agrees": True}
            v["detail"] = _noted(v, f"{other} (the {'direct Relax' if fi else 'ONNX importer'} path) agrees with the "
                                    "reference on the same graph")
            entry.update(finding=path, why=f"the {path} path is {v['verdict']}; the "
                         f"{'direct' if fi else 'importer'} path of the same graph agrees with the reference"
                         + _where(v))
        elif fi and fd:
            if same_way(vi, vd, outcomes.get(il), outcomes.get(dl), tolerances):
                vd["pair"] = {"path": "direct", "same_as": il}
                vi["pair"] = {"path": "importer", "shared_with": dl}
                vi["detail"] = _noted(vi, f"{dl} (the direct Relax path) fails the same way: one finding")
                entry.update(finding="shared", why=f"both paths are {vi['verdict']} the same way: one finding, "
                             "TVM's below the importer (what both modules reach)")
            else:
                vi["pair"] = {"path": "importer", "other": dl, "other_agrees": False}
                vd["pair"] = {"path": "direct", "other": il, "other_agrees": False}
                entry.update(finding="both", why=f"both paths are wrong, differently ({vi['verdict']}, "
                             f"{vd['verdict']}): a finding each")
        else:
            entry.update(finding="undecided", why=f"the importer path is {vi['verdict']}, the direct path "
                         f"{vd['verdict']}: one of them did not give an answer to judge")
    rec["relax"] = {"pairs": out}


def _noted(v: dict, note: str) -> str:
    """``v``'s detail with what the pair says about it (the summary shows the detail)."""
    return f"{v.get('detail') or ''} [pair: {note}]".strip()[:2000]


def _where(v: dict) -> str:
    """Where the cross-check at the lowest pipeline places a wrong path's failure."""
    blame = v.get("blame")
    if blame == "optimization":
        return "; right at the zero pipeline: a pass of the default pipeline on that path's module"
    if blame == "conversion":
        return "; wrong at the zero pipeline too: that path's module itself (the importer's, or dlgate's lowering)"
    return ""


def shares_finding(v: dict) -> bool:
    """Whether verdict ``v`` is the direct path's side of a finding the importer path already
    holds (:func:`judge_pairs`): neither triaged nor counted again."""
    return bool((v.get("pair") or {}).get("same_as"))


def pair_behind(rec: dict, pairs: list) -> None:
    """Pair the findings made behind failures (``v["more"]``, :mod:`dlgate.gate.multibug`) across
    the two paths of a Relax-native case, once both searches are done. Each path cuts its own
    failures out, so a defect both paths reach can surface on one path in the whole case and on
    the other only in a cut model (the direct path refused an operator the importer path
    converted, cut it, and met the importer path's compile error in the rest). Such a direct
    finding is the importer path's, as :func:`judge_pairs` decides for the whole case: the same
    class, the same error (:func:`share_key`'s essence) and the same reduced operators (the
    identity's ``typed``). A wrong answer behind a failure is left a finding of its own: its
    outputs are of another model than the other path's, so nothing shows that one computation
    gives both. The pairs' entries count what was paired (``behind_shared``)."""
    by = {v["backend"]: v for v in rec["verdicts"]}
    entries = {(e["importer"], e["direct"]): e for e in (rec.get("relax") or {}).get("pairs", ())}
    for imp, direct in pairs:
        il, dl = imp.label(), direct.label()
        vi, vd = by.get(il), by.get(dl)
        if vi is None or vd is None:
            continue
        theirs = [x for x in (vi, *vi.get("more", ())) if _pairable(x)]
        shared = 0
        for k, x in enumerate((vd, *vd.get("more", ()))):
            if shares_finding(x) or not _pairable(x):
                continue
            same = next((y for y in theirs if (k or y is not vi) and _same_error(y, x)), None)
            if same is None:
                continue
            x["pair"] = {"path": "direct", "same_as": il, "behind": True}
            x["detail"] = _noted(x, f"{il} (the ONNX importer path) fails the same way on the same operators "
                                    f"({same['identity']['typed']}): one finding")
            same["detail"] = _noted(same, f"{dl} (the direct Relax path) fails the same way behind a failure "
                                          "of its own: one finding")
            shared += 1
        if shared and (il, dl) in entries:
            entries[(il, dl)]["behind_shared"] = shared


def _pairable(v: dict) -> bool:
    """A failure that is not a wrong answer and whose reduced operators are known."""
    return v["verdict"] in V.FAILURES and v["verdict"] not in V.VALUE_CLASSES and \
        bool((v.get("identity") or {}).get("typed"))


def _same_error(a: dict, b: dict) -> bool:
    """Two such failures wrong the same way (:func:`same_way`: class and error) on the same
    reduced operators."""
    return a["identity"]["typed"] == b["identity"]["typed"] and same_way(a, b, None, None)
