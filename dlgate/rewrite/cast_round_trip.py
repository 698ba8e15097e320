"""A Cast to a wider type and back, where the wider type holds every value exactly.

float16 -> float32 or float64, float32 -> float64: every finite value, both infinities,
-0 and NaN convert exactly and back (the narrowing Cast of a value that came from the
narrower type rounds nothing). int8 and uint8 -> int32 or int64, int32 -> int64: the
wider integer holds every value. Never a narrowing first, never between floats and
integers (truncation, undefined out of range), never bool."""
from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.rewrite.base import Rewrite, Step, chain_twin

#: dtype -> the types it widens to exactly.
WIDER = {"float16": ("float32", "float64"), "float32": ("float64",), "int8": ("int32", "int64"),
         "uint8": ("int32", "int64"), "int32": ("int64",)}


class CastRoundTrip(Rewrite):
    name = "cast_round_trip"
    applies = "float16, float32, int8, uint8, int32 tensors (to a wider type of the same kind); any rank"

    def apply(self, graph, model, rng, prefer=None):
        def make(ty, r):
            wide = WIDER[ty.dtype][r.randrange(len(WIDER[ty.dtype]))]
            return [Step("Cast", {"to": wide}, ty.with_dtype(wide), {"to": int(dt.ONNX[wide])}),
                    Step("Cast", {"to": ty.dtype}, ty, {"to": int(dt.ONNX[ty.dtype])})], {"via": wide}

        return chain_twin(self, graph, model, rng, lambda ty: ty.dtype in WIDER, make, prefer)


REWRITE = CastRoundTrip()
