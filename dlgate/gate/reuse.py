"""One reduction per cause: which earlier reduction of the run stands for a later failure.

A failure whose cause was reduced earlier in the run takes that reduction's identity and
repro instead of being reduced again (``reuse_reductions``; the rules are in
:mod:`dlgate.gate.triage`'s docstring and docs/gate.md). An error or a crash is matched by
its message (:func:`reduction_key`) and the reduced operators found in the case
(:func:`locate`); a wrong answer, whose cause only its reduction shows, by cutting the
case's own operators of the reduced kinds out of it and running the cut
(:meth:`Reductions.reuse_wrong`). What was reduced is read from the journal, so a resumed
run reuses exactly what an uninterrupted one does.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field

from dlgate.backends.base import Model
from dlgate.check import CaseError, judge_backend, load_bundle
from dlgate.exec.outcome import TIMEOUT
from dlgate.gate.decide import findings
from dlgate.gate.progress import ACTIVITY
from dlgate.ops.registry import get
from dlgate.oracle import memsafety as MS
from dlgate.oracle import signature as S
from dlgate.oracle import verdict as V
from dlgate.oracle.compare import all_finite
from dlgate.reduce import identity as I
from dlgate.reduce.candidates import as_case, cut_map, fed, intermediates, nearest_first, wrong_cone

#: Classes whose cause is known before reduction (an error's message, a crash's frames and
#: signal; a refusal's message, which names what is refused), so a reduction can stand for
#: later failures of the same cause. A wrong answer's cause is what it reduces to, and a
#: timeout or an out-of-memory says nothing of where.
REUSED_CLASSES = (V.COMPILE_ERROR, V.RUN_ERROR, V.CRASH, V.UNSUPPORTED)


#: Wrong answers: their cause is what they reduce to, so a reduction stands for a later one
#: only once the later case's own operators, cut out of it, fail with that reduction's
#: fingerprint (:meth:`Reductions.reuse_wrong`).
CUT_REUSED_CLASSES = V.VALUE_CLASSES

#: Cut runs (each a reference run and a backend run of a few operators) one wrong answer may
#: spend on the causes reduced before it; past them it is reduced itself. A case whose
#: failure is another cause pays at most these, against a reduction's tens of probes.
WRONG_TRIES = 4


def reduction_key(v: dict, any_level: bool = False) -> str | None:
    """What two failures must share for one's reduction to stand for the other's: the
    backend (label), the class, the cluster (message template and innermost frames, what
    the reducer keeps) and the sharing key (the message's words and operator names,
    :func:`~dlgate.oracle.signature.share_key`); for a wrong answer (no message: its cause
    only its reduction shows) the backend and class alone, the reductions under that key
    being tried on a cut of the case (:meth:`Reductions.reuse_wrong`). None for a timeout or
    an out-of-memory, a failure with no error record, or one at a further binding of a
    dynamic case. ``any_level``: the backend's label without its optimization level, so
    that one backend's reduction at one level stands for the same cause at another (the
    identity a reduction gives, fingerprint and cluster, never holds the level)."""
    label = v["backend"].split("@", 1)[0] if any_level else v["backend"]
    if v["verdict"] in CUT_REUSED_CLASSES and not v.get("shape"):
        return hashlib.sha256(json.dumps(["value", label, v["verdict"]]).encode()).hexdigest()[:16]
    if v["verdict"] not in REUSED_CLASSES or not v.get("error") or v.get("shape"):
        return None
    name = v["backend"].split("[", 1)[0]
    parts = [label, v["verdict"], S.cluster(v["verdict"], name, v["error"])["id"],
             S.share_key(v["verdict"], name, v["error"])]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def hang_key(v: dict, case_id: str) -> str | None:
    """The key a timeout's reduction is kept under: the backend without its optimization
    level, and the case. A hang says nothing of where it is, so its reduction stands for no
    other case's; it stands for the same case's hang at the backend's other levels (``tvm``
    and ``tvm@zero`` hang alike in TVM's importer) once its reduced case gives no answer at
    that level too (:meth:`Reductions.reuse_hang`). None for any other failure, and for one
    at a further binding of a dynamic case."""
    if v["verdict"] != V.TIMEOUT or v.get("shape"):
        return None
    name = v["backend"].split("@", 1)[0]
    return hashlib.sha256(json.dumps(["hang", name, case_id]).encode()).hexdigest()[:16]


def lookup_key(reductions, v: dict) -> str | None:
    """The key a failure ``v`` looks its cause up by in ``reductions``: its own
    (:func:`reduction_key`), or, where no reduction was made at its backend's level, the
    same cause's at any level of that backend; None when neither is there."""
    key = reduction_key(v)
    if key is None:
        return None
    if key in reductions:
        return key
    other = reduction_key(v, any_level=True)
    return other if other in reductions else None


