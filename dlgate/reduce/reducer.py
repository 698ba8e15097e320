"""Shrinking a failing case until every operator, input and attribute left is needed.

The graph is cut rather than rewritten: removing an operator turns each of its outputs
that a kept operator consumes into a new graph input carrying the *reference's value* of
that tensor (or, where that is what still fails, a constant with that value: a
constant-folding bug needs constants). The kept operators therefore see exactly the
values they saw in the failing run, so a miscompilation that depends on them survives the
cut, and no re-solving of shapes or re-search of inputs is needed.

Reduction runs in rounds until a whole round changes nothing (shrinking a shape or an
attribute often makes more operators removable). A round:

1. operators: in the first round each operator alone (most compiler bugs need one or
   two; for a wrong answer those its first wrong output depends on first, nearest it first);
   then greedy one-at-a-time removal, last operator first, to a fixpoint. Each cut
   is tried with the removed operators' outputs fed as graph inputs, then as constants
   (with no graph input left if that is what fails: a constant-folding bug);
2. short-circuits: each single-output operator, last first, bypassed: its consumers read
   one of its inputs of the same dtype instead (values change; types after it are
   re-inferred). A cut severs a chain, but a wrong dtype or layout must flow from the
   operator that makes it to the one where it breaks, through the operators between;
3. inputs: graph inputs nothing consumes are dropped; each graph input that a cut made
   (it was an operator's output or a constant in the original case) becomes a constant
   where it still fails with the same exact signature, so the repro has as few graph
   inputs as it can (possibly none) without a message that differs from the input form's;
4. shapes: each dimension of each graph input and constant halved in turn (the values
   sliced), alone or, where broadcasting needs it, together with the same dimension of
   the other inputs and constants; every operator's output type re-inferred by its spec
   and the model re-checked by ONNX's full checker, repeated while it keeps failing;
5. attributes: each operator's integer attributes halved (lists element-wise) and float
   attributes rounded to one decimal, with the same re-inference and checks as shapes.

Then the values (inputs and constants) are rounded to two decimals, then to integers,
where it still fails. Last, without changing the case, each attribute left is probed for
whether the failure depends on its *regime* (:func:`dlgate.reduce.identity.regime`): it
is tried at values of other regimes that the operator's spec accepts; when one still
fails the same way the attribute does not matter (see :meth:`_Run.matter`).
:attr:`Reduced.matter` names per kept operator the attributes that do, for
:func:`dlgate.reduce.identity.identity`.

A probe keeps a candidate when the backend, run in its isolated worker like any case,
fails the same way (:meth:`Target.matches`): for errors and crashes the same *cluster*
(message template with operator names, intrinsics and dtypes masked, and innermost
frames: removing an operator may change only the operator or dtype a message names), or,
for a target built with only a signature, the same normalized signature; for mismatches, a
mismatch on the same backend (the mismatch signature names the graph's operators, which
reduction changes by design). For a refusal of head's that the base build does not share
(head versus base, :class:`Reducer`'s ``base_pool``), a candidate is kept only where head
still refuses it and the base build runs it: the reduction ends at the operator head
refuses, in a form the base build handles. The search is deterministic (a fixed order of candidates;
identical candidates are probed once) and bounded by ``max_seconds`` and ``max_probes``;
the attribute-regime probes get ``matter_probes`` more probes and the last quarter of
``max_seconds`` (attributes left unprobed count as mattering); no probe runs past
``max_seconds``.

A hang (a ``timeout`` target) is reduced with short probes, then confirmed with the full
timeout: :mod:`dlgate.reduce.hang`.
"""
from __future__ import annotations

import time

import numpy as np

from dlgate.backends.base import Model
from dlgate.check import CheckConfig, Prepared, judge_backend
from dlgate.gate.progress import ACTIVITY
from dlgate.graph.ir import Graph
from dlgate.oracle import ub
from dlgate.oracle import verdict as V
from dlgate.oracle.compare import all_finite
from dlgate.reduce import hang
from dlgate.reduce.candidates import (_ALT_PROBES, _checks, _smaller, alternatives, as_case, bypassed, constified,
                                      cut_map, fed, intermediates, nearest_first, reattributed, reshaped,
                                      without_inputs)
