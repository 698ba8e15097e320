"""What the tvm_injective motifs share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.motif import Motif, Out, Step
from dlgate.ops.registry import get


FLOAT_SIGS = tuple((t,) for t in dt.FLOATS)


def _rejoin(s: list, src: int) -> list:
    """``s`` plus ReduceMax(every axis) of step ``src``'s output added to the last step's."""
    k = len(s)
    return s + [Step("ReduceMax", {"keepdims": 0}, (Out(src),)), Step("Add", {}, (Out(k - 1), Out(k)))]


class _Injective(Motif):
    optimizer = "tvm"
    conditions = ("injective_path",)

    def chain(self, a) -> list:
        raise NotImplementedError

    def steps(self, a):
        s = self.chain(a)
        return _rejoin(s, 0) if a["violate"] == "injective_path" else s


def _moving_perm(ctx, r: int) -> dict:
    """Transpose attributes whose permutation moves at least one axis (rank >= 2)."""
    a = get("Transpose").attrs(ctx, r)
    if r >= 2 and a["perm"] == list(range(r)):
        a = {"perm": list(range(r - 1, -1, -1)), "omit": ctx.coin(0.5)}
    return a