def new_on_base(x: dict) -> bool:
    """Whether failure ``x`` (journaled, head versus base) shows that the base build does not
    have its cause: the base build passes the case that decided (the case itself, its cut or
    the reduced case, which holds the failure alone) where head fails it."""
    b = x.get("base") or {}
    return bool(b) and not b.get("reproduces") and b.get("verdict") == V.PASS


def locate(graph, reduced_graph) -> list:
    """Indices of ``graph``'s operators of the same ONNX type and input dtypes as an
    operator of ``reduced_graph``: where a reused reduction's operators are in another case
    (every such operator, so that what is cut for looking behind it holds the failure)."""
    def token(g, n):
        return get(n.op).onnx_op, tuple(g.tensors[t].dtype for t in n.inputs)

    want = {token(reduced_graph, n) for n in reduced_graph.nodes}
    return [i for i, n in enumerate(graph.nodes) if token(graph, n) in want]


_SEGMENT = re.compile(r"([A-Za-z0-9_]+)\(([^()]*)\)")


def segments(typed: str) -> list:
    """``[(onnx_op, input dtypes, attributes text)]`` of a typed pattern
    (:func:`dlgate.reduce.identity.typed_pattern`), operator by operator: what a reduced
    wrong answer is made of, read without its repro."""
    out = []
    for op, body in _SEGMENT.findall(typed or ""):
        dts, _, attrs = body.partition(";")
        out.append((op, tuple(dts.split(",")) if dts else (), attrs))
    return out


def _token(graph, i: int) -> tuple:
    n = graph.nodes[i]
    return get(n.op).onnx_op, tuple(graph.tensors[t].dtype for t in n.inputs)


def sites(graph, want: list, allowed) -> list:
    """Sets of ``graph``'s operators (among ``allowed``) that may be a reduced case whose
    operators are ``want`` (``(onnx_op, input dtypes)`` in order): each operator of the last
    one's kind with, for a longer case, its producers of the others' kinds, transitively;
    a set of another size or order is no site. In operator order."""
    allowed = set(allowed)
    kinds = set(want)
    producer = graph.producers()
    out = []
    for i in sorted(allowed):
        if _token(graph, i) != want[-1]:
            continue
        site, todo = {i}, [i] if len(want) > 1 else []
        while todo and len(site) <= len(want):
            for t in graph.nodes[todo.pop()].inputs:
                p = producer.get(t)
                if p is not None and p in allowed and p not in site and _token(graph, p) in kinds:
                    site.add(p)
                    todo.append(p)
        if [_token(graph, k) for k in sorted(site)] == list(want):
            out.append(sorted(site))
    return out


def matter_of(graph, segs: list) -> list:
    """Per operator of ``graph`` (a cut aligned with a reduced case's ``segs``), the
    attributes the reduced case's typed pattern names: those its failure depends on."""
    out = []
    for n, (_, _, attrs) in zip(graph.nodes, segs):
        out.append({k for k in n.attrs if re.search(rf"(?:^|,){re.escape(k)}=", attrs)})
    return out