from dlgate.reduce.identity import regime
from dlgate.reduce.target import NotReproduced, Reduced, Target, case_key as _key  # noqa: F401 - re-exported


class _Limit(Exception):
    """The time or probe bound is reached."""


#: What the base build must do with a candidate for it to show a support regression (a
#: refusal of head's the base build does not share): compile and run it. A wrong answer of the
#: base build's counts (an older bug elsewhere does not make head's refusal any less new).
BASE_RUNS = (V.PASS, V.UNDEFINED) + V.VALUE_CLASSES


class Reducer:
    """``base_pool``: the base build's workers, for a refusal of head's that the base build
    does not share (head versus base): a candidate is then kept only where head refuses it
    the target way *and* the base build runs it (:data:`BASE_RUNS`), so the reduction ends
    at what head refuses and the base build still handles, never at a form both refuse."""

    def __init__(self, pool, cfg: CheckConfig, target: Target, max_seconds: float = 120.0, max_probes: int = 200,
                 matter_probes: int = 40, base_pool=None):
        self.pool, self.cfg, self.target = pool, cfg, target
        self.max_seconds, self.max_probes, self.matter_probes = max_seconds, max_probes, matter_probes
        self.base_pool = base_pool
        self.probes = 0
        self._seen: dict = {}
        self._refs: dict = {}  # candidate key -> the reference's outputs (the base build is judged on them)
        self._base: dict = {}  # candidate key -> whether the base build runs it
        #: Whether the case being reduced stays in the domain the specification defines; its
        #: candidates must then stay there too (``judge``).
        self._defined = True

    def _case(self, base: Prepared, graph: Graph, inputs: list) -> Prepared:
        return as_case(base, graph, inputs)

    def judge(self, case: Prepared) -> V.Verdict | None:
        """The candidate's verdict on the target backend, or None when the reference fails
        or, but for an extreme case (judged position by position, as ``check`` does), is not
        finite on it (nothing to judge). An identical candidate (model and inputs) is run once."""
        key = _key(case)
        if key in self._seen:
            return self._seen[key]
        self.probes += 1
        ACTIVITY.tick()
        limit, self.pool.job_limit = self.pool.job_limit, None  # a hang's short probes are for the backend
        try:
            ref = self.pool.execute(self.cfg.reference, Model(case.model, case.graph), case.inputs)
        finally:
            self.pool.job_limit = limit
        v = None
        if ref.ok and (all_finite(ref.outputs) or getattr(case.graph, "extreme", None) is not None):
            v = judge_backend(self.pool, case, self.cfg, self.target.backend, ref.outputs, crosscheck=False,
                              explain=True)
            if self.base_pool is not None:
                self._refs[key] = ref.outputs
        if v is not None and self._defined and v.verdict not in V.VALUE_CLASSES + (V.UNDEFINED,) \
                and ub.undefined_values(case.graph, case.inputs):
            # an error still raised, but on values the specification leaves open (a scale shrunk
            # to 0): a repro resting on them would go on failing, for another reason, once fixed
            v = None
        self._seen[key] = v
        return v

    def probe(self, case: Prepared) -> V.Verdict | None:
        """The candidate's verdict when it still fails the target way (with a base build,
        and the base build runs it), else None."""
        v = self.judge(case)
        if v is None or not self.target.matches(v):
            return None
        return v if self.base_pool is None or self.base_runs(case) else None

    def base_runs(self, case: Prepared) -> bool:
        """Whether the base build compiles and runs the candidate (:data:`BASE_RUNS`), on the
        reference outputs :meth:`judge` got; asked once per distinct candidate."""
        key = _key(case)
        if key not in self._base:
            ref = self._refs.get(key)
            bv = None if ref is None else judge_backend(self.base_pool, case, self.cfg, self.target.backend, ref,
                                                        crosscheck=False, explain=True)
            self._base[key] = bv is not None and bv.verdict in BASE_RUNS
        return self._base[key]

    def reduce(self, case: Prepared) -> Reduced:
        """The reduced case. ``max_seconds`` bounds the whole reduction: no probe runs past
        it (the workers' timeout is shortened to what is left, plus a second's grace)."""
        self.probes, self._seen, self._refs, self._base = 0, {}, {}, {}
        ACTIVITY.begin(f"reducing case {case.id} on {self.target.backend.label()}", "candidates tried")
        self._defined = ub.undefined_values(case.graph, case.inputs) is None
        pools = [p for p in (self.pool, self.base_pool) if p is not None]
        had = [getattr(p, "deadline", None) for p in pools]
        for p in pools:
            p.deadline = time.monotonic() + self.max_seconds
        short = hang.probe_seconds(self)  # a hang's probes: shorter than the pool's timeout
        limit = self.pool.job_limit
        if short is not None:
            self.pool.job_limit = short
        try:
            out = _Run(self, case).run()
        finally:
            self.pool.job_limit = limit
            for p, d in zip(pools, had):
                p.deadline = d
        return out if short is None else hang.confirm(self, case, out, short)


