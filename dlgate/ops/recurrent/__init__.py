"""Recurrent layers: LSTM, GRU and RNN (one layer, forward, reverse or bidirectional).

Only the sequence ``X`` is a graph tensor (and, in the ``*WeightInput`` twins, ``W``
too); the weights ``W``, ``R``, the bias ``B``, the initial states and LSTM's peepholes
``P`` are constants the lowering writes, drawn from a seed kept in the attributes
(multiples of 1/64, exact in every float type; ``R`` small enough that the recurrence
contracts). ``sequence_lens`` is an int32 constant with values in [1, seq_length].

Semantics, from the ONNX operator text (gate order iofc for LSTM, zrh for GRU), and
where the text is silent, from onnxruntime (the only runtime implementing all of it):

* ``activations`` name f, g(, h) per direction; ``activation_alpha``/``activation_beta``
  are *consumed in order* by the activations that take an alpha (beta): Affine,
  LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu (alpha); Affine, ScaledTanh,
  HardSigmoid (beta). Lists are either omitted or give a value to every consumer;
  omitted only when no activation is Affine, ScaledTanh or ThresholdedRelu (no ONNX
  operator defines the first two's defaults and onnxruntime reads them as 0; it reads
  ThresholdedRelu's as 0 too, where the ONNX operator's default is 1.0).
* ``clip`` clamps the inputs of the gate activations f and g; LSTM's h(C_t) is not
  clipped (onnxruntime's reading; the text, "applied to the input of activations", can
  be read to clip C_t there too, so where some |C_t| exceeds the clip, ``undefined``
  says the two readings differ).
* ``input_forget=1`` couples the gates as f = 1 - i (what onnxruntime computes; the ONNX
  text only says "couple").
* past a batch entry's ``sequence_lens``, Y is 0 and the state stops: Y_h (Y_c) is the
  last valid step's (for the reverse direction, the step at t = 0 after starting from
  t = len - 1).

Gate activations (LSTM's and GRU's f) other than Sigmoid and HardSigmoid can leave
[0, 1], where the recurrence may grow geometrically: such instances keep the sequence
short (``SHORT_SEQ``).
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("lstm", "gru", "rnn", "lstm_weight_input", "gru_weight_input", "rnn_weight_input")
