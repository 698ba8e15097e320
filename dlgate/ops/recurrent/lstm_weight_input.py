from __future__ import annotations

from dlgate.ops.recurrent.lstm import LSTM


class LSTMWeightInput(LSTM):
    """LSTM whose W is a graph tensor."""

    name = "LSTMWeightInput"
    w_input = True


OPS = [LSTMWeightInput]
