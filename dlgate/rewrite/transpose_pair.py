"""A Transpose and its inverse: ``transpose(transpose(x, p), p⁻¹) == x`` for every dtype.

The permutation is drawn (never the identity), its inverse follows; only the order of
elements moves between them, so the result is the input bit for bit. Applies to tensors
of rank 2 or more, any dtype, static or symbolic dimensions."""
from __future__ import annotations

from dlgate.rewrite.base import Rewrite, Step, chain_twin


class TransposePair(Rewrite):
    name = "transpose_pair"
    applies = "any dtype; rank >= 2"

    def apply(self, graph, model, rng, prefer=None):
        def make(ty, r):
            n = ty.rank
            perm = list(range(n))
            while perm == list(range(n)):
                r.shuffle(perm)
            inv = [0] * n
            for i, p in enumerate(perm):
                inv[p] = i
            mid = ty.with_shape([ty.shape[p] for p in perm])
            return [Step("Transpose", {"perm": perm, "omit": False}, mid, {"perm": perm}),
                    Step("Transpose", {"perm": inv, "omit": False}, ty, {"perm": inv})], {"perm": perm}

        return chain_twin(self, graph, model, rng, lambda ty: ty.rank >= 2, make, prefer)


REWRITE = TransposePair()
