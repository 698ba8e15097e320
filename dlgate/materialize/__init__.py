"""A generated graph made concrete, deterministically: an ONNX model for the compilers under
test (``onnx_model``) and the same graph as a PyTorch module for the reference and the input
search (``torch_model``)."""
