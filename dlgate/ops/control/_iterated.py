"""What Loop and Scan share: a body graph run a few times, its carried values fed back and
its other outputs stacked (private to the family)."""
from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.graph.ir import Graph
from dlgate.ops.base import OpSpec
from dlgate.ops.control._shared import (_BAD, _discontinuous, _numel, _reference_defect, _start, _union, _within,
                                        body_ranges, decode, encode, make_body)

#: Bodies drawn for one instance before it is given up as invalid.
BODY_DRAWS = 3


class Iterated(OpSpec):
    """A body (``a["body"]``, encoded) iterated over two data inputs, the first carried.
    A subclass writes how the body is fed and run (``_execute(a, *xs, check)``: the
    outputs, and why a run is undefined), its attributes, types and lowering; the
    semantics, undefined results, jumps and the reference's defects follow from the body."""

    arity = 2
    n_outputs = 2
    dtypes = tuple((t, t) for t in dt.ALL)
    symbolic_ok = False

    def _body(self, a) -> Graph:
        return decode(a["body"])

    def _draw_body(self, ctx, a: dict, in_types: list, need: list, times: int, ins: list) -> dict:
        """``a`` with a body over ``in_types`` giving ``need`` (``make_body``), whose tensors,
        stacked ``times`` times, fit the limits and whose values, iterated from the
        generator's starting values, stay within the growth cap (``_within``); a few bodies
        are drawn before the instance is marked invalid. ``_drawn`` adds what depends on
        the body."""
        fits = (lambda t: times * _numel(t.shape) <= ctx.limits.max_elems and t.rank < ctx.limits.max_rank)
        dtype = ins[0].dtype
        for _ in range(BODY_DRAWS):
            g = make_body(ctx, in_types, need, once=False, fits=fits)
            if g is None:
                break
            a["body"] = encode(g)
            self._drawn(ctx, a, g)
            lo, hi = _start(dtype)
            if all(_within(r, dtype) for r in self.value_range(a, [(lo, hi), (lo, hi)], ins)):
                return a
        return dict(_BAD)

    def _drawn(self, ctx, a: dict, g: Graph) -> None:
        """Attributes drawn once the body ``g`` is known (Scan's output axes)."""

    def _execute(self, a, *xs, check: bool = False) -> tuple:
        raise NotImplementedError

    def torch(self, a, *xs):
        outs = self._execute(a, *xs)[0]
        return tuple(outs) if len(outs) > 1 else outs[0]

    def undefined(self, a, ins, out_types):
        return self._execute(a, *ins, check=True)[1]

    def discontinuous(self, a):
        return _discontinuous(a["body"])

    def reference_defect(self, a, ins, opset):
        return _reference_defect(a["body"]) or self._reference_defect_of_iteration(a)

    def _reference_defect_of_iteration(self, a) -> str | None:
        """A defect of onnx.reference's construct itself (not of the body's operators)."""
        return None


def iterate_ranges(g: Graph, times: int, carried: list, feeds) -> tuple:
    """Bounds after ``times`` runs of body ``g``: of the carried values (its first
    outputs, fed back as ``feeds(carried)`` gives the body's inputs' bounds), and the
    union over the runs of each further (scan) output's."""
    n, acc = len(carried), None
    for _ in range(times):
        outs = body_ranges(g, feeds(carried))
        carried = outs[:n]
        acc = outs[n:] if acc is None else [_union(p, q) for p, q in zip(acc, outs[n:])]
    return carried, list(acc or [])
