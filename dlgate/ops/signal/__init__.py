"""Signal processing: DFT, STFT, the Hann, Hamming and Blackman windows and
MelWeightMatrix (opset 17; DFT's axis became an input at opset 20).

Complex tensors are real ones with a last axis of 2 (real, imaginary); a last axis of 1
holds a real signal. Lengths, steps and axes are constants the lowering writes.

The window operators and MelWeightMatrix take only integer and float scalars, all
constants here, so their specs take one graph tensor of an integer type (int32 or
int64: the type the size, or the mel integers, are written in): its values are not
read; a window's size is its last dimension (written as a constant, or read from it
with Shape -> Gather, as exporters write ``torch.hann_window(x.shape[-1])``). Their
float output is a graph tensor like any other, which the generator connects to other
operators. (A float first input is impossible: the signature of a spec is checked
against the ONNX operator's formal inputs, here an integer scalar.)
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("dft", "stft", "hann_window", "hamming_window", "blackman_window", "mel_weight_matrix")
