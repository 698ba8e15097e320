from __future__ import annotations

from dlgate.ops.recurrent.gru import GRU


class GRUWeightInput(GRU):
    name = "GRUWeightInput"
    w_input = True


OPS = [GRUWeightInput]
