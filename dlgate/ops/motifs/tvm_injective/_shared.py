"""What the tvm_injective motifs share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from dlgate.ops.motif import reread
from dlgate.ops.motifs.tvm_common import TvmMotif
from dlgate.ops.registry import get


class _Injective(TvmMotif):
    """An injective chain (``chain``); breaking ``injective_path`` adds ReduceMax (over
    every axis) of the chain's first output to its result."""

    conditions = ("injective_path",)

    def chain(self, a) -> list:
        raise NotImplementedError

    def steps(self, a):
        s = self.chain(a)
        if a["violate"] == "injective_path":
            s += reread(s, 0, len(s) - 1, "ReduceMax", {"keepdims": 0})
        return s


def _moving_perm(ctx, r: int) -> dict:
    """Transpose attributes whose permutation moves at least one axis (rank >= 2)."""
    a = get("Transpose").attrs(ctx, r)
    if r >= 2 and a["perm"] == list(range(r)):
        a = {"perm": list(range(r - 1, -1, -1)), "omit": ctx.coin(0.5)}
    return a