def _nearest_first(graph, v: dict, found: list) -> list:
    """Sites in the order the reducer tries operators alone (:func:`~dlgate.reduce.candidates.nearest_first`,
    by each site's last operator), so a reused reduction cuts the operator a reduction of this
    case would have kept."""
    pos = {i: k for k, i in enumerate(nearest_first(graph, v.get("comparison")))}
    return sorted(found, key=lambda site: pos[max(site)])


@dataclass
class Reused:
    """A reduction made for an earlier case standing for this one's failure: what the gate
    reads of a :class:`~dlgate.reduce.reducer.Reduced` (``case``, ``verdict``, ``kept``,
    ``hit_limit``)."""

    case: object  # the reduced case (Prepared), loaded from its repro; None when it has none
    verdict: dict  # the failure at hand (the reduced case's own is asked for when it decides sharing)
    kept: list  # this case's operators the reduction's stand for (:func:`locate`)
    source: str  # the case that was reduced
    hit_limit: bool = False
    #: A wrong answer's: ``case`` is this case's own operators cut out of it, and
    #: ``verdict`` head's verdict on that cut (already judged: the same failure), with the
    #: reference's outputs on it in ``ref``.
    judged: bool = False
    ref: list | None = None


@dataclass
class Reductions:
    """The causes this run has reduced: :func:`reduction_key` -> the journaled identities of
    the failures reduced for it, in journal order (``identity.reduction.case`` names each
    one's case). Built from the journal, and grown only from journaled records, so that a
    resumed run and an uninterrupted one reuse the same reductions."""

    out: str
    entries: dict = field(default_factory=dict)
    _cases: dict = field(default_factory=dict)
    _noted: set = field(default_factory=set)
    #: ``(key, case reduced)`` -> the base build's record (``v["base"]``) of a reduction
    #: whose cause the base build was shown not to have (:func:`new_on_base`).
    new: dict = field(default_factory=dict)
    #: Set by the gate per failure: the reductions a lookup must leave out (``(key, case
    #: reduced)``), those already tried on its case.
    exclude: set = field(default_factory=set)

    def __contains__(self, key: str) -> bool:
        return key in self.entries

    def add(self, records) -> None:
        """Take in journaled records (in journal order): each reduction made for a key."""
        for rec in records:
            for x, _ in findings(rec):
                self.note(x)

    def note(self, x: dict) -> None:
        """Take in one failure ``x`` whose identity records a reduction made for it: under its
        key and, for the same cause at its backend's other optimization levels, under its
        key at any level. Called as the reduction is made (so that another backend of the
        same case, the same backend at another level, reuses it: backends are triaged in
        the campaign's order, so a resumed case does the same) and again when its record is
        journaled, which adds nothing twice."""
        r = (x.get("identity") or {}).get("reduction")
        if not r or "reused" in r or not r.get("key"):
            return
        mark = (r["key"], r.get("case"), x["backend"], x["identity"].get("fingerprint"))
        if mark not in self._noted:
            self._noted.add(mark)
            self.entries.setdefault(r["key"], []).append(x["identity"])
            wide = reduction_key(x, any_level=True)
            if wide is not None and wide != r["key"]:
                self.entries.setdefault(wide, []).append(x["identity"])
        if new_on_base(x):  # the base build's record may come after the reduction
            self.new[(r["key"], r.get("case"))] = x["base"]

    def proven_new(self, key: str) -> bool:
        """Whether a reduction of ``key`` is of a cause the base build was shown not to have."""
        return any(k == key for k, _ in self.new)

    def _entries(self, key: str, only_new: bool) -> list:
        """The reductions of ``key`` a lookup may take, in journal order: those not in
        :attr:`exclude`, and with ``only_new`` only those of a cause new on the base build."""
        out = []
        for first in self.entries.get(key, ()):
            k = (key, (first.get("reduction") or {}).get("case"))
            if k in self.exclude or (only_new and k not in self.new):
                continue
            out.append(first)
        return out

    def reduced_case(self, ident: dict):
        """The reduced case of a reduction's identity, loaded from its repro (None when there is none)."""
        repro = ident.get("repro")
        if repro not in self._cases:
            case = None
            if repro and os.path.isfile(os.path.join(self.out, repro, "repro.json")):
                try:
                    case = load_bundle(os.path.join(self.out, repro), case_id=f"{repro}-reused")
                except (CaseError, OSError, ValueError):
                    case = None
            self._cases[repro] = case
        return self._cases[repro]

    def _located(self, ident: dict, case) -> tuple:
        """(reduced case or None, this case's operators it stands for); empty operators when
        ``case`` does not hold the reduced operators (their types and input dtypes, or
        without a repro their types): then the reduction does not stand for its failure."""
        reduced = self.reduced_case(ident)
        if reduced is not None:
            return reduced, locate(case.graph, reduced.graph)
        want = set(filter(None, (ident.get("pattern") or "").split(">")))
        have = {get(n.op).onnx_op for n in case.graph.nodes}
        return None, ([] if not want or not want <= have else [i for i, n in enumerate(case.graph.nodes)
                                                                if get(n.op).onnx_op in want])

    def reuse(self, key: str, case, v: dict, log=print, only_new: bool = False) -> "Reused | None":
        """Identify ``v`` (failing on ``case``) by the first reduction of ``key`` whose
        operators ``case`` holds; None when it holds none's (its failure is reduced then:
        one message can come from several operators, e.g. two converters' dtype error).
        ``only_new``: only reductions of causes the base build was shown not to have."""
        for first in self._entries(key, only_new):
            reduced, kept = self._located(first, case)
            if kept:
                break
        else:
            return None
        src = first["reduction"]["case"]
        ident = {k: x for k, x in first.items() if k not in ("reduction", "original_nodes", "memory_safety")}
        ident.update(original_nodes=len(case.graph.nodes), reduction={"key": key, "reused": src})
        ms = MS.classify(v["verdict"], v.get("error")) or first.get("memory_safety")
        if ms:
            ident["memory_safety"] = ms
        v["identity"] = ident
        log(f"dlgate: {case.id}: the cause reduced in {src} ({ident.get('typed') or '?'}); its reduction is reused"
            + (f": {ident['repro']}" if ident.get("repro") else ""))
        return Reused(reduced, v, kept, src, bool(first.get("hit_limit")))


    def reuse_hang(self, key: str, case, v: dict, pool, spec, log=print) -> "Reused | None":
        """Identify timeout ``v`` (on ``case``, at one level of a backend) by the reduction of
        the same case's hang at another level (:func:`hang_key`), once that reduced case,
        run at this level with the full timeout, gives no answer either: one run instead
        of a reduction. None when there is none, or when it answers here (this level hangs
        elsewhere: the case is reduced itself)."""
        for first in self._entries(key, False):
            reduced = self.reduced_case(first)
            if reduced is None:
                continue
            ACTIVITY.begin(f"running the hang reduced at another level ({first.get('typed') or '?'}) on "
                           f"{spec.label()}")
            got = pool.execute(spec, Model(reduced.model, reduced.graph), reduced.inputs)
            if got.status == TIMEOUT:
                return self.reuse(key, case, v, log)
            log(f"dlgate: {case.id}: the hang reduced at another level ({first.get('typed') or '?'}) "
                f"answers on {spec.label()} ({got.status}): reduced here too")
        return None

    def reuse_wrong(self, key: str, case, v: dict, pool, ccfg, spec, log=print,
                    only_new: bool = False) -> "Reused | None":
        """Identify wrong answer ``v`` (on ``case``) by a cause reduced earlier in the run:
        for each reduction of ``key`` in journal order, each set of ``case``'s operators in
        the cone of the wrong outputs that has the reduced operators' types and input dtypes
        (:func:`sites`) is cut out with the reference's values of what it reads (fed as
        inputs, then as constants) and run, unless its typed pattern already differs from the
        reduction's (other attribute regimes: another fingerprint, whatever the run would
        say); the first cut head gets wrong with that
        reduction's fingerprint (class, operators, dtypes and the attribute regimes that
        mattered) is a :class:`Reused` of it. None after :data:`WRONG_TRIES` cut runs or
        when no cut does (the case is reduced itself: two bugs in other operators stay two
        causes). ``only_new``: only reductions of causes the base build was shown not to
        have."""
        allowed = None
        env = None
        tries = 0
        for first in self._entries(key, only_new):
            segs = segments(first.get("typed") or "")
            if not segs or not first.get("fingerprint"):
                continue
            if allowed is None:
                allowed = wrong_cone(case.graph, v)
            for site in _nearest_first(case.graph, v, sites(case.graph, [(op, dts) for op, dts, _ in segs], allowed)):
                for const in (False, True):
                    if tries >= WRONG_TRIES:
                        return None
                    if env is None:
                        try:
                            env = intermediates(case.graph, case.inputs)
                        except Exception:  # the reference cannot give the values to feed: reduce it
                            return None
                    form = {"as_const": fed(case.graph, site), "need_input": False} if const else {}
                    if const and not form["as_const"]:
                        break  # nothing fed: the same cut as before
                    g, feeds, _ = cut_map(case.graph, env, site, **form)
                    # the fingerprint is the class and the typed pattern: known before the run
                    if I.typed_pattern(g, matter_of(g, segs)) != first["typed"]:
                        break  # other attribute regimes: another cause, whatever the run says
                    tries += 1
                    got = self._judge_cut(case, g, feeds, pool, ccfg, spec)
                    if got is None or got[0].verdict != v["verdict"]:
                        continue  # passes with the values fed as inputs: perhaps not as constants
                    cut, ref, verdict = got[1], got[2], got[0]
                    mine = I.identity(verdict.verdict, spec.name, None, cut.graph, matter_of(cut.graph, segs),
                                      verdict.comparison)
                    if mine["fingerprint"] == first["fingerprint"]:
                        return self._reused(first, key, case, v, site, cut, verdict, ref, log)
                    break
        return None

    @staticmethod
    def _judge_cut(case, g, feeds, pool, ccfg, spec):
        """(head's verdict, the cut case, the reference's outputs) of a cut of ``case``, or
        None when the reference fails on it or gives values not finite (nothing to judge)."""
        if not g.outputs:
            return None
        cut = as_case(case, g, feeds, "reuse-cut")
        ref = pool.execute(ccfg.reference, Model(cut.model, cut.graph), cut.inputs)
        if not ref.ok or not (all_finite(ref.outputs) or getattr(cut.graph, "extreme", None) is not None):
            return None
        return judge_backend(pool, cut, ccfg, spec, ref.outputs, crosscheck=False, explain=True), cut, ref.outputs

    @staticmethod
    def _reused(first: dict, key: str, case, v: dict, site: list, cut, verdict, ref, log) -> "Reused":
        src = first["reduction"]["case"]
        ident = {k: x for k, x in first.items() if k not in ("reduction", "original_nodes", "memory_safety")}
        ident.update(original_nodes=len(case.graph.nodes), reduction={"key": key, "reused": src, "cut": list(site)})
        v["identity"] = ident
        log(f"dlgate: {case.id}: operator(s) {', '.join(map(str, site))} cut out fail as the cause reduced in {src} "
            f"({ident.get('typed') or '?'}); its reduction is reused" + (f": {ident['repro']}" if ident.get("repro")
                                                                         else ""))
        return Reused(cut, verdict.to_json(), list(site), src, bool(first.get("hit_limit")), judged=True, ref=ref)
