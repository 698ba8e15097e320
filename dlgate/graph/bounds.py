"""What the generator knows about the values of a graph it is drawing: per tensor, bounds,
whether the input search can steer it, whether it holds integers only, a value its elements
straddle or equal in every run (``_State``); and the checks that keep every operator's
inputs inside its domain as nodes are inserted forward or backward (``ValueBounds``, a base
of ``Generator``). Models without any valid input are not generated."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from dlgate import dtypes as dt
from dlgate.ops.base import UNBOUNDED, OpSpec, TensorType, excludes_zero, inside, overlaps
from dlgate.ops.registry import get


@dataclass
class _State:
    tensors: list = field(default_factory=list)
    nodes: list = field(default_factory=list)
    placeholders: list = field(default_factory=list)  # tensor ids, in creation order
    uses: list = field(default_factory=list)
    ranges: list = field(default_factory=list)  # known bounds on each tensor's values
    #: Whether the input search's gradient steps reach each tensor's values (a float leaf,
    #: or computed from one through steerable operators); the others can only be re-sampled.
    steer: list = field(default_factory=list)
    #: Whether each tensor holds only integer values (integer dtypes, Floor/Round outputs,
    #: casts of integers): its bounds narrow to the integers inside a domain.
    integral: list = field(default_factory=list)
    #: A value each tensor's elements straddle in every run (min <= anchor <= max), or None:
    #: LogSoftmax over n elements always has one at or below -log(n) and one at or above.
    anchor: list = field(default_factory=list)
    #: A value some element of each tensor equals in every run, or None (see ``OpSpec.exact``).
    exact: list = field(default_factory=list)
    #: Placeholders whose constant-ness a consumer prescribes: never given a producer.
    pinned: set = field(default_factory=set)
    #: Tensor id -> index of the node that produces it.
    producer: dict = field(default_factory=dict)

    def add_tensor(self, t: TensorType, bounds: tuple = UNBOUNDED, steer: bool | None = None,
                   integral: bool | None = None, anchor: float | None = None,
                   exact: float | None = None) -> int:
        self.anchor.append(anchor)
        self.exact.append(exact)
        self.tensors.append(t)
        self.uses.append(0)
        self.ranges.append(bounds)
        self.steer.append(dt.is_float(t.dtype) if steer is None else steer)
        self.integral.append(not dt.is_float(t.dtype) if integral is None else integral)
        return len(self.tensors) - 1


def _integers_in(r: tuple, dom: tuple, open_domain: bool) -> tuple | None:
    """The integer points of bounds ``r`` (already inside domain ``dom``), as bounds; a
    domain end that ``r`` touches is excluded when the domain is open."""
    lo, hi = r
    if math.isfinite(lo):
        lo = math.floor(lo) + 1 if (open_domain and lo == dom[0] and lo == math.floor(lo)) else math.ceil(lo)
    if math.isfinite(hi):
        hi = math.ceil(hi) - 1 if (open_domain and hi == dom[1] and hi == math.ceil(hi)) else math.floor(hi)
    return (float(lo), float(hi)) if lo <= hi else None


class ValueBounds:
    """The value-bounds bookkeeping of ``Generator``: static checks on one operator input,
    and the propagation of narrowed bounds downstream through a ``_State``."""

    def _domains_ok(self, st: _State, spec: OpSpec, a: dict, ids: list) -> bool:
        """Whether each existing input's known value bounds leave room in the operator's
        domain (no Acosh of a Sigmoid), and the bounds that narrowing leaves still suit
        every operator already downstream (x feeds ThresholdedRelu(alpha=1.6) then Log,
        and now Asin too: x can no longer pass the threshold): models without any valid
        input are not generated."""
        for i, j in enumerate(ids):
            if j is None:
                continue
            r = self._admit(spec, a, i, st.ranges[j], st.steer[j], st.integral[j], st.anchor[j], st.exact[j],
                            st.tensors[j])
            changed = None if r is None else self._narrow_up(st, j, r, apply=False)
            if changed is None or not self._propagate(st, self._starts(st, changed), apply=False):
                return False
        return True

    @staticmethod
    def _starts(st: _State, changed: dict) -> dict:
        """``_propagate``'s starting points for tensors whose bounds narrowed."""
        return {t: (b, st.steer[t], st.integral[t], st.anchor[t], st.exact[t])
                for t, b in changed.items() if b != st.ranges[t]}

    @staticmethod
    def _narrow_up(st: _State, j: int, r: tuple, apply: bool = True) -> dict | None:
        """Narrow tensor ``j`` to bounds ``r`` and, through operators that pass every input
        value on (Identity, Reshape, Concat...) or map them element-wise (Asin, Exp, Abs:
        their ``preimage``), their inputs too: the narrowed tensors' new bounds, or None when some
        tensor would be left without any value (Asin of an Identity of x, and Acosh of x)."""
        todo, seen = [(j, r)], {}
        producer = {t: n for n in st.nodes for t in n.outputs}
        while todo:
            t, b = todo.pop()
            cur = seen.get(t, st.ranges[t])
            new = (max(cur[0], b[0]), min(cur[1], b[1]))
            if new[0] > new[1]:
                return None
            if new == cur and t in seen:
                continue
            seen[t] = new
            node = producer.get(t)
            if node is None:
                continue
            spec = get(node.op)
            if spec.preserves_values:
                vals = spec.value_inputs
                for i, u in enumerate(node.inputs):
                    if (vals is None or i in vals) and dt.is_float(st.tensors[u].dtype):
                        todo.append((u, new))
            elif spec.elementwise and new != cur and dt.is_float(st.tensors[node.inputs[0]].dtype):
                pre = spec.preimage(node.attrs, new)  # Asin's output kept >= 1 keeps x >= sin(1)
                if pre is not None:
                    todo.append((node.inputs[0], pre))
        if apply:
            for t, b in seen.items():
                st.ranges[t] = b
        return seen

    @staticmethod
    def _admit(spec: OpSpec, a: dict, i: int, bounds: tuple, steer: bool, integral: bool,
               anchor: float | None = None, exact: float | None = None, t: TensorType | None = None) -> tuple | None:
        """The bounds a tensor keeps when it feeds input ``i`` in a valid run (narrowed to
        the operator's domain, and to the integers inside it for integer-valued tensors),
        or None when no valid run exists. The input search can move a steerable tensor, so
        its bounds need only overlap the domain; one it cannot steer (a cast from integers,
        a Hardmax) must lie inside it, since re-sampling rarely lands every element there.
        A value the tensor holds exactly in every run must lie in the domain too, and must
        not be 0 where the operator needs a nonzero input."""
        dom = spec.input_domain(a, i)
        r = bounds
        if dom is not None:
            if not (overlaps(r, dom) if steer else inside(r, dom)):
                return None
            for v in (anchor, exact):
                if v is not None and not (dom[0] < v < dom[1] if spec.open_domain else dom[0] <= v <= dom[1]):
                    return None  # some element always lies at (or beyond) the value
            r = (max(r[0], dom[0]), min(r[1], dom[1]))
            if integral:
                r = _integers_in(r, dom, spec.open_domain)
                if r is None:
                    return None
        if spec.input_nonzero(a, i):
            if r == (0.0, 0.0) or exact == 0 or (not steer and not excludes_zero(r)):
                return None
        if t is not None and not spec.input_possible(a, i, r, t):
            return None
        return r

    def _propagate(self, st: _State, start: dict, apply: bool = True) -> bool:
        """Some tensors get new knowledge (``start``: tensor -> (bounds, steer, integral,
        anchor, exact)), when backward insertion gives a placeholder a producer or a new
        consumer narrows an existing tensor: re-derive the bounds of everything downstream
        (in dependency order) and check every operator on the way still admits its inputs;
        on success (and with ``apply``) the new bounds are kept."""
        if not start:
            return True
        ranges, steers, ints, anchors, exacts = dict(), dict(), dict(), dict(), dict()
        for p, (bounds, steer, integral, anchor, exact) in start.items():
            ranges[p], steers[p], ints[p], anchors[p], exacts[p] = bounds, steer, integral, anchor, exact
        producer = {t: k for k, n in enumerate(st.nodes) for t in n.outputs}
        pending = [k for k, n in enumerate(st.nodes) if any(p in n.inputs for p in start)]
        seen: set = set()
        while pending:
            # a node is ready when none of its inputs is produced by a node still pending
            k = next(k for k in pending if not any(producer.get(t) in pending for t in st.nodes[k].inputs
                                                   if producer.get(t) != k))
            pending.remove(k)
            if k in seen:
                continue
            seen.add(k)
            node, spec = st.nodes[k], get(st.nodes[k].op)
            get_r = lambda t: ranges.get(t, st.ranges[t])  # noqa: E731
            admitted = []
            for i, t in enumerate(node.inputs):
                r = self._admit(spec, node.attrs, i, get_r(t), steers.get(t, st.steer[t]), ints.get(t, st.integral[t]),
                                anchors.get(t, st.anchor[t]), exacts.get(t, st.exact[t]), st.tensors[t])
                if r is None:
                    return False
                admitted.append(r)
            for t, r in zip(node.inputs, admitted):
                if t in ranges:
                    ranges[t] = r
            ins = [st.tensors[t] for t in node.inputs]
            outs = [st.tensors[t] for t in node.outputs]
            new = spec.out_bounds(node.attrs, admitted, ins, outs)
            new = self._same_input(spec, node.attrs, node.inputs, admitted, new)
            in_steer = [steers.get(t, st.steer[t]) for t in node.inputs]
            in_int = [ints.get(t, st.integral[t]) for t in node.inputs]
            anchor_out = spec.anchor(node.attrs, [anchors.get(t, st.anchor[t]) for t in node.inputs], ins)
            exact_out = spec.exact(node.attrs, [exacts.get(t, st.exact[t]) for t in node.inputs], ins)
            for t, o, b in zip(node.outputs, outs, new):
                old = st.ranges[t]
                ranges[t] = (max(old[0], b[0]), min(old[1], b[1]))
                if ranges[t][0] > ranges[t][1]:
                    return False
                steers[t] = self._steers(spec, in_steer, o)
                ints[t] = self._integral(spec, in_int, o)
                anchors[t] = anchor_out if t == node.outputs[0] else None
                exacts[t] = exact_out if t == node.outputs[0] else None
                pending += [c for c, n in enumerate(st.nodes) if t in n.inputs and c not in pending]
        if apply:
            for t in ranges:
                st.ranges[t], st.steer[t], st.integral[t] = ranges[t], steers[t], ints[t]
                st.anchor[t], st.exact[t] = anchors[t], exacts[t]
        return True

    @staticmethod
    def _same_input(spec: OpSpec, a: dict, in_ids: list, ranges: list, bounds: list) -> list:
        """Sharper bounds when all inputs are one tensor (Isra's reuse makes ``Sub(x, x)``)."""
        if len(in_ids) > 1 and len(set(in_ids)) == 1:
            r = spec.self_range(a, ranges[0])
            if r is not None:
                return [r] + list(bounds[1:])
        return bounds

    @staticmethod
    def _integral(spec: OpSpec, in_int: list, out: TensorType) -> bool:
        if not dt.is_float(out.dtype) or spec.integral_out:
            return True
        vals = spec.value_inputs
        carried = [x for i, x in enumerate(in_int) if vals is None or i in vals]
        return bool(carried) and all(carried) and (spec.keeps_range or spec.keeps_integers)

    @staticmethod
    def _steers(spec: OpSpec, in_steer: list, out: TensorType) -> bool:
        vals = spec.value_inputs
        return spec.steerable and dt.is_float(out.dtype) and any(
            s for i, s in enumerate(in_steer) if vals is None or i in vals)
