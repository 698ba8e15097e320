"""The systems a case runs on: one small class per compiler under test or reference (TVM,
onnxruntime, TensorRT, Inductor, PyTorch eager, ONNX's reference evaluator) behind one
interface (``base``), found by name through the ``dlgate.backends`` entry points
(``registry``); each worker starts with a one-node probe (``selftest``), and each backend's
refusals are told apart from its crashes (``refusals``). TVM's pipelines spelt out as named
passes, and a Relax module printed as TVMScript that parses back, are in ``tvm_passes``."""