class _Run:
    """One reduction: the best case so far and, per tensor of its graph, the tensor of the
    original case it is (to know which graph inputs a cut made)."""

    def __init__(self, red: Reducer, case: Prepared):
        self.red, self.case = red, case
        self.t0 = time.perf_counter()
        self.original_inputs = set(case.graph.inputs)
        self.origin = list(range(len(case.graph.tensors)))
        self.best = None
        self.out = None
        # the attribute-regime probes get the last quarter of the time bound
        self.probe_limit, self.time_limit = red.max_probes, red.max_seconds * 3 / 4

    # -- bounds and acceptance --------------------------------------------------------
    def over(self) -> bool:
        return time.perf_counter() - self.t0 > self.time_limit or self.red.probes >= self.probe_limit

    def accept(self, g: Graph, feeds: list, what: str, check: bool = True, origin: list | None = None,
               same: bool = False) -> bool:
        """Probe a candidate; keep it as the best when it fails the target way (with
        ``same``, an error also with the best case's exact signature)."""
        if not g.outputs:
            return False
        cand = self.red._case(self.case, g, feeds)
        key = _key(cand)
        if key not in self.red._seen and self.over():
            raise _Limit
        if check and not _checks(cand.model):
            return False
        v = self.red.probe(cand)
        if v is None:
            return False
        if same and v.verdict not in V.VALUE_CLASSES and \
                (v.signature or {}).get("id") != (self.best[1].signature or {}).get("id"):
            return False
        self.best = (cand, v)
        if origin is not None:
            self.origin = origin
        self.out.log.append(what)
        return True

    # -- passes -----------------------------------------------------------------------
    def remove(self, alone: bool) -> bool:
        """Operator removal on the best case: each operator alone (first round), then
        greedy one-at-a-time removal, last first, to a fixpoint; each cut with the removed
        operators' outputs fed as inputs, then as constants."""
        graph, inputs = self.best[0].graph, self.best[0].inputs
        n = len(graph.nodes)
        if n <= 1:
            return False
        env = intermediates(graph, inputs)
        origin = self.origin
        keep = list(range(n))

        def attempt(sub: list, const: bool) -> bool:
            nonlocal keep
            g, feeds, order = cut_map(graph, env, sub)
            form = ""
            if const:  # fed tensors as constants, and no graph input needed
                plain = len(g.inputs)
                g, feeds, order = cut_map(graph, env, sub, as_const=fed(graph, sub), need_input=False)
                if len(g.inputs) == plain:
                    return False
                form = " (removed operators' outputs as constants)"
            what = f"kept {len(sub)} of {n} operators: {', '.join(graph.nodes[i].op for i in sorted(sub))}{form}"
            if self.accept(g, feeds, what, check=False, origin=[origin[t] for t in order]):
                keep = list(sub)
                return True
            return False

        if alone:
            order = self.singles(graph)
            if any(attempt([i], const) for const in (False, True) for i in order):
                return True
        changed = False
        again = True
        while again and len(keep) > 1:
            again = False
            for i in sorted(keep, reverse=True):
                if i in keep and len(keep) > 1:
                    sub = [k for k in keep if k != i]
                    if attempt(sub, False) or attempt(sub, True):
                        changed = again = True
        return changed

    def singles(self, graph: Graph) -> list:
        """The order operators are tried alone in: for a wrong answer, those its first wrong
        output (the one its finding is described by) depends on, nearest it first (a wrong
        value is most often made where it is read), then those of its other wrong outputs,
        then the rest; otherwise graph order. On a compiler whose every
        compile takes seconds, trying the operators far from the wrong output first spent
        the whole time bound before the one at fault was tried."""
        best = self.best[1]
        if best.verdict not in V.VALUE_CLASSES:
            return list(range(len(graph.nodes)))
        return nearest_first(graph, best.comparison)

    def bypass(self) -> bool:
        """Each single-output operator, last first, short-circuited: its consumers (and the
        graph's outputs) read one of its inputs of the same dtype instead, and the types
        after it are re-inferred. A cut cannot do this: removing an operator in the middle
        of a chain severs it, while a wrong dtype or layout must flow from where it is
        made to where it breaks (``BatchNormalization>Floor>Sqrt>Reciprocal``)."""
        changed = False
        i = len(self.best[0].graph.nodes) - 1
        while i >= 0 and len(self.best[0].graph.nodes) > 1:
            graph, inputs = self.best[0].graph, self.best[0].inputs
            node = graph.nodes[i]
            produced = {t for n in graph.nodes for t in n.outputs}
            if len(node.outputs) == 1:
                o = node.outputs[0]
                for s in dict.fromkeys(node.inputs):
                    if graph.tensors[s].dtype != graph.tensors[o].dtype:
                        continue
                    if o in graph.outputs and (s not in produced or s in graph.outputs):
                        continue  # a graph output must stay an operator's output
                    tried = bypassed(graph, inputs, i, s)
                    if tried is None:
                        continue
                    g, feeds, order = tried
                    what = f"{node.op} short-circuited ({graph.name(s)} for {graph.name(o)})"
                    if self.accept(g, feeds, what, origin=[self.origin[t] for t in order]):
                        changed = True
                        break
            i -= 1
        return changed

    def inputs(self) -> bool:
        """Unused graph inputs dropped; graph inputs a cut made turned into constants where
        the failure stays exactly as it is (fewer graph inputs). An error whose message
        changes with the constant (TVM prints it inline: ``R.const(1, "float16")`` for
        ``lv``) keeps the input, the form it shares with the cases that fail on an input."""
        changed = False
        g, feeds = self.best[0].graph, self.best[0].inputs
        used = {t for n in g.nodes for t in n.inputs} | set(g.outputs)
        unused = [k for k, t in enumerate(g.inputs) if t not in used]
        if unused and self.accept(*without_inputs(g, feeds, unused), f"dropped {len(unused)} unused inputs"):
            changed = True
        for t in list(self.best[0].graph.inputs):
            if self.origin[t] in self.original_inputs:
                continue
            g, feeds = self.best[0].graph, self.best[0].inputs
            k = g.inputs.index(t)
            if self.accept(*constified(g, feeds, [k]), f"input {g.name(t)} as a constant", same=True):
                changed = True
        return changed

    def shapes(self) -> bool:
        """Each dimension of each graph input and constant halved, alone or with the
        same (right-aligned) dimension of the others, while it keeps failing."""
        changed = False
        shrinking = True
        while shrinking:
            shrinking = False
            g0, feeds0 = self.best[0].graph, self.best[0].inputs
            leaves = list(g0.inputs) + list(g0.consts)
            for t in leaves:
                shape = g0.tensors[t].shape
                for j, d in enumerate(shape):
                    if d <= 1:
                        continue
                    tried = reshaped(g0, feeds0, {t: tuple(d // 2 if i == j else x for i, x in enumerate(shape))})
                    what = f"{g0.name(t)} shape halved on axis {j}"
                    if tried is None:  # broadcasting: halve that dimension wherever it is
                        back = len(shape) - j
                        joint = {}
                        for u in leaves:
                            s = g0.tensors[u].shape
                            if len(s) >= back and s[len(s) - back] == d:
                                joint[u] = tuple(d // 2 if i == len(s) - back else x for i, x in enumerate(s))
                        if len(joint) < 2:
                            continue
                        tried = reshaped(g0, feeds0, joint)
                        what = f"dimension {d} halved on {len(joint)} inputs and constants"
                    if tried is not None and self.accept(*tried, what):
                        changed = shrinking = True
                        break
                if shrinking:
                    break
        return changed

    def attributes(self) -> bool:
        """Each operator's attributes made simpler (:func:`_smaller`) while it keeps failing."""
        changed = False
        for k in range(len(self.best[0].graph.nodes)):
            for key in sorted(self.best[0].graph.nodes[k].attrs):
                while True:
                    g0, feeds0 = self.best[0].graph, self.best[0].inputs
                    value = _smaller(g0.nodes[k].attrs[key])
                    if value is None:
                        break
                    tried = reattributed(g0, k, dict(g0.nodes[k].attrs, **{key: value}))
                    if tried is None or not self.accept(tried, feeds0, f"{g0.nodes[k].op}.{key} = {value}"):
                        break
                    changed = True
        return changed

    def values(self) -> None:
        """Inputs and constants rounded to two decimals, then to integers; inputs alone
        where the constants must keep their values."""
        def rounded(x, decimals):
            x = np.asarray(x)
            return np.round(x, decimals).astype(x.dtype) if x.dtype.kind == "f" else x

        def same(a, b):
            return np.array_equal(a, b, equal_nan=True)

        for decimals in (2, 0):
            g0, feeds0 = self.best[0].graph, self.best[0].inputs
            feeds = [rounded(x, decimals) for x in feeds0]
            consts = {t: rounded(x, decimals) for t, x in g0.values.items()}
            inputs_changed = any(not same(a, b) for a, b in zip(feeds, feeds0))
            if any(not same(consts[t], g0.values[t]) for t in consts):
                g = Graph(g0.tensors, g0.nodes, g0.inputs, g0.consts, g0.outputs, g0.opset, consts)
                if self.accept(g, feeds, f"inputs and constants rounded to {decimals} decimals"):
                    continue
            if inputs_changed:
                self.accept(g0, feeds, f"inputs rounded to {decimals} decimals")

    def matter(self) -> list:
        """Per operator of the best case, the attributes whose regime the failure depends
        on. An attribute does not matter when a value of another regime (accepted by the
        operator's spec and ONNX's checker) still fails the same way; it matters when one
        was judged (the reference ran) and did not. When every other regime is rejected or
        leaves nothing to judge (a zero epsilon on a one-element normalization), the regime
        is forced on this case and tells no bugs apart: it does not matter either. Strings,
        values with no alternatives (``None``, long lists) and attributes left unprobed at
        the bounds matter. The case is not changed."""
        case, _ = self.best
        g, feeds = case.graph, case.inputs
        out = []
        for k, n in enumerate(g.nodes):
            keep = set()
            for key in sorted(n.attrs):
                v = n.attrs[key]
                alts = [a for a in alternatives(v) if regime(a) != regime(v)]
                verdict, judged, complete = None, 0, True
                for alt in alts:
                    if judged >= _ALT_PROBES:
                        break
                    g2 = reattributed(g, k, dict(n.attrs, **{key: alt}))
                    if g2 is None:
                        continue
                    cand = self.red._case(self.case, g2, feeds)
                    if _key(cand) not in self.red._seen and self.over():
                        self.out.log.append("attribute regimes: probe bound reached")
                        complete = False
                        break
                    if not _checks(cand.model):
                        continue
                    got = self.red.judge(cand)
                    if got is None or got.verdict in (V.UNDEFINED, V.INVALID):
                        continue  # nothing to judge at this value
                    judged += 1
                    if self.red.target.matches(got) and (self.red.base_pool is None or self.red.base_runs(cand)):
                        verdict = f"does not matter: fails alike at {alt!r}"
                        break
                    verdict = verdict or f"matters: {got.verdict} at {alt!r}"
                if verdict is None and alts and complete:
                    verdict = "does not matter: no other regime can be judged here"
                if verdict is None or verdict.startswith("matters"):
                    keep.add(key)
                if verdict is not None:
                    self.out.log.append(f"{n.op}.{key} {verdict}")
            out.append(keep)
        return out

    def kept(self) -> list:
        """Indices of the original case's operators that the best case's operators are,
        found through the tensors they make (``origin``: each cut and short-circuit maps the
        new graph's tensors to the original's; shrinking keeps tensor ids)."""
        producer = {t: i for i, n in enumerate(self.case.graph.nodes) for t in n.outputs}
        g = self.best[0].graph
        return sorted({producer[self.origin[t]] for n in g.nodes for t in n.outputs if self.origin[t] in producer})

    # -- the whole ----------------------------------------------------------------------
    def run(self) -> Reduced:
        case = self.case
        first = self.red.probe(case)
        if first is None:
            t = self.red.target
            raise NotReproduced(f"{case.id} does not fail as {t.verdict} on {t.backend.label()}")
        self.best = (case, first)
        self.out = out = Reduced(case, first, len(case.graph.nodes))
        try:
            rnd = 0
            while True:
                rnd += 1
                out.rounds = rnd
                changed = self.remove(alone=rnd == 1)
                changed = self.bypass() or changed
                changed = self.inputs() or changed
                changed = self.shapes() or changed
                changed = self.attributes() or changed
                if not changed:
                    break
            self.values()
        except _Limit:
            out.hit_limit = True
        # the regime probes: matter_probes more probes, within what is left of the time bound
        self.probe_limit = self.red.probes + self.red.matter_probes
        self.time_limit = self.red.max_seconds
        out.matter = self.matter()
        out.case, out.verdict = self.best
        out.kept = self.kept()
        out.upstream = self.upstream()
        out.probes, out.seconds = self.red.probes, time.perf_counter() - self.t0
        return out

    def upstream(self) -> "Reduced | None":
        """An error or a crash that a wrong dtype or shape made upstream: the first operator
        of the reduced case (in order) whose outputs a later one consumes and which, cut out
        with what it depends on, already gives a ``dtype_mismatch`` or ``shape_mismatch`` on
        this backend, reduced on its own. TVM 0.25's TopK returns int32 indices: fed to an
        int64 Mod, the model reduces to TopK -> Mod failing with "Binary operators must have
        the same datatype" (the reducer cannot drop TopK, whose removal makes it pass, nor
        Mod, whose removal leaves another class of failure), while TopK alone is a
        ``dtype_mismatch``: one root cause, which the error's cause then names. Probed within
        what is left of the bounds; None when the reduced case has one operator, the target is
        a wrong answer, or no earlier operator is wrong on its own."""
        case, _ = self.best
        g = case.graph
        if self.red.target.verdict in V.VALUE_CLASSES or len(g.nodes) < 2:
            return None
        consumed = {t for n in g.nodes for t in n.inputs}
        env = None
        for n in g.nodes[:-1]:
            if not any(t in consumed for t in n.outputs):
                continue
            if self.over():
                self.out.log.append("upstream: probe bound reached")
                return None
            env = env if env is not None else intermediates(g, case.inputs)
            sub, feeds, _ = cut_map(g, env, g.ancestors(n.outputs))
            cand = self.red._case(self.case, sub, feeds)
            if not _checks(cand.model):
                continue
            got = self.red.judge(cand)
            if got is None or got.verdict not in (V.DTYPE_MISMATCH, V.SHAPE_MISMATCH):
                continue
            left = self.time_limit - (time.perf_counter() - self.t0)
            sub_red = Reducer(self.red.pool, self.red.cfg, Target(self.red.target.backend, got.verdict),
                              max_seconds=max(left, 1.0), max_probes=max(self.probe_limit - self.red.probes, 1),
                              matter_probes=self.red.matter_probes)
            try:
                up = sub_red.reduce(cand)
            except NotReproduced:
                continue
            finally:
                self.red.probes += sub_red.probes
            self.out.log.append(f"upstream: {n.op} alone is a {got.verdict}")
            return up
        return None
