from __future__ import annotations

from dlgate.ops.recurrent.rnn import RNN


class RNNWeightInput(RNN):
    name = "RNNWeightInput"
    w_input = True


OPS = [RNNWeightInput]
