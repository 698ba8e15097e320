"""The input-domain model, an optional part of an operator spec: the inputs for which its
result is valid, for the generator (no composition that cannot be valid) and the input
search (losses that steer values into the domain).

By default an operator takes any input. A restricted one (Log, Sqrt, Div, Asin...) picks the
:class:`Restricted` part (or sets ``restricted``) and states ``domain`` (the values input 0
must be able to take), ``open_domain`` (whether its finite ends are excluded), ``safe`` (a
range inside it for starting values: one for every input, or ``{input: range}``) and
``losses`` (one loss per domain predicate, positive exactly when it is violated). One whose
input must hold no zero (Div's divisor, Reciprocal, a quantization scale) picks
:class:`NonZero`, which writes that condition and its loss. Conditions on other inputs, or
on the elements together, are the hooks ``input_domain``, ``input_nonzero``,
``input_possible`` and ``input_range``.
"""
from __future__ import annotations

from typing import ClassVar

from dlgate.ops.core import TensorType


class InputDomain:
    """The input-domain part of ``OpSpec`` (see the module docstring)."""

    #: True for operators with a restricted input domain (they define ``losses``).
    restricted: ClassVar[bool] = False
    #: Whether the domain's finite ends are excluded (Log's 0, Atanh's +-1) or included
    #: (Sqrt's 0, Asin's +-1, Acosh's 1).
    open_domain: ClassVar[bool] = True
    #: Values input 0 must be able to take (e.g. (1, inf) for Acosh); see ``input_domain``.
    domain: ClassVar[tuple | None] = None
    #: Where starting values are drawn for the inputs that feed this operator directly
    #: (``input_range``): a range (lo, hi) for every input, ``{input: (lo, hi)}`` for some
    #: (Div's divisor, BatchNormalization's variance), or None where any value will do.
    safe: ClassVar = None

    def input_domain(self, a: dict, i: int) -> tuple | None:
        """The values (lo, hi) input ``i`` must be able to take for a valid result, or None."""
        return self.domain if i == 0 else None
    def input_possible(self, a: dict, i: int, r: tuple, t: TensorType) -> bool:
        """Whether input ``i`` (of type ``t``) with value bounds ``r`` leaves room for a
        valid run, for conditions on the elements together rather than on each (a
        positive sum for ReduceLogSum needs some element above 0; a product of many
        elements all above 1.3 overflows); per-element domains are ``input_domain``'s."""
        return True

    def input_nonzero(self, a: dict, i: int) -> bool:
        """Whether input ``i`` must hold no zero for a valid result (a divisor)."""
        return False

    def input_range(self, a: dict, i: int) -> tuple | None:
        """A value range inside the operator's domain for its input ``i``, used to draw
        starting values of graph inputs and constants that feed it directly (the input
        search then handles deeper chains); None when any value will do. By default
        ``safe``'s range for input ``i``; a hook for a range that depends on the
        attributes."""
        safe = self.safe
        return safe.get(i) if isinstance(safe, dict) else safe
    def losses(self, a: dict, *xs) -> list:
        return []


class Restricted:
    """Stock part: a restricted input domain, so the input search checks ``losses`` on
    every run; starting values come from ``safe``. Where input 0's ``domain`` is the whole
    condition, the losses come from it (:func:`domain_losses`); an operator with other
    conditions (overflow, other inputs) writes its own."""

    restricted = True

    def losses(self, a, *xs):
        return domain_losses(self.domain, self.open_domain, xs[0])


def domain_losses(domain: tuple | None, open_: bool, x) -> list:
    """One loss per bound of ``domain`` for the elements of ``x``, positive exactly when one
    lies outside it (beyond or, for an ``open_`` domain, at a finite end): a domain
    symmetric about 0 is one bound on ``|x|``."""
    if domain is None:
        return []
    from dlgate.ops import losses as L  # torch: the contract's modules load it only to compute

    lo, hi = domain
    inf = float("inf")
    if lo == -hi and hi != inf:
        return [(L.lt0 if open_ else L.le0)(x.abs() - hi)]
    out = []
    if lo != -inf:
        out.append((L.gt0 if open_ else L.ge0)(x - lo if lo else x))
    if hi != inf:
        out.append((L.lt0 if open_ else L.le0)(x - hi if hi else x))
    return out


class NonZero(Restricted):
    """Stock part: input ``nonzero_input`` must hold no zero (a divisor, a reciprocal, a
    quantization scale): ``input_nonzero`` says so, and ``losses`` steers its elements'
    magnitudes above 0."""

    nonzero_input = 0

    def input_nonzero(self, a, i):
        return i == self.nonzero_input

    def losses(self, a, *xs):
        from dlgate.ops import losses as L  # torch: the contract's modules load it only to compute

        return [L.gt0(xs[self.nonzero_input].abs())]
