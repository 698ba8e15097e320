"""Graph generation: NNSmith's forward/backward insertion over concrete types, Isra's
tensor reuse and instantiation order, GenCoG's concolic split (concrete first, z3 for
what sampling cannot reach).

Every choice comes from one ``random.Random`` seeded from the case seed; no set or dict
iteration order, time or process state reaches the output.
"""
from __future__ import annotations

import math
import random
from functools import lru_cache

import numpy as np

from dlgate import dtypes as dt
from dlgate.coverage import features as F
from dlgate.coverage.guide import OPSET_FOCUS
from dlgate.graph import extreme
from dlgate.graph.body import BodyDrawing
from dlgate.graph.bounds import ValueBounds, _State
from dlgate.graph.config import (AIM_DEGENERATE, AIM_REPEAT, DEFAULT_OPSET_RANGE, NEWEST_OPSET, NEWEST_SHARE,
                                 OLDEST_OPSET, RANK5_START, REDRAWS, SEED_TRIES, GenConfig, GenerationError)
from dlgate.graph.dynamic import make_dynamic
from dlgate.graph.ir import Graph, Node, domain_spans, random_values
from dlgate.graph.solver import Solver
from dlgate.graph.symbolic import SymbolicInsertion
from dlgate.ops import schema
from dlgate.ops.base import UNBOUNDED, Ctx, OpSpec, TensorType, all_true
from dlgate.ops.registry import all_specs, get, select
from dlgate.seeds import sub_seed

#: The generator is where callers find the configuration and the opset range
#: (``dlgate.graph.config`` holds them).
__all__ = ["DEFAULT_OPSET_RANGE", "NEWEST_OPSET", "OLDEST_OPSET", "REDRAWS", "GenConfig", "GenerationError",
           "Generator"]


