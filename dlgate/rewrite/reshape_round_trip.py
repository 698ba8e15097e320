"""A Reshape to another shape of the same elements and back to the tensor's own.

Reshape keeps the elements in row-major order, so the round trip is the identity on
values for every dtype. Applies to graphs with static shapes only (a target shape written
as a constant would be wrong at a further binding of a symbolic dimension) and to tensors
with at least one element (a 0 in Reshape's shape means "copy this dimension" unless
``allowzero``, which not every compiler takes)."""
from __future__ import annotations

import numpy as np

from dlgate.rewrite.base import Rewrite, Step, chain_twin


def targets(shape: tuple) -> list:
    """Other shapes of the same element count, in a fixed order: flattened, one leading or
    trailing 1 added, and every split of the count into two factors."""
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    out = [(n,), (1,) + tuple(shape), tuple(shape) + (1,)]
    out += [(a, n // a) for a in range(2, n) if n % a == 0]
    seen, keep = set(), []
    for s in out:
        if tuple(s) != tuple(shape) and s not in seen:
            seen.add(s)
            keep.append(s)
    return keep


class ReshapeRoundTrip(Rewrite):
    name = "reshape_round_trip"
    applies = "any dtype; static shapes, at least one element"

    def apply(self, graph, model, rng, prefer=None):
        if graph.dynamic is not None:
            return None

        def make(ty, r):
            options = targets(tuple(ty.shape))
            to = list(options[r.randrange(len(options))])
            mid = ty.with_shape(to)
            back = list(ty.shape)
            return [Step("Reshape", {"shape": to, "spec": to}, mid, onnx_const=np.array(to, dtype=np.int64)),
                    Step("Reshape", {"shape": back, "spec": back}, ty, onnx_const=np.array(back, dtype=np.int64))], \
                {"shape": to}

        return chain_twin(self, graph, model, rng, lambda ty: int(np.prod(ty.shape, dtype=np.int64)) > 0, make, prefer)


REWRITE = ReshapeRoundTrip()