class Generator(ValueBounds, SymbolicInsertion, BodyDrawing):
    """Draws a case's graph from its seed (``generate``): operators inserted forward (onto
    an existing tensor) or backward (producing a placeholder), the value bounds kept by
    ``ValueBounds``, the z3 path in ``SymbolicInsertion``; a control operator's body from
    given input types (``BodyDrawing.body``, reached through ``body_graph``)."""

    def __init__(self, cfg: GenConfig = GenConfig(), guide=None):
        self.cfg = cfg
        #: Coverage guidance (``dlgate.coverage.guide.Guide``), or None for plain draws.
        self.guide = guide
        named = select(cfg.ops)
        # a degenerate-only spec (Concat of one input) is drawn in the degenerate regime, or
        # when the operator list names it; the ordinary stream never sees it
        self.specs = [s for s in named if not s.degenerate_only or cfg.ops is not None]
        self._degenerate_specs = [s for s in named if s.degenerate_only and cfg.ops is None]
        self.solver = Solver(cfg.limits.bins)
        self.opset = cfg.opset or cfg.opset_range[1]
        self.stats = {"forward": 0, "backward": 0, "z3_forward": 0, "z3_backward": 0, "failed": 0}
        self._sig_cache: dict = {}
        self._available: dict = {}  # (opset, degenerate) -> the specs drawable there
        self._aim = None  # the aim of the case being drawn (its specs' signatures narrow to it)

    # -- entry point ----------------------------------------------------------------
    def generate(self, seed: int, redraw: bool = True) -> Graph:
        """The case's graph. A draw that fails (no operator fits what the restriction leaves,
        or none could be inserted) is drawn again from ``sub_seed(seed, "redraw/k")``, up to
        ``REDRAWS`` times, and then a fallback makes a one-operator graph of the first
        operator of the generator's list that the restriction allows and that can be
        instantiated (at the failed draw's opset first): a case whose generation is possible at all is
        always made, the same on every machine. Such a graph says so in ``graph.redrawn``
        (the case's ``meta.json``); ``GenerationError`` is left only for a configuration under
        which no operator can be drawn at all. ``redraw=False`` is the draw alone, as single-
        operator probing makes it (its own seeds are its redraws): it raises at the first failure."""
        aim = self._pick_aim(seed)
        try:
            return self._draw(seed, insist=redraw, aim=aim)
        except GenerationError as e:
            if not redraw:
                raise
            reason, opset = str(e), self.opset
        for k in range(1, REDRAWS + 1):
            try:
                g = self._draw(sub_seed(seed, f"redraw/{k}"), aim=aim)
            except GenerationError:
                continue
            g.redrawn = {"attempts": k, "reason": reason}
            return g
        g = self._fallback(sub_seed(seed, "fallback"), opset)
        g.redrawn = {"attempts": REDRAWS + 1, "reason": reason, "fallback": g.nodes[0].op}
        return g

    def _pick_aim(self, seed: int):
        """(aim, degenerate) for the case drawn from ``seed``, or None for a random case:
        from the case's own ``aim`` stream, so cases of a batch without aims are unchanged."""
        if not self.cfg.aims:
            return None
        arng = random.Random(sub_seed(seed, "aim"))
        if arng.random() >= self.cfg.aim_share:
            return None
        aim = self.cfg.aims[arng.randrange(len(self.cfg.aims))]
        # kernels and rewrites special-case degenerate attribute values: a share of the
        # aimed cases draws them even where the target does not ask for them
        return aim, aim.degenerate or arng.random() < AIM_DEGENERATE

    def _aim_opsets(self, aim) -> list:
        """The opsets of the configuration at which some spec of ``aim`` can be drawn with a
        signature the aim allows."""
        cfg = self.cfg
        opsets = [cfg.opset] if cfg.opset is not None else range(cfg.opset_range[0], cfg.opset_range[1] + 1)
        was, self._aim = self._aim, aim
        try:
            return [o for o in opsets if aim.opset_ok(o) and self._aim_specs(aim, o)]
        finally:
            self._aim = was

    def _aim_specs(self, aim, opset: int, degenerate: bool = False) -> list:
        names = set(aim.specs)
        return [s for s in self._specs_at(opset, degenerate) if s.name in names and self._sigs(s)]

    def _draw(self, seed: int, insist: bool = True, aim=None) -> Graph:
        cfg = self.cfg
        rng = random.Random(sub_seed(seed, "graph"))
        # A fresh solver per case: an incremental solver keeps learned lemmas across
        # push/pop, so reusing one would make a case depend on the cases before it.
        self.solver.reset()
        if self.guide is not None:
            self.guide.begin()
        focus = None  # a narrow motif this case is drawn for (coverage guidance), or None
        aimed, degenerate, self._aim = None, False, None
        if aim is not None:
            aimed, degenerate = aim
            opsets = self._aim_opsets(aimed)
            if not opsets:
                aimed, degenerate = None, False  # the configuration leaves the target out: a random case
        if aimed is not None:
            opset = rng.choice(opsets)
            self._aim = aimed
            focus = rng.choice(self._aim_specs(aimed, opset, degenerate))
        elif cfg.opset is not None:
            opset = cfg.opset
        else:
            opset, focus = self._draw_opset(rng)
        ctx = self._ctx(rng, opset)
        if degenerate:
            ctx.degenerate = True
        specs = self._specs_at(opset, ctx.degenerate)
        if not specs:
            raise GenerationError(f"no operator is available at opset {opset} with the allowed dtypes")
        target = rng.randint(cfg.min_nodes, cfg.max_nodes)
        st = _State()
        weights = None
        if self.guide is not None:
            weights = [self.guide.spec_weight(s, self._sigs(s)) for s in specs]
        # The first placeholder fits a random operator (the focused motif, when there is one),
        # so the first insertion can succeed.
        seed_spec = specs[rng.randrange(len(specs))]
        if focus is not None and focus in specs:
            seed_spec = focus
        ranks = [r for r in seed_spec.ranks if r <= min(4, cfg.limits.max_rank)] or [0]
        rank = ctx.choice(ranks)
        if rng.random() < RANK5_START and 5 in seed_spec.ranks and cfg.limits.max_rank >= 5:
            rank = 5  # now and then a volume (3-D convolution and pooling, 5-D GridSample)
        first = TensorType(ctx.choice(self._sigs(seed_spec))[0], ctx.shape(rank))
        st.placeholders.append(st.add_tensor(first))
        budget = 40 * target + 40
        if seed_spec is focus and self._forward(st, focus, ctx, rng) and weights is not None:
            weights[specs.index(focus)] = self.guide.spec_weight(focus, self._sigs(focus))
        if aimed is not None and not st.nodes:
            for _ in range(SEED_TRIES):  # the aimed operator first, so the case exercises it
                if self._forward(st, focus, ctx, rng):
                    break
        aim_specs = [specs.index(s) for s in self._aim_specs(aimed, opset, degenerate)] if aimed is not None else []
        while len(st.nodes) < target and budget > 0:
            budget -= 1
            if aim_specs and rng.random() < AIM_REPEAT:
                k = rng.choice(aim_specs)  # more instances of the target: its rewrite, its kernel again
            elif weights is None:
                k = rng.randrange(len(specs))
            else:
                k = rng.choices(range(len(specs)), weights)[0]
            spec = specs[k]
            if rng.random() < cfg.forward_prob:
                ok = self._forward(st, spec, ctx, rng)
            else:
                ok = self._backward(st, spec, ctx, rng)
            if not ok:
                self.stats["failed"] += 1
            elif weights is not None:
                weights[k] = self.guide.spec_weight(spec, self._sigs(spec))
        if not st.nodes and insist:
            # the first placeholder was made to fit seed_spec, but the draws need not come back
            # to it (a bool scalar for Or, while guidance weighs unseen motifs up): insert it there
            for _ in range(SEED_TRIES):
                if self._forward(st, seed_spec, ctx, rng):
                    break
        if not st.nodes:
            raise GenerationError(f"could not insert any operator (seed {seed})")
        g = self._finalize(st, seed, opset, rng)
        if cfg.dynamic_share > 0:
            drng = random.Random(sub_seed(seed, "dynamic"))
            # a motif whose rewrite needs symbolic dimensions gets them whenever any model may
            if drng.random() < cfg.dynamic_share or any(get(n.op).needs_dynamic for n in g.nodes):
                g = make_dynamic(g, drng, cfg.limits)
        g = extreme.apply(g, seed, cfg.extreme_share)
        if aimed is not None:
            g.aimed = {"target": aimed.target.key, **({"degenerate": True} if degenerate else {})}
        self._aim = None
        return g

    def _ctx(self, rng: random.Random, opset: int) -> Ctx:
        """The sampling context of a draw at ``opset``; control operators draw their bodies
        through its ``body_graph``."""
        return Ctx(rng, self.cfg.limits, self.cfg.dtypes, opset, body_graph=body_graph)

    def _specs_at(self, opset: int, degenerate: bool = False) -> list:
        """The specs drawable at ``opset`` (made the current opset): available there, with a
        signature the config, the support set and the schema allow; in the degenerate regime
        the degenerate-only specs too, after the others (so the others keep their indices)."""
        self.opset = opset
        specs = self._available.get((opset, degenerate))
        if specs is None:
            pool = self.specs + (self._degenerate_specs if degenerate else [])
            specs = self._available[(opset, degenerate)] = [s for s in pool if s.available(opset) and self._base_sigs(s)]
        return specs

    def drawable(self) -> None:
        """Raise ``GenerationError`` (naming the restriction) when no operator can be drawn at
        any opset of the configuration: then no case can be generated, redrawn or not."""
        cfg = self.cfg
        opsets = [cfg.opset] if cfg.opset is not None else range(cfg.opset_range[0], cfg.opset_range[1] + 1)
        # the current opset is left as it was: the next case's draw reads it (Guide.focus's candidates)
        was = self.opset
        found = any(self._specs_at(o) for o in opsets)
        self.opset = was
        if not found:
            what = f"opset {cfg.opset}" if cfg.opset is not None else f"opsets {cfg.opset_range[0]}-{cfg.opset_range[1]}"
            limits = [w for w, on in (("the operator list", cfg.ops is not None), ("the dtypes", cfg.dtypes != dt.ALL),
                                      ("the probed support", cfg.support is not None)) if on]
            raise GenerationError(f"no operator can be drawn at {what} within {', '.join(limits) or 'the registry'}")

    def _fallback(self, seed: int, opset: int) -> Graph:
        """A one-operator graph, for a case no draw could make: the first operator of the
        generator's list (the registry's order, or the config's ``ops``), at the first of its
        signatures and ranks (lowest first) that instantiates, at ``opset`` and then, where the
        opset is not fixed, the others of the range from the newest down. Plain values; static,
        but for an operator that needs symbolic dimensions (drawn only where the config gives
        any model some). Raises ``GenerationError`` only when nothing at all can be drawn."""
        cfg = self.cfg
        lo, hi = cfg.opset_range
        opsets = [opset] if cfg.opset is not None else [opset] + [o for o in range(hi, lo - 1, -1) if o != opset]
        rng = random.Random(seed)
        self.solver.reset()
        for o in opsets:
            ctx = self._ctx(rng, o)
            for spec in self._specs_at(o):
                if spec.needs_dynamic and not cfg.dynamic_share:
                    continue
                ranks = sorted(r for r in spec.ranks if r <= cfg.limits.max_rank)
                for sig in self._sigs(spec):
                    for rank in ranks:
                        if self.guide is not None:
                            self.guide.begin()
                        st = _State()
                        st.placeholders.append(st.add_tensor(TensorType(sig[0], ctx.shape(rank))))
                        if self._forward(st, spec, ctx, rng):
                            g = self._finalize(st, seed, o, rng)
                            if spec.needs_dynamic:
                                g = make_dynamic(g, random.Random(sub_seed(seed, "dynamic")), cfg.limits)
                            return g
        self.drawable()
        raise GenerationError(f"no operator can be instantiated within the configuration (seed {seed})")

    def _draw_opset(self, rng: random.Random) -> tuple:
        """(the case's opset, the narrow motif it is drawn for or None): under guidance, a
        share of the cases is drawn at the opsets of a motif that exists at a few only and
        still wants coverage (``Guide.focus``), and starts with that motif."""
        lo, hi = self.cfg.opset_range
        opset = hi if rng.random() < NEWEST_SHARE else rng.randint(lo, hi)
        if self.guide is not None:
            wanting = self.guide.focus([s for s in self.specs if self._sigs(s)], lo, hi)
            if wanting and rng.random() < OPSET_FOCUS:
                spec, opsets = rng.choice(wanting)
                return rng.choice(opsets), spec
        return opset, None

    def _sigs(self, spec: OpSpec, first: str | None = None) -> tuple:
        """Signatures allowed by the config, the probed support set and the ONNX schema,
        narrowed, for the specs of the case's aim, to the dtypes its target concerns."""
        got = self._base_sigs(spec, first)
        aim = self._aim
        if aim is not None and aim.dtypes and spec.name in aim.specs:
            got = tuple(s for s in got if aim.sig_ok(s))
        return got

    def _base_sigs(self, spec: OpSpec, first: str | None = None) -> tuple:
        """Signatures allowed by the config, the probed support set and the ONNX schema
        (a pure function of the spec, ``first`` and the opset: cached)."""
        key = (spec.name, first, self.opset)
        got = self._sig_cache.get(key)
        if got is None:
            got = self._sig_cache[key] = tuple(self._allowed_sigs(spec, first))
        return got

    def _allowed_sigs(self, spec: OpSpec, first: str | None) -> list:
        sup, allowed = self.cfg.support, set(self.cfg.dtypes)
        return [s for s in spec.sigs(first)
                if all(t in allowed for t in s) and (sup is None or (spec.name, s, self.opset) in sup)
                and schema.allowed(spec.onnx_op, s, self.opset)]

    # -- checks -----------------------------------------------------------------------
    def _fits(self, types) -> bool:
        lim = self.cfg.limits
        for t in types:
            if t.rank > lim.max_rank or any(d < 1 or d > 4 * lim.max_dim for d in t.shape):
                return False
            if t.numel > lim.max_elems:
                return False
        return True

    def _valid(self, spec: OpSpec, ins: list, a: dict):
        """Output types if the instantiation is valid and within limits, else None."""
        if not all_true(spec.requires(ins, a)):
            return None
        outs = spec.infer(ins, a)
        if not self._fits(outs) or not self._fits(ins):
            return None
        return outs

    # -- forward insertion ------------------------------------------------------------
    def _forward(self, st: _State, spec: OpSpec, ctx: Ctx, rng: random.Random) -> bool:
        cands = [i for i, t in enumerate(st.tensors) if t.rank in spec.ranks and self._sigs(spec, t.dtype)]
        if spec.needs_dynamic:
            # its rewrite needs symbolic dims in its input: a graph input, not a computed tensor
            cands = [i for i in cands if i in st.placeholders]
        if not cands:
            return False
        weights = [math.exp(-1.5 * st.uses[i]) for i in cands]
        guide = self.guide
        if guide is not None:
            weights = [w * self._link_weight(st, spec, i) for w, i in zip(weights, cands)]
        x0 = rng.choices(cands, weights)[0]
        first = st.tensors[x0]
        sigs = self._sigs(spec, first.dtype)
        own = spec.sig_weights(sigs)
        if guide is not None:
            weights = guide.sig_weights(spec.name, sigs)
            sig = rng.choices(sigs, weights if own is None else [w * o for w, o in zip(weights, own)])[0]
        else:
            sig = ctx.choice(sigs) if own is None else rng.choices(sigs, own)[0]
        for _ in range(3):
            a = spec.sample(ctx, [first])
            ids, ins = [x0], [first]
            for i in range(1, spec.arity):
                pick = self._reuse(st, spec, ctx, rng, i, ins, a, sig) if rng.random() < self.cfg.picking_rate else None
                if pick is not None and spec.constant_input(a, i) is not None:
                    pick = None  # an input whose constant-ness is prescribed gets its own placeholder
                if pick is None:
                    ids.append(None)
                    ins.append(spec.input_type(ctx, i, ins, a, sig[i]))
                else:
                    ids.append(pick)
                    ins.append(st.tensors[pick])
            outs = self._valid(spec, ins, a)
            if outs is not None and self._domains_ok(st, spec, a, ids):
                self._commit(st, spec, a, ids, ins, outs)
                self.stats["forward"] += 1
                return True
        if self._solvable(spec):
            return self._forward_z3(st, spec, rng, x0, first, sig)
        return False

    def _link_weight(self, st: _State, spec: OpSpec, t: int) -> float:
        k = st.producer.get(t)
        if k is None:
            return 1.0
        node = st.nodes[k]
        grand = [st.nodes[st.producer[u]].op for u in node.inputs if u in st.producer]
        return self.guide.link_weight(spec.name, node.op, grand)

    def _reuse(self, st, spec, ctx, rng, i, ins, a, sig):
        """Isra's reuse: an existing tensor consistent with the inputs chosen so far."""
        cands = [j for j, t in enumerate(st.tensors) if t.dtype == sig[i]]
        rng.shuffle(cands)
        for j in cands[:6]:
            trial = ins + [st.tensors[j]]
            for k in range(i + 1, spec.arity):
                trial.append(spec.input_type(ctx, k, trial, a, sig[k]))
            if all_true(spec.requires(trial, a)):
                return j
        return None

    # -- backward insertion -----------------------------------------------------------
    def _backward(self, st: _State, spec: OpSpec, ctx: Ctx, rng: random.Random) -> bool:
        if not st.placeholders:
            return False
        p = st.placeholders[rng.randrange(len(st.placeholders))]
        if p in st.pinned:
            return False  # a motif's constant weights stay constants
        target = st.tensors[p]
        res = spec.backward(ctx, target)
        via_z3 = False
        if res is None and self._solvable(spec):
            res, via_z3 = self._backward_z3(spec, target, rng), True
        if res is None:
            return False
        ins, a = res
        sig = tuple(t.dtype for t in ins)
        if sig not in self._sigs(spec):
            return False
        outs = self._valid(spec, ins, a)
        if outs is None or outs[0] != target:
            return False
        in_int = [not dt.is_float(t.dtype) for t in ins]
        bounds = spec.out_bounds(a, [UNBOUNDED] * len(ins), ins, outs)[0]
        steer = self._steers(spec, [dt.is_float(t.dtype) for t in ins], outs[0])
        integral = self._integral(spec, in_int, outs[0])
        anchor = spec.anchor(a, [None] * len(ins), ins)
        exact = spec.exact(a, [None] * len(ins), ins)
        old = st.ranges[p]
        narrowed = (max(old[0], bounds[0]), min(old[1], bounds[1]))
        if narrowed[0] > narrowed[1]:
            return False
        # what the consumers allow the output to be, the new inputs must map into; the
        # output's bounds then follow from the inputs' (ThresholdedRelu kept below 1 by
        # an Abs and an Atanh can only pass its input when that is above alpha: else 0)
        up = None
        if spec.preserves_values:
            up = narrowed
        elif spec.elementwise and dt.is_float(ins[0].dtype):
            up = spec.preimage(a, narrowed)
        vals = spec.value_inputs
        if up is not None:
            if up[0] > up[1]:
                return False  # no input gives an output the consumers allow
            in_r = [up if (vals is None or i in vals) and dt.is_float(t.dtype) else UNBOUNDED
                    for i, t in enumerate(ins)]
            b2 = spec.out_bounds(a, in_r, ins, outs)[0]
            narrowed = (max(narrowed[0], b2[0]), min(narrowed[1], b2[1]))
            if narrowed[0] > narrowed[1]:
                return False
        if not self._propagate(st, {p: (narrowed, steer, integral, anchor, exact)}):
            return False  # some operator downstream could no longer see a valid value
        st.placeholders.remove(p)
        self._commit(st, spec, a, [None] * len(ins), ins, outs, replace=p)
        if up is not None:
            for i, j in enumerate(st.nodes[-1].inputs):
                if (vals is None or i in vals) and dt.is_float(st.tensors[j].dtype):
                    r = st.ranges[j]
                    st.ranges[j] = (max(r[0], up[0]), min(r[1], up[1]))
        self.stats["z3_backward" if via_z3 else "backward"] += 1
        return True

    # -- bookkeeping ------------------------------------------------------------------
    def _commit(self, st: _State, spec, a, ids, ins, outs, replace=None):
        in_ids = []
        for j, t in zip(ids, ins):
            if j is None:
                j = st.add_tensor(t)
                st.placeholders.append(j)
            st.uses[j] += 1
            in_ids.append(j)
            if (len(in_ids) > 1 or spec.needs_dynamic) and \
                    spec.constant_input(a, len(in_ids) - 1) is not None:
                st.pinned.add(j)  # stays a placeholder: a constant, or a graph input as prescribed
        for i, j in enumerate(in_ids):
            # valid runs keep an input inside its domain: narrow its bounds to it, so a
            # second consumer with a disjoint domain (Atanh and Acosh of one constant)
            # is refused, and the outputs' bounds follow from the narrowed ones
            r = self._admit(spec, a, i, st.ranges[j], st.steer[j], st.integral[j], st.anchor[j], st.exact[j],
                            st.tensors[j])
            changed = None if r is None else self._narrow_up(st, j, r, apply=False)
            if changed:
                self._propagate(st, self._starts(st, changed))
                self._narrow_up(st, j, r)
        bounds = spec.out_bounds(a, [st.ranges[j] for j in in_ids], ins, outs)
        bounds = self._same_input(spec, a, in_ids, [st.ranges[j] for j in in_ids], bounds)
        in_steer = [st.steer[j] for j in in_ids]
        in_int = [st.integral[j] for j in in_ids]
        anchor = spec.anchor(a, [st.anchor[j] for j in in_ids], ins)
        exact = spec.exact(a, [st.exact[j] for j in in_ids], ins)
        out_ids = [replace if (k == 0 and replace is not None)
                   else st.add_tensor(t, b, self._steers(spec, in_steer, t), self._integral(spec, in_int, t),
                                      anchor if k == 0 else None, exact if k == 0 else None)
                   for k, (t, b) in enumerate(zip(outs, bounds))]
        if replace is not None:
            old = st.ranges[replace]
            st.ranges[replace] = (max(old[0], bounds[0][0]), min(old[1], bounds[0][1]))
            st.steer[replace] = self._steers(spec, in_steer, outs[0])
            st.integral[replace] = self._integral(spec, in_int, outs[0])
            st.anchor[replace] = anchor
            st.exact[replace] = exact
        for t in out_ids:
            st.producer[t] = len(st.nodes)
        st.nodes.append(Node(spec.name, a, in_ids, out_ids))
        if self.guide is not None:
            self._note(st, st.nodes[-1])

    def _note(self, st: _State, node: Node) -> None:
        """Tell the guide what the new node covers (its signature, edges and paths),
        including the edges to consumers a backward insertion gave it."""
        feats = [F.op_dtype(node.op, [st.tensors[t].dtype for t in node.inputs])]
        preds = [st.nodes[st.producer[t]] for t in node.inputs if t in st.producer]
        for p in preds:
            feats.append(F.edge(p.op, node.op))
            feats += [F.path3(st.nodes[st.producer[u]].op, p.op, node.op) for u in p.inputs if u in st.producer]
        outs = set(node.outputs)
        for c in st.nodes[:-1]:
            if outs.intersection(c.inputs):
                feats.append(F.edge(node.op, c.op))
        self.guide.note(feats)

    def _finalize(self, st: _State, seed: int, opset: int, rng: random.Random) -> Graph:
        # Topological order (Kahn), ties broken by insertion order: backward insertion
        # adds producers after their consumers.
        producer = {t: i for i, n in enumerate(st.nodes) for t in n.outputs}
        deps = [sorted({producer[t] for t in n.inputs if t in producer}) for n in st.nodes]
        order, done = [], [False] * len(st.nodes)
        while len(order) < len(st.nodes):
            for i in range(len(st.nodes)):
                if not done[i] and all(done[d] for d in deps[i]):
                    done[i] = True
                    order.append(i)
                    break
        nodes = [st.nodes[i] for i in order]
        # Renumber tensors in first-use order so names read naturally.
        ph = [p for p in st.placeholders if st.uses[p] > 0]
        # a consumer may prescribe an input's constant-ness (a motif's fusion weights);
        # the draw is made for every placeholder all the same, so the stream stays aligned
        prescribed: dict = {}
        for n in st.nodes:
            spec = get(n.op)
            for i, t in enumerate(n.inputs):
                if (i or spec.needs_dynamic) and t not in prescribed:
                    want = spec.constant_input(n.attrs, i)
                    if want is not None:
                        prescribed[t] = want
        drawn = [rng.random() < self.cfg.const_prob for _ in ph]
        consts = [p for p, c in zip(ph, drawn) if prescribed.get(p, c)]
        inputs = [p for p in ph if p not in consts]
        if not inputs:
            free = [p for p in consts if p not in prescribed] or consts
            inputs, consts = free[:1], [p for p in consts if p != free[0]]
        used = {t for n in nodes for t in n.inputs}
        outputs = [t for n in nodes for t in n.outputs
                   if t not in used or rng.random() < self.cfg.extra_output_prob]
        remap: dict = {}
        for t in inputs + consts + [t for n in nodes for t in n.outputs]:
            remap.setdefault(t, len(remap))
        vrng = np.random.Generator(np.random.PCG64(sub_seed(seed, "values")))
        tensors = [None] * len(remap)
        for old, new in remap.items():
            tensors[new] = st.tensors[old]
        g = Graph(
            tensors=tensors,
            nodes=[Node(n.op, n.attrs, [remap[t] for t in n.inputs], [remap[t] for t in n.outputs]) for n in nodes],
            inputs=[remap[t] for t in inputs],
            consts=[remap[t] for t in consts],
            outputs=[remap[t] for t in outputs],
            opset=opset,
        )
        spans = domain_spans(g, all_specs())
        g.values = {t: random_values(vrng, g.tensors[t], spans.get(t)) for t in g.consts}
        return g


def body_graph(seed: int, in_types: list, ops: tuple, dtypes: tuple, opset: int, limits, max_nodes: int) -> Graph:
    """A body of 1 to ``max_nodes`` operators among ``ops`` over ``in_types`` (its inputs),
    at ``opset`` (``Generator.body``); what ``Ctx.body_graph`` gives control operators."""
    return _body_generator(ops, dtypes, opset, limits, max_nodes).body(seed, in_types)


@lru_cache(maxsize=64)
def _body_generator(ops: tuple, dtypes: tuple, opset: int, limits, max_nodes: int) -> Generator:
    """One generator per body configuration (``body`` resets its solver, and its signature
    cache is a pure function of the configuration): built once, not per body."""
    return Generator(GenConfig(min_nodes=1, max_nodes=max_nodes, limits=limits, dtypes=dtypes, ops=ops, opset=opset,
                               forward_prob=1.0, extra_output_prob=0.0))
